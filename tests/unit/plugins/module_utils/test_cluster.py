# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster contract (``build``, its derived names and paths, ``as_fact``) and the per-node fact ``node``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils.cluster import (
    DERIVED,
    INPUTS,
    Cluster,
    ContractError,
    address_problems,
    build,
    node,
)

INPUT_VALUES: dict[str, Any] = {
    "name": "mnt",
    "user": "trainer",
    "uid": 12345,
    "gid": 12346,
    "ssh_port": 2222,
    "image": "registry.example/train:1",
    "runtime": "container",
    "scheduler": "none",
    "root": "/srv/mnt",
    "state_dir": "/var/lib/mnt",
    "launcher_host": "node1",
    "hosts": ["node1", "node2"],
    "spares": ["node3"],
}

# What node_facts reports (ansible_facts.multinode_node): the shapes of parse_route_get,
# parse_ipv4_addresses, dri_nodes, group_gids and cpu_topology.
CPU = {"sockets": 2, "numa_nodes": 2, "cores_per_socket": 8, "physical_cores": 16, "logical_cpus": 32}
IPV4 = {"lo": ["127.0.0.1"], "eth0": ["192.168.1.10"], "eth1": ["10.0.0.1", "10.0.1.1"]}
DRI = {"cards": ["card0", "card1"], "render_nodes": ["renderD128", "renderD129"]}


def inputs(**changes: Any) -> dict[str, Any]:
    return {**INPUT_VALUES, **changes}


def facts(**changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "route": {"interface": "eth1", "source_address": "10.0.0.2", "gateway": None, "local": False},
        "ipv4_addresses": {"lo": ["127.0.0.1"], "eth1": ["10.0.0.2"]},
        "dri": {"cards": [], "render_nodes": []},
        "gids": {"render": 109, "video": 44},
        "cpu": CPU,
        "memory_mib": 64000,
        "hostname": "n2",
    }
    found.update(changes)
    return found


def launcher_route(address: str = "10.0.0.1") -> dict[str, Any]:
    """``ip -o route get`` of the launcher's own address, run on the launcher."""
    return {"interface": "lo", "source_address": address, "gateway": None, "local": True}


# build and the derived fields


def test_inputs_are_the_dataclass_fields_and_derived_are_its_properties() -> None:
    assert INPUTS == (
        "name", "user", "uid", "gid", "ssh_port", "image", "runtime", "scheduler", "root", "state_dir", "launcher_host",
        "hosts", "spares",
    )
    assert set(DERIVED) == {
        "workdir", "code_dir", "jobs_dir", "ssh_dir", "ssh_server_dir", "home", "ssh_client_dir", "env_script",
        "run_dir", "worker_pidfile", "worker_container", "launcher_container", "owner",
        "slurm_pidfiles",
    }
    assert not set(INPUTS) & set(DERIVED)


def test_build_keeps_the_inputs() -> None:
    assert build(INPUT_VALUES) == Cluster(
        name="mnt",
        user="trainer",
        uid=12345,
        gid=12346,
        ssh_port=2222,
        image="registry.example/train:1",
        runtime="container",
        scheduler="none",
        root="/srv/mnt",
        state_dir="/var/lib/mnt",
        launcher_host="node1",
        hosts=("node1", "node2"),
        spares=("node3",),
    )


def test_container_runtime_derived_names_and_paths() -> None:
    cluster = build(inputs(runtime="container"))
    assert cluster.workdir == "/srv/mnt/work"
    assert (cluster.code_dir, cluster.jobs_dir) == ("/srv/mnt/work/code", "/srv/mnt/work/jobs")
    assert cluster.ssh_dir == "/srv/mnt/ssh"
    assert cluster.ssh_server_dir == "/srv/mnt/ssh/server"
    assert cluster.home == "/srv/mnt/home"
    assert cluster.ssh_client_dir == "/srv/mnt/ssh/client"
    assert cluster.env_script == ""
    assert cluster.run_dir == "/srv/mnt/run"
    assert cluster.worker_pidfile == "/srv/mnt/run/sshd.pid"
    assert cluster.worker_container == "mnt-worker"
    assert cluster.launcher_container == "mnt-launcher"
    assert cluster.owner == "12345:12346"


def test_host_runtime_derived_names_and_paths() -> None:
    cluster = build(inputs(runtime="host"))
    assert cluster.workdir == "/srv/mnt/work"
    assert cluster.ssh_dir == "/srv/mnt/ssh"
    assert cluster.ssh_server_dir == "/srv/mnt/ssh/server"
    assert cluster.home == "/srv/mnt/home"
    assert cluster.ssh_client_dir == "/srv/mnt/home/.ssh"
    assert cluster.env_script == "/srv/mnt/env.sh"
    assert cluster.run_dir == "/srv/mnt/run"
    assert cluster.worker_pidfile == "/srv/mnt/run/sshd.pid"
    assert cluster.worker_container == "mnt-worker"
    assert cluster.launcher_container == "mnt-launcher"
    assert cluster.owner == "12345:12346"


@pytest.mark.parametrize("runtime", ["container", "host"])
def test_as_fact_holds_every_input_and_derived_value(runtime: str) -> None:
    cluster = build(inputs(runtime=runtime))
    fact = cluster.as_fact()
    assert set(fact) == set(INPUTS) | set(DERIVED)
    expected = inputs(runtime=runtime)
    for name in INPUTS:
        if name not in ("hosts", "spares"):
            assert fact[name] == expected[name]
    for name in DERIVED:
        assert fact[name] == getattr(cluster, name)
    assert fact["hosts"] == ["node1", "node2"]
    assert isinstance(fact["hosts"], list)
    assert fact["spares"] == ["node3"]


def test_as_fact_derived_values_follow_the_runtime() -> None:
    container, host = build(inputs(runtime="container")).as_fact(), build(inputs(runtime="host")).as_fact()
    assert (container["ssh_client_dir"], container["env_script"]) == ("/srv/mnt/ssh/client", "")
    assert (host["ssh_client_dir"], host["env_script"]) == ("/srv/mnt/home/.ssh", "/srv/mnt/env.sh")


def test_the_contract_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        build(INPUT_VALUES).root = "/elsewhere"  # type: ignore[misc]


def test_ids_and_port_from_strings() -> None:
    # An INI inventory or -e key=value gives every value as a string.
    cluster = build(inputs(uid="12345", gid="12346", ssh_port="2222"))
    assert (cluster.uid, cluster.gid, cluster.ssh_port) == (12345, 12346, 2222)
    assert all(type(value) is int for value in (cluster.uid, cluster.gid, cluster.ssh_port))
    assert cluster.owner == "12345:12346"


@pytest.mark.parametrize("field", ["uid", "gid", "ssh_port"])
@pytest.mark.parametrize("value", [True, False, "abc", "", "12.5", 12.5, None, [1]])
def test_a_bool_or_non_number_id_or_port_is_refused(field: str, value: Any) -> None:
    with pytest.raises(ContractError, match=f"^cluster_{field}: .* is not a whole number"):
        build(inputs(**{field: value}))


@pytest.mark.parametrize("runtime", ["podman", "", "Host", None])
def test_an_unknown_runtime_is_refused(runtime: Any) -> None:
    with pytest.raises(ContractError, match="^cluster_runtime: .* is not allowed"):
        build(inputs(runtime=runtime))


@pytest.mark.parametrize("scheduler", ["pbs", "", "Slurm", None])
def test_an_unknown_scheduler_is_refused(scheduler: Any) -> None:
    with pytest.raises(ContractError, match="^cluster_scheduler: .* is not allowed"):
        build(inputs(scheduler=scheduler))


def test_slurm_pidfiles_only_with_the_slurm_scheduler() -> None:
    assert build(inputs()).slurm_pidfiles == {}
    assert build(inputs(scheduler="slurm")).slurm_pidfiles == {
        "munged": "/run/munge/munged.pid",
        "slurmctld": "/run/slurm/slurmctld.pid",
        "slurmd": "/run/slurm/slurmd.pid",
    }


@pytest.mark.parametrize("name", INPUTS)
def test_a_missing_input_is_refused(name: str) -> None:
    given = {key: value for key, value in INPUT_VALUES.items() if key != name}
    with pytest.raises(ContractError, match=f"missing inputs \\['{name}'\\]"):
        build(given)


def test_every_missing_input_is_named() -> None:
    with pytest.raises(ContractError, match="missing inputs") as error:
        build({"name": "mnt"})
    for name in INPUTS[1:]:
        assert repr(name) in str(error.value)


@pytest.mark.parametrize("hosts", ["node1,node2", "node1", {"node1": {}}, 3])
def test_hosts_must_be_a_list(hosts: Any) -> None:
    with pytest.raises(ContractError, match="hosts must be a list of names"):
        build(inputs(hosts=hosts))


@pytest.mark.parametrize("spares", ["node3", {"node3": {}}, 3])
def test_spares_must_be_a_list(spares: Any) -> None:
    with pytest.raises(ContractError, match="spares must be a list of names"):
        build(inputs(spares=spares))


def test_a_spare_that_is_also_a_node_of_the_job_is_only_a_node() -> None:
    assert build(inputs(hosts=["node1", "node2"], spares=["node2", "node3"])).spares == ("node3",)


def test_hosts_from_a_tuple_become_names() -> None:
    assert build(inputs(hosts=("node1", "node2"))).hosts == ("node1", "node2")
    assert build(inputs(hosts=[])).as_fact()["hosts"] == []


@pytest.mark.parametrize("root", ["/srv/mnt/", "/srv/mnt//"])
def test_a_trailing_slash_on_root_is_stripped(root: str) -> None:
    cluster = build(inputs(root=root, runtime="host"))
    assert cluster.root == "/srv/mnt"
    assert cluster.workdir == "/srv/mnt/work"
    assert cluster.ssh_client_dir == "/srv/mnt/home/.ssh"
    assert cluster.env_script == "/srv/mnt/env.sh"


# node: the per-node fact


def test_node_fact_keys() -> None:
    assert set(node(facts(), "node2")) == {
        "address", "iface", "hostname", "cpu", "memory_mib", "dri_devices", "device_gids", "kernel",
    }


def test_node_keeps_the_host_name_and_memory() -> None:
    found = node(facts(), "node2")
    assert (found["hostname"], found["memory_mib"]) == ("n2", 64000)


def test_launcher_uses_the_connect_address_and_the_interface_carrying_it() -> None:
    found = node(facts(route=launcher_route(), ipv4_addresses=IPV4), "10.0.0.1")
    assert found["address"] == "10.0.0.1"
    assert found["iface"] == "eth1"  # not lo, the interface of the local route
    assert found["cpu"] == CPU


def test_launcher_matches_a_secondary_address_of_an_interface() -> None:
    found = node(facts(route=launcher_route("10.0.1.1"), ipv4_addresses=IPV4), "10.0.1.1")
    assert (found["address"], found["iface"]) == ("10.0.1.1", "eth1")


@pytest.mark.parametrize("ipv4_addresses", [IPV4, {}, None, {"eth1": None}])
def test_launcher_iface_is_empty_when_no_interface_carries_its_address(ipv4_addresses: Any) -> None:
    # An inventory name (not an address) as the connect address, or no address facts.
    found = node(facts(route=launcher_route(), ipv4_addresses=ipv4_addresses), "node1")
    assert (found["address"], found["iface"]) == ("node1", "")


def test_worker_uses_the_source_address_and_interface_of_its_route_to_the_launcher() -> None:
    # ansible_host is a management address; the cluster network is the route to the launcher.
    found = node(facts(ipv4_addresses={"eth0": ["192.168.1.11"], "eth1": ["10.0.0.2"]}), "192.168.1.11")
    assert (found["address"], found["iface"]) == ("10.0.0.2", "eth1")


def test_worker_through_a_gateway() -> None:
    route = {"interface": "ib0", "source_address": "10.1.0.5", "gateway": "10.1.0.254", "local": False}
    found = node(facts(route=route), "node5")
    assert (found["address"], found["iface"]) == ("10.1.0.5", "ib0")


def test_inventory_address_and_iface_win_on_a_worker() -> None:
    found = node(facts(), "192.168.1.11", address="10.9.0.2", iface="ib0")
    assert (found["address"], found["iface"]) == ("10.9.0.2", "ib0")


def test_inventory_address_and_iface_win_on_the_launcher() -> None:
    found = node(facts(route=launcher_route(), ipv4_addresses=IPV4), "10.0.0.1", address="10.0.1.1", iface="ib0")
    assert (found["address"], found["iface"]) == ("10.0.1.1", "ib0")


def test_inventory_address_alone_on_the_launcher_finds_its_interface() -> None:
    found = node(facts(route=launcher_route(), ipv4_addresses=IPV4), "192.168.1.10", address="10.0.1.1")
    assert (found["address"], found["iface"]) == ("10.0.1.1", "eth1")


def test_inventory_address_alone_on_a_worker_finds_the_interface_carrying_it() -> None:
    addresses = {"lo": ["127.0.0.1"], "eth1": ["10.0.0.2"], "ib0": ["10.9.0.2"]}
    found = node(facts(ipv4_addresses=addresses), "node2", address="10.9.0.2")
    assert (found["address"], found["iface"]) == ("10.9.0.2", "ib0")


def test_inventory_address_no_interface_of_a_worker_carries_has_no_interface() -> None:
    # Another machine's address, or a typo: the cluster role names it before any node changes.
    found = node(facts(), "node2", address="10.9.0.99")
    assert (found["address"], found["iface"]) == ("10.9.0.99", "")


def test_inventory_address_on_a_worker_without_address_facts_keeps_the_route_interface() -> None:
    found = node(facts(ipv4_addresses=None), "node2", address="10.9.0.2")
    assert (found["address"], found["iface"]) == ("10.9.0.2", "eth1")


def test_inventory_iface_alone_keeps_the_found_address() -> None:
    assert node(facts(), "node2", iface="ib0")["address"] == "10.0.0.2"
    launcher = node(facts(route=launcher_route(), ipv4_addresses=IPV4), "10.0.0.1", iface="ib0")
    assert (launcher["address"], launcher["iface"]) == ("10.0.0.1", "ib0")


@pytest.mark.parametrize("source_address", [None, ""])
def test_no_source_address_falls_back_to_the_connect_address(source_address: str | None) -> None:
    route = {"interface": "eth1", "source_address": source_address, "gateway": None, "local": False}
    found = node(facts(route=route), "10.0.0.7")
    assert (found["address"], found["iface"]) == ("10.0.0.7", "eth1")


def test_no_route_at_all_falls_back_to_the_connect_address() -> None:
    for route in (None, {}):
        assert node(facts(route=route), "10.0.0.7")["address"] == "10.0.0.7"
    assert node({}, "node9") == {
        "address": "node9", "iface": "", "hostname": "", "cpu": {}, "memory_mib": 0, "dri_devices": [], "device_gids": [],
        "kernel": "",
    }


def test_dri_devices_are_paths_cards_then_render_nodes() -> None:
    found = node(facts(dri=DRI), "node2")
    assert found["dri_devices"] == ["/dev/dri/card0", "/dev/dri/card1", "/dev/dri/renderD128", "/dev/dri/renderD129"]
    assert found["device_gids"] == [109, 44]
    assert isinstance(found["dri_devices"], list) and isinstance(found["device_gids"], list)


def test_render_nodes_alone_are_devices() -> None:
    found = node(facts(dri={"cards": [], "render_nodes": ["renderD128"]}), "node2")
    assert (found["dri_devices"], found["device_gids"]) == (["/dev/dri/renderD128"], [109, 44])


@pytest.mark.parametrize("dri", [{"cards": [], "render_nodes": []}, {}, None])
def test_no_dri_devices_no_device_gids(dri: Any) -> None:
    found = node(facts(dri=dri, gids={"render": 109, "video": 44}), "node2")
    assert (found["dri_devices"], found["device_gids"]) == ([], [])


@pytest.mark.parametrize(
    ("gids", "expected"),
    [
        ({"render": 109, "video": 44}, [109, 44]),
        ({"render": 44, "video": 44}, [44]),  # one group id, given once
        ({"render": None, "video": 44}, [44]),
        ({"render": 109, "video": None}, [109]),
        ({"render": None, "video": None}, []),
        ({"render": True, "video": 44}, [44]),  # a boolean is not an id
        ({"render": False, "video": False}, []),
        ({"render": "109", "video": 44}, [44]),
        ({}, []),
        (None, []),
    ],
)
def test_device_gids_are_the_integer_render_and_video_gids_in_order(gids: Any, expected: list[int]) -> None:
    assert node(facts(dri=DRI, gids=gids), "node2")["device_gids"] == expected


def test_cpu_is_a_copy_of_the_topology() -> None:
    cpu = dict(CPU)
    found = node(facts(cpu=cpu), "node2")
    assert found["cpu"] == CPU
    assert found["cpu"] is not cpu
    assert node(facts(cpu=None), "node2")["cpu"] == {}



def test_paths_under_the_file_system_root_have_one_slash() -> None:
    contract = build(inputs(root="/", runtime="host"))
    assert (contract.root, contract.workdir, contract.env_script, contract.ssh_client_dir) == ("/", "/work", "/env.sh", "/home/.ssh")


def node_at(address: str, iface: str = "eth1") -> dict[str, str]:
    """A host's cluster_node as the cluster role records it (its address and interface only)."""
    return {"address": address, "iface": iface}


def test_nodes_on_their_own_addresses_have_no_address_problem() -> None:
    assert address_problems({"node1": node_at("10.0.0.1"), "node2": node_at("10.0.0.2"), "node3": None}) == []


def test_a_node_whose_address_no_interface_carries_is_named_with_its_other_addresses() -> None:
    problems = address_problems(
        {"node1": node_at("10.0.0.1"), "node2": node_at("10.9.9.9", iface="")},
        {"node2": {"lo": ["127.0.0.1"], "eth0": ["192.168.1.2"], "eth1": ["10.0.0.2"]}},
    )
    assert problems == [
        "host node2: no interface carries 10.9.9.9; set cluster_address to one of 192.168.1.2, 10.0.0.2 or set cluster_iface"
    ]


def test_hosts_that_found_one_address_are_named_together_once() -> None:
    problems = address_problems(
        {"node1": node_at("10.0.0.1"), "alias": node_at("10.0.0.1"), "node2": node_at("10.0.0.2"), "again": node_at("10.0.0.2")}
    )
    assert problems == [
        "cluster_address: several hosts are the same node on the cluster network: node1 = alias (10.0.0.1),"
        " node2 = again (10.0.0.2); list each node once"
    ]
