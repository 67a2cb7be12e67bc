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
  - When the attempt failed and the policy (O(max_restarts), O(restart_on)) restarts it, its collected C(nodes/) and
    C(stall.json) are moved to O(run_dir)C(/attempts/<attempt>/) with its summary, a C(restart) record is added to the
    run's C(progress.jsonl) and C(live.log), and RV(restart) is true; summary.json itself is written by the last attempt.
  - With the last summary written, the run is also recorded for the tools researchers use when the
    multinode-training Python package is on the controller (its C(report), C(tensorboard) and C(mlflow) extras)
    C(report.html), TensorBoard event files in C(tensorboard/), and with O(mlflow_tracking_uri) an MLflow run
    named after the job's name. What is missing or fails is named in RV(recorded), never a failed task.
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
    description:
      - Launch settings to record in the summary (threads, environment, interfaces, ...).
      - Wherever an environment is in them (a key C(env) or ending in C(_env)), the value of each name that looks
        secret or is in O(secret_env_names) is recorded as C(***); the name is kept.
    type: dict
    default: {}
  secret_env_names:
    description:
      - Environment variable names whose values are secret besides those that look it (a C(_)-separated part that
        is or ends with C(TOKEN), C(KEY), C(SECRET), C(PASSWORD), C(PASSWD), C(PASS), C(PWD), C(PASSPHRASE), C(CRED),
        C(AUTH), C(PAT) or C(CREDENTIAL), in any case; or a value holding a URL with a password in it).
    type: list
    elements: str
    default: []
  scheduler:
    description:
      - How the scheduler the job was submitted to saw it (launcher C(slurm)), recorded as RV(summary.scheduler).
      - Keys C(type) (C(slurm)), C(job_id), C(state), C(exit_code), C(node_list), C(elapsed). A C(state) other than
        C(COMPLETED) fails the run, naming the job.
      - Empty when no scheduler ran the job.
    type: dict
    default: {}
  attempt:
    description: Which attempt of the job this is (1, then one more after each restart).
    type: int
    default: 1
  restarts:
    description:
      - The restarts of the job so far (RV(restarts) of the summary of the attempt before). The last one is completed
        from this attempt (when its ranks started, what it resumed from, its nodes).
    type: list
    elements: dict
    default: []
  max_restarts:
    description: How many restarts the whole job may use.
    type: int
    default: 0
  restart_on:
    description:
      - The root causes (RV(summary.root_cause_kind)) that restart the job while restarts are left.
      - V(exit) (a rank's own code failed) is not in the default list.
    type: list
    elements: str
    choices: [worker_lost, node_lost, connection, signal, stall, teardown_race, exit]
    default: [worker_lost, node_lost, connection, signal, stall, teardown_race]
  world_check:
    description:
      - What a run whose ranks all exited 0 but did not form one world (from their C(status/world-rank-<N>.json)) is.
      - V(fail) fails it with that reason first (RV(summary.root_cause_kind) C(world)), V(warn) only says it in
        the summary's C(world), V(off) judges nothing.
    type: str
    choices: [fail, warn, 'off']
    default: fail
  lost_nodes:
    description:
      - Nodes of O(node_names) lost to the job (they did not answer and did not come back in time). The next attempt
        goes on without them, unless fewer than O(min_nodes) would remain. A lost launcher node's role moves to the
        surviving node holding the newest of O(checkpoints) (that node first in RV(next_hosts)), or without any to the
        first survivor (the job starts again), unless O(replicas=0) or O(launcher_stays) says why it cannot move.
    type: list
    elements: str
    default: []
  min_nodes:
    description: The fewest nodes the job may go on with after a restart without its lost nodes.
    type: int
    default: 1
  spares:
    description:
      - Spare nodes, provisioned and idle, in the order to use them. A lost node is replaced by the first one not
        among O(node_names), in its place (the same node rank); with none left it is left out.
    type: list
    elements: str
    default: []
  checkpoints:
    description:
      - Each node's checkpoints when the attempt ended (node name to the RV(multinode.training.job_collect#module:checkpoints)
        listing); the summary's C(checkpoints) say which nodes hold each one.
    type: dict
    default: {}
  replicas:
    description: How many nodes besides the launcher node got a copy of each checkpoint (C(launcher_checkpoint_replicas)).
    type: int
    default: 0
  launcher_stays:
    description: Why the launcher node's role cannot move to another node (the Slurm controller's node); empty when it can.
    type: str
    default: ""
  mlflow_tracking_uri:
    description:
      - MLflow tracking URI to log the run to (parameters, metrics per epoch, summary and report as artifacts);
        empty for none. A later job of the same name continues the same MLflow run.
    type: str
    default: ""
  mlflow_experiment:
    description: MLflow experiment of the run.
    type: str
    default: multinode-training
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
recorded:
  description:
    - What the run left for other tools, by name (C(report), C(tensorboard), C(mlflow)), each its path or MLflow
      run id, or C(not written) and why. Only after the last attempt, not in check mode.
  returned: when the last summary was written
  type: dict
  sample: {"report": "runs/job-1/report.html", "tensorboard": "runs/job-1/tensorboard"}
path:
  description: Path of the summary file (under C(attempts/<attempt>/) when the job is restarted).
  returned: always
  type: str
restart:
  description: Whether the job is to be relaunched from its newest checkpoint.
  returned: always
  type: bool
restarts:
  description: RV(summary.restarts).
  returned: always
  type: list
  elements: dict
next_hosts:
  description: The nodes of the next attempt, launcher first, when RV(restart) is true (else empty).
  returned: always
  type: list
  elements: str
  sample: [node1, node2, node4]
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
    root_cause_kind:
      description:
        - The kind of the first failure reason, null when the run succeeded; C(worker_lost), C(node_lost),
          C(connection), C(ssh_trust), C(signal), C(stall), C(teardown_race), C(exit), C(timeout), C(launcher), C(cancelled) or
          C(consequence).
      type: str
    root_cause_error:
      description:
        - The error the log of the rank the first reason names ends with (its uncaught exception's last line, a C++
          exception's C(what()), CPython's fatal error), the job's secret values in it as C(***); null when the first
          reason is not a rank's or its log ends without one.
      type: str
    attempt:
      description: Which attempt of the job this summary is of.
      type: int
    restarts:
      description:
        - One entry per automatic restart, C(attempt) (the one that failed), C(cause), C(kind), C(detected_at),
          C(resumed_at) (when the next attempt's first rank started), C(resumed_from), C(nodes).
      type: list
      elements: dict
    restart_verdict:
      description: Why a failed attempt was not restarted (or which restart it led to); only when it failed.
      type: str
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
