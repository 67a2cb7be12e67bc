#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done by the action plugin plugins/action/write_summary.py (in the controller's process, no module
# run); this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: write_summary
short_description: Write a run's summary.json, checked against the run schema
version_added: 0.1.0
description:
  - Writes O(summary) to O(run_dir)C(/summary.json) on the controller, whole (a temporary file beside it renamed over
    it) and readable by its owner only (C(0600)), as JSON with sorted keys indented by 2, like every JSON file of a
    run.
  - The summary is checked against the run schema first (the keys and types of summary.json, documented in the
    collection's C(docs/RUNS.md)); one that departs from it fails the task naming every problem
    (RV(problems)), and nothing is written.
  - A run over SSH has its summary written by M(multinode.training.run_summary); this module writes the others (a
    run on Kubernetes, a run a restart could not repair), so every summary.json is checked the same way.
  - Runs on the controller, in Ansible's own process, whatever host the task is for.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Checks the summary and reports whether the file would change; writes nothing.
  diff_mode:
    support: full
    details: The file's content before and after.
  platform:
    platforms: posix
options:
  run_dir:
    description: The run's directory on the controller (created C(0700) if missing); the summary is its C(summary.json).
    type: path
    required: true
  summary:
    description:
      - The run's summary, as M(multinode.training.run_summary) returns it (RV(multinode.training.run_summary#module:summary))
        or the filter P(multinode.training.kubernetes_run_summary#filter) computes it.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the run summary
  multinode.training.write_summary:
    run_dir: "{{ lookup('ansible.builtin.env', 'PWD') }}/runs/mnist"
    summary: "{{ job.resources[0] | multinode.training.kubernetes_run_summary('PyTorchJob', described, pods.resources) }}"
"""

RETURN = r"""
path:
  description: The summary file.
  returned: always
  type: str
  sample: /home/user/runs/mnist/summary.json
problems:
  description: Every way O(summary) departs from the run schema, where (keys from the top, joined by C(.)) and what.
  returned: failure
  type: list
  elements: str
  sample: ["failure_reasons: expected array, got string", "missing required key 'job_id'"]
"""
