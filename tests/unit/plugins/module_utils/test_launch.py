# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Golden command lines for every launcher on one 3-host example, plus the errors and the topology defaults."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import HostEntry
from ansible_collections.multinode.training.plugins.module_utils.launch import (
    LAUNCHERS,
    REGISTRY,
    LaunchError,
    LaunchSpec,
    build,
    defaults_from_topology,
    hostfile_dialect,
    network_env,
    rank_tuning,
)

HOSTS = [
    HostEntry(name="node1", address="10.0.0.1", slots=2),
    HostEntry(name="node2", address="10.0.0.2", slots=2),
    HostEntry(name="node3", address="10.0.0.3", slots=2),
]
COMMAND = ["bash", "/job/rank.sh", "python3", "train.py", "--epochs", "15"]
SPEC = LaunchSpec(
    launcher="torchrun",
    hosts=HOSTS,
    launcher_address="10.0.0.1",
    iface="eth1",
    hostfile_path="/job/hostfile",
    ssh_port=2222,
    job_id="job-1",
    command=COMMAND,
    omp_num_threads=8,
    env={"KMP_BLOCKTIME": "1"},
)
# Every rank's threads and network, in the order the builder writes them; then SPEC's own env.
NETWORK_ENV = [
    ("OMP_NUM_THREADS", "8"),
    ("I_MPI_HYDRA_IFACE", "eth1"),
    ("FI_TCP_IFACE", "eth1"),
    ("FI_SOCKETS_IFACE", "eth1"),
    ("CCL_KVS_IFACE", "eth1"),
    ("GLOO_SOCKET_IFNAME", "eth1"),
    ("NCCL_SOCKET_IFNAME", "eth1"),
    ("MASTER_ADDR", "10.0.0.1"),
    ("MASTER_PORT", "29500"),
]
ENV = NETWORK_ENV + [("KMP_BLOCKTIME", "1")]
ENV_WORDS = ["env"] + [f"{name}={value}" for name, value in ENV]


def spec(**changes) -> LaunchSpec:
    return dataclasses.replace(SPEC, **changes)


def torchrun_argv(
    address: str, rdzv: list[str], nnodes: str = "3", env_words: list[str] = ENV_WORDS, per_node: int = 2
) -> list[str]:
    return (
        env_words
        + ["torchrun", "--nnodes", nnodes, "--nproc-per-node", str(per_node)]
        + rdzv
        + ["--local-addr", address, "--max-restarts", "0", "--no-python"]
        + COMMAND
    )


def mpiexec_argv(env: list[tuple[str, str]], per_node: int) -> list[str]:
    """mpiexec.hydra over the 3 hosts with ``per_node`` ranks each, ``env`` as -genv, then I_MPI_PERHOST."""
    genv = [word for name, value in env for word in ("-genv", name, value)]
    return (
        ["mpiexec.hydra", "-n", str(3 * per_node), "-ppn", str(per_node), "-f", "/job/hostfile", "-iface", "eth1"]
        + ["-branch-count", "3"]
        + genv
        + ["-genv", "I_MPI_PERHOST", str(per_node)]
        + COMMAND
    )


C10D = ["--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.1:29400", "--rdzv-id", "job-1"]


# ---------------------------------------------------------------- network_env


def test_network_env_fans_one_interface_out_to_every_layer():
    assert network_env("ens5", "192.168.1.10", 29500) == {
        "I_MPI_HYDRA_IFACE": "ens5",
        "FI_TCP_IFACE": "ens5",
        "FI_SOCKETS_IFACE": "ens5",
        "CCL_KVS_IFACE": "ens5",
        "GLOO_SOCKET_IFNAME": "ens5",
        "NCCL_SOCKET_IFNAME": "ens5",
        "MASTER_ADDR": "192.168.1.10",
        "MASTER_PORT": "29500",
    }


# ---------------------------------------------------------------- torchrun


def test_torchrun_c10d_one_argv_per_node():
    assert build(SPEC) == [
        torchrun_argv("10.0.0.1", C10D),
        torchrun_argv("10.0.0.2", C10D),
        torchrun_argv("10.0.0.3", C10D),
    ]


def test_torchrun_golden_command_line_spelled_out():
    assert build(SPEC)[1] == shlex.split(
        "env OMP_NUM_THREADS=8 I_MPI_HYDRA_IFACE=eth1 FI_TCP_IFACE=eth1 FI_SOCKETS_IFACE=eth1 CCL_KVS_IFACE=eth1"
        " GLOO_SOCKET_IFNAME=eth1 NCCL_SOCKET_IFNAME=eth1 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 KMP_BLOCKTIME=1"
        " torchrun --nnodes 3 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 10.0.0.1:29400 --rdzv-id job-1"
        " --local-addr 10.0.0.2 --max-restarts 0 --no-python bash /job/rank.sh python3 train.py --epochs 15"
    )


def test_torchrun_static_rendezvous_numbers_the_nodes():
    static = ["--rdzv-backend", "static", "--master-addr", "10.0.0.1", "--master-port", "29500", "--node-rank"]
    assert build(spec(rdzv="static")) == [
        torchrun_argv("10.0.0.1", static + ["0"]),
        torchrun_argv("10.0.0.2", static + ["1"]),
        torchrun_argv("10.0.0.3", static + ["2"]),
    ]


def test_torchrun_elastic_min_max():
    assert build(spec(elastic_min=2, elastic_max=4)) == [
        torchrun_argv("10.0.0.1", C10D, nnodes="2:4"),
        torchrun_argv("10.0.0.2", C10D, nnodes="2:4"),
        torchrun_argv("10.0.0.3", C10D, nnodes="2:4"),
    ]


@pytest.mark.parametrize(
    "changes, nnodes",
    [({"elastic_min": 2}, "2:3"), ({"elastic_max": 5}, "1:5")],
)
def test_torchrun_elastic_defaults_the_missing_bound(changes, nnodes):
    argv = build(spec(**changes))[0]
    assert argv[argv.index("--nnodes") + 1] == nnodes


def test_torchrun_passes_max_restarts_and_per_node_slots():
    hosts = [HOSTS[0], dataclasses.replace(HOSTS[1], slots=4)]
    argvs = build(spec(hosts=hosts, max_restarts=3))
    assert [argv[argv.index("--nproc-per-node") + 1] for argv in argvs] == ["2", "4"]
    assert [argv[argv.index("--max-restarts") + 1] for argv in argvs] == ["3", "3"]


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"rdzv": "static"},
        {"elastic_min": 1, "elastic_max": 3},
        {"env": {}},
        {"omp_num_threads": 1},
        {"hosts": [dataclasses.replace(host, slots=1) for host in HOSTS]},
    ],
)
def test_torchrun_always_sets_omp_num_threads_before_torchrun(changes):
    for argv in build(spec(**changes)):
        assert argv[0] == "env"
        settings = argv[1 : argv.index("torchrun")]
        assert [word for word in settings if word.startswith("OMP_NUM_THREADS=")]
        assert all("=" in word for word in settings)


# ---------------------------------------------------------------- mpiexec / mpirun


def test_mpiexec_intel_mpi_hydra():
    assert build(spec(launcher="mpiexec")) == [mpiexec_argv(ENV, per_node=2)]


def test_mpirun_open_mpi():
    exports = [word for name, value in ENV for word in ("-x", f"{name}={value}")]
    assert build(spec(launcher="mpirun")) == [
        shlex.split(
            "mpirun -np 6 --hostfile /job/hostfile --map-by ppr:2:node"
            " --mca btl_tcp_if_include eth1 --mca oob_tcp_if_include eth1"
            " --mca plm_rsh_agent ssh --mca plm_rsh_args '-p 2222'"
        )
        + exports
        + COMMAND
    ]


# ---------------------------------------------------------------- ipexrun


@pytest.mark.parametrize("version", ["2.8", "2.1", "2.1.100", "2.8.0+cpu"])
def test_ipexrun_2_1_and_later(version):
    assert build(spec(launcher="ipexrun", ipex_version=version)) == [
        shlex.split(
            "ipexrun --nnodes 3 --nprocs-per-node 2 --hostfile /job/hostfile"
            " --master-addr 10.0.0.1 --master-port 29500 --ccl-worker-count 0"
            " '--extra-mpi-params=-iface eth1 -branch-count 3' --no-python"
        )
        + ENV_WORDS
        + COMMAND
    ]


@pytest.mark.parametrize("version", ["2.0", "2.0.110", "2.0.100+cpu", "1.13", "1.13.100"])
def test_ipex_launch_module_up_to_2_0(version):
    assert build(spec(launcher="ipexrun", ipex_version=version)) == [
        shlex.split(
            "python3 -m intel_extension_for_pytorch.cpu.launch --distributed --nproc_per_node 2 --nnodes 3"
            " --hostfile /job/hostfile --master_addr 10.0.0.1 --master_port 29500 --ccl_worker_count 0"
            " '--more_mpi_params=-iface eth1 -branch-count 3' --no_python"
        )
        + ENV_WORDS
        + COMMAND
    ]


@pytest.mark.parametrize("version", ["2.8", "2.0"])
def test_ipexrun_reserves_the_ccl_workers_the_rank_tuning_gives(version):
    argv = build(spec(launcher="ipexrun", ipex_version=version, env={"CCL_WORKER_COUNT": "1"}))[0]
    flag = "--ccl-worker-count" if version == "2.8" else "--ccl_worker_count"
    assert argv[argv.index(flag) + 1] == "1"


def test_ipexrun_extra_mpi_params_is_one_word_argparse_reads_as_the_flag_value():
    argv = build(spec(launcher="ipexrun"))[0]
    parser = argparse.ArgumentParser()
    parser.add_argument("--extra-mpi-params", "--extra_mpi_params", default="", type=str)
    known, _ = parser.parse_known_args(argv[1:])
    assert known.extra_mpi_params == "-iface eth1 -branch-count 3"


@pytest.mark.parametrize("version", ["two", "2", "", "2.x"])
def test_ipexrun_unreadable_version(version):
    with pytest.raises(LaunchError, match="cannot read IPEX version"):
        build(spec(launcher="ipexrun", ipex_version=version))


# ---------------------------------------------------------------- horovodrun


@pytest.mark.parametrize("controller", ["gloo", "mpi"])
def test_horovodrun(controller):
    assert build(spec(launcher="horovodrun", horovod_controller=controller)) == [
        shlex.split(
            f"horovodrun -np 6 -H 10.0.0.1:2,10.0.0.2:2,10.0.0.3:2 -p 2222 --{controller} --network-interface eth1"
        )
        + ENV_WORDS
        + COMMAND
    ]


# ---------------------------------------------------------------- deepspeed


def test_deepspeed_pdsh():
    assert build(spec(launcher="deepspeed")) == [
        shlex.split(
            "deepspeed --hostfile /job/hostfile --ssh_port 2222 --launcher pdsh --launcher_args=-N"
            " --master_addr 10.0.0.1 --master_port 29500 --num_nodes 3 --no_python --no_local_rank"
        )
        + ENV_WORDS
        + COMMAND
    ]


ONE_PER_HOST = [dataclasses.replace(host, slots=1) for host in HOSTS]


def test_tensorflow_one_worker_per_host_with_its_tf_config():
    argvs = build(spec(launcher="tensorflow", hosts=ONE_PER_HOST))
    assert len(argvs) == 3
    workers = ["10.0.0.1:29500", "10.0.0.2:29500", "10.0.0.3:29500"]
    for index, argv in enumerate(argvs):
        assert argv[-len(COMMAND) :] == COMMAND
        env = dict(word.split("=", 1) for word in argv[1 : -len(COMMAND)])
        assert argv[0] == "env"
        assert json.loads(env.pop("TF_CONFIG")) == {
            "cluster": {"worker": workers},
            "task": {"type": "worker", "index": index},
        }
        assert env == {
            **dict(ENV),
            "TF_NUM_INTRAOP_THREADS": "8",
            "RANK": str(index),
            "WORLD_SIZE": "3",
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
            "GROUP_RANK": str(index),
        }


def test_tensorflow_user_env_has_the_last_word():
    first, *_ = build(spec(launcher="tensorflow", hosts=ONE_PER_HOST, env={"TF_NUM_INTRAOP_THREADS": "2"}))
    assert "TF_NUM_INTRAOP_THREADS=2" in first and "TF_NUM_INTRAOP_THREADS=8" not in first


def test_tensorflow_refuses_several_ranks_on_a_host():
    hosts = [*ONE_PER_HOST[:2], dataclasses.replace(HOSTS[2], slots=2)]
    with pytest.raises(LaunchError, match=r"one MultiWorkerMirroredStrategy worker per node.*node3 \(2\)"):
        build(spec(launcher="tensorflow", hosts=hosts))


def test_deepspeed_mpi_runners_get_no_num_nodes():
    assert build(spec(launcher="deepspeed", deepspeed_launcher="openmpi")) == [
        shlex.split(
            "deepspeed --hostfile /job/hostfile --ssh_port 2222 --launcher openmpi"
            " --master_addr 10.0.0.1 --master_port 29500 --no_python --no_local_rank"
        )
        + ENV_WORDS
        + COMMAND
    ]


# ---------------------------------------------------------------- shared behaviour


def test_master_addr_is_the_first_host_not_the_launcher():
    hosts = [HOSTS[1], HOSTS[0], HOSTS[2]]
    (argv,) = build(spec(launcher="mpiexec", hosts=hosts))
    assert argv[argv.index("MASTER_ADDR") + 1] == "10.0.0.2"


def test_extra_env_overrides_the_computed_values():
    (argv,) = build(spec(launcher="mpirun", env={"GLOO_SOCKET_IFNAME": "lo", "FOO": "a b"}))
    assert "GLOO_SOCKET_IFNAME=lo" in argv
    assert "GLOO_SOCKET_IFNAME=eth1" not in argv
    assert argv[-len(COMMAND) - 2 :] == ["-x", "FOO=a b"] + COMMAND


def test_launchers_and_hostfile_dialects():
    assert LAUNCHERS == ("torchrun", "mpiexec", "mpirun", "ipexrun", "horovodrun", "deepspeed", "tensorflow", "slurm")
    # torchrun, tensorflow and Slurm's torchrun agents read no hostfile: the one written for reference is Intel MPI's.
    assert [hostfile_dialect(launcher) for launcher in LAUNCHERS] == [
        "intelmpi",
        "intelmpi",
        "openmpi",
        "ipexrun",
        "horovod",
        "deepspeed",
        "intelmpi",
        "intelmpi",
    ]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_shell_joined_names_every_launcher_that_refuses_words_a_shell_would_split(launcher):
    # The preflight refuses such words up front for a shell_joined launcher; the builder refuses them at launch.
    try:
        build(spec(launcher=launcher, command=COMMAND + ["my run"]))
        refused = False
    except LaunchError as error:
        refused = "through a shell" in str(error)
    assert refused == REGISTRY[launcher].shell_joined


def test_unknown_launcher():
    with pytest.raises(LaunchError, match=r"unknown launcher 'srun'; expected one of: torchrun, mpiexec, mpirun"):
        build(spec(launcher="srun"))


def test_ipexrun_needs_the_launcher_first():
    hosts = [HOSTS[1], HOSTS[0], HOSTS[2]]
    with pytest.raises(LaunchError, match=r"first host of its hostfile, but that is 'node2' \(10\.0\.0\.2\)"):
        build(spec(launcher="ipexrun", hosts=hosts))


@pytest.mark.parametrize(
    "launcher, flag",
    [("mpiexec", "-ppn"), ("mpirun", "--map-by ppr:N:node"), ("ipexrun", "--nprocs-per-node")],
)
def test_one_rank_count_for_every_host(launcher, flag):
    hosts = [HOSTS[0], dataclasses.replace(HOSTS[1], slots=4), HOSTS[2]]
    with pytest.raises(LaunchError) as error:
        build(spec(launcher=launcher, hosts=hosts))
    assert str(error.value).startswith(f"{launcher} passes one {flag} to every host: ")
    assert "slots=2: node1, node3; slots=4: node2" in str(error.value)


def test_elastic_min_above_max():
    with pytest.raises(LaunchError, match=r"elastic_min \(4\) must be >= 1 and <= elastic_max \(2\)"):
        build(spec(elastic_min=4, elastic_max=2))


@pytest.mark.parametrize("changes", [{"elastic_min": 4, "elastic_max": 5}, {"elastic_max": 2}])
def test_elastic_range_must_admit_the_hosts_launched(changes):
    with pytest.raises(LaunchError, match=r"does not admit the 3 hosts launched \(node1, node2, node3\)"):
        build(spec(**changes))


def test_elastic_needs_c10d():
    with pytest.raises(LaunchError, match="needs the c10d rendezvous"):
        build(spec(rdzv="static", elastic_min=1, elastic_max=3))


def test_unknown_rendezvous():
    with pytest.raises(LaunchError, match=r"unknown rendezvous 'etcd'"):
        build(spec(rdzv="etcd"))


def test_c10d_endpoint_must_be_a_launched_host():
    message = r"10\.0\.0\.9 is not the address of any launched host \(node1, node2, node3\)"
    with pytest.raises(LaunchError, match=message):
        build(spec(launcher_address="10.0.0.9"))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_empty_host_list(launcher):
    with pytest.raises(LaunchError, match="the host list is empty"):
        build(spec(launcher=launcher, hosts=[]))


def test_omp_num_threads_must_be_positive():
    with pytest.raises(LaunchError, match="omp_num_threads must be >= 1, got 0"):
        build(spec(omp_num_threads=0))


def test_invalid_environment_name():
    with pytest.raises(LaunchError, match=r"invalid environment variable name 'A=B'"):
        build(spec(env={"A=B": "1"}))


def test_unknown_horovod_controller():
    with pytest.raises(LaunchError, match=r"unknown horovod controller 'jsrun'"):
        build(spec(launcher="horovodrun", horovod_controller="jsrun"))


def test_unknown_deepspeed_launcher():
    with pytest.raises(LaunchError, match=r"unknown deepspeed launcher 'slurm'"):
        build(spec(launcher="deepspeed", deepspeed_launcher="slurm"))


@pytest.mark.parametrize(
    "changes",
    [{"launcher": "ipexrun"}, {"launcher": "ipexrun", "ipex_version": "2.0"}, {"launcher": "deepspeed"}],
)
def test_shell_joining_launchers_refuse_words_a_shell_would_change(changes):
    with pytest.raises(LaunchError, match=r"through a shell, which would split or expand: 'a b', '\$HOME'"):
        build(spec(command=["bash", "run.sh", "a b", "$HOME"], **changes))


def test_deepspeed_mpi_runner_passes_words_as_argv():
    (argv,) = build(spec(launcher="deepspeed", deepspeed_launcher="impi", command=["echo", "a b"]))
    assert argv[-2:] == ["echo", "a b"]


# ---------------------------------------------------------------- topology defaults

INTEL_ENV = {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}


def test_topology_two_sockets_two_numa_nodes_gloo():
    assert defaults_from_topology(2, 2, 16, "gloo") == {
        "slots": 2,
        "omp_num_threads": 16,
        "env": {**INTEL_ENV, "I_MPI_PIN_DOMAIN": "numa"},
    }


def test_topology_two_sockets_two_numa_nodes_ccl_reserves_a_worker_core():
    assert defaults_from_topology(2, 2, 16, "ccl") == {
        "slots": 2,
        "omp_num_threads": 15,
        "env": {
            **INTEL_ENV,
            "I_MPI_PIN_DOMAIN": "numa",
            "CCL_WORKER_COUNT": "1",
            "CCL_WORKER_AFFINITY": "auto",
        },
    }


# The xccl backend's node-wide variables, in the order they are exported (launch.XCCL_ENV names each one's source).
XCCL = [
    ("CCL_PROCESS_LAUNCHER", "none"),
    ("CCL_ATL_TRANSPORT", "ofi"),
    ("FI_PROVIDER", "tcp"),
    ("ZE_FLAT_DEVICE_HIERARCHY", "FLAT"),
    ("CCL_SEND", "direct"),
    ("CCL_RECV", "direct"),
]


def test_topology_xccl_adds_the_oneccl_and_level_zero_variables_and_reserves_no_core():
    assert defaults_from_topology(2, 2, 16, "xccl") == {
        "slots": 2,
        "omp_num_threads": 16,
        "env": {**INTEL_ENV, "I_MPI_PIN_DOMAIN": "numa", **dict(XCCL)},
    }


@pytest.mark.parametrize("numa_nodes", [None, 0])
def test_topology_unknown_numa_means_one_rank_per_socket(numa_nodes):
    assert defaults_from_topology(2, numa_nodes, 16, "gloo") == {
        "slots": 2,
        "omp_num_threads": 16,
        "env": {**INTEL_ENV, "I_MPI_PIN_DOMAIN": "socket"},
    }


def test_topology_sub_numa_clustering_splits_each_socket():
    result = defaults_from_topology(2, 4, 16, "ccl")
    assert (result["slots"], result["omp_num_threads"]) == (4, 7)


@pytest.mark.parametrize(
    "args, message",
    [
        ((1, 1, 1, "ccl"), "1 physical cores over 1 ranks leave no core for OpenMP after 1 oneCCL worker"),
        ((0, 1, 16, "gloo"), "invalid topology: sockets=0"),
        ((1, -1, 16, "gloo"), "invalid topology: sockets=1, numa_nodes=-1"),
        ((1, 1, 0, "gloo"), "physical_cores_per_socket=0"),
    ],
)
def test_topology_errors(args, message):
    with pytest.raises(LaunchError, match=message):
        defaults_from_topology(*args)


# ---------------------------------------------------------------- rank tuning (topology + user settings)

XEON_2S = {"sockets": 2, "numa_nodes": 2, "cores_per_socket": 16, "physical_cores": 32}
SMALL_VM = {"sockets": 1, "numa_nodes": 1, "cores_per_socket": 2, "physical_cores": 2}


def test_rank_tuning_all_auto_is_the_topology_default():
    assert rank_tuning(XEON_2S, "gloo") == {
        "slots": 2,
        "omp_num_threads": 16,
        "nodes_on_kernel": 1,
        "nodes_on_kernel": 1,
        "env": {**INTEL_ENV, "I_MPI_PIN_DOMAIN": "numa"},
        "source": {"slots": "topology", "omp_num_threads": "topology", "env": []},
    }


def test_rank_tuning_explicit_ranks_split_the_physical_cores():
    tuning = rank_tuning(XEON_2S, "ccl", nproc_per_node=4)
    assert (tuning["slots"], tuning["omp_num_threads"]) == (4, 7)
    assert tuning["source"]["slots"] == "user"


def test_rank_tuning_one_worker_per_node_launcher_gets_all_cores():
    tuning = rank_tuning(XEON_2S, "gloo", launcher="tensorflow")
    assert (tuning["slots"], tuning["omp_num_threads"], tuning["source"]["slots"]) == (1, 32, "launcher")
    # an explicit count stays the user's (the preflight refuses one other than 1 for tensorflow)
    assert rank_tuning(XEON_2S, "gloo", nproc_per_node=1, launcher="tensorflow")["source"]["slots"] == "user"


def test_rank_tuning_oversubscribed_node_keeps_one_thread_per_rank():
    assert rank_tuning(SMALL_VM, "gloo", nproc_per_node="3")["omp_num_threads"] == 1


@pytest.mark.parametrize(
    "cpu, backend, kwargs, expected",
    [
        # three simulated nodes of one 2-core server: one thread per rank, not 2 each (6 on 2 cores)
        (SMALL_VM, "gloo", {"nodes_on_kernel": 3}, (1, 1)),
        # two nodes on one 2-socket server: each node's 2 ranks get a quarter of its 32 cores
        (XEON_2S, "gloo", {"nodes_on_kernel": 2}, (2, 8)),
        # the oneCCL worker core stays reserved from each rank's share
        (XEON_2S, "ccl", {"nodes_on_kernel": 2}, (2, 7)),
        # explicit ranks are split over the server's cores too
        (XEON_2S, "gloo", {"nodes_on_kernel": 4, "nproc_per_node": 2}, (2, 4)),
        # more ranks than cores on the server: still one thread each
        (SMALL_VM, "ccl", {"nodes_on_kernel": 5}, (1, 1)),
        # the user's threads win over the sharing
        (SMALL_VM, "gloo", {"nodes_on_kernel": 3, "omp_num_threads": 2}, (1, 2)),
    ],
)
def test_rank_tuning_nodes_on_one_kernel_share_its_cores(cpu, backend, kwargs, expected):
    tuning = rank_tuning(cpu, backend, **kwargs)
    assert (tuning["slots"], tuning["omp_num_threads"]) == expected
    assert tuning["nodes_on_kernel"] == kwargs["nodes_on_kernel"]


def test_rank_tuning_user_threads_and_env_win():
    tuning = rank_tuning(SMALL_VM, "gloo", omp_num_threads=1, env={"KMP_BLOCKTIME": "0", "EXTRA": "x"})
    assert tuning["omp_num_threads"] == 1
    assert tuning["env"]["KMP_BLOCKTIME"] == "0" and tuning["env"]["EXTRA"] == "x"
    assert tuning["env"]["KMP_AFFINITY"] == INTEL_ENV["KMP_AFFINITY"]
    assert tuning["source"] == {"slots": "topology", "omp_num_threads": "user", "env": ["EXTRA", "KMP_BLOCKTIME"]}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"nproc_per_node": 0}, "nproc_per_node must be 'auto' or a whole number >= 1, got 0"),
        ({"omp_num_threads": "many"}, "omp_num_threads must be 'auto' or a whole number >= 1, got 'many'"),
        ({"backend": "nccl"}, "unknown backend 'nccl'; expected one of: gloo, ccl, mpi, xccl$"),
        ({"nodes_on_kernel": 0}, "nodes_on_kernel must be 'auto' or a whole number >= 1, got 0"),
    ],
)
def test_rank_tuning_errors(kwargs, message):
    arguments = {"backend": "gloo", **kwargs}
    with pytest.raises(LaunchError, match=message):
        rank_tuning(SMALL_VM, **arguments)


# ---------------------------------------------------------------- xccl (PyTorch on Intel GPUs), as the launchers get it

# What every rank of a 3-node xccl job gets with the tuning of XEON_2S and 4 ranks per node (one per GPU tile): the
# threads, the interface and rendezvous variables, Intel's CPU tuning, then xccl's (rank.sh adds CCL_LOCAL_RANK and
# CCL_LOCAL_SIZE per rank).
XCCL_RANK_ENV = (
    NETWORK_ENV
    + [("KMP_AFFINITY", "granularity=fine,compact,1,0"), ("KMP_BLOCKTIME", "1"), ("I_MPI_PIN_DOMAIN", "numa")]
    + XCCL
)
XCCL_HOSTS = [dataclasses.replace(host, slots=4) for host in HOSTS]


def xccl_spec(**changes) -> LaunchSpec:
    tuning = rank_tuning(XEON_2S, "xccl", nproc_per_node=4)
    assert (tuning["slots"], tuning["omp_num_threads"]) == (4, 8)
    return spec(hosts=XCCL_HOSTS, omp_num_threads=tuning["omp_num_threads"], env=tuning["env"], **changes)


def test_xccl_torchrun_every_agent_carries_the_xccl_environment():
    env_words = ["env"] + [f"{name}={value}" for name, value in XCCL_RANK_ENV]
    static = ["--rdzv-backend", "static", "--master-addr", "10.0.0.1", "--master-port", "29500", "--node-rank"]
    assert build(xccl_spec(rdzv="static")) == [
        torchrun_argv(address, static + [str(rank)], env_words=env_words, per_node=4)
        for rank, address in enumerate(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    ]


def test_xccl_mpiexec_passes_the_xccl_environment_with_genv():
    assert build(xccl_spec(launcher="mpiexec")) == [mpiexec_argv(XCCL_RANK_ENV, per_node=4)]


def test_xccl_sets_no_pmi_variable_for_any_launcher():
    # PMI_RANK/PMI_SIZE would make PyTorch's with_mpirun() true (ProcessGroupXCCL.hpp), see launch.XCCL_ENV.
    for launcher in ("torchrun", "mpiexec", "mpirun"):
        words = [word for argv in build(xccl_spec(launcher=launcher)) for word in argv]
        assert not [word for word in words if word.startswith(("PMI_", "PMIX_"))], launcher


def test_xccl_user_env_has_the_last_word():
    tuning = rank_tuning(XEON_2S, "xccl", env={"CCL_SEND": "topo", "CCL_RECV": "topo", "FI_PROVIDER": "verbs"})
    assert [tuning["env"][name] for name, _ in XCCL] == ["none", "ofi", "verbs", "FLAT", "topo", "topo"]
    assert tuning["source"]["env"] == ["CCL_RECV", "CCL_SEND", "FI_PROVIDER"]
