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
  - multinode.training team (@multinode-training)
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
    description:
      - The tar file to write.
      - Omitted, a temporary file in the node's temporary directory, returned in RV(archive) and removed when it is at
        most O(inline_max_bytes), else left for the caller to fetch and remove (RV(archive_path)).
    type: path
  owner:
    description: User to give the tar file to (the connection's user, who fetches it).
    type: str
  inline_max_bytes:
    description:
      - Without O(dest), the largest archive returned in the module's result (RV(archive)) instead of as a file; so a
        small job's files come back in the module run itself, without a file transfer of their own.
    type: int
    default: 0
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
archive:
  description: The archive, base64-encoded, when O(dest) is omitted and it is at most O(inline_max_bytes).
  returned: when O(dest) is omitted and the archive is small enough
  type: str
  sample: dGVzdA==
archive_path:
  description: The archive's temporary file on the node, when O(dest) is omitted and the archive is too large to return.
  returned: when O(dest) is omitted and the archive is larger than O(inline_max_bytes)
  type: str
  sample: /tmp/multinode-collect-0a1b2c.tar
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
launcher:
  description:
    - How the launcher container ended, before it was removed; C(running=true) means it was still running after
      O(launcher_stop_wait) seconds (and was stopped by the removal). C(removed) is missing in check mode.
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
  returned: when O(keep_jobs) is given, outside check mode
  type: list
  elements: str
  sample: ["20261101-120000-torchrun"]
"""

import base64
import os
import pwd
import tempfile
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import (
    checkpoint_replica,
    docker_api,
    job_files,
    node_state,
    prune,
    rank_contract,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            job_dir=dict(type="path", required=True),
            work_dir=dict(type="path", required=True),
            output_dir=dict(type="path", required=True),
            outputs=dict(type="bool", default=False),
            launcher=dict(type="bool", default=False),
            dest=dict(type="path"),
            owner=dict(type="str"),
            inline_max_bytes=dict(type="int", default=0),
            worker_container=dict(type="str"),
            worker_pid_file=dict(type="path"),
            launcher_container=dict(type="str"),
            launcher_stop_wait=dict(type="int", default=30),
            keep_jobs=dict(type="int"),
            checkpoint_dir=dict(type="path"),
            docker_socket=dict(type="path", default="/var/run/docker.sock"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["keep_jobs"] is not None and (error := prune.keep_error(params["keep_jobs"])):
        module.fail_json(msg=error)
    result: dict[str, Any] = {}
    if params["launcher_container"]:
        wait_began = time.monotonic()
        result["launcher"] = docker_api.stopped_container(
            params["launcher_container"], params["docker_socket"], params["launcher_stop_wait"]
        )
        if warning := job_files.slow_launcher_end(time.monotonic() - wait_began, result["launcher"]["running"]):
            module.warn(warning)
    for rank in rank_contract.ranks_that_left_a_process(os.path.join(params["job_dir"], "logs")):
        module.warn(
            f"rank {rank}: a process the rank left behind held its output open (a server or daemon it started): the"
            " job did not wait for it, it may still run on the node, and what it printed after the rank's end is not kept"
        )
    paths = job_files.job_files(
        params["job_dir"], params["work_dir"], params["output_dir"], outputs=params["outputs"], launcher=params["launcher"]
    )
    if params["checkpoint_dir"]:
        result["checkpoints"] = checkpoint_replica.entries(params["checkpoint_dir"])
    if params["worker_container"]:
        details = docker_api.container_details(params["worker_container"], params["docker_socket"])
        result["worker"] = {"what": "worker container", **details}
    elif params["worker_pid_file"]:
        result["worker"] = {"what": "worker sshd", "running": node_state.process_state(params["worker_pid_file"]) == "running"}
    # Packed last but the tidy-up (which fails nothing): an archive left for the caller is never orphaned by a failure.
    size = 0
    if not module.check_mode:
        try:
            size = _pack(params, paths, result)
        except (OSError, KeyError) as exc:
            module.fail_json(msg=f"cannot pack the job's files on this node: {exc}")
    result.update(changed=not module.check_mode, files=len(paths), bytes=size)
    if not module.check_mode:
        try:
            _tidy_up(params, result)
        except OSError as exc:  # the archive is still worth fetching: the logs say what happened to the job
            module.warn(f"could not tidy up after packing: {exc}")
    module.exit_json(**result)


def _pack(params: dict[str, Any], paths: list[str], result: dict[str, Any]) -> int:
    """The archive at O(dest), else in a temporary file: returned in ``result`` (``archive``) when small enough, else
    left for the caller (``archive_path``); the files' total size."""
    if params["dest"]:
        return _write_archive(params, paths, params["dest"])
    handle, temporary = tempfile.mkstemp(prefix="multinode-collect-", suffix=".tar")
    os.close(handle)
    try:
        size = _write_archive(params, paths, temporary)
        if os.path.getsize(temporary) > params["inline_max_bytes"]:
            result["archive_path"] = temporary
            return size
        with open(temporary, "rb") as archive:
            result["archive"] = base64.b64encode(archive.read()).decode("ascii")
    except BaseException:
        os.remove(temporary)
        raise
    os.remove(temporary)
    return size


def _write_archive(params: dict[str, Any], paths: list[str], destination: str) -> int:
    """The tar at ``destination``, the connection user's (O(owner)), readable by it only; the files' total size."""
    size = job_files.pack(params["job_dir"], paths, destination)
    if params["owner"]:
        user = pwd.getpwnam(params["owner"])
        os.chown(destination, user.pw_uid, user.pw_gid)
    os.chmod(destination, 0o600)
    return size


def _tidy_up(params: dict[str, Any], result: dict[str, Any]) -> None:
    """Remove the stopped launcher container and the oldest job directories, as asked."""
    if params["launcher_container"]:
        result["launcher"]["removed"] = docker_api.remove_container(params["launcher_container"], params["docker_socket"])
    if params["keep_jobs"] is not None:
        jobs_dir, job_id = os.path.split(params["job_dir"].rstrip("/"))
        result["pruned"] = prune.prune(jobs_dir, params["keep_jobs"], frozenset([job_id]))[0]


if __name__ == "__main__":
    main()
