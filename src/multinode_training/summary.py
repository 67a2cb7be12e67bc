"""The type of ``summary.json``, as :class:`Run` and :class:`Job` hand it out.

The schema itself is the collection's (``plugins/module_utils/run_schema.py``, which both producers are tested
against); a unit test holds these keys and that schema's to the same set. Keys only a run over SSH writes are
``NotRequired``.
"""

# No ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations.
from typing import Any, Literal, NotRequired, TypedDict


class Phases(TypedDict):
    """Seconds per phase; None where unknown (a Kubernetes run knows only ``train``)."""

    provision: NotRequired[float | None]
    launch: NotRequired[float | None]
    train: float | None


class Scheduler(TypedDict, total=False):
    """How the scheduler saw the job: Slurm (``job_id``, ``exit_code``, ...) or Kubernetes (``kind``, ``pods``, ...)."""

    type: Literal["slurm", "kubernetes"]
    state: str


class Restart(TypedDict):
    """One automatic restart of the job."""

    attempt: int
    cause: str
    kind: str | None
    detected_at: float | None
    resumed_at: float | None
    resumed_from: str | None
    nodes: list[str] | None


class World(TypedDict):
    """Whether the ranks formed one world (``launcher_world_check``): ``formed`` is None where it cannot be judged;
    ``spawned_worlds`` only when processes the ranks started initialized groups."""

    formed: bool | None
    text: str | None
    group_sizes: dict[str, list[int]]
    spawned_worlds: NotRequired[dict[str, int]]


class Summary(TypedDict):
    """summary.json of a finished run (see docs/RUNS.md for its keys)."""

    job_id: str
    status: Literal["succeeded", "failed", "cancelled"]
    failure_reasons: list[str]
    launcher: str
    world_size: int
    nodes: list[str]
    node_names: list[str]
    node_exit_codes: dict[str, int | None]
    launcher_exit_code: int | None
    rank_exit_codes: dict[str, int | None]
    timed_out: bool
    phases: Phases
    scheduler: Scheduler | None
    settings: dict[str, Any]
    root_cause_kind: NotRequired[str | None]
    root_cause_error: NotRequired[str | None]
    job_name: NotRequired[str | None]
    resumed_from: NotRequired[str | None]
    checkpoints: NotRequired[list[dict[str, Any]]]
    ranks_started: NotRequired[list[int]]
    rank_nodes: NotRequired[dict[str, str | None]]
    provision_changed: NotRequired[int | None]
    started_at: NotRequired[float | None]
    failure_detected_at: NotRequired[float | None]
    test_accuracy: NotRequired[float | None]
    metrics: NotRequired[dict[str, Any]]
    epochs: NotRequired[list[dict[str, Any]]]
    outputs: NotRequired[list[str]]
    stragglers: NotRequired[list[dict[str, Any]]]
    attempt: NotRequired[int]
    restarts: NotRequired[list[Restart]]
    restart_verdict: NotRequired[str]
    world: NotRequired[World]
