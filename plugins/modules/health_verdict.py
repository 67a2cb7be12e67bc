#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done by the action plugin plugins/action/health_verdict.py (on the controller, no module run);
# this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: health_verdict
short_description: Judge the health probe's figures of every node and write health.json
version_added: 0.1.0
description:
  - Reads each node's result of the health probe (C(roles/health/files/health_probe.py), run on every node at once
    as one rank of a gloo job) and judges the figures (C(module_utils/health.py)). A node is named when its compute
    (GFLOP/s), memory bandwidth or link (its send to the next node of a ring) is below O(fraction) of the fleet's
    median, when a figure is below its floor in O(floors) (also C(disk_free_gb) and C(memory_free_gb), default 1 GB
    each), when its Python, torch, Intel MPI version or MTU differs from the other nodes', when its clock is more
    than O(clock_skew) seconds off the fleet's, or when its probe failed.
  - Writes O(path) (every figure, the findings, the settings) and, beside it, C(health.html), a page with a table of
    every node's figures and the links measured as a matrix, the figures that failed marked; returns a table of the
    figures.
  - With O(cache) and O(cache_key), a check that passed is cached there and one that failed removes the cache.
    Without O(results), the task only looks for a cached check of O(hosts) made with O(cache_key) within
    O(max_age) seconds; when there is one it is judged as above and returned with RV(reused=true), else nothing is
    written and RV(reused) is false.
  - Runs on the controller, in Ansible's own process, whatever host the task is for.
author:
  - multinode.training team (@multinode-training)
attributes:
  check_mode:
    support: full
    description: Judges, writes nothing.
  diff_mode:
    support: none
    description: Not supported.
options:
  results:
    description:
      - Each node's result of the probe, by node, in rank order (rank 0's task result; the others' read back with the
        filter P(multinode.training.health_probe_outputs#filter) when rank 0's does not hold every node's figures).
      - Left out, the cached check is looked for instead (O(hosts), O(cache), O(cache_key), O(max_age)).
    type: dict
  hosts:
    description: The nodes a cached check must cover, in rank order (without O(results)).
    type: list
    elements: str
    default: []
  cache:
    description: The cache file on the controller (JSON); none without it.
    type: path
  cache_key:
    description: What the check was measured with (image, runtime, nodes, probe), as a digest; no cache without it.
    type: str
    default: ""
  max_age:
    description: Seconds a cached check stands for a new one (without O(results)); V(0) never reuses.
    type: int
    default: 0
  interfaces:
    description: Each node's cluster interface, named with its link.
    type: dict
    default: {}
  path:
    description: The health.json to write on the controller.
    type: path
    required: true
  fraction:
    description: A node below this fraction of the fleet's median compute, memory bandwidth or link is named.
    type: float
    default: 0.6
  floors:
    description: Absolute floors by figure (C(gflops), C(memory_gbps), C(link_gbps), C(disk_free_gb), C(memory_free_gb)).
    type: dict
    default: {}
  clock_skew:
    description: Seconds a node's clock may be off the fleet's median at the probe's barrier.
    type: float
    default: 2.0
"""

EXAMPLES = r"""
- name: Judge the figures
  multinode.training.health_verdict:
    results: "{{ dict(cluster.hosts | zip(cluster.hosts | map('extract', hostvars, 'health_probe_result'))) }}"
    path: runs/health-20261127-101500/health.json
  run_once: true
  register: health_verdict
"""

RETURN = r"""
reused:
  description: Whether the verdict is a cached check's (no probe ran).
  returned: always
  type: bool
age_seconds:
  description: Seconds since the reused check's figures were taken; null when they were measured now.
  returned: always
  type: float
check_id:
  description:
    - A new id for the check about to measure, which the probes' wrappers write around their output on the nodes, so
      that output a check before left there is not read as this one's.
  returned: without O(results), when no cached check stands
  type: str
  sample: 3f2b0c9e8d7a4c1b9e6f5a4d3c2b1a09
path:
  description: The health.json written.
  returned: when a verdict was made
  type: str
page:
  description: The same as one self-contained HTML page beside it (health.html), the figures that failed marked.
  returned: when a verdict was made
  type: str
status:
  description: V(passed) or V(failed).
  returned: when a verdict was made
  type: str
findings:
  description: What failed the gate, one sentence each, naming the node (and for a link its interface and peer).
  returned: when a verdict was made
  type: list
  elements: str
  sample: ["node3: compute (a float32 matrix multiply) 4.1 GFLOP/s, 71% below the fleet's median 14.2 GFLOP/s"]
figures:
  description: Every node's figures.
  returned: when a verdict was made
  type: dict
table:
  description: The figures as lines of a table, one node a line.
  returned: when a verdict was made
  type: list
  elements: str
"""
