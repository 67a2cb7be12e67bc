#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done by the action plugin plugins/action/requirements_layer.py (on the controller, no module run);
# this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: requirements_layer
short_description: Build a workload's requirements into a layer over the nodes' training environment
version_added: 0.1.0
description:
  - Resolves the requirements file O(requirements) with pip, on the controller, for the nodes' Python and platform
    (O(probes), binary wheels only), first with every package of the training environment held at the version the
    nodes have, so that those are not installed again; when that cannot be satisfied, freely.
  - Installs the packages the environment lacks, or has at another version, into O(cache_dir)C(/<key>/site)
    (C(pip install --target), console scripts in C(site/bin)). The nodes put that directory first on every rank's
    C(PYTHONPATH); the environment stays underneath.
  - Installs exactly the files the resolution chose, from where it chose them - each by the hash pip reported for
    it (C(--require-hashes)), with the file's own options (C(--index-url), C(--extra-index-url), C(--find-links),
    C(--trusted-host), and those of the files it includes) - so another index cannot serve another wheel under the
    same name and version. The file's C(--hash) lines are honoured; a file whose hash is not among them fails the
    task naming the package, before anything is shipped to a node.
  - A file that names its own index (C(--index-url) or C(--no-index)) is resolved and installed from the places it
    names alone; the controller's pip sources (C(index-url), C(extra-index-url), C(find-links), C(no-index) of its
    configuration files and C(PIP_*) variables) are left out, its other pip settings (certificates, proxy,
    timeouts) kept. A file that only adds places (C(--extra-index-url), C(--find-links)) adds them to the
    controller's.
  - The key names the layer by the file's content and O(environment); a layer that exists is returned as it is
    (RV(built) false, nothing run). A layer is built in a scratch directory and moved into place, never left half
    built.
  - Without O(probes), returns the key and whether the controller has the layer (RV(ready)), and builds nothing.
  - Fails naming the requirements pip cannot find, and the nodes they were for, and naming each package whose
    hash did not match. Warns by name about each package of the environment that the layer replaces with another
    version.
  - Runs on the controller, in Ansible's own process, whatever host the task is for.
author:
  - multinode.training team (@multinode-training)
attributes:
  check_mode:
    support: full
    description: Reports the key and whether the layer would be built; builds nothing.
  diff_mode:
    support: none
    description: Not supported.
options:
  requirements:
    description: The requirements file on the controller (pip's format).
    type: path
    required: true
  environment:
    description: The identity of the training environment the layer sits on (for example the runtime and the
      image); part of the key.
    type: str
    required: true
  probes:
    description:
      - The probes of the training environment on the nodes that need the layer, by node, as the role takes them
        with RV(probe_script); each has C(python) (major.minor), C(machine), C(libc_version) and C(packages) (name
        to version). The layer is built for them; the build fails naming the nodes and what differs when they do
        not agree. Without it, nothing is built.
    type: dict
  cache_dir:
    description: The controller directory that holds the layers, one subdirectory per key.
    type: path
    required: true
  python:
    description: The controller's Python with pip that resolves and installs (default the one running Ansible).
    type: str
"""

EXAMPLES = r"""
- name: Build the layer of the workload's requirements
  multinode.training.requirements_layer:
    requirements: "{{ workload_src }}/requirements.txt"
    environment: "container:multinode/training:latest"
    probes: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'probe'))) }}"
    cache_dir: ~/.cache/multinode-training/layers
  run_once: true
  register: layer
"""

RETURN = r"""
key:
  description: The layer's key (the requirements' content and the environment).
  returned: always
  type: str
  sample: 3f9c2a1b7d5e4c60
path:
  description: The layer's directory on the controller.
  returned: always
  type: str
site:
  description: The directory to put on C(PYTHONPATH) (its C(bin) on C(PATH)).
  returned: always
  type: str
stamp_file:
  description: The file in the layer's directory that says it is complete (it holds the key).
  returned: always
  type: str
  sample: .multinode-layer
probe_script:
  description: The Python code that, run by the nodes' training Python, prints one of the O(probes) (JSON).
  returned: always
  type: str
ready:
  description: Whether the controller had the layer already.
  returned: always
  type: bool
built:
  description: Whether this run built the layer.
  returned: always
  type: bool
install:
  description: The packages the layer holds, as C(name==version).
  returned: always
  type: list
  elements: str
  sample: ["einops==0.8.2"]
replaced:
  description: The environment's packages the layer holds at another version (C(name old -> new)).
  returned: always
  type: list
  elements: str
"""
