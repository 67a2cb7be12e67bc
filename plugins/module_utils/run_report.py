# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Turn the logs of a launched training job into a run summary.

The training script prints JSON lines (``joined``, ``epoch``, ``result``,
``done``); the launcher role's scripts add ``launch``, ``exit`` (one per rank,
with its exit code), ``node_exit`` (one per torchrun agent) and
``launcher_exit``. :func:`parse_events` pulls those objects out of raw logs,
:func:`summarize` decides whether the run succeeded and why not.

Pure Python (no Ansible imports) so it can be unit tested on its own.
"""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def parse_events(text: str) -> list[dict[str, Any]]:
    """Every JSON object with an ``event`` key, one per line, in log order.

    Anything before the first ``{`` of a line (``[0] `` from ``mpiexec
    -prepend-rank``, ``node1: ``, ...) and after the object is ignored, and so
    are lines that hold no such object (launcher noise, tracebacks).
    """
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            obj, _ = _DECODER.raw_decode(line, start)
        except ValueError:
            continue
        if isinstance(obj, dict) and "event" in obj:
            events.append(obj)
    return events


def _of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event.get("event") == kind]


def _ranks(events: list[dict[str, Any]], kind: str) -> set[int]:
    return {int(event["rank"]) for event in _of_kind(events, kind) if "rank" in event}


def _times(events: list[dict[str, Any]], kind: str) -> list[float]:
    return [float(event["time"]) for event in _of_kind(events, kind) if "time" in event]


def _seconds(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return round(end - start, 2)


def _sort_key(key: str) -> tuple[int, int | str]:
    """Numeric rank keys first, in numeric order, then names."""
    try:
        return (0, int(key))
    except ValueError:
        return (1, key)


def _exit_codes(events: list[dict[str, Any]]) -> dict[str, int]:
    """Exit codes by rank, from the ``exit`` events the rank wrapper prints."""
    codes = {
        str(event["rank"]): int(event["code"])
        for event in _of_kind(events, "exit")
        if "rank" in event and "code" in event
    }
    return {key: codes[key] for key in sorted(codes, key=_sort_key)}


def _hosts_by_rank(events: list[dict[str, Any]]) -> dict[str, str]:
    return {
        str(event["rank"]): str(event["host"])
        for event in events
        if event.get("event") in ("joined", "exit") and "rank" in event and "host" in event
    }


def _rank_label(rank: int | str, hosts: dict[str, str]) -> str:
    host = hosts.get(str(rank))
    return f"rank {rank} (host {host})" if host else f"rank {rank}"


def _failure_reasons(
    *,
    world_size: int,
    timed_out: bool,
    launcher_exit_code: int | None,
    node_exit_codes: dict[str, int],
    rank_exit_codes: dict[str, int],
    joined: set[int],
    done: set[int],
    hosts: dict[str, str],
    has_result: bool,
) -> list[str]:
    reasons: list[str] = []
    if timed_out:
        reasons.append("timed out")
    if launcher_exit_code is not None and launcher_exit_code < 0:
        reasons.append("launcher did not end")
    elif launcher_exit_code:
        reasons.append(f"launcher exited {launcher_exit_code}")
    for node, code in node_exit_codes.items():
        if code != 0:
            reasons.append(f"node {node} exited {code}")
    for key, code in rank_exit_codes.items():
        if code != 0:
            reasons.append(f"{_rank_label(key, hosts)} exited {code}")
    for rank in range(world_size):
        if rank not in joined:
            reasons.append(f"rank {rank} never joined")
        elif rank not in done:
            reasons.append(f"{_rank_label(rank, hosts)} never reported done")
        elif str(rank) not in rank_exit_codes:
            reasons.append(f"{_rank_label(rank, hosts)} reported no exit status")
    if not has_result:
        reasons.append("no result event from rank 0")
    return reasons


def summarize(
    *,
    job_id: str,
    launcher: str,
    nodes: list[str],
    world_size: int,
    events: list[dict[str, Any]],
    provision_seconds: float | None,
    provision_changed: int | None,
    timed_out: bool,
    node_names: list[str] | None = None,
    launcher_exit_code: int | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """JSON-serialisable summary of one run.

    The launch phase starts at the ``launch`` event of the launch script. The
    run succeeded only if it did not time out, the launcher, every node and
    every rank exited 0, all ``world_size`` ranks reported ``done`` and rank 0
    printed a ``result``.
    """
    codes = _exit_codes(events)
    node_exit_codes = {
        str(event["node"]): int(event["code"])
        for event in _of_kind(events, "node_exit")
        if "node" in event and "code" in event
    }
    if launcher_exit_code is None:
        launcher_exits = _of_kind(events, "launcher_exit")
        if launcher_exits and "code" in launcher_exits[-1]:
            launcher_exit_code = int(launcher_exits[-1]["code"])
    joined = _ranks(events, "joined")
    done = _ranks(events, "done")
    results = _of_kind(events, "result")
    expected = set(range(world_size))

    reasons = _failure_reasons(
        world_size=world_size,
        timed_out=timed_out,
        launcher_exit_code=launcher_exit_code,
        node_exit_codes=node_exit_codes,
        rank_exit_codes=codes,
        joined=joined,
        done=done,
        hosts=_hosts_by_rank(events),
        has_result=bool(results),
    )

    launch_started = min(_times(events, "launch"), default=None)
    last_joined = last_done = None
    if expected <= joined:
        last_joined = max(_times(events, "joined"), default=None)
        if expected <= done:
            last_done = max(_times(events, "done"), default=None)

    summary: dict[str, Any] = {
        "job_id": job_id,
        "status": "failed" if reasons else "succeeded",
        "failure_reasons": reasons,
        "launcher": launcher,
        "world_size": world_size,
        "nodes": list(nodes),
        "test_accuracy": results[-1].get("test_accuracy") if results else None,
        "epochs": [
            {
                "epoch": event.get("epoch"),
                "loss": event.get("loss"),
                "samples_per_s": event.get("samples_per_s"),
            }
            for event in sorted(_of_kind(events, "epoch"), key=lambda e: e.get("epoch", 0))
        ],
        "ranks_joined": sorted(joined),
        "ranks_done": sorted(done),
        "rank_exit_codes": codes,
        "node_exit_codes": node_exit_codes,
        "launcher_exit_code": launcher_exit_code,
        "provision_changed": provision_changed,
        "phases": {
            "provision": None if provision_seconds is None else round(provision_seconds, 2),
            "launch": _seconds(launch_started, last_joined),
            "train": _seconds(last_joined, last_done),
        },
    }
    if node_names is not None:
        summary["node_names"] = list(node_names)
    if extra is not None:
        summary["settings"] = extra
    return summary
