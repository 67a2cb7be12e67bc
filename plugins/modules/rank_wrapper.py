#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: rank_wrapper
short_description: Write the wrapper every rank of a training job runs under
description:
  - Writes C(rank.sh), the bash script every rank runs under on this node, whatever launcher started it
    (C(torchrun), Intel MPI C(mpiexec.hydra), Open MPI C(mpirun)).
  - It exports O(env) (threads, tuning, interface variables), then the standard launch contract C(RANK),
    C(WORLD_SIZE), C(LOCAL_RANK), C(LOCAL_WORLD_SIZE), C(GROUP_RANK), C(MASTER_ADDR), C(MASTER_PORT), each taken
    from the launcher's own variables (C(OMPI_COMM_WORLD_*), C(PMI_*), C(MPI_LOCALRANKID), C(MPI_LOCALNRANKS)) when
    the launcher does not set it, else from this node's defaults; then the per-rank variables of O(backend); then
    C(JOB_ID), C(OUTPUT_DIR), C(CHECKPOINT_DIR), C(RESUME_FROM) and C(DATA_DIR).
  - The rank runs in O(work_dir) and dies with its wrapper; its output is also appended to
    C(<job_dir>/logs/rank-<RANK>.log); its start and exit (code, signal, whether it was stopped by a passed-on
    SIGTERM/SIGINT/SIGHUP) are recorded in C(<job_dir>/status/rank-<RANK>.json).
  - Needs bash and util-linux's C(setpriv) on the node (or in the image).
  - Also writes the rank exit guard, C(<job_dir>/python/sitecustomize.py), which the wrapper puts first on every
    rank's C(PYTHONPATH). With it a rank ending normally leaves a gloo process group its script left open before
    Python is torn down (gloo's exit race, pytorch/pytorch#117762), then the next C(sitecustomize) on the path runs.
  - The files are only rewritten, atomically, when their content differs.
  - Before writing it, sets up the job on the node in the same call; the missing O(directories) are created (owned
    by O(owner):O(group), mode 0750) and O(code_dir) is copied to O(work_dir) (modes and modification times kept, so
    what the ranks write there afterwards is told apart by its time) unless O(work_dir) exists.
  - With O(sync), first brings the node's copy of the training code (and data set) in line with the controller's, in
    the same module run (as multinode.training.mirror does), so a job whose code did not change syncs it in no module
    run of its own. Its action plugin lists the controller's directories and, when files differ, sends them and runs the
    set-up again, which unpacks them.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  path:
    description: Where to write the wrapper. Its directory must exist or be one of O(directories).
    type: path
    required: true
  node:
    description: Inventory name of this node, recorded with each rank. Letters, digits and C(._:@+-) only.
    type: str
    required: true
  node_index:
    description: Position of this node in the job's host list; C(GROUP_RANK) when the launcher does not set it.
    type: int
    required: true
  slots:
    description: Ranks on this node; C(LOCAL_WORLD_SIZE) when the launcher does not set it.
    type: int
    required: true
  master_addr:
    description: Address of rank 0's node; C(MASTER_ADDR) when the launcher does not set it.
    type: str
    required: true
  master_port:
    description: C(MASTER_PORT) when the launcher does not set it.
    type: int
    default: 29500
  job_id:
    description: The job's id (C(JOB_ID)).
    type: str
    required: true
  job_dir:
    description: The job's directory on this node; its C(logs) and C(status) subdirectories must exist.
    type: path
    required: true
  work_dir:
    description: Working directory of the rank.
    type: path
    required: true
  output_dir:
    description: C(OUTPUT_DIR).
    type: path
    required: true
  checkpoint_dir:
    description: C(CHECKPOINT_DIR).
    type: path
    required: true
  resume_from:
    description: C(RESUME_FROM), the checkpoint to resume from; empty for none.
    type: str
    default: ""
  data_dir:
    description: C(DATA_DIR); empty for none.
    type: str
    default: ""
  env:
    description:
      - Variables exported before the contract (for example C(OMP_NUM_THREADS) and the interface variables).
      - A variable whose name looks secret (a C(_)-separated part that is or ends with TOKEN, KEY, SECRET, PASSWORD,
        PASSWD, PASS, PWD, PASSPHRASE, CRED, AUTH, PAT or CREDENTIAL) or is in O(secret_env_names), or whose value
        holds a URL with a password in it (V(scheme://user:password@host)), is not written into O(path); it goes to
        C(<job_dir>/secret.env), mode C(0600) with the wrapper's owner, which the wrapper sources; its value is
        masked in the module's result.
    type: dict
    default: {}
  secret_env_names:
    description: Names in O(env) that are secret besides those that look it.
    type: list
    elements: str
    default: []
  env_script:
    description: Script sourced first (the host-mode oneAPI and Python environment); empty for none.
    type: path
    default: ""
  backend:
    description:
      - The job's collective backend (the launcher role's C(launcher_backend)); empty for none.
      - With V(xccl) (PyTorch's backend for Intel GPUs, on oneCCL) every rank also gets C(CCL_LOCAL_RANK) =
        C(LOCAL_RANK) and C(CCL_LOCAL_SIZE) = C(LOCAL_WORLD_SIZE), where oneCCL reads its place on the node when
        C(CCL_PROCESS_LAUNCHER=none). The other backends add nothing.
    type: str
    choices: ["", gloo, ccl, mpi, xccl]
    default: ""
  directories:
    description: Directories of the job to create first when missing (the job directory, C(logs), C(status), ...).
    type: list
    elements: path
    default: []
  code_dir:
    description: The training code on this node, copied to O(work_dir) when O(work_dir) does not exist; empty for none.
    type: path
    default: ""
  fresh:
    description:
      - First remove what an earlier run of the same job id left in O(job_dir) (its logs, rank status, copy of the
        code, outputs and launch files; everything but O(checkpoint_dir)), so a re-run with the same id reads and
        runs nothing of the earlier one. A job id used for the first time has nothing to remove.
    type: bool
    default: false
  restart:
    description:
      - The job is restarted (its next attempt). Removes what the failed attempt logged, which the next one must not
        read (its logs, rank status, stop file, process ids), and keeps its copy of the code, outputs and checkpoints.
    type: bool
    default: false
  python_path:
    description:
      - Directories put first on every rank's C(PYTHONPATH) (their C(bin) first on C(PATH)), before the training
        environment's own packages (the workload's requirements layer, see multinode.training.requirements_layer).
    type: list
    elements: path
    default: []
  stack_dump_after:
    description:
      - Seconds a rank may go without progress (output or CPU time) before its watcher dumps its Python stacks with
        C(py-spy dump) into C(<job_dir>/logs/stack-rank-<RANK>.txt); V(0) never. Every C(5) seconds the watcher also
        reports the rank's state and CPU seconds on the launcher's stream (the stall watchdog of
        multinode.training.job_wait reads them).
    type: int
    default: 0
  ready_token:
    description:
      - Written last to C(<job_dir>/ready), once the node is set up (letters, digits, C(.), C(_) and C(-)). A launch
        script written with multinode.training.launch_script's
        O(multinode.training.launch_script#module:wait_ready=true) waits on every node before any rank starts until
        it holds the token of the launcher node, whose set-up wrote its own before the launch. Empty, nothing is
        written.
    type: str
    default: ""
  launch:
    description:
      - On the launcher node, launch the job in the same module run, once this node is set up. The value holds the
        options of multinode.training.launch_script (checked as that module checks them), whose launch script and hostfile get
        this module's O(owner) and O(group), the script also its O(mode). With C(container) the launcher container
        starts here, so the job starts one module run sooner; give every node's set-up the same O(ready_token) and
        the launch C(wait_ready=true), so that the script waits for every other node's set-up.
      - Omitted, nothing is launched.
    type: dict
  sync:
    description:
      - Node directories made mirrors of controller directories before the set-up (the training code that O(code_dir)
        names, the data set), with the options of multinode.training.mirror. Files that differ are sent in one archive
        per directory and the set-up runs once more; nothing differing, it costs no module run of its own.
      - Omitted, nothing is synced.
    type: dict
    suboptions:
      trees:
        description: Each directory to mirror.
        type: list
        elements: dict
        required: true
        suboptions:
          src:
            description: The controller directory (symbolic links followed; only regular files are mirrored).
            type: path
          dest:
            description: The node directory, created with its parents when missing.
            type: path
            required: true
          files:
            description:
              - The listing of O(sync.trees[].src) (by relative path, each a dict of C(size), C(mtime) and
                C(executable)), which the action plugin fills in on the controller; not set by hand.
            type: dict
            default: {}
      directories:
        description: More directories to create, with the same owner and mode (V(0750)), such as the jobs directory.
        type: list
        elements: path
        default: []
      owner:
        description: Numeric uid of every mirrored file and directory.
        type: int
        required: true
      group:
        description: Numeric gid of every mirrored file and directory.
        type: int
        required: true
      archives:
        description:
          - By O(sync.trees[].dest), a tar file on the node holding the files of that tree to unpack before the comparison
            (with the listing's modification times). The action plugin sets it; not set by hand.
        type: dict
        default: {}
      retime:
        description:
          - By O(sync.trees[].dest), files of another modification time whose content the controller found equal to
            its own; they get the listing's time before the comparison. The action plugin sets it; not set by hand.
        type: dict
        default: {}
"""

EXAMPLES = r"""
# Every node of job-1 set up at once; node1 also launches the job in the same module run (job1_launch holds
# multinode.training.launch_script's options, with wait_ready: true), and its launch script waits on each node for
# that node's ready token before any rank starts.
- name: Set up job-1 on every node, and launch it from node1 as soon as node1 is set up
  multinode.training.rank_wrapper:
    path: /opt/multinode/lab/work/jobs/job-1/rank.sh
    node: "{{ inventory_hostname }}"
    node_index: "{{ ansible_play_hosts_all.index(inventory_hostname) }}"
    slots: 2
    master_addr: 10.0.0.11
    job_id: job-1
    job_dir: /opt/multinode/lab/work/jobs/job-1
    work_dir: /opt/multinode/lab/work/jobs/job-1/work
    output_dir: /opt/multinode/lab/work/jobs/job-1/outputs
    checkpoint_dir: /opt/multinode/lab/work/checkpoints/digits
    env:
      OMP_NUM_THREADS: "16"
      GLOO_SOCKET_IFNAME: eth1
    ready_token: job-1-1-20261128T024301
    launch: "{{ job1_launch if inventory_hostname == 'node1' else omit }}"
    owner: "1000"
    group: "1000"
    mode: "0750"
"""

RETURN = r"""
cleared:
  description: What an earlier run of the same job id had left and was removed (O(fresh)).
  returned: always
  type: list
  elements: str
  sample: ["/opt/multinode/lab/work/jobs/job-1/logs", "/opt/multinode/lab/work/jobs/job-1/status"]
created:
  description: The directories created, and O(work_dir) when the code was copied there.
  returned: always
  type: list
  elements: str
  sample: ["/opt/multinode/lab/work/jobs/job-1", "/opt/multinode/lab/work/jobs/job-1/work"]
path:
  description: Path of the wrapper.
  returned: always
  type: str
  sample: /opt/multinode/lab/work/jobs/job-1/rank.sh
content:
  description: The rendered wrapper.
  returned: always
  type: str
  sample: "#!/bin/bash\n..."
sync:
  description:
    - What O(sync) did on the node (as multinode.training.mirror returns it), and by node directory the files sent
      (C(sent); in check mode, the files that would be).
  returned: when O(sync) is given
  type: dict
  sample:
    trees: {"/opt/multinode/lab/work/code": {"to_send": [], "to_verify": {}, "removed": [], "fixed": [], "written": []}}
    created: []
    changed: false
    sent: {}
sync_pending:
  description:
    - The node's files differed from the controller's (O(sync)) and nothing else was done yet; the action plugin sends
      them and runs the set-up again, so a task never ends with it.
  returned: when O(sync) found files to send, before they were sent
  type: bool
  sample: true
launch:
  description:
    - The launch's result, as multinode.training.launch_script returns it (C(path), C(content), C(argvs), C(hostfile),
      C(hostfile_dialect), C(container_id)).
  returned: when O(launch) is given
  type: dict
  sample: {"path": "/opt/multinode/lab/work/jobs/job-1/launch.sh", "hostfile_dialect": "intelmpi", "container_id": "4f1c..."}
"""

import grp
import inspect
import os
import pwd
import re
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import events, job_files, launch_files, mirror, rank_exit_guard
from ansible_collections.multinode.training.plugins.module_utils.files import ensure_content
from ansible_collections.multinode.training.plugins.module_utils.launch import TRAINING_BACKENDS
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import (
    JobPaths,
    NodeDefaults,
    exit_guard_dir,
    render_rank_wrapper,
    render_secret_env,
)


# The job's secret variables on each node, beside rank.sh, which sources them.
SECRET_ENV_FILE = "secret.env"
# The token is passed as a word to each node's shell by the launch script's SSH check.
READY_TOKEN = re.compile(r"[A-Za-z0-9._-]*")


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            node=dict(type="str", required=True),
            node_index=dict(type="int", required=True),
            slots=dict(type="int", required=True),
            master_addr=dict(type="str", required=True),
            master_port=dict(type="int", default=29500),
            job_id=dict(type="str", required=True),
            job_dir=dict(type="path", required=True),
            work_dir=dict(type="path", required=True),
            output_dir=dict(type="path", required=True),
            checkpoint_dir=dict(type="path", required=True),
            resume_from=dict(type="str", default=""),
            data_dir=dict(type="str", default=""),
            env=dict(type="dict", default={}),
            env_script=dict(type="path", default=""),
            backend=dict(type="str", choices=["", *TRAINING_BACKENDS], default=""),
            directories=dict(type="list", elements="path", default=[]),
            code_dir=dict(type="path", default=""),
            fresh=dict(type="bool", default=False),
            restart=dict(type="bool", default=False),
            stack_dump_after=dict(type="int", default=0),
            python_path=dict(type="list", elements="path", default=[]),
            ready_token=dict(type="str", default="", no_log=False),
            launch=dict(type="dict"),
            secret_env_names=dict(type="list", elements="str", default=[], no_log=False),
            sync=dict(
                type="dict",
                options=dict(
                    trees=dict(
                        type="list",
                        elements="dict",
                        required=True,
                        options=dict(src=dict(type="path"), dest=dict(type="path", required=True), files=dict(type="dict", default={})),
                    ),
                    directories=dict(type="list", elements="path", default=[]),
                    owner=dict(type="int", required=True),
                    group=dict(type="int", required=True),
                    archives=dict(type="dict", default={}),
                    retime=dict(type="dict", default={}),
                ),
            ),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    params = module.params
    node = NodeDefaults(
        node=params["node"],
        node_index=params["node_index"],
        slots=params["slots"],
        master_addr=params["master_addr"],
        master_port=params["master_port"],
    )
    job = JobPaths(**{name: params[name] for name in JobPaths.__dataclass_fields__})
    env, secret_env = launch_files.hide_secret_values(module, params["env"], params["secret_env_names"])
    secret_path = os.path.join(params["job_dir"], SECRET_ENV_FILE)
    try:
        content = render_rank_wrapper(
            node, job, env, env_script=params["env_script"], backend=params["backend"],
            stack_dump_after=params["stack_dump_after"], python_path=params["python_path"],
            secret_env_file=secret_path if secret_env else "",
        )
        secret_content = render_secret_env(secret_env)
        if not READY_TOKEN.fullmatch(params["ready_token"]):
            raise ValueError(f"ready_token {params['ready_token']!r}: only letters, digits, '.', '_' and '-'")
        # Checked and rendered before the node is set up: a launch that cannot be written changes nothing here.
        launch = launch_files.validated_launch_options(params["launch"]) if params["launch"] else None
        planned = (launch, launch_files.render_launch(launch)) if launch else None
    except ValueError as exc:  # ContractError included
        module.fail_json(msg=str(exc))
    synced = sync_code(module)
    if synced and mirror.pending(synced["trees"]) and not module.check_mode:
        # Files to send (or to compare by content) first: the action plugin does, then runs the set-up again.
        module.exit_json(changed=synced["changed"], sync=synced, sync_pending=True)
    cleared, created = set_up_job(module)
    written = ensure_content(module, params["path"], content)
    guard = write_exit_guard(module)
    secrets = write_secret_env(module, secret_path, secret_content)
    ready = write_ready_token(module)
    changed = any(done["changed"] for done in (written, guard, secrets, ready)) or bool(created) or bool(cleared)
    changed = changed or bool(synced and synced["changed"])
    result = dict(path=params["path"], content=content, created=created, cleared=cleared, **{**written, "changed": changed})
    if synced:
        result["sync"] = synced
    if planned is not None:
        result["launch"] = launch_files.launch(module, *planned, params)
        result["changed"] = result["changed"] or result["launch"]["changed"]
    module.exit_json(**result)


def sync_code(module: AnsibleModule) -> dict[str, Any] | None:
    """The node's side of O(sync) (module_utils/mirror.py), None without it; the module fails naming what it could
    not mirror."""
    sync = module.params["sync"]
    if not sync:
        return None
    try:
        return mirror.mirror_trees(sync, module.check_mode)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg=f"cannot mirror into {', '.join(tree['dest'] for tree in sync['trees'])}: {exc}")


def write_secret_env(module: AnsibleModule, path: str, content: str) -> dict[str, Any]:
    """The job's secret variables in ``path``, readable by the training user only (0600); no file without any."""
    if content:
        return ensure_content(module, path, content, {**module.params, "path": path, "mode": "0600"})
    if not os.path.exists(path):
        return {"changed": False}
    if not module.check_mode:
        os.remove(path)
    return {"changed": True}


def write_ready_token(module: AnsibleModule) -> dict[str, Any]:
    """The launch's token in ``<job_dir>/ready``, written last (nothing without ``ready_token``)."""
    token = module.params["ready_token"]
    if not token:
        return {"changed": False}
    return write_job_file(module, os.path.join(module.params["job_dir"], events.READY_FILE), token + "\n")


def write_exit_guard(module: AnsibleModule) -> dict[str, Any]:
    """The rank exit guard (rank_exit_guard.py) as ``sitecustomize.py`` in the job's guard directory."""
    guard_path = os.path.join(exit_guard_dir(module.params["job_dir"]), "sitecustomize.py")
    return write_job_file(module, guard_path, inspect.getsource(rank_exit_guard))


def write_job_file(module: AnsibleModule, path: str, content: str) -> dict[str, Any]:
    """``content`` at ``path`` in the job, with the wrapper's owner and group, readable by them only (0640)."""
    return ensure_content(module, path, content, {**module.params, "path": path, "mode": "0640"})


def set_up_job(module: AnsibleModule) -> tuple[list[str], list[str]]:
    """What an earlier run of the job id left removed (with O(fresh)), then the job's directories and its copy of
    the code (what exists is left alone); what was removed and what was created."""
    params = module.params
    cleared = job_files.earlier_run(params["job_dir"], [params["checkpoint_dir"]]) if params["fresh"] else []
    if params["restart"]:
        cleared += job_files.earlier_attempt(params["job_dir"])
    if cleared and not module.check_mode:
        job_files.remove_paths(cleared)
    return cleared, _create(module)


def _create(module: AnsibleModule) -> list[str]:
    params = module.params
    wanted = [*params["directories"], exit_guard_dir(params["job_dir"])]
    missing = [path for path in wanted if not os.path.isdir(path)]
    copy = bool(params["code_dir"]) and not os.path.exists(params["work_dir"])
    if module.check_mode or not (missing or copy):
        return missing + ([params["work_dir"]] if copy else [])
    uid, gid = owner_ids(params["owner"], params["group"])
    created = job_files.make_directories(missing, uid, gid)
    if copy and job_files.copy_tree(params["code_dir"], params["work_dir"], uid, gid):
        created.append(params["work_dir"])
    return created


def owner_ids(owner: str | None, group: str | None) -> tuple[int, int]:
    """Numeric ids of the file arguments' owner and group (names or numbers); -1 keeps the current one."""
    uid = -1 if not owner else int(owner) if owner.isdigit() else pwd.getpwnam(owner).pw_uid
    gid = -1 if not group else int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    return uid, gid


if __name__ == "__main__":
    main()
