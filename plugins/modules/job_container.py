#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: job_container
short_description: Start a job's launcher container, replacing one of the same name, in two Docker API calls
description:
  - Removes the container O(name) if there is one (stopping it), creates it from O(image) on the host network with an
    init process, and starts it, talking to the Docker daemon's socket directly.
  - It does what community.docker.docker_container with C(recreate=true) and C(state=started) does for this one
    shape of container, without the Docker SDK and without comparing an existing container's configuration (a job's
    launcher container is always new). That keeps the start of every job short; for anything else use
    community.docker.docker_container.
author:
  - multinode.training team
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode nothing is removed, created or started; the result says it would be.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  name:
    description: Container name.
    type: str
    required: true
  image:
    description: Image to run (present on the node).
    type: str
    required: true
  command:
    description: The container's command, as an argv list.
    type: list
    elements: str
    required: true
  user:
    description: User (name, uid or C(uid:gid)) the command runs as.
    type: str
  working_dir:
    description: Working directory of the command.
    type: str
  volumes:
    description: Bind mounts, as C(host path:container path[:options]).
    type: list
    elements: str
    default: []
  devices:
    description: Device paths passed through at the same path, with C(rwm) access.
    type: list
    elements: path
    default: []
  groups:
    description: Supplementary groups (names or GIDs) of the container's user.
    type: list
    elements: str
    default: []
  labels:
    description: Labels of the container.
    type: dict
    default: {}
  docker_socket:
    description: The Docker daemon's socket.
    type: path
    default: /var/run/docker.sock
"""

EXAMPLES = r"""
- name: Start the launcher container of job-1
  multinode.training.job_container:
    name: multinode-launcher
    image: multinode/training:latest
    user: "1000:1000"
    command: [timeout, --kill-after=30, "1800", bash, /opt/work/jobs/job-1/launch.sh]
    working_dir: /opt/work/jobs/job-1/work
    volumes:
      - /opt/multinode/ssh/client:/home/mlops/.ssh:ro
      - /opt/work:/opt/work:rw
    labels:
      multinode.job: job-1
"""

RETURN = r"""
container_id:
  description: Id of the started container (empty in check mode).
  returned: always
  type: str
  sample: 4fec016c42bd0c3b9c5f2bd3c2a1e7a7b1d9a3b0c4d5e6f708192a3b4c5d6e7f
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import node_state


def create_config(params: dict[str, Any]) -> dict[str, Any]:
    """The Docker API's create body for the module's parameters."""
    return {
        "Image": params["image"],
        "Cmd": params["command"],
        "User": params["user"] or "",
        "WorkingDir": params["working_dir"] or "",
        "Labels": {str(key): str(value) for key, value in params["labels"].items()},
        "HostConfig": {
            "NetworkMode": "host",
            "Init": True,
            "Binds": params["volumes"],
            "Devices": [{"PathOnHost": path, "PathInContainer": path, "CgroupPermissions": "rwm"} for path in params["devices"]],
            "GroupAdd": params["groups"],
        },
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            image=dict(type="str", required=True),
            command=dict(type="list", elements="str", required=True),
            user=dict(type="str"),
            working_dir=dict(type="str"),
            volumes=dict(type="list", elements="str", default=[]),
            devices=dict(type="list", elements="path", default=[]),
            groups=dict(type="list", elements="str", default=[]),
            labels=dict(type="dict", default={}),
            docker_socket=dict(type="path", default="/var/run/docker.sock"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    container_id = ""
    if not module.check_mode:
        try:
            container_id = node_state.start_container(params["name"], create_config(params), params["docker_socket"])
        except OSError as exc:
            module.fail_json(msg=str(exc))
    module.exit_json(changed=True, container_id=container_id)


if __name__ == "__main__":
    main()
