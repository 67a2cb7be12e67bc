# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters that turn inventory hosts and node facts into launcher inputs."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.filter.cluster import FilterModule, hostfile_entries
from ansible_collections.multinode.training.plugins.module_utils.cluster import DERIVED, INPUTS, ContractError

FILTERS = FilterModule().filters()

HOSTVARS = {
    "node1": {"cluster_node": {"address": "10.0.0.1"}, "launcher_tuning": {"slots": 2}, "launcher_nproc_per_node": "auto"},
    "node2": {"ansible_host": "10.0.0.2", "launcher_nproc_per_node": 4},
    "node3": {},
}

CONTRACT_INPUTS = {
    "name": "mnt",
    "user": "trainer",
    "uid": "12345",
    "gid": "12346",
    "ssh_port": "2222",
    "image": "registry.example/train:1",
    "runtime": "host",
    "scheduler": "slurm",
    "root": "/srv/mnt/",
    "state_dir": "/var/lib/mnt",
    "launcher_host": "node1",
    "hosts": ["node1", "node2"],
    "spares": [],
}


def test_hostfile_entries_address_fallbacks_and_default_slots_var():
    assert hostfile_entries(["node1", "node2", "node3"], HOSTVARS, 1) == [
        {"name": "node1", "address": "10.0.0.1", "slots": 1},
        {"name": "node2", "address": "10.0.0.2", "slots": 4},
        {"name": "node3", "address": "node3", "slots": 1},
    ]


def test_hostfile_entries_reads_slots_from_the_named_variable():
    entries = hostfile_entries(["node1", "node2"], HOSTVARS, slots_var="launcher_tuning.slots")
    assert [entry["slots"] for entry in entries] == [2, 1]


def test_hostfile_entries_count_auto_and_missing_paths_as_the_default_slots():
    entries = hostfile_entries(["node1", "node2", "node3"], HOSTVARS, 3)
    assert [entry["slots"] for entry in entries] == [3, 4, 3]
    assert [entry["slots"] for entry in hostfile_entries(["node2"], HOSTVARS, 5, slots_var="launcher_tuning.slots")] == [5]


def test_rank_tuning_errors_become_filter_errors():
    cpu = {"sockets": 1, "numa_nodes": 1, "cores_per_socket": 2, "physical_cores": 2}
    with pytest.raises(AnsibleFilterError, match="nproc_per_node must be 'auto' or a whole number >= 1, got 'x'"):
        FILTERS["rank_tuning"](cpu, "gloo", "x")


def test_interface_env_names_every_layer():
    assert FILTERS["interface_env"]("eth1") == {
        "I_MPI_HYDRA_IFACE": "eth1",
        "FI_TCP_IFACE": "eth1",
        "FI_SOCKETS_IFACE": "eth1",
        "CCL_KVS_IFACE": "eth1",
        "GLOO_SOCKET_IFNAME": "eth1",
        "NCCL_SOCKET_IFNAME": "eth1",
    }


def test_hostfile_entries_prefer_the_cluster_node_address_to_ansible_host():
    hostvars = {"node1": {"cluster_node": {"address": "10.0.0.1"}, "ansible_host": "192.168.1.1"}}
    assert hostfile_entries(["node1"], hostvars)[0]["address"] == "10.0.0.1"
    hostvars = {"node1": {"cluster_node": {"address": ""}, "ansible_host": "192.168.1.1"}}
    assert hostfile_entries(["node1"], hostvars)[0]["address"] == "192.168.1.1"


def test_cluster_contract_returns_the_fact():
    fact = FILTERS["cluster_contract"](CONTRACT_INPUTS)
    assert isinstance(fact, dict)
    assert set(fact) == set(INPUTS) | set(DERIVED)
    assert (fact["uid"], fact["gid"], fact["ssh_port"]) == (12345, 12346, 2222)
    assert fact["root"] == "/srv/mnt"
    assert fact["hosts"] == ["node1", "node2"]
    assert fact["ssh_client_dir"] == "/srv/mnt/home/.ssh"
    assert fact["env_script"] == "/srv/mnt/env.sh"
    assert fact["owner"] == "12345:12346"


def test_cluster_contract_errors_become_filter_errors():
    with pytest.raises(AnsibleFilterError, match="cluster_runtime: 'podman' is not allowed") as error:
        FILTERS["cluster_contract"]({**CONTRACT_INPUTS, "runtime": "podman"})
    assert not isinstance(error.value, ContractError)
    assert isinstance(error.value.__cause__, ContractError)
    with pytest.raises(AnsibleFilterError, match="cluster_uid: True is not a whole number"):
        FILTERS["cluster_contract"]({**CONTRACT_INPUTS, "uid": True})


def test_cluster_node_filter_builds_the_node_fact():
    node_facts = {
        "route": {"interface": "eth1", "source_address": "10.0.0.2", "gateway": None, "local": False},
        "ipv4_addresses": {"eth0": ["192.168.1.2"], "eth1": ["10.0.0.2"]},
        "dri": {"cards": ["card0"], "render_nodes": ["renderD128"]},
        "gids": {"render": 109, "video": 44},
        "cpu": {"sockets": 1},
        "memory_mib": 2048,
        "hostname": "n2",
        "boot_id": "6d1f0e8c-7a42-4b0e-9a51-0b6a1c5e4f2d",
    }
    assert FILTERS["cluster_node"](node_facts, "192.168.1.2") == {
        "address": "10.0.0.2",
        "iface": "eth1",
        "hostname": "n2",
        "cpu": {"sockets": 1},
        "memory_mib": 2048,
        "dri_devices": ["/dev/dri/card0", "/dev/dri/renderD128"],
        "device_gids": [109, 44],
        "kernel": "6d1f0e8c-7a42-4b0e-9a51-0b6a1c5e4f2d",
    }
    overridden = FILTERS["cluster_node"](node_facts, "192.168.1.2", "10.9.0.2", "ib0")
    assert (overridden["address"], overridden["iface"]) == ("10.9.0.2", "ib0")


def test_device_problems_are_the_preflight_messages_naming_the_hosts():
    devices = {"node1": ["/dev/dri/card0", "/dev/dri/renderD128"], "node2": ["/dev/dri/card0"], "node3": None}
    assert FILTERS["device_problems"](devices, "xccl") == [
        "host node2: launcher_backend: 'xccl' runs every rank on an Intel GPU, and no render node (/dev/dri/renderD*)"
        " was found on the node; use gloo, ccl or mpi on CPU nodes, or load the GPU's kernel driver (i915 or xe)"
    ]
    assert FILTERS["device_problems"](devices, "gloo") == []
