#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done by the action plugin plugins/action/job_collect.py; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: job_collect
short_description: Bring what a training job left on a node to the controller, in one transfer
description:
  - Packs the job's files on the node into one tar file in the connection's temporary directory (with
    multinode.training.job_pack), fetches it and unpacks it into O(dest) on the controller, then removes the
    temporary directory. Member names are checked on unpacking (no absolute paths, nothing outside O(dest)).
  - In the same call on the node it can wait for the launcher container to stop, report how it ended and remove it
    (O(launcher_container)), and remove the oldest job directories (O(keep_jobs)); so what a job leaves behind is
    tidied up in the one round trip that collects it.
  - What is packed is the rank wrapper, on the launcher node the hostfile and launch script, the logs and rank
    status files and, with O(outputs=true), the output directory and what the ranks wrote in their working directory.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - multinode.training.job_files
attributes:
  check_mode:
    support: full
    details: In check mode there is no job; the task is skipped.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  dest:
    description: Directory on the controller to unpack into (created).
    type: path
    required: true
  follow:
    description:
      - On the launcher node, where multinode.training.job_wait stopped following the job before it ended
        (O(multinode.training.job_wait#module:until=ranks_succeeded)). What the job logged after that (its agents'
        and the launcher's exit) is read from the collected logs, shown as progress lines and added to the run's
        C(live.log) and C(progress.jsonl).
    type: dict
    suboptions:
      run_dir:
        description: The run's directory on the controller.
        type: path
        required: true
      world_size:
        description: Ranks in the job.
        type: int
        required: true
      offsets:
        description: Where following stopped, by log file name (job_wait's RV(multinode.training.job_wait#module:offsets)).
        type: dict
        default: {}
      tuning:
        description:
          - Each node's tuning, its C(env) the job's environment (the launcher role's C(launcher_tuning) by node).
          - The value of each secret name of it (as in O(multinode.training.job_wait#module:secret_env_names)) is shown
            and kept as C(***) wherever the collected logs hold it.
        type: dict
        default: {}
      secret_env_names:
        description: Environment variable names whose values are secret besides those that look it.
        type: list
        elements: str
        default: []
"""

EXAMPLES = r"""
- name: Collect the job's logs and outputs
  multinode.training.job_collect:
    job_dir: /opt/multinode/sim/work/jobs/job-1
    work_dir: /opt/multinode/sim/work/jobs/job-1/work
    output_dir: /opt/multinode/sim/work/jobs/job-1/outputs
    outputs: "{{ inventory_hostname == 'node1' }}"
    launcher: "{{ inventory_hostname == 'node1' }}"
    dest: runs/job-1/nodes/{{ inventory_hostname }}
"""

RETURN = r"""
files:
  description: How many files were collected.
  returned: success
  type: int
  sample: 12
bytes:
  description: Their total size.
  returned: success
  type: int
  sample: 40960
dest:
  description: Where they are on the controller.
  returned: success
  type: str
  sample: runs/job-1/nodes/node1
worker:
  description: How the node's worker came through the job (see multinode.training.job_pack).
  returned: when O(worker_container) or O(worker_pid_file) is given
  type: dict
  sample: {"what": "worker container", "present": true, "running": true, "exit_code": 0, "oom_killed": false}
launcher:
  description: How the launcher container ended, before it was removed (see multinode.training.job_pack).
  returned: when O(launcher_container) is given
  type: dict
  sample: {"present": true, "running": false, "exit_code": 0, "oom_killed": false, "removed": true}
checkpoints:
  description:
    - The complete entries of O(checkpoint_dir) on the node, newest first, each with its C(name), its files' total
      C(bytes) and their newest C(mtime) (whole epoch seconds).
  returned: when O(checkpoint_dir) is given
  type: list
  elements: dict
  sample: [{"name": "checkpoint-epoch003.pt", "bytes": 181234, "mtime": 1796000000}]
pruned:
  description: The job directories removed beside O(job_dir).
  returned: when O(keep_jobs) is given
  type: list
  elements: str
  sample: ["20261101-120000-torchrun"]
"""
