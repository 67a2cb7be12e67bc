#!/usr/bin/env python3
"""Benchmark: the Python API's overhead over plain ansible-playbook for the same run (issue 11).

The same run is ``playbooks/train.yml`` against the provisioned 3-node sim cluster (inventories/sim/hosts.yml;
provisioning changes nothing, then a training job), taken in alternation --runs times (default 3):

- ``ansible-playbook playbooks/train.yml`` through the benchmarks' harness (playbook_runs.run_playbook: wall
  seconds, and the controller's CPU seconds of the whole process tree, SSH ControlMasters included);
- ``multinode_training.train(inventory, extravars={"launcher_job_id": ...}, runs_dir="runs", on_event=...)``:
  wall seconds by time.monotonic() around the call; controller CPU seconds as the RUSAGE_SELF delta (this
  process: ansible-runner's event handling and the API's progress polling, all threads) plus the RUSAGE_CHILDREN
  delta (ansible-playbook, and its SSH ControlMasters, adopted as this process is a child subreaper and reaped
  after the run, as the harness does); also how many records reached on_event and the seconds from the call
  until the first ``Progress`` record.

Every run has its own job id (``apibench-<cli|api>-<HHMMSS>-<i>``); overhead = wall seconds minus the job's
training seconds (runs/<job id>/summary.json ``phases.train``). Both ways read the repository's ansible.cfg:
the harness sets ANSIBLE_CONFIG, the API finds this checkout (find_collection) and sets it. Each run gets fresh
SSH connections (its own ControlPath directory, closed afterwards), so no run reuses another's. Medians are
reported, with the API's overhead over the CLI's (difference and ratio). Writes
benchmarks/results/api_overhead.json and benchmarks/results/api_overhead.md; --readme puts the latter into
docs/BENCHMARKS.md between its ``<!-- BEGIN/END benchmarks/results/api_overhead.md -->`` markers.

Needs a quiet machine (nothing else running) and a provisioned sim cluster:

    make sim train                      # once: the sim cluster (inventories/sim), provisioned
    .venv/bin/python benchmarks/api_overhead.py [--runs 3] [--readme]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import playbook_runs
from playbook_runs import ROOT

import multinode_training as mt

NAME = "api_overhead"
RESULTS_JSON, RESULTS_MD, LOG_DIR = playbook_runs.result_files(NAME)
INVENTORY = playbook_runs.SIM_INVENTORY
RUNS_DIR = playbook_runs.RUNS_DIR
PLAYBOOK = "playbooks/train.yml"
SUMMARY_KEYS = ("wall_s", "train_s", "overhead_s", "controller_cpu_s", "changed")
API_ONLY_KEYS = ("records", "first_progress_s")


def job_id(way: str, index: int) -> str:
    return f"apibench-{way}-{datetime.datetime.now(datetime.UTC):%H%M%S}-{index}"


def job_summary(job: str) -> dict[str, Any]:
    summary_file = RUNS_DIR / job / "summary.json"
    if not summary_file.exists():
        raise SystemExit(f"{summary_file} is missing: the job of {job} wrote no summary")
    summary: dict[str, Any] = json.loads(summary_file.read_text())
    return summary


def require_success(run_name: str, status: str, summary: dict[str, Any] | None, detail: str = "") -> None:
    """Stop the benchmark at the first run that did not succeed: its numbers would measure something else."""
    if status != "succeeded":
        reasons = (summary or {}).get("failure_reasons") or detail
        raise SystemExit(f"{run_name}: status {status!r}, not 'succeeded': {reasons}")


def measured(summary: dict[str, Any], wall_s: float, cpu_s: float, changed: int) -> dict[str, Any]:
    """A run's numbers both ways have: wall, the job's training seconds, overhead, controller CPU, changed tasks."""
    train_s = float(summary["phases"]["train"])
    return {
        "job_id": summary.get("job_id"),
        "wall_s": round(wall_s, 2),
        "train_s": round(train_s, 2),
        "overhead_s": round(wall_s - train_s, 2),
        "controller_cpu_s": round(cpu_s, 2),
        "changed": changed,
        "provision_changed": summary.get("provision_changed"),
    }


def cli_run(index: int) -> dict[str, Any]:
    """``ansible-playbook playbooks/train.yml`` through the harness (its wall and controller CPU seconds)."""
    job = job_id("cli", index)
    step = playbook_runs.run_playbook(
        f"cli-{index}", PLAYBOOK, {"launcher_job_id": job}, inventory=str(INVENTORY), log_dir=LOG_DIR
    )
    if not step.ok:
        raise SystemExit(f"cli run {index} ({job}) failed (rc {step.rc}): {step.error}")
    summary = job_summary(job)
    require_success(f"cli run {index} ({job})", str(summary.get("status")), summary)
    return measured(summary, step.wall_s, step.cpu_s, step.changed)


def controller_cpu() -> float:
    """CPU seconds of this process (all threads) and of its reaped descendants so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def fresh_ssh_connections() -> Iterator[Path]:
    """A ControlPath directory of the run's own (ansible-runner passes os.environ on to ansible-playbook); on the
    way out its SSH ControlMasters are ended and reaped, so their CPU reaches RUSAGE_CHILDREN."""
    control_dir = Path(tempfile.mkdtemp(prefix="apb-", dir="/tmp"))
    variable = "ANSIBLE_SSH_CONTROL_PATH_DIR"
    previous = os.environ.get(variable)
    os.environ[variable] = str(control_dir)
    try:
        yield control_dir
    finally:
        if previous is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = previous
        playbook_runs.close_ssh_masters(control_dir)
        shutil.rmtree(control_dir, ignore_errors=True)


@dataclass
class RecordTally:
    """on_event for train(): counts the records by type and notes when the first Progress record arrived."""

    started: float
    count: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    first_progress_s: float | None = None

    def __call__(self, record: mt.Record) -> None:
        self.count += 1
        self.kinds[type(record).__name__] += 1
        if self.first_progress_s is None and isinstance(record, mt.Progress):
            self.first_progress_s = round(time.monotonic() - self.started, 2)


def changed_tasks(task_counts: dict[str, dict[str, int]]) -> int:
    return sum(counts.get("changed", 0) for counts in task_counts.values())


def api_run(index: int) -> dict[str, Any]:
    """``multinode_training.train()`` of the same playbook: wall, controller CPU, records, first Progress."""
    job = job_id("api", index)
    print(f"  api-{index}: multinode_training.train({INVENTORY.relative_to(ROOT)}) ...", flush=True)
    playbook_runs.reap_orphans(0)
    cpu_before = controller_cpu()
    with fresh_ssh_connections():
        started = time.monotonic()
        tally = RecordTally(started=started)
        run = mt.train(INVENTORY, extravars={"launcher_job_id": job}, runs_dir=RUNS_DIR, on_event=tally)
        wall = time.monotonic() - started
    cpu = controller_cpu() - cpu_before
    require_success(f"api run {index} ({job})", run.status, run.summary, f"rc {run.rc}, no summary")
    if run.summary is None:
        raise SystemExit(f"api run {index} ({job}): succeeded without a summary")
    result = measured(run.summary, wall, cpu, changed_tasks(run.task_counts))
    result.update(records=tally.count, record_kinds=dict(tally.kinds), first_progress_s=tally.first_progress_s)
    print(
        f"    ok in {wall:.1f} s, controller CPU {cpu:.1f} s, {tally.count} records, "
        f"first Progress after {tally.first_progress_s} s",
        flush=True,
    )
    return result


def median(values: list[Any]) -> float | None:
    """The median, rounded; a whole number for counts (an even number of them can give x.0)."""
    present = [value for value in values if value is not None]
    if not present:
        return None
    middle = statistics.median(present)
    if all(isinstance(value, int) for value in present) and float(middle).is_integer():
        return int(middle)
    return round(middle, 2)


def summarize(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, float | None]:
    return {key: median([run.get(key) for run in runs]) for key in keys}


def compare(cli: dict[str, Any], api: dict[str, Any]) -> dict[str, float | None]:
    """The API's overhead over ansible-playbook's: median minus median, and their ratio."""
    cli_overhead, api_overhead = cli["overhead_s"], api["overhead_s"]
    if cli_overhead is None or api_overhead is None:
        return {"api_minus_cli_overhead_s": None, "api_over_cli_overhead_ratio": None}
    return {
        "api_minus_cli_overhead_s": round(api_overhead - cli_overhead, 2),
        "api_over_cli_overhead_ratio": round(api_overhead / cli_overhead, 3) if cli_overhead > 0 else None,
    }


def machine() -> dict[str, str]:
    """The machine line the iteration benchmark prints too: kernel, cores, date (UTC)."""
    uname = subprocess.run(["uname", "-sr"], capture_output=True, text=True, check=False).stdout.strip()
    return {
        "date": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        "host": f"{uname}, {len(os.sched_getaffinity(0))} cores",
    }


def cell(value: Any) -> str:
    return "-" if value is None else str(value)


def markdown(results: dict[str, Any]) -> str:
    cli, api, versus = results["cli"], results["api"], results["api_over_cli"]
    difference, ratio = versus["api_minus_cli_overhead_s"], versus["api_over_cli_overhead_ratio"]
    rows = [
        ("total (wall) s", cli["wall_s"], api["wall_s"]),
        ("training s (summary.json `phases.train`)", cli["train_s"], api["train_s"]),
        ("**overhead s** (total minus training)", f"**{cell(cli['overhead_s'])}**", f"**{cell(api['overhead_s'])}**"),
        ("controller CPU s", cli["controller_cpu_s"], api["controller_cpu_s"]),
        ("changed tasks (all nodes)", cli["changed"], api["changed"]),
        ("records to `on_event`", None, api["records"]),
        ("first `Progress` record after s", None, api["first_progress_s"]),
    ]
    lines = [
        "### The Python API's overhead (3-node sim cluster)",
        "",
        f"`benchmarks/api_overhead.py`, median of {results['runs_each']} runs of `playbooks/train.yml` on the "
        f"provisioned cluster, taken alternately through `ansible-playbook` and `multinode_training.train()` on this "
        f"machine ({results['host']}), {results['date']}. Overhead = total minus the job's training time. "
        "Controller CPU: ansible-playbook's process tree with its SSH connections; for `train()` also the Python "
        "process calling it (ansible-runner's event handling, the API's progress polling).",
        "",
        "| measure | `ansible-playbook` | `train()` |",
        "|---|---:|---:|",
        *(f"| {name} | {cell(cli_value)} | {cell(api_value)} |" for name, cli_value, api_value in rows),
        "",
        f"The API's overhead over `ansible-playbook`: **{'-' if difference is None else f'{difference:+.2f}'} s**"
        + ("" if ratio is None else f" ({ratio}x ansible-playbook's)") + ".",
    ]
    return "\n".join(lines) + "\n"


def write_results(results: dict[str, Any]) -> None:
    RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
    RESULTS_MD.write_text(markdown(results))


def embed_in_readme() -> None:
    """docs/BENCHMARKS.md gets the section only where it has its markers (embed_in_readme passes over it otherwise)."""
    name = str(RESULTS_MD.relative_to(ROOT))
    markers = (f"<!-- BEGIN {name} -->\n", f"<!-- END {name} -->")
    if not all(marker in playbook_runs.BENCHMARKS_DOC.read_text() for marker in markers):
        print(
            f"docs/BENCHMARKS.md not changed: it has no section for {name}; put the two lines "
            f"`{markers[0].strip()}` and `{markers[1]}` where the table belongs, then run again with --readme "
            f"(or add {name} to tests/unit/test_readme_benchmarks.py's GENERATED too)"
        )
        return
    playbook_runs.embed_in_readme(RESULTS_MD)
    print(f"docs/BENCHMARKS.md: {name} embedded")


def check_setup() -> None:
    if not INVENTORY.exists():
        raise SystemExit(f"{INVENTORY} is missing: run `make sim train` first")
    collection = mt.find_collection()
    if collection != ROOT:
        raise SystemExit(f"train() would run the collection at {collection}, not this checkout {ROOT} and its ansible.cfg")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, metavar="N", help="runs each way, alternating cli, api (default 3)")
    parser.add_argument("--readme", action="store_true", help="embed the results in docs/BENCHMARKS.md (between its markers)")
    options = parser.parse_args()
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    return options


def main() -> None:
    options = parse_args()
    check_setup()
    playbook_runs.become_subreaper()
    cli_runs: list[dict[str, Any]] = []
    api_runs: list[dict[str, Any]] = []
    for index in range(options.runs):
        cli_runs.append(cli_run(index))
        api_runs.append(api_run(index))
    cli = summarize(cli_runs, SUMMARY_KEYS)
    api = summarize(api_runs, SUMMARY_KEYS + API_ONLY_KEYS)
    results = {
        **machine(),
        "runs_each": options.runs,
        "playbook": PLAYBOOK,
        "inventory": str(INVENTORY.relative_to(ROOT)),
        "cli": cli,
        "api": api,
        "api_over_cli": compare(cli, api),
        "runs": {"cli": cli_runs, "api": api_runs},
    }
    write_results(results)
    if options.readme:
        embed_in_readme()
    print(RESULTS_MD.read_text())


if __name__ == "__main__":
    main()
