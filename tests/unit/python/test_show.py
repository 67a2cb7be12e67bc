"""``multinode-training show``'s node lines: ranks, threads and where the threads came from."""

from __future__ import annotations

from typing import Any

from multinode_training.show import node_lines


def settings(nodes_on_kernel: int | None) -> dict[str, Any]:
    tuning: dict[str, Any] = {"slots": 1, "omp_num_threads": 1, "source": {"omp_num_threads": "topology"}}
    if nodes_on_kernel is not None:
        tuning["nodes_on_kernel"] = nodes_on_kernel
    return {
        "hostfile_dialect": "plain",
        "backend": "gloo",
        "tuning": {"node1": tuning},
        "topology": {"node1": {"sockets": 1, "numa_nodes": 1, "physical_cores": 2}},
        "interfaces": {"node1": "eth0"},
    }


def test_a_node_sharing_its_kernel_says_its_cores_were_split_with_the_others() -> None:
    assert node_lines(settings(3))[1].endswith("2 physical cores shared by 3 nodes on one kernel)")


def test_a_node_alone_on_its_kernel_and_a_run_from_before_the_count_say_nothing_of_it() -> None:
    for count in (1, None):
        assert node_lines(settings(count))[1].endswith("1 NUMA node(s), 2 physical cores)")
