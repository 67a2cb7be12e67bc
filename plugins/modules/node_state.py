#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_state
short_description: Tell whether provisioning a node again would change nothing, and record it when it is done
description:
  - With O(state=check), compares the node's record of its last successful provisioning run with now. The record
    holds the hash of that run's inputs (O(inputs)) and one hash per thing that can drift on the node; every file
    under O(trees) (mode, owner and content), each container of O(containers) (running, and its image), each image
    of O(images) and each process of O(pid_files). RV(unchanged) is true only when the inputs and every part are the same;
    RV(differences) names what is not.
  - With O(state=record), stores the record for O(inputs) and the node as it is now. Run it after the node was
    provisioned in full without a failure.
  - The action plugin of the same name computes O(inputs) on the controller when it is not given (the variables of
    the provisioning roles as this host sets them, the cluster facts, the training image tarball's size and time,
    and the collection's own files), so any change of the run's inputs forces a full provisioning run.
  - Uses the Docker daemon's API over its unix socket directly; no Docker SDK is needed.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode O(state=record) writes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  path:
    description: The record file on the node (root only, mode 0600).
    type: path
    required: true
  state:
    description: C(check) compares, C(record) stores.
    type: str
    choices: [check, record]
    default: check
  inputs:
    description: Hash of the provisioning run's inputs; computed on the controller by the action plugin when omitted.
    type: str
  observed:
    description:
      - The node as multinode.training.node_facts observed it earlier in the run
        (its RV(multinode.training.node_facts#module:ansible_facts.multinode_node.provisioning),
        with O(multinode.training.node_facts#module:watch) set to this check's record and watched things).
        With it, O(state=check) compares on the controller and runs nothing on the node (action plugin only); when it does not answer this check (another
        record path or other watched things) the module runs as without it.
    type: dict
  roles:
    description: The provisioning roles whose variables make up O(inputs) (action plugin only).
    type: list
    elements: str
    default: [oneapi, host_runtime, container_runtime, gpu_drivers, ssh_mesh, workers, slurm]
  trees:
    description: Directories whose files are watched.
    type: list
    elements: path
    default: []
  containers:
    description: Names of containers whose state and image are watched.
    type: list
    elements: str
    default: []
  images:
    description: Image names (tags) whose image ids are watched.
    type: list
    elements: str
    default: []
  pid_files:
    description: Pid files whose processes are watched.
    type: list
    elements: path
    default: []
  docker_socket:
    description: The Docker daemon's socket.
    type: path
    default: /var/run/docker.sock
"""

EXAMPLES = r"""
- name: Is provisioning this node again a no-op?
  multinode.training.node_state:
    path: /var/lib/multinode-training/sim/provisioned.json
    trees: [/opt/multinode/sim/ssh]
    containers: [sim-worker]
  register: provisioned

- name: Nothing to do on this node
  ansible.builtin.meta: end_host
  when: provisioned.unchanged
"""

RETURN = r"""
unchanged:
  description: Whether the record matches the inputs and the node (O(state=check)).
  returned: always
  type: bool
differences:
  description: What differs from the record, in words.
  returned: always
  type: list
  elements: str
  sample: ["container sim-worker: running sha256:4f2... -> absent"]
engine_down:
  description:
    - The node's container engine does not answer (a container of O(containers) or an image of O(images) reads
      C(no daemon)); the node restarted without it, or Docker was stopped.
  returned: always
  type: bool
inputs:
  description: The inputs hash compared or recorded.
  returned: always
  type: str
observed:
  description: The check was answered from O(observed), on the controller, without running on the node.
  returned: when so
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import node_state


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", choices=["check", "record"], default="check"),
            inputs=dict(type="str"),
            observed=dict(type="dict"),
            roles=dict(type="list", elements="str", default=["oneapi", "host_runtime", "container_runtime", "gpu_drivers", "ssh_mesh", "workers", "slurm"]),
            **node_state.WATCHED_OPTIONS,
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not params["inputs"]:
        module.fail_json(msg="inputs is missing: run this module through its action plugin, which computes it")
    parts = node_state.watched_parts(params)
    found = node_state.differences(node_state.read_record(params["path"]), params["inputs"], parts)
    changed = False
    if params["state"] == "record" and found:
        changed = True
        if not module.check_mode:
            node_state.write_record(params["path"], node_state.new_record(params["inputs"], parts))
    module.exit_json(
        changed=changed,
        unchanged=not found,
        differences=found,
        engine_down=node_state.engine_down(parts),
        inputs=params["inputs"],
    )


if __name__ == "__main__":
    main()
