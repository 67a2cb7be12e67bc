#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done on the controller by the action plugin plugins/action/run_start.py; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: run_start
short_description: Make the controller's run directory ready for a job that is about to start
description:
  - Runs on the controller only; connects to no node.
  - Creates O(runs_dir)C(/<job_id>) readable by its owner only (mode 0700, whatever the umask), removes what an earlier
    run of the same job id left there that would mislead
    (C(summary.json), C(live.log), C(progress.jsonl), a C(cancel) request, and the files collected from its nodes,
    C(nodes/), which the new collection would otherwise merge into), points O(runs_dir)C(/latest) at it, and keeps
    the newest O(keep) runs (C(0) keeps all; the starting run is never removed).
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode there is no job; the task is skipped.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  runs_dir:
    description: The controller's directory of runs.
    type: path
    required: true
  job_id:
    description: The starting job's id, the name of its run directory.
    type: str
    required: true
  keep:
    description: How many of the newest runs to keep; C(0) keeps all.
    type: int
    default: 0
  launcher_host:
    description:
      - The inventory host the job's launcher runs on. With O(job_dir), C(following.json) in the run directory
        records it with this ansible-playbook's process, its inventory and configuration, so that a cancel asked for
        after that process has gone (C(multinode-training cancel)) reaches the launcher node itself.
    type: str
    default: ""
  job_dir:
    description: The job's directory on its nodes (where the launch script watches for its C(stop) file).
    type: str
    default: ""
  secret_env_names:
    description:
      - Environment variable names whose values are secret besides those that look it (a C(_)-separated part that
        is or ends with C(TOKEN), C(KEY), C(SECRET), C(PASSWORD), C(PASSWD), C(PASS), C(PWD), C(PASSPHRASE), C(CRED),
        C(AUTH), C(PAT) or C(CREDENTIAL), in any case; or a value holding a URL with a password in it).
      - Wherever an environment is in the extra variables C(following.json) records (C(launcher_env)), such values
        are recorded as C(***).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Start the run's directory
  multinode.training.run_start:
    runs_dir: runs
    job_id: 20261123-101500-torchrun
    keep: 20
"""

RETURN = r"""
run_dir:
  description: The run's directory.
  returned: success
  type: str
  sample: runs/20261123-101500-torchrun
changes:
  description: What was done, in words.
  returned: success
  type: list
  elements: str
  sample: ["created runs/20261123-101500-torchrun", "runs/latest -> 20261123-101500-torchrun"]
"""
