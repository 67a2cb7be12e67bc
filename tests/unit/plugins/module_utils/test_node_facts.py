# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils.node_facts import (
    cpu_topology,
    dri_nodes,
    group_gids,
    intel_gpu_family,
    intel_gpus,
    memory_mib,
    parse_cpuinfo,
    parse_cpulist,
    parse_ipv4_addresses,
    parse_route_get,
    running_job_problems,
    running_jobs,
)

# aarch64 kernels print neither "physical id" nor "core id" (nor "model name").
ARM_CPUINFO = "".join(
    f"processor\t: {cpu}\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n"
    f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n"
    for cpu in range(4)
)


# The helpers take a machine root materialized by the node_facts_root fixture (see ../conftest.py).
def read(root: Path, rel: str) -> str:
    return (root / rel).read_text()


def node_cpulists(root: Path) -> dict[str, str]:
    paths = root.glob("sys/devices/system/node/node*/cpulist")
    return {path.parent.name: path.read_text() for path in paths}


def pci_devices(root: Path) -> dict[str, dict[str, str]]:
    devices = root / "sys/bus/pci/devices"
    return {
        device.name: {name: (device / name).read_text() for name in ("vendor", "device", "class")}
        for device in devices.iterdir()
    }


def dri(root: Path) -> list[str]:
    path = root / "dev/dri"
    return [entry.name for entry in path.iterdir()] if path.is_dir() else []


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,8-11\n", [0, 1, 2, 3, 8, 9, 10, 11]),
        ("0\n", [0]),
        ("0,2,4-5", [0, 2, 4, 5]),
        ("\n", []),
        ("4-7,0-3", [0, 1, 2, 3, 4, 5, 6, 7]),
    ],
)
def test_parse_cpulist(text, cpus):
    assert parse_cpulist(text) == cpus


def test_parse_cpuinfo_blocks(node_facts_root):
    processors = parse_cpuinfo(read(node_facts_root("xeon_2s"), "proc/cpuinfo"))
    assert len(processors) == 32
    assert processors[0]["processor"] == "0"
    assert processors[0]["model name"] == "Intel(R) Xeon(R) Gold 6244 CPU @ 3.60GHz"
    assert processors[31]["physical id"] == "1"
    assert processors[31]["core id"] == "12"


def test_parse_cpuinfo_ignores_blocks_without_processor():
    assert parse_cpuinfo("") == []
    assert parse_cpuinfo("Hardware\t: BCM2835\nSerial\t\t: 0000\n") == []


def test_xeon_2s_topology(node_facts_root):
    root = node_facts_root("xeon_2s")
    topology = cpu_topology(read(root, "proc/cpuinfo"), node_cpulists(root))
    assert topology == {
        "model_name": "Intel(R) Xeon(R) Gold 6244 CPU @ 3.60GHz",
        "sockets": 2,
        "numa_nodes": 2,
        "numa_node_cpus": {
            "0": list(range(0, 8)) + list(range(16, 24)),
            "1": list(range(8, 16)) + list(range(24, 32)),
        },
        "cores_per_socket": 8,
        "logical_cpus_per_socket": 16,
        "threads_per_core": 2,
        "physical_cores": 16,
        "logical_cpus": 32,
    }


def test_single_socket_topology_without_numa_sysfs(node_facts_root):
    root = node_facts_root("single_socket")
    topology = cpu_topology(read(root, "proc/cpuinfo"), node_cpulists(root))
    assert topology == {
        "model_name": "Intel(R) Core(TM) i7-9700 CPU @ 3.00GHz",
        "sockets": 1,
        "numa_nodes": 1,
        "numa_node_cpus": {"0": list(range(8))},
        "cores_per_socket": 8,
        "logical_cpus_per_socket": 8,
        "threads_per_core": 1,
        "physical_cores": 8,
        "logical_cpus": 8,
    }


def test_flex170_topology(node_facts_root):
    root = node_facts_root("flex170")
    topology = cpu_topology(read(root, "proc/cpuinfo"), node_cpulists(root))
    assert topology["model_name"] == "Intel(R) Xeon(R) Gold 6426Y"
    assert (topology["sockets"], topology["numa_nodes"]) == (2, 2)
    assert topology["cores_per_socket"] == 16
    assert topology["logical_cpus_per_socket"] == 32
    assert topology["threads_per_core"] == 2
    assert (topology["physical_cores"], topology["logical_cpus"]) == (32, 64)
    assert topology["numa_node_cpus"]["1"] == list(range(16, 32)) + list(range(48, 64))


def test_no_gpu_vm_topology(node_facts_root):
    root = node_facts_root("no_gpu")
    topology = cpu_topology(read(root, "proc/cpuinfo"), node_cpulists(root))
    assert topology["model_name"] == "Intel Xeon Processor (Icelake)"
    assert topology["numa_node_cpus"] == {"0": [0, 1, 2, 3]}
    assert (topology["sockets"], topology["cores_per_socket"], topology["threads_per_core"]) == (1, 4, 1)
    assert (topology["physical_cores"], topology["logical_cpus"]) == (4, 4)


def test_topology_without_physical_or_core_id():
    topology = cpu_topology(ARM_CPUINFO)
    assert topology["model_name"] is None
    assert (topology["sockets"], topology["numa_nodes"]) == (1, 1)
    assert (topology["cores_per_socket"], topology["threads_per_core"]) == (4, 1)
    assert (topology["physical_cores"], topology["logical_cpus"]) == (4, 4)


def test_numa_nodes_sorted_numerically():
    cpuinfo = "".join(f"processor\t: {cpu}\nphysical id\t: 0\ncore id\t\t: {cpu}\n\n" for cpu in range(12))
    nodes = {f"node{node}": f"{node}\n" for node in (10, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9, 11)}
    topology = cpu_topology(cpuinfo, nodes)
    assert list(topology["numa_node_cpus"]) == [str(node) for node in range(12)]
    assert topology["numa_node_cpus"]["10"] == [10]


def test_memory_only_numa_nodes_count_with_no_cpus():
    cpuinfo = "".join(f"processor\t: {cpu}\nphysical id\t: 0\ncore id\t\t: {cpu}\n\n" for cpu in range(4))
    topology = cpu_topology(cpuinfo, {"node0": "0-3\n", "node1": "\n"})
    assert topology["numa_nodes"] == 2
    assert topology["numa_node_cpus"] == {"0": [0, 1, 2, 3], "1": []}


def test_hybrid_cores_report_maxima():
    # 2 P-cores with Hyper-Threading and 2 E-cores without, like Alder Lake.
    blocks = [(0, 0), (1, 0), (2, 4), (3, 4), (4, 8), (5, 9)]
    cpuinfo = "".join(f"processor\t: {cpu}\nphysical id\t: 0\ncore id\t\t: {core}\n\n" for cpu, core in blocks)
    topology = cpu_topology(cpuinfo)
    assert (topology["physical_cores"], topology["logical_cpus"], topology["threads_per_core"]) == (4, 6, 2)


def test_topology_rejects_empty_cpuinfo():
    with pytest.raises(ValueError, match="processor"):
        cpu_topology("")


@pytest.mark.parametrize(
    ("device_id", "address", "pci_class", "family"),
    [
        ("0x56c0", "0000:4d:00.0", "0x038000", "flex"),
        ("0x56c1", "0000:4d:00.0", "0x038000", "flex"),
        ("0x0bd5", "0000:29:00.0", "0x038000", "max"),
        ("0x0bda", "0000:29:00.0", "0x120000", "max"),
        ("0x56a0", "0000:03:00.0", "0x030000", "arc"),
        ("0x56a5", "0000:03:00.0", "0x030000", "arc"),
        ("0x3e98", "0000:00:02.0", "0x030000", "integrated"),
        ("0x3e98", "0000:01:00.0", "0x030000", "unknown"),
        ("0x1234", "0000:00:02.0", "0x038000", "unknown"),
    ],
)
def test_intel_gpu_family(device_id, address, pci_class, family):
    assert intel_gpu_family(device_id, address, pci_class) == family


def test_flex170_gpus_ignore_bmc_bridges_and_nics(node_facts_root):
    assert intel_gpus(pci_devices(node_facts_root("flex170"))) == [
        {"pci_address": "0000:4d:00.0", "device_id": "0x56c0", "family": "flex"},
        {"pci_address": "0000:b3:00.0", "device_id": "0x56c0", "family": "flex"},
    ]


def test_single_socket_integrated_gpu(node_facts_root):
    assert intel_gpus(pci_devices(node_facts_root("single_socket"))) == [
        {"pci_address": "0000:00:02.0", "device_id": "0x3e98", "family": "integrated"},
    ]


@pytest.mark.parametrize("machine", ["xeon_2s", "no_gpu"])
def test_machines_without_intel_gpu(node_facts_root, machine):
    assert intel_gpus(pci_devices(node_facts_root(machine))) == []


def test_intel_gpus_normalizes_and_skips_incomplete_devices():
    devices = {
        "0000:29:00.0": {"vendor": "0x8086\n", "device": "0x0BD5\n", "class": "0x120000\n"},
        "0000:9a:00.0": {"vendor": "0x8086\n", "class": "0x038000\n"},
        "0000:9b:00.0": {"device": "0x56c0\n", "class": "0x038000\n"},
        "0000:9c:00.0": {"vendor": "0x8086\n", "device": "0x56c0\n"},
    }
    assert intel_gpus(devices) == [{"pci_address": "0000:29:00.0", "device_id": "0x0bd5", "family": "max"}]


def test_dri_nodes_flex170(node_facts_root):
    assert dri_nodes(dri(node_facts_root("flex170"))) == {
        "cards": ["card0", "card1", "card2"],
        "render_nodes": ["renderD128", "renderD129"],
    }


def test_dri_nodes_sorts_numerically_and_ignores_other_entries():
    names = ["renderD129", "by-path", "card10", "card2", "renderD128", "controlD64", "card1-HDMI-A-1"]
    assert dri_nodes(iter(names)) == {"cards": ["card2", "card10"], "render_nodes": ["renderD128", "renderD129"]}


def test_dri_nodes_missing_directory(node_facts_root):
    assert dri(node_facts_root("xeon_2s")) == []
    assert dri_nodes([]) == {"cards": [], "render_nodes": []}


@pytest.mark.parametrize(
    ("machine", "gids"),
    [
        ("flex170", {"render": 109, "video": 44}),
        ("single_socket", {"render": 106, "video": 44}),
        ("xeon_2s", {"render": None, "video": 44}),
        ("no_gpu", {"render": 997, "video": 39}),
    ],
)
def test_group_gids(node_facts_root, machine, gids):
    assert group_gids(read(node_facts_root(machine), "etc/group")) == gids


def test_group_gids_skips_comments_and_nis_lines_and_keeps_the_first_entry():
    text = "# comment\n\n+:::\nrender:x:abc:\nrender:x:109:\nrender:x:110:\n"
    assert group_gids(text) == {"render": 109, "video": None}


@pytest.mark.parametrize(
    ("output", "route"),
    [
        (
            "10.0.0.2 dev eth0 src 10.0.0.1 uid 0 \\    cache \n",
            {"interface": "eth0", "source_address": "10.0.0.1", "gateway": None, "local": False},
        ),
        (
            "192.168.7.20 via 10.0.0.254 dev ens1f0 src 10.0.0.1 uid 1000 \\    cache \n",
            {"interface": "ens1f0", "source_address": "10.0.0.1", "gateway": "10.0.0.254", "local": False},
        ),
        (
            "local 10.0.0.1 dev lo table local src 10.0.0.1 uid 0 \\    cache <local> \n",
            {"interface": "lo", "source_address": "10.0.0.1", "gateway": None, "local": True},
        ),
        (
            "2001:db8::2 from :: via fe80::1 dev eth0 proto ra src 2001:db8::1 metric 1024 pref medium\n",
            {"interface": "eth0", "source_address": "2001:db8::1", "gateway": "fe80::1", "local": False},
        ),
        (
            "10.0.0.2 via inet6 fe80::1 dev eth0 src 10.0.0.1 uid 0 \\    cache \n",
            {"interface": "eth0", "source_address": "10.0.0.1", "gateway": "fe80::1", "local": False},
        ),
        (
            "10.0.0.2 dev ib0 uid 0 \\    cache \n",
            {"interface": "ib0", "source_address": None, "gateway": None, "local": False},
        ),
    ],
)
def test_parse_route_get(output, route):
    assert parse_route_get(output) == route


@pytest.mark.parametrize("output", ["", "RTNETLINK answers: Network is unreachable\n"])
def test_parse_route_get_without_device(output):
    with pytest.raises(ValueError, match="no 'dev'"):
        parse_route_get(output)


def test_parse_ipv4_addresses():
    output = (
        "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
        "3: eth0@if12    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever\n"
        "3: eth0@if12    inet 10.0.1.1/24 scope global secondary eth0:1\\       valid_lft forever\n"
        "4: ib0    inet 192.168.7.1/16 scope global ib0\\       valid_lft forever\n"
        "garbage line\n"
    )
    assert parse_ipv4_addresses(output) == {"lo": ["127.0.0.1"], "eth0": ["10.0.0.1", "10.0.1.1"], "ib0": ["192.168.7.1"]}
    assert parse_ipv4_addresses("") == {}



def test_memory_mib_is_memtotal_rounded_down():
    meminfo = "MemTotal:       24683532 kB\nMemFree:         1000 kB\n"
    assert memory_mib(meminfo) == 24683532 // 1024


def test_memory_mib_without_memtotal_is_an_error():
    with pytest.raises(ValueError, match="no MemTotal"):
        memory_mib("MemFree: 1000 kB\n")


def test_running_jobs_reads_only_a_jobs_scripts_under_the_jobs_dir():
    command_lines = [
        ["bash", "/w/jobs/j1/rank.sh", "python3", "train.py", "/w/jobs/j1/launch.sh"],
        ["bash", "/w/jobs/j2/work/rank.sh"],
        ["bash", "/w/jobsx/j3/rank.sh"],
        ["python3", "/w/jobs/j4/rank.sh.bak"],
    ]
    assert running_jobs(command_lines, "/w/jobs") == {"j1": ["launch.sh", "rank.sh"]}


def test_running_job_problems_name_each_job_its_hosts_and_the_way_out():
    problems = running_job_problems(
        {"node1": {"j1": ["launch.sh", "rank.sh"]}, "node2": {"j1": ["rank.sh"], "j0": ["rank.sh"]}, "node3": {}, "node4": None}
    )
    assert problems == [
        "job j0 is still running on node2 (rank.sh): a second job on these nodes would take over its launcher container,"
        " worker containers and ports. Wait for it to end, or stop it (multinode-training cancel runs/j0), then run again",
        "job j1 is still running on node1 (launch.sh, rank.sh), node2 (rank.sh): a second job on these nodes would take"
        " over its launcher container, worker containers and ports. Wait for it to end, or stop it"
        " (multinode-training cancel runs/j1), then run again",
    ]
    assert running_job_problems({"node1": {}, "node2": None}) == []
