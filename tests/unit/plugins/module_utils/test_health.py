# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health gate's verdict (module_utils/health.py) on figures shaped like health_probe.py's output."""

from __future__ import annotations

import copy
import html
import json
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils import health

Figures = dict[str, dict[str, Any]]

NODES = ["node1", "node2", "node3"]
INTERFACES = {"node1": "eth0", "node2": "eth0", "node3": "eth0"}

# What three healthy nodes printed: within 20% of each other, clocks within 0.1 s, a ring 0 -> 1 -> 2 -> 0.
HEALTHY: Figures = {
    "node1": {
        "python": "3.11.2",
        "torch": "2.13.0+cpu",
        "mpi": "2021.18.1",
        "gflops": 48.8,
        "memory_gbps": 20.3,
        "disk_free_gb": 62.1,
        "memory_free_gb": 23.6,
        "mtu": 1500,
        "render_nodes": 0,
        "render_access": True,
        "gpus": 0,
        "clock": 1795750000.10,
        "allreduce": {
            "1024": {"seconds": 0.000412, "busbw_gbps": 0.013},
            "1048576": {"seconds": 0.004105, "busbw_gbps": 1.362},
            "16777216": {"seconds": 0.061234, "busbw_gbps": 1.461},
        },
        "link_gbps": 4.99,
        "link_to": 1,
        "rank": 0,
    },
    "node2": {
        "python": "3.11.2",
        "torch": "2.13.0+cpu",
        "mpi": "2021.18.1",
        "gflops": 45.2,
        "memory_gbps": 19.1,
        "disk_free_gb": 58.4,
        "memory_free_gb": 22.9,
        "mtu": 1500,
        "render_nodes": 0,
        "render_access": True,
        "gpus": 0,
        "clock": 1795750000.14,
        "allreduce": {
            "1024": {"seconds": 0.000398, "busbw_gbps": 0.014},
            "1048576": {"seconds": 0.004087, "busbw_gbps": 1.368},
            "16777216": {"seconds": 0.061198, "busbw_gbps": 1.462},
        },
        "link_gbps": 4.71,
        "link_to": 2,
        "rank": 1,
    },
    "node3": {
        "python": "3.11.2",
        "torch": "2.13.0+cpu",
        "mpi": "2021.18.1",
        "gflops": 51.3,
        "memory_gbps": 21.7,
        "disk_free_gb": 64.8,
        "memory_free_gb": 24.1,
        "mtu": 1500,
        "render_nodes": 0,
        "render_access": True,
        "gpus": 0,
        "clock": 1795750000.07,
        "allreduce": {
            "1024": {"seconds": 0.000405, "busbw_gbps": 0.013},
            "1048576": {"seconds": 0.004121, "busbw_gbps": 1.357},
            "16777216": {"seconds": 0.061301, "busbw_gbps": 1.459},
        },
        "link_gbps": 5.12,
        "link_to": 0,
        "rank": 2,
    },
}


def fleet(**changes: dict[str, Any]) -> Figures:
    """A copy of the healthy fleet with some nodes' figures changed, e.g. ``fleet(node3={"gflops": 14})``."""
    figures = copy.deepcopy(HEALTHY)
    for node, figures_changed in changes.items():
        figures[node].update(figures_changed)
    return figures


def judged(figures: Figures, **options: Any) -> list[health.Finding]:
    """The verdict with the fleet's interfaces and ring order."""
    return health.judge(figures, interfaces=INTERFACES, nodes_by_rank=NODES, **options)


def named(findings: list[health.Finding]) -> list[tuple[str, str]]:
    """(node, measure) of every finding, in order."""
    return [(finding.node, finding.measure) for finding in findings]


# judge: the fleet's median


def test_healthy_fleet_has_no_findings() -> None:
    assert judged(fleet()) == []


def test_healthy_fleet_has_no_findings_without_interfaces_or_ring() -> None:
    assert health.judge(fleet()) == []


def test_slow_compute_is_named_once_with_its_figure_and_the_median() -> None:
    findings = judged(fleet(node3={"gflops": 14}))
    assert named(findings) == [("node3", "gflops")]
    text = findings[0].text
    assert text.startswith("node3: ")
    assert "14 GFLOP/s" in text
    assert "median 45.2 GFLOP/s" in text
    assert "69% below" in text  # 1 - 14 / 45.2
    assert "60%" in text  # the gate


def test_slow_memory_is_named() -> None:
    findings = judged(fleet(node1={"memory_gbps": 6.0}))
    assert named(findings) == [("node1", "memory_gbps")]
    assert "6 GB/s" in findings[0].text


def test_slow_link_names_interface_and_peer() -> None:
    findings = judged(fleet(node2={"link_gbps": 1.5}))
    assert named(findings) == [("node2", "link_gbps")]
    text = findings[0].text
    assert text.startswith("node2 (eth0) -> node3: ")
    assert "1.5 Gbit/s" in text
    assert "median 4.99 Gbit/s" in text
    assert "70% below" in text  # 1 - 1.5 / 4.99


def test_slow_link_of_the_last_rank_points_to_the_first() -> None:
    findings = judged(fleet(node3={"link_gbps": 1.2}))
    assert findings[0].text.startswith("node3 (eth0) -> node1: ")


def test_slow_link_without_interface_or_ring_names_the_rank() -> None:
    findings = health.judge(fleet(node2={"link_gbps": 1.5}))
    assert named(findings) == [("node2", "link_gbps")]
    assert findings[0].text.startswith("node2 -> rank 2: ")


def test_slow_link_with_rank_outside_the_ring_names_the_rank() -> None:
    findings = health.judge(fleet(node2={"link_gbps": 1.5, "link_to": 7}), nodes_by_rank=NODES)
    assert findings[0].text.startswith("node2 -> rank 7: ")


def test_slow_link_into_a_node_slow_in_compute_names_that_node() -> None:
    # A node with a cut CPU share receives slowly: the link into it (node2 -> node3) names node3 as a possible cause.
    findings = judged(fleet(node3={"gflops": 7.8}, node2={"link_gbps": 1.5}))
    assert named(findings) == [("node3", "gflops"), ("node2", "link_gbps")]
    assert findings[1].text.startswith("node2 (eth0) -> node3: ")
    assert findings[1].text.endswith("(a node slow in its CPU work at its end: node3; the link itself may be sound)")


def test_slow_link_out_of_and_into_nodes_slow_in_compute_names_both() -> None:
    # Two of three slow make the median: the floor names them.
    findings = judged(fleet(node2={"gflops": 7.8, "link_gbps": 1.5}, node3={"gflops": 8.0}), floors={"gflops": 20.0})
    assert named(findings) == [("node2", "gflops"), ("node3", "gflops"), ("node2", "link_gbps")]
    assert findings[-1].text.endswith("at its end: node2 and node3; the link itself may be sound)")


def test_slow_link_out_of_a_node_slow_in_memory_names_it() -> None:
    findings = judged(fleet(node3={"memory_gbps": 2.2, "link_gbps": 1.2}))
    assert findings[1].text.startswith("node3 (eth0) -> node1: ")
    assert findings[1].text.endswith("at its end: node3; the link itself may be sound)")


def test_slow_link_between_nodes_of_sound_cpu_work_names_no_cause() -> None:
    findings = judged(fleet(node1={"gflops": 7.8}, node2={"link_gbps": 1.5}))
    assert "CPU work" not in findings[1].text


def test_slow_link_under_a_floor_into_a_node_slow_in_compute_says_so() -> None:
    findings = judged(fleet(node3={"gflops": 7.8}), floors={"link_gbps": 100.0})
    link = [finding.text for finding in findings if finding.measure == "link_gbps" and finding.node == "node2"]
    assert link == [link[0]] and "below the floor 100 Gbit/s (a node slow in its CPU work at its end: node3;" in link[0]


def test_fraction_names_a_node_at_65_percent_only_when_raised_to_70() -> None:
    figures = fleet(node3={"gflops": 29.4})  # 65% of the median 45.2
    assert judged(figures) == []
    findings = judged(figures, fraction=0.7)
    assert named(findings) == [("node3", "gflops")]
    assert "70%" in findings[0].text


def test_two_slow_nodes_are_both_named_in_node_order() -> None:
    figures = fleet(node1={"gflops": 10.0}, node3={"memory_gbps": 5.0})
    assert named(judged(figures)) == [("node1", "gflops"), ("node3", "memory_gbps")]


# judge: floors


def test_default_disk_floor_names_a_full_disk() -> None:
    findings = judged(fleet(node2={"disk_free_gb": 0.5}))
    assert named(findings) == [("node2", "disk_free_gb")]
    assert "0.5 GB" in findings[0].text
    assert "floor 1 GB" in findings[0].text


def test_default_memory_floor_names_a_node_out_of_memory() -> None:
    assert named(judged(fleet(node1={"memory_free_gb": 0.3}))) == [("node1", "memory_free_gb")]


def test_raised_disk_floor_names_every_node() -> None:
    findings = judged(fleet(), floors={"disk_free_gb": 100})
    assert named(findings) == [(node, "disk_free_gb") for node in NODES]
    assert all("floor 100 GB" in finding.text for finding in findings)


def test_user_floors_keep_the_default_floors() -> None:
    figures = fleet(node2={"memory_free_gb": 0.5})
    assert named(judged(figures, floors={"disk_free_gb": 10})) == [("node2", "memory_free_gb")]


def test_compute_floor_names_nodes_when_the_whole_fleet_is_low() -> None:
    figures = fleet(node1={"gflops": 8.0}, node2={"gflops": 8.0}, node3={"gflops": 8.0})
    assert judged(figures) == []
    findings = judged(figures, floors={"gflops": 20})
    assert named(findings) == [(node, "gflops") for node in NODES]
    assert "below the floor 20" in findings[0].text


def test_compute_floor_names_only_the_node_below_it() -> None:
    figures = fleet(node1={"gflops": 9.0}, node2={"gflops": 8.0}, node3={"gflops": 8.5})
    assert named(judged(figures, floors={"gflops": 8.2})) == [("node2", "gflops")]


def test_link_floor_text_names_the_link() -> None:
    findings = judged(fleet(), floors={"link_gbps": 5.0})
    assert named(findings) == [("node1", "link_gbps"), ("node2", "link_gbps")]
    assert findings[1].text.startswith("node2 (eth0) -> node3: ")


# judge: a single node


def test_single_node_has_no_median_findings() -> None:
    figures = {"node1": dict(HEALTHY["node1"], gflops=1.0, memory_gbps=0.5)}
    assert judged(figures) == []


def test_single_node_floors_still_apply() -> None:
    figures = {"node1": dict(HEALTHY["node1"], gflops=5.0, disk_free_gb=0.5)}
    findings = judged(figures, floors={"gflops": 10})
    assert named(findings) == [("node1", "gflops"), ("node1", "disk_free_gb")]


def test_single_node_without_link_figures_is_healthy() -> None:
    # A world of one makes no ring: health_probe.py prints no link_gbps and no link_to.
    figures = {"node1": {key: value for key, value in HEALTHY["node1"].items() if key not in ("link_gbps", "link_to")}}
    assert judged(figures) == []


# judge: versions and MTU


def test_odd_torch_version_is_named_with_what_the_others_have() -> None:
    findings = judged(fleet(node2={"torch": "2.12.0"}))
    assert named(findings) == [("node2", "torch")]
    assert findings[0].text == "node2: torch 2.12.0, the other nodes have 2.13.0+cpu"


def test_odd_mtu_is_named() -> None:
    findings = judged(fleet(node3={"mtu": 9000}))
    assert named(findings) == [("node3", "mtu")]
    assert "9000" in findings[0].text
    assert "1500" in findings[0].text


@pytest.mark.parametrize("measure", ["python", "mpi"])
def test_odd_python_or_mpi_is_named(measure: str) -> None:
    assert named(judged(fleet(node1={measure: "9.9.9"}))) == [("node1", measure)]


def test_versions_all_equal_gives_nothing_even_when_unknown() -> None:
    # impi-rt not installed anywhere, and no interface to read the MTU of: the same on every node.
    figures = fleet(
        node1={"mpi": None, "mtu": None}, node2={"mpi": None, "mtu": None}, node3={"mpi": None, "mtu": None}
    )
    assert judged(figures) == []


def test_two_node_version_split_names_one_node() -> None:
    figures = {node: HEALTHY[node] for node in ("node1", "node2")}
    figures = copy.deepcopy(figures)
    figures["node2"]["torch"] = "2.12.0"
    findings = judged(figures)
    assert len(findings) == 1
    assert findings[0].measure == "torch"


# judge: clocks


def test_clock_five_seconds_off_is_named() -> None:
    findings = judged(fleet(node3={"clock": 1795750005.07}))
    assert named(findings) == [("node3", "clock")]
    assert "+4.9 s" in findings[0].text  # off the median node2's 1795750000.14
    assert "gate 2 s" in findings[0].text


def test_clock_behind_is_named_with_a_minus_sign() -> None:
    findings = judged(fleet(node1={"clock": 1795749995.10}))
    assert named(findings) == [("node1", "clock")]
    assert "-5.0 s" in findings[0].text


def test_clock_one_second_off_is_not_named() -> None:
    assert judged(fleet(node3={"clock": 1795750001.07})) == []


def test_clock_skew_parameter() -> None:
    figures = fleet(node3={"clock": 1795750001.07})
    assert named(judged(figures, clock_skew_s=0.5)) == [("node3", "clock")]


# judge: missing and non-numeric figures


@pytest.mark.parametrize("value", [None, "n/a", [1.0]])
@pytest.mark.parametrize(
    "measure", ["gflops", "memory_gbps", "link_gbps", "disk_free_gb", "memory_free_gb", "clock", "link_to"]
)
def test_non_numeric_figure_is_skipped(measure: str, value: Any) -> None:
    assert judged(fleet(node2={measure: value})) == []


@pytest.mark.parametrize("measure", ["gflops", "memory_gbps", "link_gbps", "disk_free_gb", "memory_free_gb", "clock"])
def test_missing_figure_is_skipped(measure: str) -> None:
    figures = fleet()
    del figures["node2"][measure]
    assert judged(figures) == []


def test_measure_nobody_reports_is_skipped_even_with_a_floor() -> None:
    figures = fleet()
    for values in figures.values():
        del values["gflops"]
    assert judged(figures, floors={"gflops": 10}) == []


def test_non_numeric_figure_does_not_hide_a_slow_node() -> None:
    findings = judged(fleet(node1={"gflops": None}, node3={"gflops": 14}))
    assert named(findings) == [("node3", "gflops")]
    assert "median 29.6 GFLOP/s" in findings[0].text  # of 45.2 and 14


def test_empty_fleet_has_no_findings() -> None:
    assert judged({}) == []


# fleet_median


def test_fleet_median_of_three() -> None:
    assert health.fleet_median(fleet(), "gflops") == 48.8


def test_fleet_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    figures = {"node1": {"gflops": 10}, "node2": {"gflops": 20}, "node3": {"gflops": 40}, "node4": {"gflops": 50}}
    assert health.fleet_median(figures, "gflops") == 30.0


def test_fleet_median_skips_non_numeric_values() -> None:
    figures = {"node1": {"gflops": 10.0}, "node2": {"gflops": None}, "node3": {"gflops": "fast"}, "node4": {}}
    assert health.fleet_median(figures, "gflops") == 10.0


def test_fleet_median_is_none_when_nobody_reports_the_measure() -> None:
    assert health.fleet_median(fleet(), "tflops") is None
    assert health.fleet_median({"node1": {"gflops": None}}, "gflops") is None
    assert health.fleet_median({}, "gflops") is None


# probe_figures


def test_probe_figures_container_mode_takes_the_last_json_line() -> None:
    printed = json.dumps(HEALTHY["node1"])
    output = f'some log\n{{"not": "this one"}}\n[W socket.cpp:697] gloo warning\n{printed}\n'
    figures, failures = health.probe_figures({"node1": {"finished": 1, "container": {"Output": output}}})
    assert failures == []
    assert figures == {"node1": HEALTHY["node1"]}


def test_probe_figures_host_mode_reads_stdout() -> None:
    result = {"finished": 1, "rc": 0, "stdout": "log line\n" + json.dumps(HEALTHY["node2"]), "stderr": ""}
    figures, failures = health.probe_figures({"node2": result})
    assert failures == []
    assert figures == {"node2": HEALTHY["node2"]}


def test_probe_figures_failed_probe_is_a_finding() -> None:
    results = {
        "node1": {"finished": 1, "container": {"Output": json.dumps(HEALTHY["node1"])}},
        "node2": {"failed": True, "msg": "Timeout (62s) waiting for the probe"},
        "node3": {"finished": 1, "container": {"Output": json.dumps(HEALTHY["node3"])}},
    }
    figures, failures = health.probe_figures(results)
    assert list(figures) == ["node1", "node3"]
    assert named(failures) == [("node2", "probe")]
    assert failures[0].text.startswith("node2: the health probe failed:")
    assert "Timeout (62s) waiting for the probe" in failures[0].text


def test_probe_figures_a_detached_probe_without_its_exit_line_is_named_with_what_to_do() -> None:
    # A detached probe still running after the wait (health_timeout plus a minute): its output has no exit line.
    result = health.detached_result(f"{START}\nstill measuring\n", CHECK)
    _, failures = health.probe_figures({"node3": result})
    assert named(failures) == [("node3", "probe")]
    assert failures[0].text.startswith(f"node3: the health probe failed: {health.PROBE_NOT_ENDED} (the probe did not end")
    assert "a larger health_timeout gives it longer" in failures[0].text


def test_probe_figures_failed_probe_with_output_is_still_a_finding() -> None:
    result = {"failed": True, "rc": 1, "stdout": json.dumps(HEALTHY["node1"]), "stderr": "RuntimeError: gloo"}
    figures, failures = health.probe_figures({"node1": result})
    assert figures == {}
    assert named(failures) == [("node1", "probe")]
    assert "RuntimeError: gloo" in failures[0].text


def test_probe_figures_unfinished_probe_is_a_finding() -> None:
    figures, failures = health.probe_figures({"node1": {"finished": 0, "container": {"Output": "still running\n"}}})
    assert figures == {}
    assert named(failures) == [("node1", "probe")]


def test_probe_figures_output_without_json_is_a_finding() -> None:
    output = "Traceback (most recent call last):\n  ...\nRuntimeError: Connection refused\n"
    figures, failures = health.probe_figures({"node3": {"finished": 1, "container": {"Output": output}}})
    assert figures == {}
    assert named(failures) == [("node3", "probe")]
    assert failures[0].text.startswith("node3: the health probe failed:")
    assert "RuntimeError: Connection refused" in failures[0].text


def test_probe_figures_no_output_at_all_is_a_finding() -> None:
    figures, failures = health.probe_figures({"node1": {"finished": 1}})
    assert figures == {}
    assert failures[0].text == "node1: the health probe failed: no output"


def test_probe_figures_long_message_is_cut_to_one_short_line() -> None:
    figures, failures = health.probe_figures({"node1": {"failed": True, "msg": "x\n" * 1000}})
    assert figures == {}
    assert "\n" not in failures[0].text
    assert len(failures[0].text) <= len("node1: the health probe failed: ") + 300


def test_probe_figures_feed_judge() -> None:
    results = {node: {"finished": 1, "container": {"Output": json.dumps(values)}} for node, values in HEALTHY.items()}
    figures, failures = health.probe_figures(results)
    assert failures == []
    assert judged(figures) == []


# table


def test_table_has_a_header_and_a_line_per_node() -> None:
    lines = health.table(fleet())
    assert len(lines) == 4
    assert lines[0].startswith("node")
    assert "gflops" in lines[0]
    for line, node in zip(lines[1:], NODES):
        assert line.startswith(node)
        assert str(HEALTHY[node]["gflops"]) in line


def test_table_marks_a_missing_figure() -> None:
    figures = fleet()
    del figures["node2"]["gflops"]
    assert health.table(figures)[2].split()[:2] == ["node2", "-"]


def test_table_of_no_nodes_is_the_header() -> None:
    assert len(health.table({})) == 1


# the cache


def test_a_cached_check_of_the_same_nodes_and_key_within_the_age_is_reused() -> None:
    cache = health.cache_entry("k1", fleet(), checked_at=1000.0)

    reused = health.cached_figures(cache, "k1", NODES, now=1300.0, max_age=600)

    assert reused == (fleet(), 300.0)


def test_the_cache_is_json_as_written() -> None:
    cache = json.loads(json.dumps(health.cache_entry("k1", fleet(), checked_at=1000.0)))
    assert health.cached_figures(cache, "k1", NODES, now=1001.0, max_age=600) == (fleet(), 1.0)


@pytest.mark.parametrize(
    ("key", "hosts", "now", "max_age"),
    [
        ("k2", NODES, 1300.0, 600),  # another image, runtime, node order or probe
        ("k1", NODES, 1601.0, 600),  # too old
        ("k1", NODES, 1300.0, 0),  # 0 always measures
        ("k1", [*NODES, "node4"], 1300.0, 600),  # a node the check did not measure
        ("k1", [], 1300.0, 600),  # no nodes
        ("k1", NODES, 900.0, 600),  # taken in the future: a clock that moved back
    ],
)
def test_a_cached_check_is_not_reused(key: str, hosts: list[str], now: float, max_age: int) -> None:
    cache = health.cache_entry("k1", fleet(), checked_at=1000.0)
    assert health.cached_figures(cache, key, hosts, now=now, max_age=max_age) is None


def test_a_subset_of_the_cached_nodes_is_reused_for_those_nodes() -> None:
    cache = health.cache_entry("k1", fleet(), checked_at=1000.0)
    reused = health.cached_figures(cache, "k1", NODES[:2], now=1010.0, max_age=600)
    assert reused is not None and list(reused[0]) == NODES[:2]


@pytest.mark.parametrize("cache", [{}, {"key": "k1"}, {"key": "k1", "nodes": []}, {"key": "k1", "nodes": {"node1": 3}}])
def test_a_damaged_cache_is_not_reused(cache: dict[str, Any]) -> None:
    assert health.cached_figures(cache, "k1", NODES[:1], now=1.0, max_age=600) is None


# the page


def test_the_page_marks_the_named_figures_and_puts_each_link_at_its_sender_and_receiver() -> None:
    figures = fleet()
    figures["node2"]["link_gbps"] = 0.3
    findings = judged(figures)
    report = {"status": "failed", "checked_at": "2026-11-27T07:00:00+00:00", "nodes": figures}

    page = health.html_page(report, findings, NODES)

    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>")
    assert "http" not in page  # self-contained: nothing fetched to open it
    assert "<td class=bad>0.3</td>" in page
    links = page[page.index("<h2>Links") :]
    node2_row = links[links.index("<tr><th>node2</th>") :].split("</tr>")[0]
    # node2 sent to node3, the third column; the others are empty.
    assert node2_row == "<tr><th>node2</th><td></td><td></td><td class=bad>0.3</td>"
    assert findings and all(f"<li>{html.escape(finding.text)}</li>" in page for finding in findings)


def test_the_page_escapes_what_it_shows() -> None:
    figures = fleet()
    figures["node1"]["torch"] = "<script>"
    page = health.html_page({"status": "passed", "nodes": figures}, [], NODES)
    assert "<script>" not in page and "&lt;script&gt;" in page


def fleet_line(nodes: list[str]) -> str:
    """Rank 0's line of every rank's figures, as the probe prints it (each with its rank)."""
    return json.dumps({"fleet": [{**HEALTHY[node], "rank": rank} for rank, node in enumerate(nodes)]})


def test_probe_figures_take_every_node_from_rank_0s_fleet_line() -> None:
    # The role reads only the launcher node's probe when it printed the fleet line: the others are skipped results.
    output = f"{json.dumps(HEALTHY['node1'])}\n{fleet_line(NODES)}\n"
    results = {"node1": {"finished": 1, "rc": 0, "stdout": output}, "node2": {"skipped": True}, "node3": {"skipped": True}}
    figures, failures = health.probe_figures(results)
    assert failures == []
    assert figures == {node: {**HEALTHY[node], "rank": rank} for rank, node in enumerate(NODES)}


def test_probe_figures_fleet_ranks_map_to_the_nodes_in_rank_order() -> None:
    # The fleet line is in rank order, but each entry's own rank decides its node.
    fleet = json.loads(fleet_line(NODES))["fleet"]
    output = json.dumps({"fleet": fleet[::-1]})
    figures, _ = health.probe_figures({"node1": {"finished": 1, "container": {"Output": output}}, "node2": {}, "node3": {}})
    assert {node: values["rank"] for node, values in figures.items()} == {"node1": 0, "node2": 1, "node3": 2}


def test_probe_figures_without_the_fleet_line_read_each_node() -> None:
    results = {node: {"finished": 1, "rc": 0, "stdout": json.dumps(HEALTHY[node])} for node in NODES}
    figures, failures = health.probe_figures(results)
    assert failures == []
    assert figures == HEALTHY


def test_probe_figures_a_node_neither_in_a_fleet_nor_read_is_a_finding() -> None:
    results = {"node1": {"finished": 1, "rc": 1, "stdout": "Traceback\nRuntimeError: gloo"}, "node2": {"skipped": True}}
    figures, failures = health.probe_figures(results)
    assert figures == {}
    assert named(failures) == [("node1", "probe"), ("node2", "probe")]


@pytest.mark.parametrize(
    "result",
    [
        {"finished": 1, "rc": 1},
        {"finished": 1, "status": 137, "container": {}},
        {"finished": 0},
        {"finished": 1, "failed": True},
    ],
)
def test_probe_figures_distrust_a_fleet_line_from_a_probe_that_failed(result: dict[str, Any]) -> None:
    # Read with failed_when false, a probe that exited non-zero is judged by its exit code.
    output = fleet_line(NODES)
    result = {**result, "stdout": output} if "container" not in result else {**result, "container": {**result["container"], "Output": output}}
    figures, failures = health.probe_figures({"node1": result, "node2": {"skipped": True}, "node3": {"skipped": True}})
    assert figures == {}
    assert [finding.node for finding in failures] == NODES


@pytest.mark.parametrize(
    "result",
    [
        # Host mode: Ansible's message names nothing, the error output's last line names the error.
        {"finished": 1, "rc": 1, "msg": "non-zero return code", "stdout": "", "stderr": "Traceback (most recent call last):\n  File x\nDistNetworkError: EADDRINUSE\n"},
        # The probe container: the module's message is the container's whole output.
        {"finished": 1, "status": 1, "failed": True, "msg": "Traceback (most recent call last):\n  File x\nDistNetworkError: EADDRINUSE", "container": {}},
    ],
)
def test_probe_figures_a_failed_probe_is_named_by_the_last_line_of_its_traceback(result: dict[str, Any]) -> None:
    _, failures = health.probe_figures({"node1": result})
    assert failures[0].text == "node1: the health probe failed: DistNetworkError: EADDRINUSE"


def test_probe_figures_rank_0_past_its_task_timeout_is_named_with_what_to_do() -> None:
    # The launcher node's rank 0 runs in the foreground; the role keeps the task's failure when its timeout ends it.
    result = {"failed": True, "msg": "The command action failed to execute in the expected time frame (120) and was terminated"}
    _, failures = health.probe_figures({"node1": result})
    assert failures[0].text.startswith("node1: the health probe failed: The command action failed to execute")
    assert "a larger health_timeout gives it longer" in failures[0].text


# detached_result: the probe of a node but the launcher node, read back from its output file

CHECK = "3f2b0c9e8d7a4c1b"
START = f"{health.PROBE_START} {CHECK}"


def test_a_detached_probe_that_ended_gives_its_output_and_exit_code() -> None:
    text = f"{START}\n{json.dumps(HEALTHY['node2'])}\n{health.PROBE_EXIT} 0 {CHECK}\n"
    result = health.detached_result(text, CHECK)
    assert result == {"finished": True, "stdout": json.dumps(HEALTHY["node2"]), "rc": 0}
    figures, failures = health.probe_figures({"node2": result})
    assert failures == [] and figures == {"node2": HEALTHY["node2"]}


def test_a_detached_probe_that_failed_is_named_by_its_own_last_words() -> None:
    text = f"{START}\nrank 2: rank 0 sent nothing within the health timeout (HEALTH_TIMEOUT)\n{health.PROBE_EXIT} 1 {CHECK}\n"
    _, failures = health.probe_figures({"node3": health.detached_result(text, CHECK)})
    assert [finding.text for finding in failures] == [
        "node3: the health probe failed: rank 2: rank 0 sent nothing within the health timeout (HEALTH_TIMEOUT)"
    ]


def test_an_earlier_checks_output_is_not_read_as_this_ones() -> None:
    # The file an earlier check left, which ended well: this check's probe never wrote its start line there.
    earlier = f"{health.PROBE_START} 0ld\n{json.dumps(HEALTHY['node2'])}\n{health.PROBE_EXIT} 0 0ld\n"
    result = health.detached_result(earlier, CHECK)
    assert result["failed"] is True
    _, failures = health.probe_figures({"node2": result})
    assert failures[0].text == (
        "node2: the health probe failed: the probe did not start on this node (its output file holds no line of this"
        " check)"
    )


def test_an_exit_line_of_another_check_does_not_end_this_one() -> None:
    text = f"{START}\npartial\n{health.PROBE_EXIT} 0 0ld\n"
    assert health.detached_result(text, CHECK) == {
        "finished": False,
        "stdout": "partial",
        "msg": health.PROBE_NOT_ENDED,
    }


def test_an_output_file_that_could_not_be_read_says_why() -> None:
    result = health.detached_result(None, CHECK, "file not found: /opt/multinode/work/health-probe.log")
    assert result == {
        "failed": True,
        "msg": "the probe did not start on this node (file not found: /opt/multinode/work/health-probe.log)",
    }


def test_fleet_complete_when_rank_0_brought_every_rank() -> None:
    assert health.fleet_complete({"finished": 1, "rc": 0, "stdout": fleet_line(NODES)}, len(NODES)) is True


@pytest.mark.parametrize(
    "result",
    [
        # Rank 0 of a smaller world: the nodes it has no figures for are read.
        {"finished": 1, "rc": 0, "stdout": fleet_line(NODES[:2])},
        {"finished": 1, "status": 0, "container": {"Output": f"{json.dumps(HEALTHY['node1'])}\n"}},
        {"finished": 1, "rc": 1, "stdout": fleet_line(NODES)},
        {"finished": 0, "stdout": fleet_line(NODES)},
        {"failed": True, "msg": "The command action failed to execute in the expected time frame (120) and was terminated"},
        {"skipped": True},
    ],
)
def test_fleet_is_not_complete_without_every_rank_from_a_probe_that_ended_well(result: dict[str, Any]) -> None:
    assert health.fleet_complete(result, len(NODES)) is False
