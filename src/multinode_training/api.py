"""train() and plan(): the collection's playbooks run through ansible-runner's Python API."""

from __future__ import annotations

import datetime
import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ansible_runner

from multinode_training.records import Failure, PlanShown, Record, Translator

CALLBACK = "multinode.training.phase_stats"
COLLECTION_PARTS = ("ansible_collections", "multinode", "training")


@dataclass(frozen=True)
class Run:
    """A finished run: ``status`` is the job's (summary.json) when it got that far, else the playbook's."""

    status: str
    rc: int
    dir: Path | None
    summary: dict[str, Any] | None
    task_counts: dict[str, dict[str, int]]


@dataclass(frozen=True)
class Plan:
    """What train() would do, from a check-mode run that changed nothing."""

    hosts: list[str]
    ranks_per_node: dict[str, int]
    world_size: int
    tuning: dict[str, Any]
    hostfile: str
    launch_commands: list[list[str]]
    changed: int
    task_counts: dict[str, dict[str, int]]


class PlanError(RuntimeError):
    """The check-mode run failed (bad input, unreachable node) or showed no plan."""


def find_collection(collection_dir: str | os.PathLike[str] | None = None) -> Path:
    """The collection to run: given, else this checkout (an editable install), else a configured collections path."""
    if collection_dir is not None:
        return Path(collection_dir).resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "galaxy.yml").exists() and (checkout / "playbooks" / "train.yml").exists():
        return checkout
    from ansible.config.manager import ConfigManager  # noqa: PLC0415 (only needed without a checkout)

    for root in ConfigManager().get_config_value("COLLECTIONS_PATHS"):
        candidate = Path(root).expanduser().joinpath(*COLLECTION_PARTS)
        if (candidate / "playbooks" / "train.yml").exists():
            return candidate
    raise FileNotFoundError("multinode.training is neither this checkout nor in a configured collections path")


def _run_playbook(
    playbook: str,
    inventory: str | os.PathLike[str],
    extravars: Mapping[str, Any],
    on_record: Callable[[Record], None],
    *,
    check: bool,
    collection_dir: Path,
) -> tuple[Any, Translator]:
    translate = Translator()

    def handle(event: dict[str, Any]) -> bool:
        for record in translate(event):
            on_record(record)
        return True

    # ansible-playbook of this interpreter's environment (a venv need not be activated).
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {"ANSIBLE_CALLBACKS_ENABLED": CALLBACK, "ANSIBLE_NOCOLOR": "1", "PATH": path}
    if (collection_dir / "ansible.cfg").exists():
        env["ANSIBLE_CONFIG"] = str(collection_dir / "ansible.cfg")
    with tempfile.TemporaryDirectory(prefix="multinode-runner-") as private:
        runner = ansible_runner.run(
            private_data_dir=private,
            project_dir=str(collection_dir),
            playbook=f"playbooks/{playbook}",
            inventory=str(Path(inventory).resolve()),
            extravars=dict(extravars),
            envvars=env,
            cmdline="--check" if check else None,
            event_handler=handle,
            quiet=True,
        )
    return runner, translate


def train(
    inventory: str | os.PathLike[str],
    *,
    extravars: Mapping[str, Any] | None = None,
    on_event: Callable[[Record], None] | None = None,
    runs_dir: str | os.PathLike[str] = "runs",
    collection_dir: str | os.PathLike[str] | None = None,
) -> Run:
    """Provision the inventory's nodes and run the training job (playbooks/train.yml); ``runs_dir`` is relative
    to the current directory, as for ansible-playbook."""
    launcher = str((extravars or {}).get("launcher_type", "torchrun"))
    job_id = str((extravars or {}).get("launcher_job_id") or f"{datetime.datetime.now(datetime.UTC):%Y%m%d-%H%M%S}-{launcher}")
    runs = Path(runs_dir).expanduser().resolve()
    variables = {**(extravars or {}), "launcher_job_id": job_id, "launcher_runs_dir": str(runs)}
    runner, translate = _run_playbook(
        "train.yml", inventory, variables, on_event or (lambda record: None), check=False, collection_dir=find_collection(collection_dir)
    )
    summary_file = runs / job_id / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else None
    status = summary["status"] if summary else ("failed" if runner.rc else str(runner.status))
    return Run(status=status, rc=int(runner.rc), dir=summary_file.parent if summary else None, summary=summary, task_counts=translate.totals())


def plan(
    inventory: str | os.PathLike[str],
    *,
    extravars: Mapping[str, Any] | None = None,
    collection_dir: str | os.PathLike[str] | None = None,
) -> Plan:
    """The dry run: everything validated, nothing changed on any node (check mode), the job's plan returned."""
    shown: list[dict[str, Any]] = []
    failures: list[str] = []

    def keep_plan(record: Record) -> None:
        if isinstance(record, PlanShown):
            shown.append(record.plan)
        elif isinstance(record, Failure):
            failures.append(f"{record.host}: {record.task}: {record.reason}")

    runner, translate = _run_playbook(
        "train.yml", inventory, extravars or {}, keep_plan, check=True, collection_dir=find_collection(collection_dir)
    )
    if runner.rc != 0 or not shown:
        raise PlanError(f"the check run {'failed' if runner.rc else 'showed no plan'} (rc {runner.rc}): " + "; ".join(failures))
    found = shown[-1]
    totals = translate.totals()
    return Plan(
        hosts=list(found["hosts"]),
        ranks_per_node={host: int(slots) for host, slots in found["ranks_per_node"].items()},
        world_size=int(found["world_size"]),
        tuning=dict(found["tuning"]),
        hostfile=str(found["hostfile"]),
        launch_commands=[list(map(str, argv)) for argv in found["launch_commands"]],
        changed=sum(counts.get("changed", 0) for counts in totals.values()),
        task_counts=totals,
    )
