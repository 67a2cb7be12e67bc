#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done by the action plugin plugins/action/run_summary.py (in the controller's process, no module
# run); this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: run_summary
short_description: Summarize a collected training run into summary.json
version_added: 0.1.0
description:
  - Reads the run collected under O(run_dir) (C(nodes/<node>/status/rank-<N>.json) from the rank wrapper,
    C(nodes/<node>/logs/) with each rank's output and the launch script's events) and writes O(run_dir)/summary.json.
  - The run succeeded when it did not time out, the launcher and every C(torchrun) agent exited 0 and every one of
    the O(world_size) ranks recorded exit code 0. Nothing the training script prints is required.
  - Otherwise RV(summary.failure_reasons) says why, root cause first (a worker that died, a node that refused the
    cluster's SSH, the first rank to fail on its own), then the consequences (ranks stopped after it).
  - The optional JSON events of rank 0 (C(epoch), C(result)) fill RV(summary.epochs), RV(summary.metrics) and
    RV(summary.test_accuracy); without them those are empty or null.
  - Runs on the controller, in Ansible's own process, whatever host the task is for.
author:
  - multinode.training team (@multinode-training)
attributes:
  check_mode:
    support: full
    description: Computes the summary and reports changed, writes nothing.
  diff_mode:
    support: none
    description: The summary is returned instead.
options:
  run_dir:
    description: Directory holding the collected run (C(nodes/<node>/...)); summary.json is written here.
    type: path
    required: true
  job_id:
    description: The job's id.
    type: str
    required: true
  job_name:
    description: The job's name, whose checkpoints outlive the run; empty for an unnamed job.
    type: str
    default: ""
  resumed_from:
    description: The checkpoint the ranks were given in C(RESUME_FROM); empty when none.
    type: str
    default: ""
  launcher:
    description: Launcher that ran the job.
    type: str
    required: true
  nodes:
    description: Cluster addresses of the nodes, launcher first.
    type: list
    elements: str
    required: true
  node_names:
    description: Inventory names of the nodes, in the order of O(nodes).
    type: list
    elements: str
    required: true
  world_size:
    description: Number of ranks the job was launched with.
    type: int
    required: true
  launcher_exit_code:
    description: Exit code of the launcher container or process; -1 when it did not end.
    type: int
    required: true
  timed_out:
    description: Whether the job hit its timeout.
    type: bool
    default: false
  worker_states:
    description:
      - How each node's worker (container or host sshd) came through the job, by node name, as checked after it
        ended. A worker that is not running died during the job, the strongest root cause there is.
      - Each value may hold C(running) (bool), C(exit_code), C(oom_killed) (bool), C(present) (bool) and C(what) (for example
        C(worker container)).
    type: dict
    default: {}
  phase_stats:
    description:
      - Changed tasks and seconds per playbook phase, as published by the C(multinode.training.phase_stats)
        callback. Each phase name maps to a dict with the keys C(changed) and C(seconds).
      - Empty when the callback is not enabled.
    type: dict
    default: {}
  settings:
    description: Launch settings to record in the summary (threads, environment, interfaces, ...).
    type: dict
    default: {}
  scheduler:
    description:
      - How the scheduler the job was submitted to saw it (launcher C(slurm)), recorded as RV(summary.scheduler).
      - Keys C(scheduler), C(job_id), C(state), C(exit_code), C(node_list), C(elapsed). A C(state) other than
        C(COMPLETED) fails the run, naming the job.
      - Empty when no scheduler ran the job.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write the run summary
  multinode.training.run_summary:
    run_dir: "{{ lookup('ansible.builtin.env', 'PWD') }}/runs/20261122-101500-torchrun"
    job_id: 20261122-101500-torchrun
    launcher: torchrun
    nodes: [172.30.77.11, 172.30.77.12, 172.30.77.13]
    node_names: [node1, node2, node3]
    world_size: 3
    launcher_exit_code: 0
    worker_states:
      node3: {running: false, exit_code: 137, oom_killed: false, what: worker container}
  register: run
"""

RETURN = r"""
path:
  description: Path of the summary file.
  returned: always
  type: str
summary:
  description: The summary written to summary.json.
  returned: always
  type: dict
  contains:
    status:
      description: C(succeeded), C(failed), or C(cancelled) (it failed after a stop was asked for, see multinode.training.job_wait).
      type: str
    failure_reasons:
      description: Why the run failed, root cause first, each naming the rank and node.
      type: list
      elements: str
    scheduler:
      description: O(scheduler) as given (with the scheduler's job id), or null when no scheduler ran the job.
      type: dict
    test_accuracy:
      description: C(test_accuracy) of rank 0's C(result) event, or null.
      type: float
    metrics:
      description: Every key of rank 0's last C(result) event (empty without one).
      type: dict
    epochs:
      description: Rank 0's C(epoch) events (epoch, loss, samples_per_s), empty without them.
      type: list
      elements: dict
    world_size:
      description: Ranks launched.
      type: int
    ranks_started:
      description: Ranks whose wrapper started.
      type: list
      elements: int
    rank_exit_codes:
      description: Exit code of each rank that recorded one, by rank.
      type: dict
    rank_nodes:
      description: The node each rank ran on, by rank.
      type: dict
    outputs:
      description: The collected output files, relative to O(run_dir).
      type: list
      elements: str
    resumed_from:
      description: The checkpoint given to the ranks, or null.
      type: str
    provision_changed:
      description: Changed tasks in the provisioning phase of this playbook run (null without the callback).
      type: int
    phases:
      description: Seconds of the provision, launch (launch script start until every rank started) and train
        (until every rank ended) phases.
      type: dict
"""
