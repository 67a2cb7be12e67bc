# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters that turn inventory hosts and node facts into launcher inputs."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.filter.cluster import FilterModule, hostfile_entries

FILTERS = FilterModule().filters()

HOSTVARS = {
    "node1": {"cluster_address": "10.0.0.1", "launcher_tuning": {"slots": 2}, "launcher_nproc_per_node": "auto"},
    "node2": {"ansible_host": "10.0.0.2", "launcher_nproc_per_node": 4},
    "node3": {},
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
