#!/usr/bin/env python3
"""Benchmark: a warm submit to the provisioned 3-node sim cluster (issue 28), beside ``ansible-playbook launch.yml``.

The same short job (the collection's example, ``--epochs 3``) is run --runs times (default 3) each of four ways,
taken in turn:

- ``launch.yml``: ``ansible-playbook playbooks/launch.yml`` (the warm path until now), through the harness;
- ``launch.yml (mpiexec)``: the same with ``launcher_type=mpiexec``, whose own start and wind-down are short;
- ``submit (launch.yml)``: ``multinode_training.submit(..., provision=False)``: the job only, its drift check kept;
- ``submit (train.yml)``: ``multinode_training.submit(...)``: provisioning's fast path (a check per node), the job.

And, taken in the same turns, Ansible's own floor: ``benchmarks/ansible_floor.yml``, no job, only ansible-playbook's
start, four waves of the lightest module on every node (the fewest module runs a checked job needs) and a summary;
its wall time is what no playbook-driven job can go below on this machine, before any launcher starts a rank.

With ``--mitogen`` (``pip install mitogen`` into the venv first), the two ``launch.yml`` ways and the floor are also
taken under Mitogen for Ansible's ``mitogen_linear`` strategy, in the same turns: one persistent interpreter per node
instead of a new process and upload per module run.

Measured from the moment the job was asked for (the harness starting ansible-playbook, the call to submit()):
how long submit() took to return; when every rank had started (the ``started`` records of progress.jsonl, which
the rank wrappers time on the nodes); and the whole job's overhead: its wall time (to the playbook's end; for
submit() to the follower's ``ended_at`` in job.json) minus its training time (summary.json ``phases.train``).
Medians are reported. Writes benchmarks/results/submit_bench.json and submit_bench.md, embedded
in docs/BENCHMARKS.md between its markers.

    make sim train                      # once: a provisioned sim cluster (inventories/sim)
    .venv/bin/python benchmarks/submit_bench.py [--runs 3] [--mitogen]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import statistics
import time
from pathlib import Path
from typing import Any

import playbook_runs

import multinode_training as mt

NAME = "submit_bench"
RESULTS_JSON, RESULTS_MD, LOG_DIR = playbook_runs.result_files(NAME)
INVENTORY = playbook_runs.SIM_INVENTORY
RUNS_DIR = playbook_runs.RUNS_DIR
JOB_ARGS = ["--epochs", "3"]
WAYS = ("launch.yml", "launch.yml (mpiexec)", "submit (launch.yml)", "submit (train.yml)")
# The launcher of each way: the example's own (torchrun), or mpiexec, whose start and wind-down are short.
MPIEXEC_WAYS = ("launch.yml (mpiexec)", "launch.yml (mpiexec, Mitogen)")
# With --mitogen: the launch.yml ways again under Mitogen's strategy.
MITOGEN_WAYS = ("launch.yml (Mitogen)", "launch.yml (mpiexec, Mitogen)")
FLOOR_PLAYBOOK = "benchmarks/ansible_floor.yml"
MEASURES = ("submit_return_s", "ranks_started_s", "wall_s", "train_s", "overhead_s", "launcher_own_s", "collection_s")


def job_id(way: str, index: int) -> str:
    slug = {
        "launch.yml": "cli",
        "launch.yml (mpiexec)": "mpi",
        "submit (launch.yml)": "warm",
        "submit (train.yml)": "full",
        "launch.yml (Mitogen)": "cli-mitogen",
        "launch.yml (mpiexec, Mitogen)": "mpi-mitogen",
    }[way]
    return f"submitbench-{slug}-{datetime.datetime.now(datetime.UTC):%H%M%S}-{index}"


def ranks_started_at(run_dir: Path) -> float:
    """When the last rank of the job started (epoch seconds, the rank wrappers' clocks)."""
    times = [
        float(record["time"])
        for record in map(json.loads, (run_dir / "progress.jsonl").read_text().splitlines())
        if record.get("kind") == "started"
    ]
    if not times:
        raise SystemExit(f"{run_dir}: no rank started")
    return max(times)


def launcher_own_seconds(run_dir: Path, train_s: float) -> float:
    """The launcher's own share of the overhead: from its launch script's start to its exit, less the training.

    That is its agents starting (torchrun imports torch on every node before it spawns a rank) and winding down
    after the last rank ended: time no playbook or API can take off.
    """
    (log,) = run_dir.glob("nodes/*/logs/launcher.log")
    events = {event["event"]: float(event["time"]) for event in map(json.loads, log.read_text().splitlines())}
    return events["launcher_exit"] - events["launch"] - train_s


def succeeded_summary(run_dir: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    if summary.get("status") != "succeeded":
        raise SystemExit(f"{run_dir.name}: {summary.get('status')}: {summary.get('failure_reasons')}")
    return summary


def measured(run_dir: Path, asked_at: float, ended_at: float, submit_return_s: float | None) -> dict[str, Any]:
    summary = succeeded_summary(run_dir)
    wall = ended_at - asked_at
    train = float(summary["phases"]["train"])
    launcher_own = launcher_own_seconds(run_dir, train)
    return {
        "job_id": run_dir.name,
        "submit_return_s": None if submit_return_s is None else round(submit_return_s, 3),
        "ranks_started_s": round(ranks_started_at(run_dir) - asked_at, 2),
        "wall_s": round(wall, 2),
        "train_s": round(train, 2),
        "overhead_s": round(wall - train, 2),
        "launcher_own_s": round(launcher_own, 2),
        "collection_s": round(wall - train - launcher_own, 2),
    }


def mitogen_environment() -> dict[str, str]:
    """The environment that runs a playbook under Mitogen's mitogen_linear strategy."""
    found = importlib.util.find_spec("ansible_mitogen")
    if found is None or found.origin is None:
        raise SystemExit("--mitogen: Mitogen is not installed in this venv: .venv/bin/pip install mitogen")
    strategies = Path(found.origin).parent / "plugins" / "strategy"
    return {"ANSIBLE_STRATEGY_PLUGINS": str(strategies), "ANSIBLE_STRATEGY": "mitogen_linear"}


def strategy_environment(way: str) -> dict[str, str]:
    return mitogen_environment() if way in MITOGEN_WAYS else {}


def cli_run(way: str, index: int) -> dict[str, Any]:
    job = job_id(way, index)
    launcher = {"launcher_type": "mpiexec"} if way in MPIEXEC_WAYS else {}
    asked_at = time.time()
    step = playbook_runs.run_playbook(
        f"{job}",
        "playbooks/launch.yml",
        {"launcher_job_id": job, "launcher_script_args": JOB_ARGS, **launcher},
        inventory=str(INVENTORY),
        log_dir=LOG_DIR,
        env=strategy_environment(way),
    )
    if not step.ok:
        raise SystemExit(f"launch.yml run {index} ({job}) failed (rc {step.rc}): {step.error}")
    return measured(RUNS_DIR / job, asked_at, asked_at + step.wall_s, None)


def submit_run(way: str, index: int) -> dict[str, Any]:
    job_name = job_id(way, index)
    asked_at = time.time()
    job = mt.submit(
        INVENTORY,
        extravars={"launcher_job_id": job_name, "launcher_script_args": JOB_ARGS},
        runs_dir=RUNS_DIR,
        provision=way == "submit (train.yml)",
    )
    returned_s = time.time() - asked_at
    run = job.wait(timeout=900)
    if run.status != "succeeded":
        raise SystemExit(f"{way} run {index} ({job_name}): {run.status}")
    ended_at = float(json.loads((job.run_dir / "job.json").read_text())["ended_at"])
    return measured(job.run_dir, asked_at, ended_at, returned_s)


def floor_run(index: int, strategy: str) -> float:
    """The wall time of ansible_floor.yml on the sim cluster (seconds), under the plain or the Mitogen strategy."""
    env = mitogen_environment() if strategy == "Mitogen" else {}
    name = f"ansible-floor-{strategy.lower()}-{index}"
    step = playbook_runs.run_playbook(name, FLOOR_PLAYBOOK, {}, inventory=str(INVENTORY), log_dir=LOG_DIR, env=env)
    if not step.ok:
        raise SystemExit(f"{FLOOR_PLAYBOOK} run {index} failed (rc {step.rc}): {step.error}")
    return round(step.wall_s, 2)


def median(values: list[Any], digits: int = 2) -> float | None:
    present = [value for value in values if value is not None]
    return round(statistics.median(present), digits) if present else None


def report(results: list[dict[str, Any]], floors: dict[str, list[float]], ways: tuple[str, ...]) -> str:
    columns = " | ".join(f"`{way}`" for way in ways)
    rows = [f"| median of {{runs}} | {columns} |", "|---|" + "---:|" * len(ways)]
    labels = {
        "submit_return_s": "submit() returned after s",
        "ranks_started_s": "every rank started after s",
        "wall_s": "whole job (wall) s",
        "train_s": "training s (summary.json `phases.train`)",
        "overhead_s": "**overhead s** (whole job minus training)",
        "launcher_own_s": "of it the launcher's own start and wind-down s",
        "collection_s": "of it the collection's own s (the playbook: checks, sync, launch, collect, summary)",
    }
    counts = {way: sum(1 for result in results if result["way"] == way) for way in ways}
    for measure in MEASURES:
        cells = []
        for way in ways:
            digits = 3 if measure == "submit_return_s" else 2
            value = median([result[measure] for result in results if result["way"] == way], digits)
            cells.append("-" if value is None else (f"**{value}**" if measure == "overhead_s" else str(value)))
        rows.append(f"| {labels[measure]} | " + " | ".join(cells) + " |")
    rows[0] = rows[0].format(runs=min(counts.values()))
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    intro = (
        f"`benchmarks/submit_bench.py` ({when}, this machine: 2 cores): the collection's example with"
        f" `{' '.join(JOB_ARGS)}` on the provisioned 3-node sim cluster, each way in turn. Seconds from asking for"
        " the job (starting ansible-playbook, calling `submit()`): until `submit()` returned, until every rank had"
        " started (the ranks' own `started` records), and the whole job's overhead: its wall time (to the end of"
        " the playbook; for `submit()` the follower's `ended_at`) minus its training time, split into the"
        " launcher's own part (its launch script's start to its exit, less the training: torchrun's agents import"
        " torch before they spawn a rank, and wind down after the last one ends) and the collection's. The"
        " example's launcher is torchrun; `launch.yml (mpiexec)` is the same job under mpiexec."
    )
    taken = "; ".join(
        f"{'under Mitogen' if strategy == 'Mitogen' else 'plain'} {median(walls)} s (median of {len(walls)}:"
        f" {', '.join(map(str, walls))})"
        for strategy, walls in floors.items()
    )
    floor = (
        f"Ansible's own floor, in the same turns: `{FLOOR_PLAYBOOK}` (no job: ansible-playbook's start, four module"
        f" runs of `ansible.builtin.ping` on each node one wave after another, a summary) took: {taken}."
    )
    mitogen = (
        " The ways marked Mitogen ran under Mitogen for Ansible's `mitogen_linear` strategy (`--mitogen`)."
        if set(MITOGEN_WAYS) & set(ways)
        else ""
    )
    return "\n".join(["### A warm submit (3-node sim cluster)", "", intro + mitogen, "", *rows, "", floor]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mitogen", action="store_true", help="also the launch.yml ways and the floor under Mitogen")
    args = parser.parse_args()
    ways = WAYS + (MITOGEN_WAYS if args.mitogen else ())
    strategies = ("plain", "Mitogen") if args.mitogen else ("plain",)
    playbook_runs.become_subreaper()
    results = []
    floors: dict[str, list[float]] = {strategy: [] for strategy in strategies}
    for index in range(1, args.runs + 1):
        for strategy in strategies:
            floors[strategy].append(floor_run(index, strategy))
            print(json.dumps({"way": f"ansible floor ({strategy})", "wall_s": floors[strategy][-1]}), flush=True)
        for way in ways:
            result = cli_run(way, index) if way.startswith("launch.yml") else submit_run(way, index)
            result["way"] = way
            print(json.dumps(result), flush=True)
            results.append(result)
    playbook_runs.write_results(
        {"results": results, "floor_wall_s": floors}, RESULTS_JSON, RESULTS_MD, report(results, floors, ways)
    )
    print(RESULTS_MD.read_text())


if __name__ == "__main__":
    main()
