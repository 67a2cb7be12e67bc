"""The typed records a run reports to ``on_event``, and the translation of ansible-runner events into them.

Pure functions over the event dictionaries ansible-runner hands to ``event_handler`` (the same JSON it writes to
``artifacts/<ident>/job_events/``), so recorded streams can be replayed in tests.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
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


Record = Union[PhaseChanged, Failure, PlanShown]


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
        if phase is None:
            return False
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
            records.append(Failure(host=host, task=str(data.get("task", "")), reason=str(result.get("msg", "")).strip()))
        plan = result.get("msg") if str(data.get("task", "")).endswith("Show the plan") else None
        if isinstance(plan, dict):
            records.append(PlanShown(plan=plan))
        return records

    def totals(self) -> dict[str, dict[str, int]]:
        """Per-host results of the whole run so far."""
        return {host: dict(counter) for host, counter in self.run_counts.items()}
