# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster's health gate: what every node measures, and the verdict on the figures.

Every node runs ``roles/health/files/health_probe.py`` in its training environment (the worker container, or host
mode's environment) at the same time, as one rank of a small job over TCP on the cluster network (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, ``GLOO_SOCKET_IFNAME`` set by the caller). It measures the node (a
matrix multiply in GFLOP/s, memory bandwidth, free disk where jobs and checkpoints go, free memory, the MTU of the
cluster interface, the Python, torch and MPI versions, Intel GPUs and render-node access, its clock at a barrier)
and the network: an all-reduce of a few sizes across all nodes, and one send along a ring (rank i to i+1) that times
each node's link, so one slow node or link stands out without measuring every pair (a ring is n transfers in three
rounds at any scale, a node sending or receiving in each, never both). Compute and memory are measured on every
node at once, except that nodes sharing one kernel (containers on one server) take turns (and send along the ring
one at a time), so that none measures its neighbours' load. It prints one JSON object; rank 0 prints a second,
every rank's figures (``fleet_figures``), so that the controller needs to read only the launcher node's probe.

``judge`` compares each figure with the fleet's median (a node below ``fraction`` of it is named) and with the
user's absolute floors, and requires the versions to agree; pure Python, unit-tested on recorded figures.

The figures are cached on the controller (``cache_entry``, ``cached_figures``): a check of the same nodes, in the
same training environment (image and runtime), with the same probe, is reused while every node's figures are
younger than the caller's limit, and judged again with the current fraction and floors.
"""

from __future__ import annotations

import html
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Figures where more is better, judged against the fleet's median and the floors: name -> (unit, what it is).
RATED = {
    "gflops": ("GFLOP/s", "compute (a float32 matrix multiply)"),
    "memory_gbps": ("GB/s", "memory bandwidth (a large copy)"),
    "link_gbps": ("Gbit/s", "its link (a send to the next node of the ring)"),
}
# Figures judged only against floors: name -> (unit, what it is).
FLOORED = {
    "disk_free_gb": ("GB", "free disk where jobs and checkpoints go"),
    "memory_free_gb": ("GB", "free memory"),
}
# What must be the same on every node.
AGREED = ("python", "torch", "mpi", "mtu")
# The figures a starved CPU lowers (judged before the links, which they may explain).
CPU_WORK = ("gflops", "memory_gbps")
# The rank a node's ring send went to (beside its link_gbps).
LINK_TO = "link_to"
DEFAULT_FRACTION = 0.6
DEFAULT_CLOCK_SKEW_S = 2.0
DEFAULT_FLOORS = {"disk_free_gb": 1.0, "memory_free_gb": 1.0}
# How rank 0's line of every rank's figures begins (the probe prints it after its own).
FLEET_LINE = '{"fleet": '
# The lines a detached probe's wrapper writes to its output file on the node around the probe's own output, each
# ending with the check's id ("health-probe-exit 0 <id>"): a file a check before left there is not read as this one's.
PROBE_START, PROBE_EXIT = "health-probe-start", "health-probe-exit"
PROBE_NOT_ENDED = "its output on the node has no end (no exit line)"


@dataclass(frozen=True)
class Finding:
    """One node's figure that failed the gate, in words."""

    node: str
    measure: str
    text: str


def probe_figures(results: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[Finding]]:
    """Each node's figures and a finding for each node whose probe failed or printed none. ``results`` holds the
    probe's task result (the worker's output, or stdout in host mode) by node, in rank order: the figures of every
    rank come from rank 0's fleet line when a result carries it (the other nodes' results are then not read), else
    from each node's own last line."""
    figures = fleet_figures(results)
    failures: list[Finding] = []
    for node, result in results.items():
        if node in figures:
            continue
        output = _probe_output(result)
        lines = [line for line in output.splitlines() if line.startswith("{") and not line.startswith(FLEET_LINE)]
        if probe_failed(result) or not lines:
            reason = failure_reason(result, output)
            failures.append(Finding(node, "probe", f"{node}: the health probe failed: {reason[:300]}{_hint(reason)}"))
            continue
        try:
            figures[node] = json.loads(lines[-1])
        except json.JSONDecodeError:
            failures.append(Finding(node, "probe", f"{node}: the health probe printed no figures: {lines[-1][:300]}"))
    return figures, failures


def fleet_figures(results: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every rank's figures by node (``results``' order is rank order) from the first result with rank 0's fleet
    line, ``{"fleet": [...]}``; empty when none has it."""
    nodes = list(results)
    for result in results.values():
        entries = _fleet_entries(result, len(nodes))
        if entries is not None:
            return {nodes[entry["rank"]]: entry for entry in entries}
    return {}


def fleet_complete(result: Mapping[str, Any], size: int) -> bool:
    """Whether one probe's result (rank 0's) holds the figures of every rank of a check of ``size`` nodes, so that no
    other node's probe needs reading: the rule ``fleet_figures`` judges the verdict by."""
    ranks = {entry["rank"] for entry in _fleet_entries(result, size) or []}
    return ranks == set(range(size))


def _fleet_entries(result: Mapping[str, Any], size: int) -> list[dict[str, Any]] | None:
    """The entries with a rank below ``size`` of the fleet line in a probe's result that did not fail; None when it
    has no such line."""
    if probe_failed(result):
        return None
    for line in _probe_output(result).splitlines():
        if not line.startswith(FLEET_LINE):
            continue
        try:
            fleet = json.loads(line)["fleet"]
        except (json.JSONDecodeError, KeyError):
            continue
        return [entry for entry in fleet if isinstance(entry, dict) and entry.get("rank") in range(size)]
    return None


def probe_failed(result: Mapping[str, Any]) -> bool:
    """Whether a probe's task result says it failed or has not ended: Ansible's words (the role reads the probes
    with failed_when false), or an exit code other than 0 (host mode's rc, the probe container's status)."""
    exit_code = result.get("rc", result.get("status"))
    return bool(result.get("failed")) or not result.get("finished", True) or exit_code not in (None, 0)


def _probe_output(result: Mapping[str, Any]) -> str:
    """What the probe printed: the worker container's output, or stdout in host mode."""
    return str((result.get("container") or {}).get("Output") or result.get("stdout") or "")


def detached_result(text: str | None, check_id: str, reason: str = "") -> dict[str, Any]:
    """A detached probe's result in the shape of a probe run to its end (``stdout``, ``rc``, ``finished``), from its
    output file on the node (``text``; None when it could not be read, ``reason`` saying why): the lines after this
    check's start line, the code of its exit line. Without that exit line, the probe did not end."""
    lines = (text or "").splitlines()
    start = f"{PROBE_START} {check_id}"
    if start not in lines:
        why = reason or "its output file holds no line of this check"
        return {"failed": True, "msg": f"the probe did not start on this node ({why})"}
    output = lines[lines.index(start) + 1 :]
    ends = [line.split() for line in output if line.startswith(PROBE_EXIT)]
    codes = [words[1] for words in ends if len(words) == 3 and words[2] == check_id and words[1].isdigit()]
    stdout = "\n".join(line for line in output if not line.startswith(PROBE_EXIT))
    if not codes:
        return {"finished": False, "stdout": stdout, "msg": PROBE_NOT_ENDED}
    return {"finished": True, "stdout": stdout, "rc": int(codes[-1])}


def cache_entry(key: str, figures: Mapping[str, Mapping[str, Any]], checked_at: float) -> dict[str, Any]:
    """The cache file's content after a check: its key and every node's figures with the time they were taken."""
    return {
        "key": key,
        "nodes": {node: {"checked_at": checked_at, "figures": dict(values)} for node, values in figures.items()},
    }


def cached_figures(
    cache: Mapping[str, Any], key: str, hosts: Sequence[str], now: float, max_age: float
) -> tuple[dict[str, dict[str, Any]], float] | None:
    """Every host's cached figures and the oldest one's age in seconds, when the cache was made with ``key`` and no
    host's figures are older than ``max_age`` (0 never reuses); else None."""
    nodes = cache.get("nodes") if cache.get("key") == key else None
    if max_age <= 0 or not isinstance(nodes, Mapping) or not hosts:
        return None
    entries = [nodes.get(host) for host in hosts]
    if not all(isinstance(entry, Mapping) and _number(entry.get("checked_at")) for entry in entries):
        return None
    age = now - min(float(entry["checked_at"]) for entry in entries)
    if not 0 <= age <= max_age:
        return None
    return {host: dict(entry["figures"]) for host, entry in zip(hosts, entries)}, age


def failure_reason(result: Mapping[str, Any], output: str) -> str:
    """Why a probe failed, in one line: the last line of its message (Ansible's or community.docker's: for the probe
    container, its whole output), else of its error output or its output (a traceback's last line names the error);
    Ansible's 'non-zero return code' names nothing and is passed over."""
    for text in (result.get("msg"), result.get("stderr"), output):
        lines = [" ".join(line.split()) for line in str(text or "").splitlines() if line.strip()]
        if lines and lines[-1] != "non-zero return code":
            return lines[-1]
    return "no output"


def _hint(reason: str) -> str:
    """What to do about a probe that could not start (community.docker's words for an engine it cannot reach) or did
    not end (Ansible's words for rank 0's run past its time; a detached probe's output without its exit line)."""
    if "Error connecting" in reason or "docker.sock" in reason:
        return " (no Docker engine answers on the node: provision it first, playbooks/provision.yml)"
    if reason == PROBE_NOT_ENDED or "failed to execute in the expected time frame" in reason:
        return (
            " (the probe did not end within health_timeout plus a minute: the node is too slow or too loaded to be"
            " measured in that time; a larger health_timeout gives it longer)"
        )
    return ""


def fleet_median(figures: Mapping[str, Mapping[str, Any]], measure: str) -> float | None:
    """The median of ``measure`` over the nodes that report it as a number."""
    values = [float(node[measure]) for node in figures.values() if _number(node.get(measure))]
    return statistics.median(values) if values else None


def judge(
    figures: Mapping[str, Mapping[str, Any]],
    *,
    fraction: float = DEFAULT_FRACTION,
    floors: Mapping[str, float] | None = None,
    clock_skew_s: float = DEFAULT_CLOCK_SKEW_S,
    interfaces: Mapping[str, str] | None = None,
    nodes_by_rank: Sequence[str] = (),
) -> list[Finding]:
    """Every failed check of every node (node order kept): below ``fraction`` of the fleet's median, below a floor,
    a version that differs from the other nodes' (on a tie, from the first node's), a clock more than
    ``clock_skew_s`` from the fleet's."""
    floors = {**DEFAULT_FLOORS, **(floors or {})}
    findings: list[Finding] = []
    for measure, (unit, what) in RATED.items():
        median = fleet_median(figures, measure)
        for node, values in figures.items():
            value = values.get(measure)
            if not _number(value) or median is None:
                continue
            where = _where(node, measure, values, interfaces or {}, nodes_by_rank)
            if len(figures) > 1 and value < fraction * median:
                failed = (
                    f"{100 * (1 - value / median):.0f}% below the fleet's median {median:g} {unit} "
                    f"(the gate is {100 * fraction:.0f}% of it)"
                )
            elif measure in floors and value < floors[measure]:
                failed = f"below the floor {floors[measure]:g} {unit}"
            else:
                continue
            cause = _slow_end(node, measure, values, findings, nodes_by_rank)
            findings.append(Finding(node, measure, f"{where}: {what} {value:g} {unit}, {failed}{cause}"))
    for measure, (unit, what) in FLOORED.items():
        for node, values in figures.items():
            value = values.get(measure)
            if _number(value) and measure in floors and value < floors[measure]:
                findings.append(
                    Finding(
                        node, measure, f"{node}: {what} {value:g} {unit}, below the floor {floors[measure]:g} {unit}"
                    )
                )
    findings += _disagreements(figures)
    findings += _clock_skew(figures, clock_skew_s)
    return findings


def _where(
    node: str, measure: str, values: Mapping[str, Any], interfaces: Mapping[str, str], nodes_by_rank: Sequence[str]
) -> str:
    """The node, and for a link its interface and the node it sent to."""
    if measure != "link_gbps":
        return node
    iface = interfaces.get(node)
    receiver = _receiver(values, nodes_by_rank) or f"rank {values.get(LINK_TO)}"
    return f"{node}{f' ({iface})' if iface else ''} -> {receiver}"


def _receiver(values: Mapping[str, Any], nodes_by_rank: Sequence[str]) -> str | None:
    """The node a link figure's send went to, when its rank names one."""
    target = values.get(LINK_TO)
    return nodes_by_rank[target] if isinstance(target, int) and 0 <= target < len(nodes_by_rank) else None


def _slow_end(
    node: str, measure: str, values: Mapping[str, Any], findings: Sequence[Finding], nodes_by_rank: Sequence[str]
) -> str:
    """For a slow link whose sender or receiver is itself named for its CPU work (compute or memory), that node: a
    starved node sends and receives slowly whatever its link, so the node may be the cause, not the network."""
    if measure != "link_gbps":
        return ""
    ends = (node, _receiver(values, nodes_by_rank))
    slow = [end for end in ends if any(f.node == end and f.measure in CPU_WORK for f in findings)]
    if not slow:
        return ""
    return f" (a node slow in its CPU work at its end: {' and '.join(slow)}; the link itself may be sound)"


def _disagreements(figures: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """A version (or MTU) that differs from the most common value across the nodes, named on the odd node."""
    findings = []
    for measure in AGREED:
        values = [str(node.get(measure)) for node in figures.values()]
        if len(set(values)) <= 1:
            continue
        # The most common value; on a tie the first node's (the launcher's), so the odd node named is always the same.
        common = max(values, key=lambda value: (values.count(value), value == values[0]))
        for node, node_values in figures.items():
            if str(node_values.get(measure)) != common:
                findings.append(
                    Finding(
                        node, measure, f"{node}: {measure} {node_values.get(measure)}, the other nodes have {common}"
                    )
                )
    return findings


def _clock_skew(figures: Mapping[str, Mapping[str, Any]], clock_skew_s: float) -> list[Finding]:
    """A clock more than ``clock_skew_s`` from the fleet's at the same barrier: from the lower median node's clock
    (a real node's; with two nodes the earlier one), so an odd clock is named on its own node."""
    clocks = {node: values["clock"] for node, values in figures.items() if _number(values.get("clock"))}
    if not clocks:
        return []
    reference = statistics.median_low(clocks.values())
    findings = []
    for node, clock in clocks.items():
        if abs(clock - reference) > clock_skew_s:
            findings.append(
                Finding(
                    node, "clock", f"{node}: clock {clock - reference:+.1f} s off the fleet's (gate {clock_skew_s:g} s)"
                )
            )
    return findings


def _number(value: Any) -> bool:
    """A figure to compare: a finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def table(figures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The figures as lines of a terminal table, one node a line."""
    columns = ("gflops", "memory_gbps", "link_gbps", "disk_free_gb", "memory_free_gb", "torch", "mtu")
    lines = ["node       " + " ".join(f"{column:>14}" for column in columns)]
    for node, values in figures.items():
        lines.append(f"{node:<10} " + " ".join(f"{str(values.get(column, '-')):>14}" for column in columns))
    return lines


HTML_COLUMNS = ("gflops", "memory_gbps", "link_gbps", "disk_free_gb", "memory_free_gb", "python", "torch", "mpi", "mtu")
_HTML_STYLE = (
    "body{font-family:sans-serif} td,th{padding:4px 10px;text-align:right;border-bottom:1px solid #ddd} "
    "td.bad{background:#f8d0d0;font-weight:bold} .passed{color:#16702e} .failed{color:#b00020}"
)


def html_page(report: Mapping[str, Any], findings: Sequence[Finding], nodes_by_rank: Sequence[str]) -> str:
    """The check as one self-contained HTML page (health.html beside health.json): the verdict, a table of every
    node's figures with each finding's cell marked, and the links measured as a matrix (sender by receiver)."""
    figures: Mapping[str, Mapping[str, Any]] = report.get("nodes") or {}
    named = {(finding.node, finding.measure) for finding in findings}
    nodes_table = [_row("node", HTML_COLUMNS, header=True)] + [
        _row(
            node, [values.get(column) for column in HTML_COLUMNS], [(node, column) in named for column in HTML_COLUMNS]
        )
        for node, values in figures.items()
    ]
    links_table = [_row("", nodes_by_rank, header=True)]
    for sender in nodes_by_rank:
        sent = [_link(figures.get(sender, {}), receiver, nodes_by_rank) for receiver in nodes_by_rank]
        marked = [value is not None and (sender, "link_gbps") in named for value in sent]
        links_table.append(_row(sender, sent, marked))
    status = html.escape(str(report.get("status")))
    items = "".join(f"<li>{html.escape(finding.text)}</li>" for finding in findings)
    return "\n".join(
        [
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>health check</title><style>{_HTML_STYLE}</style>",
            f"</head><body><h1>Health check: <span class='{status}'>{status}</span></h1>",
            f"<p>{html.escape(str(report.get('checked_at', '')))}</p><ul>{items}</ul>",
            "<h2>Every node</h2><table>" + "".join(nodes_table) + "</table>",
            "<h2>Links in Gbit/s (a row is the sender, a column the receiver: each node's send to the next one of the"
            " ring)</h2><table>" + "".join(links_table) + "</table></body></html>",
        ]
    )


def _row(head: str, values: Sequence[Any], marked: Sequence[bool] = (), header: bool = False) -> str:
    """One table row: ``head`` then a cell per value, a marked one highlighted."""
    if header:
        return (
            f"<tr><th>{html.escape(head)}</th>" + "".join(f"<th>{html.escape(str(v))}</th>" for v in values) + "</tr>"
        )
    cells = "".join(
        f"<td{' class=bad' if bad else ''}>{'' if value is None else html.escape(str(value))}</td>"
        for value, bad in zip(values, list(marked) + [False] * len(values))
    )
    return f"<tr><th>{html.escape(head)}</th>{cells}</tr>"


def _link(values: Mapping[str, Any], receiver: str, nodes_by_rank: Sequence[str]) -> Any:
    """The sender's link figure when it sent to ``receiver``, else None."""
    return values.get("link_gbps") if _receiver(values, nodes_by_rank) == receiver else None
