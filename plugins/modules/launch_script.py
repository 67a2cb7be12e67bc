#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: launch_script
short_description: Write the bash script that starts a multi-node training job
description:
  - Builds the launcher command lines for O(launcher) from the hosts and settings and writes them, with the job's
    event logging, as a bash script to run on the launcher node.
  - The script changes to O(work_dir) and appends JSON event lines to C(<job_dir>/logs/launcher.log) (C(launch) at
    the start, C(ssh_check) per node, C(staged) per node and path, then C(node_exit) per node for C(torchrun) and
    C(tensorflow), or C(launcher_exit) for every other launcher).
  - Before any rank starts it checks, in parallel, that every host accepts the cluster's SSH (each answer in
    C(<job_dir>/logs/ssh-<host name>.log)); if one does not, it exits 255 without starting the job. It then copies
    O(stage_paths) from the launcher node to every other host that lacks them (exit 254 if that fails).
  - With O(launcher=torchrun) it starts one C(torchrun) agent per host over SSH (with O(launcher=tensorflow), the
    host's TensorFlow worker), in O(work_dir) on that host, its
    pid in C(<job_dir>/agent.pid) there and its output in C(<job_dir>/logs/<host name>.log). The first agent to exit
    non-zero, or a SIGTERM/SIGINT to the script (the job's timeout), stops every other agent (and so their ranks);
    the script exits with the first non-zero exit code. Needs bash 5.1 or later (C(wait -n -p)).
  - Every other launcher is run once, on the launcher node, its output in C(<job_dir>/logs/<launcher>.log); it
    stops all ranks itself when one fails, and SIGTERM/SIGINT to the script are passed on to it.
  - The file is only rewritten, atomically, when its content differs. With O(hostfile_dialect) the hostfile is written
    the same way, and with O(container) the script is started in a new launcher container, all in one module run.
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
    description:
      - Where to write the script. The parent directory must exist.
    type: path
    required: true
  job_dir:
    description:
      - Directory of the job on the launcher node. The script writes its logs to its C(logs) subdirectory,
        which must exist when the script runs.
    type: path
    required: true
  work_dir:
    description:
      - Working directory of the launcher and, for C(torchrun), of the agent on every host.
    type: path
    required: true
  stage_paths:
    description:
      - Files or directories on the launcher node that every rank must find at the same path (the checkpoint to
        resume from). The script copies each one over the cluster's SSH to every other host where it does not exist.
    type: list
    elements: path
    default: []
  replicate_dir:
    description:
      - The job's checkpoint directory (the same path on every host). With O(replicas), the script starts a
        replicator in the background (C(replicate.py), written beside it) that copies each complete entry that
        appears there (not hidden, not ending in C(.tmp) or C(.partial), unchanged for a few seconds) to the
        O(replicas) hosts that follow the first one in O(hosts), over the cluster's SSH, and removes from them what
        leaves it; each copy is a line of C(<job_dir>/logs/replicas.jsonl). The script waits for its last pass when it
        exits.
      - Empty, nothing is replicated.
    type: path
    default: ""
  replicas:
    description:
      - How many hosts get a copy of each checkpoint (see O(replicate_dir)); V(0) for none. More than the other hosts
        means every other host.
    type: int
    default: 0
  wait_ready:
    description:
      - Makes the script wait, in its SSH check of each host, until C(<job_dir>/ready) there holds the token the
        launcher node's own C(<job_dir>/ready) holds when the script starts (at most O(ready_timeout) seconds; then
        that check exits 3 and no rank starts). The multinode.training.rank_wrapper module writes the token last
        when it sets a node up for a launch (O(multinode.training.rank_wrapper#module:ready_token)), so the launch can
        start while the other nodes are still being set up.
      - V(false), the check only asks each host for the cluster's SSH.
    type: bool
    default: false
  ready_timeout:
    description: Seconds the SSH check waits on each host with O(wait_ready=true).
    type: int
    default: 60
  secret_env_names:
    description:
      - Names in O(env) that are secret besides those that look it (a C(_)-separated part that is or ends with TOKEN,
        KEY, SECRET, PASSWORD, PASSWD, PASS, PWD, PASSPHRASE, CRED, AUTH, PAT or CREDENTIAL) and those whose value
        holds a URL with a password in it. No secret variable is written into the launch script or any
        launcher's command line; the ranks get them from their node's rank wrapper (multinode.training.rank_wrapper).
    type: list
    elements: str
    default: []
  placeholders:
    description:
      - Values for the placeholders C({job_id}), C({output_dir}), C({checkpoint_dir}), C({resume_from}),
        C({data_dir}) and C({work_dir}) in O(command), which are replaced before the script is written. Other braces
        are left as they are.
    type: dict
    default: {}
  env_script:
    description:
      - Shell script the launch script sources first, and that every C(torchrun) agent's remote shell sources before
        it starts, for jobs that run on the hosts (the oneAPI and Python environment). Must exist at the same path on
        every host.
      - Empty means none (the container image provides the environment).
    type: path
    default: ""
  launcher:
    description:
      - The program that starts the ranks.
      - V(torchrun) is started once per host over SSH; V(tensorflow) starts one TensorFlow worker per host over SSH,
        with C(TF_CONFIG) (every host's C(address:master_port), in host order, and its own index) and torchrun's rank
        variables, and needs O(hosts[].slots) 1; V(mpiexec) (Intel MPI hydra), V(mpirun) (Open MPI 4.x),
        V(ipexrun), V(horovodrun) and V(deepspeed) start every rank themselves.
      - V(ipexrun) is legacy and the module warns when it is used (Intel Extension for PyTorch stopped after 2.8,
        torch-ccl is end of life); on PyTorch XPU builds run V(torchrun) or V(mpiexec) with the C(xccl) backend.
      - V(slurm) submits the job with C(sbatch --wait), with the batch script C(slurm.sbatch) in O(job_dir). One
        Slurm task per host (C(srun)), named after O(hosts[].name), runs the host's C(torchrun) agent; the output
        of every task goes to C(logs/slurm-<id>.log) on the batch host. The job id is written to C(slurm.jobid) in
        O(job_dir); a signal to the launch script cancels the job (C(scancel)).
    type: str
    required: true
    choices: [torchrun, mpiexec, mpirun, ipexrun, horovodrun, deepspeed, tensorflow, slurm]
  hosts:
    description:
      - The hosts, in rank order. The first one runs rank 0 and is the C(MASTER_ADDR) of every rank.
      - Names and addresses must be unique. C(mpiexec), C(mpirun) and C(ipexrun) need the same O(hosts[].slots) on
        every host; C(ipexrun) needs the launcher node first.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - Name of the host, used in error messages and, for C(torchrun), as the name of its log file and of its
            C(node_exit) events. Letters, digits and the characters C(._:@+-) only.
        type: str
        required: true
      address:
        description:
          - Address of the host on the cluster network. Defaults to O(hosts[].name).
        type: str
      slots:
        description:
          - Number of ranks on this host. Must be at least V(1).
        type: int
        default: 1
  launcher_address:
    description:
      - Cluster address of the launcher node. With O(rdzv=c10d) it is the C(torchrun) rendezvous endpoint and must be
        the address of one of O(hosts).
    type: str
    required: true
  iface:
    description:
      - Network interface of the cluster network, passed to the launcher and to every communication layer of the ranks
        (Intel MPI, libfabric, oneCCL, gloo, NCCL).
    type: str
    required: true
  hostfile_path:
    description:
      - Path of the hostfile on the launcher node, in the dialect of the launcher. Not read by C(torchrun) and
        C(horovodrun), but still required. Written by this module with O(hostfile_dialect), else separately (see
        M(multinode.training.hostfile)).
    type: str
    required: true
  container:
    description:
      - Also start the script, in the same module run, in a new container of this name on the host network with an
        init process (one of the same name is removed first), talking to the Docker daemon's socket directly. Not in
        check mode.
    type: dict
    suboptions:
      name:
        description: Container name.
        type: str
        required: true
      image:
        description: Image to run (present on the node).
        type: str
        required: true
      command:
        description: The container's command, as an argv list (it runs the script).
        type: list
        elements: str
        required: true
      user:
        description: User (name, uid or C(uid:gid)) the command runs as.
        type: str
        default: ""
      working_dir:
        description: Working directory of the command.
        type: str
        default: ""
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
  hostfile_dialect:
    description:
      - Also write the hostfile of O(hosts) at O(hostfile_path) in this dialect (as M(multinode.training.hostfile)
        does), with the script's O(owner) and O(group) and mode V(0640), in the same module run.
      - V(auto) is the dialect O(launcher) reads (Intel MPI's for C(torchrun) and C(horovodrun), which read none;
        the file is written for reference).
    type: str
    choices: [auto, intelmpi, mpich, openmpi, deepspeed, horovod, ipexrun]
  ssh_port:
    description:
      - Port of the hosts' sshd.
    type: int
    required: true
  job_id:
    description:
      - Identifier of the job, the C(torchrun) rendezvous id.
    type: str
    required: true
  command:
    description:
      - The program every rank runs, and its arguments, after O(placeholders) are expanded.
      - C(ipexrun) and C(deepspeed) with O(deepspeed_launcher=pdsh) run it through a shell, so they refuse words a
        shell would split or expand.
    type: list
    elements: str
    required: true
  env:
    description:
      - Extra environment variables for every rank. They override the computed ones (C(OMP_NUM_THREADS), the
        interface variables, C(MASTER_ADDR), C(MASTER_PORT)). Values are converted to strings.
    type: dict
    default: {}
  omp_num_threads:
    description:
      - OpenMP threads per rank, at least V(1). Required because C(torchrun) silently sets V(1) when it is unset.
    type: int
    required: true
  rdzv:
    description:
      - The C(torchrun) rendezvous backend. V(c10d) is served by the agent on O(launcher_address); V(static) numbers
        the nodes in host order.
    type: str
    choices: [c10d, static]
    default: c10d
  rdzv_port:
    description:
      - Port of the C(torchrun) c10d rendezvous.
    type: int
    default: 29400
  master_port:
    description:
      - Port of rank 0's rendezvous (C(MASTER_PORT)).
    type: int
    default: 29500
  elastic_min:
    description:
      - Minimum number of nodes of an elastic C(torchrun) job (C(--nnodes MIN:MAX)). Defaults to V(1) when only
        O(elastic_max) is set. Needs O(rdzv=c10d).
    type: int
  elastic_max:
    description:
      - Maximum number of nodes of an elastic C(torchrun) job. Defaults to the number of hosts when only
        O(elastic_min) is set.
    type: int
  max_restarts:
    description:
      - How many times C(torchrun) restarts the workers of a failed node.
    type: int
    default: 0
  ipex_version:
    description:
      - Version of Intel Extension for PyTorch on the nodes. Up to 2.0 the launcher is
        C(python3 -m intel_extension_for_pytorch.cpu.launch), from 2.1 on C(ipexrun).
    type: str
    default: "2.8"
  horovod_controller:
    description:
      - The C(horovodrun) controller.
    type: str
    choices: [gloo, mpi]
    default: gloo
  deepspeed_launcher:
    description:
      - The C(deepspeed --launcher) that starts the ranks.
    type: str
    choices: [pdsh, openmpi, mpich, impi, mvapich]
    default: pdsh
"""

EXAMPLES = r"""
- name: torchrun on every node, c10d rendezvous on node1
  multinode.training.launch_script:
    path: /work/jobs/job-1/launch.sh
    job_dir: /work/jobs/job-1
    work_dir: /work/jobs/job-1/work
    mode: "0750"
    launcher: torchrun
    hosts:
      - {name: node1, address: 10.10.0.1, slots: 2}
      - {name: node2, address: 10.10.0.2, slots: 2}
    launcher_address: 10.10.0.1
    iface: eth1
    hostfile_path: /work/jobs/job-1/hostfile
    ssh_port: 12345
    job_id: job-1
    command: [bash, /work/jobs/job-1/rank.sh, python3, train.py, --epochs, "15"]
    omp_num_threads: 16

- name: Intel MPI, with extra rank environment
  multinode.training.launch_script:
    path: /work/jobs/job-2/launch.sh
    job_dir: /work/jobs/job-2
    work_dir: /work/jobs/job-2/work
    mode: "0750"
    launcher: mpiexec
    hosts:
      - {name: node1, address: 10.10.0.1, slots: 2}
      - {name: node2, address: 10.10.0.2, slots: 2}
    launcher_address: 10.10.0.1
    iface: eth1
    hostfile_path: /work/jobs/job-2/hostfile
    ssh_port: 12345
    job_id: job-2
    command: [python3, train.py]
    omp_num_threads: 16
    env:
      KMP_BLOCKTIME: "1"
  register: launch

- name: Show the launcher command line
  ansible.builtin.debug:
    msg: "{{ launch.argvs[0] | join(' ') }}"
"""

RETURN = r"""
path:
  description: Path of the script.
  returned: always
  type: str
  sample: /work/jobs/job-1/launch.sh
content:
  description: The rendered script.
  returned: always
  type: str
  sample: "#!/bin/bash\n..."
argvs:
  description:
    - The launcher command lines in the script, as argv lists.
    - One per host, in host order, for C(torchrun) and C(tensorflow) (each run on its host over SSH); one for every
      other launcher.
  returned: always
  type: list
  elements: list
  sample: [["mpiexec.hydra", "-n", "4", "-ppn", "2", "-f", "/work/jobs/job-2/hostfile", "python3", "train.py"]]
container_id:
  description: Id of the container started with O(container).
  returned: when O(container) is set, outside check mode
  type: str
  sample: 4fec016c42bd0c3b9c5f2bd3c2a1e7a7b1d9a3b0c4d5e6f708192a3b4c5d6e7f
hostfile:
  description: The rendered hostfile.
  returned: when O(hostfile_dialect) is set
  type: str
  sample: "10.0.0.1:2\n10.0.0.2:2\n"
hostfile_dialect:
  description: The dialect the hostfile was written in (O(hostfile_dialect=auto) resolved).
  returned: when O(hostfile_dialect) is set
  type: str
  sample: intelmpi
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils.launch_files import (
    LAUNCH_OPTIONS,
    hide_secret_values,
    launch,
    render_launch,
)


def main() -> None:
    module = AnsibleModule(argument_spec=LAUNCH_OPTIONS, add_file_common_args=True, supports_check_mode=True)
    hide_secret_values(module, module.params["env"], module.params["secret_env_names"])
    try:
        rendered = render_launch(module.params)
    except ValueError as exc:  # LaunchError and HostfileError included
        module.fail_json(msg=str(exc))
    module.exit_json(**launch(module, module.params, rendered, module.params))


if __name__ == "__main__":
    main()
