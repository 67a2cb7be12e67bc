# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the command lines that start a multi-node training job, for each supported launcher; and the launcher
registry (REGISTRY, at the end), every launcher in one declaration that the rest of the collection reads.

Pure Python (no Ansible imports) so it runs on the controller, on managed
nodes (Python 3.9+) and in plain unit tests. ``build()`` returns argv lists;
nothing here runs them. Every launcher flag emitted below was checked against
that launcher's own argument parser or manual, named in a comment where the
flag is written.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from ansible_collections.multinode.training.plugins.module_utils.hostfile import (
    HostEntry,
    HostfileError,
    horovod_hosts_arg,
    uniform_slots,
    world_size,
)
from ansible_collections.multinode.training.plugins.module_utils import rank_contract
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import ENV_NAME

RDZV_BACKENDS = ("c10d", "static")
# Collective backends rank_tuning() knows; only ccl reserves cores (for oneCCL's workers). xccl is PyTorch's own
# backend for Intel GPUs (XPU builds, 2.8 and later), on oneCCL: it gets XCCL_ENV below, and each rank its local
# place for oneCCL from rank.sh (rank_contract.BACKEND_RANK_VARIABLES).
TRAINING_BACKENDS = ("gloo", "ccl", "mpi", "xccl")
CCL_WORKER_COUNT = 1  # cores per rank reserved for oneCCL workers by defaults_from_topology()

# The node-wide environment of the xccl backend, the same whatever the launcher:
# - CCL_PROCESS_LAUNCHER=none: oneCCL then takes each rank's place on its node from CCL_LOCAL_RANK and
#   CCL_LOCAL_SIZE (oneCCL doc/rst/source/env-variables.rst; src/common/global/global.cpp), which rank.sh exports.
#   Its default, hydra, reads MPI_LOCALRANKID/MPI_LOCALNRANKS, which only Intel MPI sets; otherwise oneCCL "could
#   not get local_idx/count from environment variables" (huggingface/accelerate#2340, fixed the same way by #2339).
#   PyTorch's ProcessGroupXCCL constructor sets the same three itself only when no MPI launcher variable is present
#   (with_mpirun() in torch/csrc/distributed/c10d/ProcessGroupXCCL.hpp), so not under Open MPI, which sets
#   PMIX_RANK. PMI_RANK/PMI_SIZE are deliberately not copied from RANK/WORLD_SIZE for torchrun (the workaround
#   scripts in pytorch/pytorch#158722 do): they make with_mpirun() true, and oneCCL then looks for hydra's variables.
# - CCL_ATL_TRANSPORT=ofi, FI_PROVIDER=tcp: oneCCL's transport between ranks, libfabric over TCP, whatever the
#   launcher. oneCCL picks MPI when it finds an MPI launcher's variables and OFI otherwise (src/common/env/
#   env_parser.cpp); the tcp provider is the one FI_TCP_IFACE (interface_env) pins to the cluster interface, where
#   libfabric would otherwise pick a provider of its own choosing. A fabric with RDMA sets FI_PROVIDER in launcher_env.
# - ZE_FLAT_DEVICE_HIERARCHY=FLAT: Level Zero lists every tile as a device of its own (Level Zero specification,
#   "Device Hierarchy"; its default is COMPOSITE, the driver's may differ), so rank LOCAL_RANK uses xpu:LOCAL_RANK
#   on multi-tile GPUs as on single-tile ones. ZE_AFFINITY_MASK is not set: a per-rank mask would leave each rank
#   one device, numbered xpu:0, and scripts select xpu:LOCAL_RANK.
# - CCL_SEND=direct, CCL_RECV=direct: Send/Recv (and gather, scatter, grouped collectives) can hang on xccl in
#   PyTorch 2.8 with oneAPI Deep Learning Essentials 2025.1 (pytorch/pytorch#156782, fixed in 2.9). direct goes
#   through the transport layer instead of Xe Link (oneCCL env-variables.rst, CCL_SEND/CCL_RECV); on 2.9 and later,
#   launcher_env CCL_SEND=topo and CCL_RECV=topo restore the default.
# CCL_ZE_IPC_EXCHANGE is not set: oneCCL honours sockets only where pidfd_getfd works, and where it does not (Docker's
# default seccomp profile) falls back to drmfd whatever the variable says (ccl_comm::init_ipc_exchange_mode in
# src/comm/comm.cpp; uxlfoundation/oneCCL#213).
XCCL_ENV: Mapping[str, str] = {
    "CCL_PROCESS_LAUNCHER": "none",
    "CCL_ATL_TRANSPORT": "ofi",
    "FI_PROVIDER": "tcp",
    "ZE_FLAT_DEVICE_HIERARCHY": "FLAT",
    "CCL_SEND": "direct",
    "CCL_RECV": "direct",
}
# What the launch_script module warns of when it is asked for ipexrun (and the preflight says of launcher_type=ipexrun).
IPEXRUN_LEGACY = (
    "ipexrun is legacy: Intel Extension for PyTorch stopped after 2.8 and torch-ccl (backend ccl) is end of life;"
    " on PyTorch XPU builds (2.8 and later) run torchrun or mpiexec with launcher_backend=xccl"
)
HOROVOD_CONTROLLERS = ("gloo", "mpi")
# The ``deepspeed --launcher`` values that start ranks over ssh or MPI on a plain cluster
# (deepspeed/launcher/constants.py and runner.py in deepspeedai/DeepSpeed; slurm is left out).
DEEPSPEED_LAUNCHERS = ("pdsh", "openmpi", "mpich", "impi", "mvapich")


def hostfile_dialect(launcher: str) -> str:
    """The dialect of the hostfile written for ``launcher`` (its registry entry's)."""
    return REGISTRY[launcher].hostfile_dialect


# Every layer that opens sockets picks its interface from its own variable:
# Intel MPI's hydra process manager, the libfabric tcp and sockets providers
# (Intel MPI and oneCCL traffic), oneCCL's key-value store bootstrap, torch's
# gloo backend and NCCL's bootstrap.
_IFACE_VARIABLES = (
    "I_MPI_HYDRA_IFACE",
    "FI_TCP_IFACE",
    "FI_SOCKETS_IFACE",
    "CCL_KVS_IFACE",
    "GLOO_SOCKET_IFNAME",
    "NCCL_SOCKET_IFNAME",
)
_RELEASE = re.compile(r"([0-9]+)\.([0-9]+)(?:\.[0-9]+)*(?:\+\S*)?")


class LaunchError(ValueError):
    """The launch specification cannot be turned into a working command line."""


@dataclass(frozen=True)
class LaunchSpec:
    """What to start, where, and with which launcher.

    ``command`` is the per-rank program and its arguments. ``omp_num_threads``
    has no default on purpose: torchrun silently sets OMP_NUM_THREADS=1 when it
    is unset. ``env`` holds extra variables for every rank; they override the
    computed ones. ``elastic_min``/``elastic_max`` apply to torchrun only.
    """

    launcher: str
    hosts: list[HostEntry]
    launcher_address: str
    iface: str
    hostfile_path: str
    ssh_port: int
    job_id: str
    command: list[str]
    omp_num_threads: int
    env: dict[str, str] = field(default_factory=dict)
    rdzv: str = "c10d"
    rdzv_port: int = 29400
    master_port: int = 29500
    elastic_min: int | None = None
    elastic_max: int | None = None
    max_restarts: int = 0
    ipex_version: str = "2.8"
    horovod_controller: str = "gloo"
    deepspeed_launcher: str = "pdsh"


def interface_env(iface: str) -> dict[str, str]:
    """One cluster interface fanned out to the variable of every layer."""
    return dict.fromkeys(_IFACE_VARIABLES, iface)


def network_env(iface: str, master_addr: str, master_port: int) -> dict[str, str]:
    """One cluster interface fanned out to every layer, plus the rank-0 rendezvous address."""
    env = interface_env(iface)
    env["MASTER_ADDR"] = master_addr
    env["MASTER_PORT"] = str(master_port)
    return env


def build(spec: LaunchSpec) -> list[list[str]]:
    """The argv(s) to run from the launcher node.

    A node agent (torchrun, tensorflow: the registry's node_agent) returns one argv per host, in
    host order, each to be run on that host with ``ssh <address>``; ssh joins
    its arguments with spaces, so pass ``shlex.join(argv)`` as the remote
    command. Every other launcher returns a single argv that starts all ranks
    itself.
    """
    launcher = REGISTRY.get(spec.launcher)
    if launcher is None:
        raise LaunchError(f"unknown launcher {spec.launcher!r}; expected one of: {', '.join(LAUNCHERS)}")
    if not spec.hosts:
        raise LaunchError("the host list is empty")
    if spec.omp_num_threads < 1:
        raise LaunchError(f"omp_num_threads must be >= 1, got {spec.omp_num_threads}")
    return launcher.build(spec)


def defaults_from_topology(
    sockets: int, numa_nodes: int | None, physical_cores_per_socket: int, backend: str
) -> dict[str, Any]:
    """Ranks per node, OpenMP threads per rank and rank environment for one node's CPU topology.

    Follows Intel's PyTorch CPU tuning guide (Intel Extension for PyTorch,
    docs/tutorials/performance_tuning/tuning_guide.md,
    https://intel.github.io/intel-extension-for-pytorch/cpu/latest/tutorials/performance_tuning/tuning_guide.html)
    and its launch script (intel_extension_for_pytorch/cpu/launch): physical
    cores only, one rank per NUMA node (per socket when the NUMA layout is
    unknown, ``numa_nodes`` None or 0), ``KMP_AFFINITY=granularity=fine,compact,1,0``,
    ``KMP_BLOCKTIME=1`` and, for the ccl backend, ``CCL_WORKER_COUNT`` cores of
    each rank reserved for oneCCL's workers. ``CCL_WORKER_AFFINITY=auto`` pins
    them to the last cores of the rank's pin domain (oneCCL Developer Guide,
    "Execution of Communication Operations"), leaving the first ones to the
    compact OpenMP threads. KMP_* only affect Intel OpenMP (libiomp5). The
    xccl backend adds XCCL_ENV and reserves no core: its collectives run on
    the GPUs.

    Returns ``{"slots": ranks per node, "omp_num_threads": n, "env": {...}}``;
    the thread count goes to LaunchSpec.omp_num_threads, not into ``env``.
    """
    if sockets < 1 or physical_cores_per_socket < 1 or (numa_nodes or 0) < 0:
        raise LaunchError(
            f"invalid topology: sockets={sockets}, numa_nodes={numa_nodes}, "
            f"physical_cores_per_socket={physical_cores_per_socket}"
        )
    ranks = numa_nodes or sockets
    reserved = _reserved_cores(backend)
    threads = _free_cores_per_rank(sockets * physical_cores_per_socket, ranks, backend)
    if threads < 1:
        raise LaunchError(
            f"{sockets * physical_cores_per_socket} physical cores over {ranks} ranks"
            f" leave no core for OpenMP after {reserved} oneCCL worker(s) per rank"
        )
    env = {
        "KMP_AFFINITY": "granularity=fine,compact,1,0",
        "KMP_BLOCKTIME": "1",
        "I_MPI_PIN_DOMAIN": "numa" if numa_nodes else "socket",
    }
    if backend == "ccl":
        env.update(CCL_WORKER_COUNT=str(CCL_WORKER_COUNT), CCL_WORKER_AFFINITY="auto")
    if backend == "xccl":
        env.update(XCCL_ENV)
    return {"slots": ranks, "omp_num_threads": threads, "env": env}


def rank_tuning(
    cpu: Mapping[str, Any],
    backend: str,
    nproc_per_node: int | str = "auto",
    omp_num_threads: int | str = "auto",
    env: Mapping[str, str] | None = None,
    launcher: str = "",
    nodes_on_kernel: int = 1,
) -> dict[str, Any]:
    """One node's ranks, OpenMP threads and rank environment: topology defaults, then the user's settings.

    ``cpu`` is the ``cpu`` fact of the node_facts module (sockets, numa_nodes,
    cores_per_socket, physical_cores). ``"auto"`` takes the value from
    defaults_from_topology(); an explicit ``nproc_per_node`` with automatic
    threads splits the node's physical cores over that many ranks (at least one
    thread each). ``env`` is laid over the computed environment. Returns
    ``{"slots", "omp_num_threads", "nodes_on_kernel", "env", "source"}``, where ``source`` names,
    for each of the three, whether it came from the topology or the user. For a
    ``launcher`` that runs a fixed number of ranks per node (the registry's one_rank_per_node:
    tensorflow's one worker), ``"auto"`` ranks is that number and the node's
    cores are split over it (``source`` says ``launcher``).

    ``nodes_on_kernel`` is how many of the job's nodes run on this node's kernel, this one included (containers on
    one server, as a simulated cluster is): they share its cores, so automatic threads split the cores over the
    ranks of all of them (at least one each) instead of giving each node's ranks all of them. Three nodes of one
    2-core server at 2 threads per rank ran 6 threads on 2 cores: a 3-rank job of the default workload took
    21-22 s against 13-15 s at 1 thread.
    """
    if backend not in TRAINING_BACKENDS:
        raise LaunchError(f"unknown backend {backend!r}; expected one of: {', '.join(TRAINING_BACKENDS)}")
    topology = defaults_from_topology(cpu["sockets"], cpu.get("numa_nodes"), cpu["cores_per_socket"], backend)
    fixed = nproc_per_node == "auto" and launcher in REGISTRY and REGISTRY[launcher].one_rank_per_node
    if fixed:
        nproc_per_node = 1
    slots = topology["slots"] if nproc_per_node == "auto" else _at_least_one(nproc_per_node, "nproc_per_node")
    sharing = _at_least_one(nodes_on_kernel, "nodes_on_kernel")
    if omp_num_threads != "auto":
        threads = _at_least_one(omp_num_threads, "omp_num_threads")
    elif nproc_per_node == "auto" and sharing == 1:
        threads = topology["omp_num_threads"]
    else:
        threads = max(1, _free_cores_per_rank(cpu["sockets"] * cpu["cores_per_socket"], slots * sharing, backend))
    return {
        "slots": slots,
        "omp_num_threads": threads,
        "nodes_on_kernel": sharing,
        "env": {**topology["env"], **(env or {})},
        "source": {
            "slots": "launcher" if fixed else "topology" if nproc_per_node == "auto" else "user",
            "omp_num_threads": "topology" if omp_num_threads == "auto" else "user",
            "env": sorted(env or {}),
        },
    }


def _reserved_cores(backend: str) -> int:
    """Cores of each rank left to oneCCL's workers (ccl backend only)."""
    return CCL_WORKER_COUNT if backend == "ccl" else 0


def _free_cores_per_rank(physical_cores: int, ranks: int, backend: str) -> int:
    """OpenMP threads each rank gets from the node's physical cores; may be < 1 when oversubscribed."""
    return physical_cores // ranks - _reserved_cores(backend)


def _at_least_one(value: int | str, name: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise LaunchError(f"{name} must be 'auto' or a whole number >= 1, got {value!r}") from None
    if number < 1:
        raise LaunchError(f"{name} must be 'auto' or a whole number >= 1, got {value!r}")
    return number


# ---------------------------------------------------------------- shared pieces


def _master_addr(spec: LaunchSpec) -> str:
    """Rank 0 runs on the first host of the hostfile, so that is the address every rank dials."""
    return spec.hosts[0].address


def _rank_env(spec: LaunchSpec) -> dict[str, str]:
    env = {"OMP_NUM_THREADS": str(spec.omp_num_threads)}
    env.update(network_env(spec.iface, _master_addr(spec), spec.master_port))
    env.update(spec.env)
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise LaunchError(f"invalid environment variable name {name!r}")
    return env


def _env_words(spec: LaunchSpec) -> list[str]:
    """``env K=V ...``: the rank environment as leading words of a command."""
    return ["env"] + [f"{name}={value}" for name, value in _rank_env(spec).items()]


def _slots_per_host(spec: LaunchSpec, flag: str) -> int:
    try:
        return uniform_slots(spec.hosts)
    except HostfileError as exc:
        raise LaunchError(f"{spec.launcher} passes one {flag} to every host: {exc}") from exc


def shell_unsafe(words: list[str]) -> list[str]:
    """The words a shell would not read back as they are (split, expanded or quoted away)."""
    return [word for word in words if shlex.quote(word) != word]


def _shell_words(spec: LaunchSpec, words: list[str]) -> list[str]:
    """``words`` unchanged if a shell would read them back as the same words."""
    unsafe = shell_unsafe(words)
    if unsafe:
        raise LaunchError(
            f"{spec.launcher} joins the program's words with spaces and runs them through a shell,"
            f" which would split or expand: {', '.join(map(repr, unsafe))}"
        )
    return words


def _host_names(hosts: list[HostEntry]) -> str:
    return ", ".join(host.name for host in hosts)


def _words(*groups: tuple[str, ...]) -> list[str]:
    """Flag groups such as ``("-n", "6")`` flattened into argv words."""
    return [word for group in groups for word in group]


# ---------------------------------------------------------------- torchrun
# Flags from torch/distributed/run.py (pytorch/pytorch, get_args_parser): --nnodes
# (N or MIN:MAX), --nproc-per-node, --rdzv-backend, --rdzv-endpoint, --rdzv-id,
# --master-addr, --master-port, --node-rank, --local-addr, --max-restarts,
# --no-python. config_from_args() sets OMP_NUM_THREADS=1 when it is unset and
# nproc_per_node > 1, hence the explicit ``env OMP_NUM_THREADS=...``.


def _nnodes(spec: LaunchSpec) -> str:
    count = len(spec.hosts)
    if spec.elastic_min is None and spec.elastic_max is None:
        return str(count)
    low = 1 if spec.elastic_min is None else spec.elastic_min
    high = count if spec.elastic_max is None else spec.elastic_max
    if spec.rdzv != "c10d":
        raise LaunchError(f"elastic nnodes {low}:{high} needs the c10d rendezvous, not {spec.rdzv!r}")
    if not 1 <= low <= high:
        raise LaunchError(f"elastic_min ({low}) must be >= 1 and <= elastic_max ({high})")
    if not low <= count <= high:
        raise LaunchError(f"nnodes {low}:{high} does not admit the {count} hosts launched ({_host_names(spec.hosts)})")
    return f"{low}:{high}"


def _rdzv_args(spec: LaunchSpec, node_rank: int) -> list[str]:
    if spec.rdzv == "static":
        return _words(
            ("--rdzv-backend", "static"),
            ("--master-addr", _master_addr(spec)),
            ("--master-port", str(spec.master_port)),
            ("--node-rank", str(node_rank)),
        )
    return _words(
        ("--rdzv-backend", "c10d"),
        ("--rdzv-endpoint", f"{spec.launcher_address}:{spec.rdzv_port}"),
        ("--rdzv-id", spec.job_id),
    )


def _check_rdzv(spec: LaunchSpec) -> None:
    if spec.rdzv not in RDZV_BACKENDS:
        raise LaunchError(f"unknown rendezvous {spec.rdzv!r}; expected one of: {', '.join(RDZV_BACKENDS)}")
    # The c10d store is served by the agent on the endpoint's host, so the launcher must be a node.
    if spec.rdzv == "c10d" and all(host.address != spec.launcher_address for host in spec.hosts):
        raise LaunchError(
            f"the c10d rendezvous endpoint {spec.launcher_address} is not the address of any launched host"
            f" ({_host_names(spec.hosts)}), so no torchrun agent would serve it"
        )


def _torchrun(spec: LaunchSpec) -> list[list[str]]:
    _check_rdzv(spec)
    nnodes = _nnodes(spec)
    env = _env_words(spec)
    return [
        env
        + ["torchrun", "--nnodes", nnodes, "--nproc-per-node", str(host.slots)]
        + _rdzv_args(spec, node_rank)
        + ["--local-addr", host.address, "--max-restarts", str(spec.max_restarts), "--no-python"]
        + spec.command
        for node_rank, host in enumerate(spec.hosts)
    ]


# ---------------------------------------------------------------- mpiexec (Intel MPI hydra)
# -n, -ppn, -f, -iface and -genv NAME VALUE, run end to end on the sim cluster. Some
# Intel MPI versions ignore host:N in -f files, hence -ppn plus I_MPI_PERHOST. -branch-count = the
# number of hosts keeps Hydra's bootstrap flat: from about 17 hosts it otherwise starts proxies from
# other nodes' proxies (a tree), over SSH, and only the launcher node holds the cluster's identity key
# (the scale benchmark failed at 32 nodes; I_MPI_HYDRA_BRANCH_COUNT=1 reproduces it on 3).


# No -prepend-rank: the rank wrapper prefixes every line with rank and node, whatever the launcher.


def _mpiexec(spec: LaunchSpec) -> list[list[str]]:
    per_host = _slots_per_host(spec, "-ppn")
    env = {**_rank_env(spec), "I_MPI_PERHOST": str(per_host)}
    flags = _words(
        ("-n", str(world_size(spec.hosts))),
        ("-ppn", str(per_host)),
        ("-f", spec.hostfile_path),
        ("-iface", spec.iface),
        ("-branch-count", str(len(spec.hosts))),
        *(("-genv", name, value) for name, value in env.items()),
    )
    return [["mpiexec.hydra"] + flags + spec.command]


# ---------------------------------------------------------------- mpirun (Open MPI 4.x)
# -np, --hostfile, --map-by ppr:N:node and -x NAME=VALUE: mpirun(1) of Open MPI 4.x
# (https://manpages.ubuntu.com/manpages/focal/man1/orterun.1.html).
# btl_tcp_if_include / oob_tcp_if_include: https://www.open-mpi.org/faq/?category=tcp.
# plm_rsh_agent: https://open-mpi.org/faq/?category=rsh. plm_rsh_args "-p PORT": the
# form DeepSpeed's OpenMPIRunner (deepspeed/launcher/multinode_runner.py) and Horovod
# pass. Open MPI 5 runs PRRTE, whose launcher parameters are plm_ssh_*
# (open-mpi/ompi#12090); not checked here.


def _mpirun(spec: LaunchSpec) -> list[list[str]]:
    per_host = _slots_per_host(spec, "--map-by ppr:N:node")
    flags = _words(
        ("-np", str(world_size(spec.hosts))),
        ("--hostfile", spec.hostfile_path),
        ("--map-by", f"ppr:{per_host}:node"),
        ("--mca", "btl_tcp_if_include", spec.iface),
        ("--mca", "oob_tcp_if_include", spec.iface),
        ("--mca", "plm_rsh_agent", "ssh"),
        ("--mca", "plm_rsh_args", f"-p {spec.ssh_port}"),
        *(("-x", f"{name}={value}") for name, value in _rank_env(spec).items()),
    )
    return [["mpirun"] + flags + spec.command]


# ---------------------------------------------------------------- ipexrun (Intel Extension for PyTorch)
# IPEX >= 2.1: intel_extension_for_pytorch/cpu/launch/launch.py (--no-python; the
# distributed launcher is chosen when --nnodes > 0) and launcher_distributed.py
# (--nnodes, --nprocs-per-node, --hostfile, --master-addr, --master-port,
# --ccl-worker-count, --extra-mpi-params). IPEX <= 2.0: intel_extension_for_pytorch/cpu/launch.py
# (--distributed, --nproc_per_node, --nnodes, --hostfile, --master_addr, --master_port,
# --ccl_worker_count, --more_mpi_params, --no_python). Both check that the hostfile's first line is an
# address of the machine they run on, then start ``mpiexec.hydra -l -np N -ppn P -genv ... <extra>
# -hostfile F`` with the program's words joined by spaces (2.1 and later through a shell).
# - The extra MPI parameters are mpiexec's -iface and -branch-count (as _mpiexec passes them): without -iface
#   Hydra's proxies may not reach the launcher by its name. They are one word with "=": argparse refuses a
#   separate value that starts with "-".
# - --ccl-worker-count: ipexrun reserves that many cores of each rank for oneCCL (default 4) and asserts that
#   fewer than that are all the rank's cores, which fails on small nodes; it is the rank tuning's
#   CCL_WORKER_COUNT (backend ccl), else 0.
# - ipexrun ends with mpiexec's process without passing on its exit status: it exits 0 when a rank failed.
#   The job's end is judged by the rank wrapper's status files, whatever the launcher's exit code.
# The rank environment rides on the program as ``env K=V ...`` so it reaches every rank whatever the launcher
# forwards, and overrides the OMP_NUM_THREADS and MASTER_* ipexrun sets with -genv.


def _ipex_release(version: str) -> tuple[int, int]:
    match = _RELEASE.fullmatch(version.strip())
    if match is None:
        raise LaunchError(f"cannot read IPEX version {version!r}; expected e.g. 1.13, 2.0.110 or 2.8.0+cpu")
    return int(match.group(1)), int(match.group(2))


def _ipexrun(spec: LaunchSpec) -> list[list[str]]:
    first = spec.hosts[0]
    if first.address != spec.launcher_address:
        raise LaunchError(
            f"ipexrun must run on the first host of its hostfile, but that is {first.name!r} ({first.address})"
            f" and the launcher is {spec.launcher_address}; put the launcher first (hostfile.launcher_first)"
        )
    per_host = str(_slots_per_host(spec, "--nprocs-per-node"))
    nnodes = str(len(spec.hosts))
    program = _shell_words(spec, _env_words(spec) + spec.command)
    ccl_workers = _rank_env(spec).get("CCL_WORKER_COUNT", "0")
    mpi_params = f"-iface {spec.iface} -branch-count {nnodes}"
    if _ipex_release(spec.ipex_version) <= (2, 0):
        launch = ["python3", "-m", "intel_extension_for_pytorch.cpu.launch", "--distributed"]
        flags = _words(
            ("--nproc_per_node", per_host),
            ("--nnodes", nnodes),
            ("--hostfile", spec.hostfile_path),
            ("--master_addr", first.address),
            ("--master_port", str(spec.master_port)),
            ("--ccl_worker_count", ccl_workers),
            (f"--more_mpi_params={mpi_params}",),
            ("--no_python",),
        )
    else:
        launch = ["ipexrun"]
        flags = _words(
            ("--nnodes", nnodes),
            ("--nprocs-per-node", per_host),
            ("--hostfile", spec.hostfile_path),
            ("--master-addr", first.address),
            ("--master-port", str(spec.master_port)),
            ("--ccl-worker-count", ccl_workers),
            (f"--extra-mpi-params={mpi_params}",),
            ("--no-python",),
        )
    return [launch + flags + program]


# ---------------------------------------------------------------- horovodrun
# horovod/runner/launch.py (parse_args): -np, -H host:N,..., -p (--ssh-port),
# --gloo / --mpi, --network-interface. The command after the flags is run as is.


def _horovodrun(spec: LaunchSpec) -> list[list[str]]:
    if spec.horovod_controller not in HOROVOD_CONTROLLERS:
        raise LaunchError(
            f"unknown horovod controller {spec.horovod_controller!r};"
            f" expected one of: {', '.join(HOROVOD_CONTROLLERS)}"
        )
    flags = _words(
        ("-np", str(world_size(spec.hosts))),
        ("-H", horovod_hosts_arg(spec.hosts)),
        ("-p", str(spec.ssh_port)),
        (f"--{spec.horovod_controller}",),
        ("--network-interface", spec.iface),
    )
    return [["horovodrun"] + flags + _env_words(spec) + spec.command]


# ---------------------------------------------------------------- deepspeed
# deepspeed/launcher/runner.py (deepspeedai/DeepSpeed, parse_args): --hostfile,
# --ssh_port (added by deepspeedai/DeepSpeed#4117; older releases reject it),
# --launcher, --master_addr, --master_port, --num_nodes, --no_python,
# --no_local_rank. No --num_gpus: on CPU the hostfile's slots give the ranks per
# host. --no_local_rank keeps DeepSpeed from appending --local_rank=N to the
# program (deepspeed/launcher/launch.py). The MPI runners in
# deepspeed/launcher/multinode_runner.py reject --num_nodes ("does not support
# limiting num nodes/gpus"), so only pdsh gets it (and --launcher_args, handed to
# pdsh). The pdsh runner exports only a
# few variable prefixes to the nodes, hence ``env K=V ...`` in front of the program,
# and pdsh hands the command to a remote shell as one string.


def _deepspeed(spec: LaunchSpec) -> list[list[str]]:
    if spec.deepspeed_launcher not in DEEPSPEED_LAUNCHERS:
        raise LaunchError(
            f"unknown deepspeed launcher {spec.deepspeed_launcher!r};"
            f" expected one of: {', '.join(DEEPSPEED_LAUNCHERS)}"
        )
    pdsh = spec.deepspeed_launcher == "pdsh"
    program = _env_words(spec) + spec.command
    flags = _words(
        ("--hostfile", spec.hostfile_path),
        ("--ssh_port", str(spec.ssh_port)),
        ("--launcher", spec.deepspeed_launcher),
        # pdsh -N: no "<host>: " label in front of each line; the rank wrapper's [rank N node] prefix says it.
        # One word: argparse takes a separate "-N" for an option of its own.
        ("--launcher_args=-N",) if pdsh else (),
        ("--master_addr", _master_addr(spec)),
        ("--master_port", str(spec.master_port)),
        ("--num_nodes", str(len(spec.hosts))) if pdsh else (),
        ("--no_python", "--no_local_rank"),
    )
    return [["deepspeed"] + flags + (_shell_words(spec, program) if pdsh else program)]


# ---------------------------------------------------------------- tensorflow (MultiWorkerMirroredStrategy)
# tf.distribute reads the cluster from TF_CONFIG (TFConfigClusterResolver,
# tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver.py):
# {"cluster": {"worker": ["addr:port", ...]}, "task": {"type": "worker", "index": i}}; worker 0 is the chief.
# One worker per node, started over SSH as torchrun's agents are: TensorFlow spreads its own thread pools over
# the node's cores (TF_NUM_INTRAOP_THREADS, read by tensorflow/core/common_runtime/process_util.cc). Each
# worker's gRPC server listens on the job's master port of its node.


def tensorflow_config(hosts: list[HostEntry], port: int, index: int) -> str:
    """TF_CONFIG of the worker ``index``: every host's ``address:port`` in host order, and its own task."""
    workers = [f"{host.address}:{port}" for host in hosts]
    return json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}, separators=(",", ":")
    )


def _tensorflow(spec: LaunchSpec) -> list[list[str]]:
    several = [f"{host.name} ({host.slots})" for host in spec.hosts if host.slots != 1]
    if several:
        raise LaunchError(
            "tensorflow runs one MultiWorkerMirroredStrategy worker per node, which uses the node's cores itself:"
            f" set launcher_nproc_per_node to 1 or auto, not the ranks per node of {', '.join(several)}"
        )
    world = str(len(spec.hosts))
    argvs = []
    for index in range(len(spec.hosts)):
        rank = {
            "TF_NUM_INTRAOP_THREADS": str(spec.omp_num_threads),
            "RANK": str(index),
            "WORLD_SIZE": world,
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
            "GROUP_RANK": str(index),
            "TF_CONFIG": tensorflow_config(spec.hosts, spec.master_port, index),
        }
        # The user's launcher_env still has the last word, as for every launcher.
        argvs.append(_env_words(replace(spec, env={**rank, **spec.env})) + spec.command)
    return argvs


# ---------------------------------------------------------------- the launcher registry
# Every launcher, each in one declaration: everything the collection knows of it. The preflight, the rank contract,
# the launch script, the progress parser, the Kubernetes entry point, the launcher role's argument spec (held to it by
# a test) and the docs' launcher table (scripts/generated_docs.py) all read this; adding a launcher is adding one
# declaration here (every field is required) and its tests.


@dataclass(frozen=True)
class Launcher:
    """One launcher, in full."""

    name: str
    # What it does, one line (the docs' table).
    summary: str
    # The argv(s) that start the job from the launcher node: one per node for a node agent, else one.
    build: Callable[[LaunchSpec], list[list[str]]]
    # The hostfile.py dialect of the hostfile written for it (one it reads, else Intel MPI's, for reference).
    hostfile_dialect: str
    # The rank variables it sets in every rank's environment (rank_contract.CONTRACT's sources); the rank wrapper
    # derives the rest.
    rank_variables: tuple[str, ...]
    # Started once per node over SSH, the launch script supervising each node's process: what that process is called
    # in the job's events. Empty: it starts every rank itself from the launcher node.
    node_agent: str
    # Runs one rank per node whatever the topology (launcher_nproc_per_node auto means 1, more is refused).
    one_rank_per_node: bool
    # Joins the program's words with spaces and hands them to a shell (what a shell would change is refused).
    shell_joined: bool
    # Where it can run (cluster_runtime): in the training image's containers, on the hosts.
    runtimes: tuple[str, ...]
    # The cluster_scheduler it needs ("none": it starts the ranks itself, over SSH).
    scheduler: str
    # The Kubeflow kinds it runs as on Kubernetes, the default first; empty: not on Kubernetes.
    kubernetes_kinds: tuple[str, ...]
    # The image (images/<image>) that has it, for cluster_image; empty where it runs on the hosts only.
    image: str
    # A regular expression for the label it puts before every line it relays (progress.py strips it); empty: none.
    output_label: str


REGISTRY: Mapping[str, Launcher] = {
    launcher.name: launcher
    for launcher in (
        Launcher(
            name="torchrun",
            summary="one torchrun agent per node over SSH, c10d or static rendezvous on the launcher node",
            build=_torchrun,
            hostfile_dialect="intelmpi",
            rank_variables=rank_contract.TORCHRUN_SETS,
            node_agent="torchrun agent",
            one_rank_per_node=False,
            shell_joined=False,
            runtimes=("container", "host"),
            scheduler="none",
            kubernetes_kinds=("PyTorchJob", "TrainJob"),
            image="training",
            output_label="",
        ),
        Launcher(
            name="mpiexec",
            summary="Intel MPI's mpiexec.hydra from the launcher node, its hosts from the hostfile",
            build=_mpiexec,
            hostfile_dialect="intelmpi",
            rank_variables=rank_contract.HYDRA_SETS,
            node_agent="",
            one_rank_per_node=False,
            shell_joined=False,
            runtimes=("container", "host"),
            scheduler="none",
            kubernetes_kinds=("MPIJob",),
            image="training",
            output_label="",
        ),
        Launcher(
            name="mpirun",
            summary="Open MPI's mpirun from the launcher node, its hosts from the hostfile",
            build=_mpirun,
            hostfile_dialect="openmpi",
            rank_variables=rank_contract.OPEN_MPI_SETS,
            node_agent="",
            one_rank_per_node=False,
            shell_joined=False,
            runtimes=("container",),
            scheduler="none",
            kubernetes_kinds=("MPIJob",),
            image="training",
            output_label=r"\[[0-9]+,[0-9]+\]<std(?:out|err)>:",
        ),
        Launcher(
            name="ipexrun",
            summary="Intel Extension for PyTorch's ipexrun (legacy) over Intel MPI",
            build=_ipexrun,
            hostfile_dialect="ipexrun",
            rank_variables=rank_contract.HYDRA_SETS,
            node_agent="",
            one_rank_per_node=False,
            shell_joined=True,
            runtimes=("container",),
            scheduler="none",
            kubernetes_kinds=(),
            image="training-ipex",
            output_label=r"\[[0-9]+\] ",
        ),
        Launcher(
            name="horovodrun",
            summary="horovodrun from the launcher node (Gloo or MPI controller), its hosts given with -H",
            build=_horovodrun,
            hostfile_dialect="horovod",
            rank_variables=rank_contract.HOROVOD_SETS,
            node_agent="",
            one_rank_per_node=False,
            shell_joined=False,
            runtimes=("container",),
            scheduler="none",
            kubernetes_kinds=(),
            image="training-horovod",
            output_label=r"\[[0-9]+\]<std(?:out|err)>:",
        ),
        Launcher(
            name="deepspeed",
            summary="the deepspeed launcher's pdsh runner, one deepspeed.launcher.launch agent per node over SSH",
            build=_deepspeed,
            hostfile_dialect="deepspeed",
            rank_variables=rank_contract.DEEPSPEED_SETS,
            node_agent="",
            one_rank_per_node=False,
            shell_joined=True,
            runtimes=("container",),
            scheduler="none",
            kubernetes_kinds=(),
            image="training-deepspeed",
            output_label="",
        ),
        Launcher(
            name="tensorflow",
            summary="one TensorFlow MultiWorkerMirroredStrategy worker per node over SSH, TF_CONFIG from the inventory",
            build=_tensorflow,
            hostfile_dialect="intelmpi",
            rank_variables=rank_contract.TORCHRUN_SETS,
            node_agent="TensorFlow worker",
            one_rank_per_node=True,
            shell_joined=False,
            runtimes=("container",),
            scheduler="none",
            kubernetes_kinds=(),
            image="training-tensorflow",
            output_label="",
        ),
        # The job goes to Slurm (sbatch, launch_script.py): each node's Slurm task runs the same torchrun agent as
        # launcher "torchrun" would start there over SSH (the same rendezvous on the launcher node).
        Launcher(
            name="slurm",
            summary="sbatch to the Slurm the slurm role runs on the nodes: one torchrun agent per node as a Slurm task",
            build=_torchrun,
            hostfile_dialect="intelmpi",
            rank_variables=rank_contract.TORCHRUN_SETS,
            node_agent="",
            one_rank_per_node=False,
            shell_joined=False,
            runtimes=("host",),
            scheduler="slurm",
            kubernetes_kinds=(),
            image="",
            output_label="",
        ),
    )
}
LAUNCHERS = tuple(REGISTRY)
