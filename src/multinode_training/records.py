"""The typed records a run reports to ``on_event``, and the translation of ansible-runner events into them.

Pure functions over the event dictionaries ansible-runner hands to ``event_handler`` (the same JSON it writes to
``artifacts/<ident>/job_events/``), so recorded streams can be replayed in tests.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Union

# Which phase a play belongs to, by its name in playbooks/provision.yml and playbooks/launch.yml (a unit test
# holds this table to the playbooks). Tasks of the launcher role's run and collect files refine "launch".
PLAY_PHASES = {
    "Preflight and cluster facts": "provision",
    "Provision the nodes": "provision",
    "Cluster facts": "launch",
    "Launch, wait, collect": "launch",
}
TASK_FILE_PHASES = {"run_container.yml": "train", "run_host.yml": "train", "collect.yml": "collect"}
PHASE_ORDER = ("provision", "launch", "train", "collect")
RESULT_STATUSES = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}


@dataclass(frozen=True)
class PhaseChanged:
    """The run entered ``phase``; ``task_counts`` are the per-host results of the phase that just ended."""

    phase: str
    previous: str | None
    task_counts: dict[str, dict[str, int]]


@dataclass(frozen=True)
class Failure:
    """A task failed (or a host was unreachable) and the play did not ignore it."""

    host: str
    task: str
    reason: str


@dataclass(frozen=True)
class PlanShown:
    """The launcher role's plan (check mode): what the job would run."""

    plan: dict[str, Any]


@dataclass(frozen=True)
class RankStarted:
    """A rank of the running job started; ``started`` ranks of ``world_size`` have so far."""

    rank: int
    node: str
    started: int


@dataclass(frozen=True)
class RankEnded:
    """A rank of the running job ended with exit ``code``; ``ended`` ranks of ``world_size`` have so far."""

    rank: int
    node: str
    code: int
    ended: int


@dataclass(frozen=True)
class Progress:
    """A rank reported an epoch (the script protocol's JSON event, or a printed line naming epoch and loss)."""

    rank: int
    node: str
    epoch: int | float | None
    loss: float | None
    samples_per_s: float | None


@dataclass(frozen=True)
class JobEvent:
    """The launch script reported: a node's agent exited (``node_exit``), the job is being stopped (``abort``,
    ``cancel``) or the launcher ended (``launcher_exit``); ``text`` says it in words."""

    kind: str
    text: str
    details: dict[str, Any]


@dataclass(frozen=True)
class Stalled:
    """The stall watchdog found no rank making progress for ``seconds``; ``ranks`` ({rank, node, state}) are blamed.
    The job is being stopped (and restarted when the restart policy allows)."""

    ranks: list[dict[str, Any]]
    seconds: float
    text: str


@dataclass(frozen=True)
class Restarted:
    """Attempt ``attempt`` of the job failed with a cause the restart policy restarts (``cause_kind``, e.g.
    ``worker_lost``, ``stall``): the job is relaunched from its newest checkpoint; ``text`` says which restart and why.
    """

    attempt: int
    cause_kind: str
    text: str


@dataclass(frozen=True)
class Straggler:
    """Rank ``rank`` on ``node`` kept the others waiting: its steps took ``slower_by`` (0.45: 45%) longer than the
    other ranks' median for ``seconds`` (launcher_straggler_margin). The job goes on; ``text`` says it in words."""

    rank: int
    node: str
    slower_by: float
    seconds: float
    text: str


Record = Union[
    PhaseChanged, Failure, PlanShown, RankStarted, RankEnded, Progress, JobEvent, Stalled, Restarted, Straggler
]


@dataclass
class Translator:
    """Turns one run's events, in order, into records; keeps the current phase and its per-host counts."""

    phase: str | None = None
    play_phase: str | None = None
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    run_counts: dict[str, Counter[str]] = field(default_factory=dict)

    def __call__(self, event: dict[str, Any]) -> list[Record]:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_play_start":
            self.play_phase = PLAY_PHASES.get(str(data.get("play") or data.get("name") or ""), self.play_phase)
            return self._enter(self.play_phase) if self._ahead(self.play_phase) else []
        if kind == "playbook_on_task_start":
            task_phase = TASK_FILE_PHASES.get(PurePath(str(data.get("task_path", "")).split(":")[0]).name)
            return self._enter(task_phase) if task_phase and self._ahead(task_phase) else []
        if kind in RESULT_STATUSES:
            return self._result(kind, data)
        return []

    def _ahead(self, phase: str | None) -> bool:
        """Whether ``phase`` comes after the current one; a restarted attempt trains again after its collection."""
        if phase is None:
            return False
        if (self.phase, phase) == ("collect", "train"):
            return True
        return self.phase is None or PHASE_ORDER.index(phase) > PHASE_ORDER.index(self.phase)

    def _enter(self, phase: str | None) -> list[Record]:
        counts = {host: dict(counter) for host, counter in self.counts.items()}
        record = PhaseChanged(phase=str(phase), previous=self.phase, task_counts=counts)
        self.phase, self.counts = phase, {}
        return [record]

    def _result(self, kind: str, data: dict[str, Any]) -> list[Record]:
        host = str(data.get("host", ""))
        result = data.get("res") or {}
        status = "changed" if kind == "runner_on_ok" and result.get("changed") else RESULT_STATUSES[kind]
        self.counts.setdefault(host, Counter())[status] += 1
        self.run_counts.setdefault(host, Counter())[status] += 1
        records: list[Record] = []
        if status in ("failed", "unreachable") and not data.get("ignore_errors"):
            records.append(
                Failure(host=host, task=str(data.get("task", "")), reason=str(result.get("msg", "")).strip())
            )
        plan = result.get("msg") if str(data.get("task", "")).endswith("Show the plan") else None
        if isinstance(plan, dict):
            records.append(PlanShown(plan=plan))
        return records

    def totals(self) -> dict[str, dict[str, int]]:
        """Per-host results of the whole run so far."""
        return {host: dict(counter) for host, counter in self.run_counts.items()}


@dataclass
class ProgressReader:
    """Reads the records the job_wait action appends to a run's ``progress.jsonl`` while the job runs."""

    path: Path
    not_before: float = 0.0  # a file last written before this (an earlier run of the same job id) is not read
    offset: int = 0
    inode: int | None = None
    started: set[int] = field(default_factory=set)
    ended: set[int] = field(default_factory=set)

    def __call__(self) -> list[Record]:
        """The records appended since the last call (complete lines only); a new file is read from its start."""
        try:
            info = self.path.stat()
        except OSError:
            return []
        if info.st_mtime < self.not_before:
            return []
        if info.st_ino != self.inode or info.st_size < self.offset:
            self.inode, self.offset = info.st_ino, 0
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        found = [
            self.record(json.loads(line))
            for line in complete.decode("utf-8", errors="replace").splitlines()
            if line.strip()
        ]
        return [record for record in found if record is not None]

    def record(self, line: dict[str, Any]) -> Record | None:
        """One progress.jsonl object as a typed record."""
        kind = str(line.get("kind", ""))
        if kind == "started":
            self.started.add(int(line["rank"]))
            return RankStarted(rank=int(line["rank"]), node=str(line["node"]), started=len(self.started))
        if kind == "ended":
            self.ended.add(int(line["rank"]))
            return RankEnded(
                rank=int(line["rank"]), node=str(line["node"]), code=int(line["code"]), ended=len(self.ended)
            )
        if kind == "epoch":
            return Progress(
                rank=int(line["rank"]),
                node=str(line["node"]),
                epoch=line.get("epoch"),
                loss=line.get("loss"),
                samples_per_s=line.get("samples_per_s"),
            )
        if kind == "stall":
            return Stalled(
                ranks=list(line.get("ranks") or []), seconds=float(line.get("seconds") or 0), text=str(line["text"])
            )
        if kind == "straggler":
            return Straggler(
                rank=int(line["rank"]),
                node=str(line["node"]),
                slower_by=float(line.get("slower_by") or 0),
                seconds=float(line.get("seconds") or 0),
                text=str(line["text"]),
            )
        if kind == "restart":
            return Restarted(
                attempt=int(line["attempt"]), cause_kind=str(line.get("cause_kind")), text=str(line["text"])
            )
        details = {key: value for key, value in line.items() if key not in ("kind", "time", "text")}
        return JobEvent(kind=kind, text=str(line.get("text") or kind), details=details)
