# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The restart policy: which failed attempts of a job are relaunched from its newest checkpoint, and their record.

An attempt's summary (run_report.py) names the kind of its root cause. Failures of the infrastructure (a worker or
node lost, the cluster's SSH cut, a rank killed by a signal from outside, a stall, gloo's teardown race after the
work) are restarted while restarts are left (a teardown race has a budget of its own: its ranks had done their
work, and it must not use up the restarts a lost node needs later); a rank whose own code failed is not by default (a deterministic bug
fails again), a timeout is not (the job's time is up) and a cancel never is, nor an attempt whose every rank had
exited 0 before what failed (a node lost at the collection: the training is done, a restart would train again). A node that is lost (it did not come
back in time) is replaced by a free spare node when the policy uses spares (in its place: the same node rank),
else left out: the job goes on on the others (a smaller world, as torch elastic does) while at least ``min_nodes``
remain. When the launcher node is the one lost, the launcher role moves: the surviving node that holds the newest
checkpoint (its replica, checkpoint_replica.py) becomes the launcher node and rank 0's, or without any the first
surviving node (the job starts again); only without replicas (``launcher_checkpoint_replicas: 0``) does a lost
launcher node end the job, its checkpoints gone with it.

Pure Python (no Ansible imports) so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ansible_collections.multinode.training.plugins.module_utils import run_report

# The root causes launcher_restart_on restarts by default, and the one more it may name.
INFRASTRUCTURE_KINDS = (
    run_report.WORKER_LOST,
    run_report.NODE_LOST,
    run_report.CONNECTION,
    run_report.SIGNAL,
    run_report.STALL,
    run_report.TEARDOWN_RACE,
)
RESTART_ON_CHOICES = INFRASTRUCTURE_KINDS + (run_report.EXIT,)


@dataclass(frozen=True)
class Decision:
    """Whether the attempt is restarted, and why (or why not) in words."""

    restart: bool
    why: str
    hosts: tuple[str, ...] = ()  # the nodes of the next attempt, launcher first (on a restart)


def decide(
    summary: Mapping[str, Any],
    *,
    restarts: Sequence[Mapping[str, Any]],
    max_restarts: int,
    restart_on: Sequence[str],
    lost_nodes: Sequence[str] = (),
    min_nodes: int = 1,
    spares: Sequence[str] = (),
    replicas: int = 0,
    launcher_stays: str = "",
    finished: bool = False,
) -> Decision:
    """The verdict on one attempt's summary under the policy ``max_restarts`` / ``restart_on``, after the earlier
    ``restarts`` (the summary's records, each with its cause's ``kind``), with ``lost_nodes``
    (of the summary's ``node_names``, launcher first) replaced by the free ``spares`` in order, or left out of the
    next attempt when none is left. A lost launcher node's role goes to the survivor holding the newest of the
    summary's ``checkpoints`` (``checkpoint_holders``), unless no checkpoint is replicated (``replicas`` 0) or
    ``launcher_stays`` says why the role cannot move (the Slurm controller's node). An attempt whose every rank had
    exited 0 (``finished``: its training is done, what failed came after, a node lost at the collection) is never
    restarted: a restart would train again what is trained."""
    status = summary.get("status")
    if status == "succeeded":
        return Decision(False, "the job succeeded")
    if status == "cancelled":
        return Decision(False, "a cancelled job is never restarted")
    kind = summary.get("root_cause_kind")
    if kind not in restart_on:
        return Decision(False, f"its root cause ({kind}) is not one launcher_restart_on restarts")
    if finished:
        after = f"{', '.join(lost_nodes)} was lost" if lost_nodes else "it failed"
        return Decision(
            False, f"every rank had exited 0 before {after}: the training is done, a restart would train again"
        )
    budget = "teardown-race restart" if kind == run_report.TEARDOWN_RACE else "restart"
    used = budget_used(restarts, kind)
    if not restart_left(restarts, max_restarts, kind):
        return Decision(False, f"no {budget} left (launcher_max_restarts: {max_restarts})")
    nodes = list(summary.get("node_names") or [])
    moved = ""
    if nodes and nodes[0] in lost_nodes and launcher_stays:
        return Decision(False, f"the launcher node {nodes[0]} is lost, and {launcher_stays}")
    if nodes and nodes[0] in lost_nodes:
        launcher, held = new_launcher(nodes, lost_nodes, summary.get("checkpoints") or [])
        if not held and replicas == 0:
            return Decision(
                False,
                f"the launcher node {nodes[0]} is lost with the job's checkpoints (launcher_checkpoint_replicas: 0)",
            )
        if launcher is None:
            return Decision(False, f"the launcher node {nodes[0]} is lost and no node of the job is left")
        nodes = [launcher] + [node for node in nodes if node != launcher]
        moved = f"{launcher} is the launcher node now" + (
            f" (it holds {held})" if held else " (no surviving node holds a checkpoint: the job starts again)"
        )
    hosts, replaced = next_hosts(nodes, lost_nodes, spares)
    if len(hosts) < min_nodes:
        return Decision(
            False,
            f"{len(hosts)} of {len(nodes)} nodes left without {', '.join(lost_nodes)}; launcher_min_nodes is {min_nodes}",
        )
    changes = ([moved] if moved else []) + [f"{spare} in place of {node}" for node, spare in replaced.items()]
    dropped = [node for node in lost_nodes if node in nodes and node not in replaced]
    if dropped:
        changes.append(f"without {', '.join(dropped)}, on {len(hosts)} nodes")
    where = "".join(f"; {change}" for change in changes)
    why = f"{budget} {used + 1} of {max_restarts}: {summary['failure_reasons'][0]}{where}"
    return Decision(True, why, tuple(hosts))


def new_launcher(
    nodes: Sequence[str], lost_nodes: Sequence[str], checkpoints: Sequence[Mapping[str, Any]]
) -> tuple[str | None, str]:
    """The node that takes over a lost launcher node's role: of the surviving ``nodes``, the first (in the job's order)
    that holds the newest checkpoint any of them holds (``checkpoints``: newest first, each with the ``nodes`` that
    hold it), else the first survivor (None without one); and the checkpoint's name ("" without one)."""
    survivors = [node for node in nodes if node not in lost_nodes]
    for checkpoint in checkpoints:
        holders = [node for node in survivors if node in (checkpoint.get("nodes") or [])]
        if holders:
            return holders[0], str(checkpoint.get("name", ""))
    return (survivors[0] if survivors else None), ""


def checkpoint_holders(
    listings: Mapping[str, Sequence[Mapping[str, Any]]], copies: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, Any]]:
    """The job's checkpoints from each node's listing (``listings``: node -> its entries, each with ``name``,
    ``bytes`` and ``mtime``) and the replicator's records of its copies and removals (``copies``, in their order,
    checkpoint_replica.py's log: a copy may land after its node was listed), newest first, each with the nodes that
    hold it as it is (same bytes and time)."""
    held: dict[tuple[str, int, int], list[str]] = {}
    for node, listing in listings.items():
        for entry in listing:
            held.setdefault((str(entry["name"]), int(entry["bytes"]), int(entry["mtime"])), []).append(node)
    for record in copies:
        node, name = record.get("node"), record.get("entry")
        if not record.get("ok") or not node or not name:
            continue
        if record.get("removed"):
            for key, nodes in held.items():
                if key[0] == name and node in nodes:
                    nodes.remove(node)
        elif "bytes" in record and "mtime" in record:
            nodes = held.setdefault((str(name), int(record["bytes"]), int(record["mtime"])), [])
            if node not in nodes:
                nodes.append(node)
    found = [
        {"name": name, "bytes": size, "mtime": mtime, "nodes": nodes}
        for (name, size, mtime), nodes in held.items()
        if nodes
    ]
    return sorted(found, key=lambda entry: (entry["mtime"], entry["name"]), reverse=True)


def restart_left(restarts: Sequence[Mapping[str, Any]], max_restarts: int, kind: str | None) -> bool:
    """Whether the budget a failure of ``kind`` restarts from has a restart left after ``restarts``: decide()'s rule,
    and what tasks/attempt.yml asks before it waits for a node that did not answer (filter restart_left)."""
    return budget_used(restarts, kind) < max_restarts


def budget_used(restarts: Sequence[Mapping[str, Any]], kind: str | None) -> int:
    """How many of ``restarts`` came out of the budget a failure of ``kind`` restarts from: teardown races count
    among themselves, every other kind among the others."""
    race = kind == run_report.TEARDOWN_RACE
    return sum(1 for entry in restarts if (entry.get("kind") == run_report.TEARDOWN_RACE) == race)


def next_hosts(
    nodes: Sequence[str], lost_nodes: Sequence[str], spares: Sequence[str]
) -> tuple[list[str], dict[str, str]]:
    """``nodes`` with each lost one replaced, in its place (so its node rank), by the next of ``spares`` not among
    ``nodes``, or left out once none is left; and which spare replaced which node."""
    free = iter([spare for spare in spares if spare not in nodes])
    hosts: list[str] = []
    replaced: dict[str, str] = {}
    for node in nodes:
        if node not in lost_nodes:
            hosts.append(node)
            continue
        spare = next(free, None)
        if spare is not None:
            hosts.append(spare)
            replaced[node] = spare
    return hosts, replaced


def merged_epochs(attempts: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One epoch history of a restarted job from its attempts' ``epochs`` (first attempt first): a later attempt's
    epochs replace those of its first epoch and after (it resumed there), the earlier ones stay."""
    merged: list[dict[str, Any]] = []
    for epochs in attempts:
        numbers = [epoch.get("epoch") for epoch in epochs if isinstance(epoch.get("epoch"), (int, float))]
        if numbers:
            merged = [
                old for old in merged if isinstance(old.get("epoch"), (int, float)) and old["epoch"] < min(numbers)
            ]
        merged += [dict(epoch) for epoch in epochs]
    return merged


def new_entry(summary: Mapping[str, Any], attempt: int) -> dict[str, Any]:
    """The record of the restart that follows the failed ``attempt``; the next attempt completes it."""
    return {
        "attempt": attempt,
        "cause": summary["failure_reasons"][0],
        "kind": summary.get("root_cause_kind"),
        "detected_at": summary.get("failure_detected_at"),
        "resumed_at": None,
        "resumed_from": None,
        "nodes": None,
    }


def completed(restarts: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``restarts`` with the last entry completed from the attempt that followed it: when its ranks started, the
    checkpoint it resumed from and its nodes."""
    entries = [dict(entry) for entry in restarts]
    if entries and entries[-1].get("resumed_at") is None:
        entries[-1].update(
            resumed_at=summary.get("started_at"),
            resumed_from=summary.get("resumed_from"),
            nodes=list(summary.get("node_names") or []),
        )
    return entries
