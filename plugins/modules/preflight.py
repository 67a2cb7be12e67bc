#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done on the controller by the action plugin plugins/action/preflight.py; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: preflight
short_description: Judge every input of a training run on the controller, before any node changes
description:
  - Runs on the controller only; connects to no node and changes nothing.
  - Validates the variables every host of the play sets (inventory, group and extra vars) against the argument
    specs of the run's roles (types, choices), then against the ranges and character sets an argument spec cannot
    say (ports 1-65535, timeouts > 0, numeric ids, ranks per node >= 1 or C(auto), environment variable names, and
    names that end up in container names, paths or shell contexts).
  - Refuses a cluster-wide input (of the cluster contract, the workload or the job) that hosts set to different
    values; only a node's own address, interface, ranks per node, threads and C(launcher_env) may differ.
  - Refuses a provisioning, launch or attach run (one whose play sets C(multinode_phase)) that leaves out a node of
    the launcher or workers group (with C(--limit)), since such a run takes every node of those groups.
  - Checks the inventory's shape (exactly one launcher, not also a worker; host names usable in paths and unique
    regardless of case; no two hosts on the same SSH endpoint or worker sshd endpoint) and that the training code
    directory, the training script in it, the data set directory and the runs directory are usable on the
    controller.
  - Reports every problem at once, each naming the variable, the hosts and what is allowed, and fails if there is
    any. Use it once per play (C(run_once)) in a play with C(any_errors_fatal), so no host goes on.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  roles:
    description: Roles of this collection whose argument specs judge the hosts' variables. Empty means every role
      a training run uses.
    type: list
    elements: str
    default: []
  launcher_group:
    description: Inventory group holding the launcher node.
    type: str
    default: launcher
  workers_group:
    description: Inventory group holding the other nodes.
    type: str
    default: workers
  scope:
    description:
      - C(run) judges a run on an inventory of nodes (the values, that the hosts agree on every cluster-wide input,
        the inventory's shape and the controller's paths).
      - C(job) judges only the values the play's hosts set, with the same rules and words; for the Kubernetes entry
        point, whose only host is the controller and whose script is in its image. It also judges what the Kubeflow
        operators would refuse of the job's values taken together (a kind that does not run C(launcher_type), a rank
        variable the operator or a claim sets, both claims on one path, a placeholder without its claim, the custom
        resource's and its pods' names), so the rendering that follows judges nothing itself.
    type: str
    choices: [run, job]
    default: run
"""

EXAMPLES = r"""
- name: Judge the run's inputs before anything changes
  multinode.training.preflight:
    launcher_group: launcher
    workers_group: workers
  run_once: true

- name: Judge a job's inputs (no inventory of nodes), as an SSH run would
  multinode.training.preflight:
    roles: [launcher]
    scope: job
"""

RETURN = r"""
problems:
  description: Every problem found, each naming the hosts, the variable and what is allowed. Empty when all is valid.
  returned: always
  type: list
  elements: str
  sample: ["host node2: cluster_ssh_port: 70000 is not allowed; use a port from 1 to 65535"]
checked_hosts:
  description: Number of hosts whose variables were judged.
  returned: always
  type: int
  sample: 3
host_wheels:
  description:
    - The wheels in C(host_runtime_wheelhouse) on the controller that a provisioning run in host mode installs on the
      nodes (file names, sorted), for the first play's check that each node's Python has a wheel of every package
      there. V(null) for any other run.
  returned: when O(scope=run)
  type: list
  elements: str
  sample: ["numpy-2.3.5-cp311-cp311-manylinux_2_27_x86_64.whl", "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"]
"""
