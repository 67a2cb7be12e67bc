#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: job_pack
short_description: Pack what a training job left on a node into one tar file
description:
  - Packs the job's rank wrapper (C(rank.sh)), on the launcher node its C(hostfile) and C(launch.sh), its C(logs/) and
    C(status/) and, with O(outputs=true), its output directory and the files the ranks wrote in their working
    directory (newer than C(rank.sh)), named relative to O(job_dir).
  - The multinode.training.job_collect action runs it and brings the file to the controller; it is rarely useful
    alone.
author:
  - multinode.training team
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - multinode.training.job_files
attributes:
  check_mode:
    support: full
    details: In check mode nothing is written; RV(files) says what would be packed.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  dest:
    description: The tar file to write.
    type: path
    required: true
  owner:
    description: User to give the tar file to (the connection's user, who fetches it).
    type: str
  docker_socket:
    description: The Docker daemon's socket, for O(worker_container).
    type: path
    default: /var/run/docker.sock
"""

EXAMPLES = r"""
- name: Pack job-1's files on this node
  multinode.training.job_pack:
    job_dir: /opt/multinode/sim/work/jobs/job-1
    work_dir: /opt/multinode/sim/work/jobs/job-1/work
    output_dir: /opt/multinode/sim/work/jobs/job-1/outputs
    outputs: true
    launcher: true
    dest: /tmp/job-1.tar
"""

RETURN = r"""
files:
  description: How many files were packed.
  returned: always
  type: int
  sample: 12
bytes:
  description: Their total size.
  returned: always
  type: int
  sample: 40960
worker:
  description:
    - How the node's worker came through the job; C(what) says which. For a container, C(present), C(running),
      C(exit_code) and C(oom_killed); for the host sshd, C(running).
  returned: when O(worker_container) or O(worker_pid_file) is given
  type: dict
  sample: {"what": "worker container", "present": true, "running": true, "exit_code": 0, "oom_killed": false}
"""

import os
import pwd

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import job_files, node_state


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            job_dir=dict(type="path", required=True),
            work_dir=dict(type="path", required=True),
            output_dir=dict(type="path", required=True),
            outputs=dict(type="bool", default=False),
            launcher=dict(type="bool", default=False),
            dest=dict(type="path", required=True),
            owner=dict(type="str"),
            worker_container=dict(type="str"),
            worker_pid_file=dict(type="path"),
            docker_socket=dict(type="path", default="/var/run/docker.sock"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    paths = job_files.job_files(
        params["job_dir"], params["work_dir"], params["output_dir"], outputs=params["outputs"], launcher=params["launcher"]
    )
    size = 0
    if not module.check_mode:
        size = job_files.pack(params["job_dir"], paths, params["dest"])
        if params["owner"]:
            user = pwd.getpwnam(params["owner"])
            os.chown(params["dest"], user.pw_uid, user.pw_gid)
        os.chmod(params["dest"], 0o600)
    result = dict(changed=not module.check_mode, files=len(paths), bytes=size)
    if params["worker_container"]:
        details = node_state.container_details(params["worker_container"], params["docker_socket"])
        result["worker"] = {"what": "worker container", **details}
    elif params["worker_pid_file"]:
        result["worker"] = {"what": "worker sshd", "running": node_state.process_state(params["worker_pid_file"]) == "running"}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
