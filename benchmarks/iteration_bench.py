#!/usr/bin/env python3
"""Benchmark: the researcher's loop on the provisioned 3-node sim cluster (issue 15), measured before changing it.

Side by side, round-robin, --repeats times (default 3), medians reported:

- the floor: ``ansible all -m setup`` against the same nodes;
- a re-run of ``playbooks/train.yml`` (provisioning that changes nothing, then a job): total, minus the job's
  training time (summary.json ``phases.train``);
- ``playbooks/launch.yml`` alone (code sync and a job): total, minus training time;
- the launch phase (summary.json ``phases.launch``: launch script start until every rank started).

And where the overhead goes: seconds per play and per task (the ansible.posix.json callback), how many task
executions reached a node (each at least one SSH round trip), writing the launch script and starting its container, and the polling
slack (the wait task's seconds beyond launch + training). Writes benchmarks/results/iteration_bench.json and a
benchmarks/results/iteration_bench.md generated from it, the section docs/BENCHMARKS.md embeds.

    make sim train                      # once: a provisioned sim cluster (inventories/sim)
    .venv/bin/python benchmarks/iteration_bench.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import playbook_runs
from playbook_runs import ROOT, VENV_BIN, Step

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS_JSON = RESULTS_DIR / "iteration_bench.json"
RESULTS_MD = RESULTS_DIR / "iteration_bench.md"
LOG_DIR = RESULTS_DIR / "iteration_logs"
INVENTORY = ROOT / "inventories" / "sim" / "hosts.yml"
RUNS_DIR = ROOT / "runs"
WAIT_TASK = "Follow the job until it ends"
CONTAINER_START_TASK = "and start the launcher container that runs it"
TOP_TASKS = 12


def run(name: str, playbook: str, extra_vars: dict[str, Any]) -> Step:
    return playbook_runs.run_playbook(name, playbook, extra_vars, inventory=str(INVENTORY), log_dir=LOG_DIR)


def setup_floor() -> float:
    """Wall seconds of ``ansible all -m setup`` (fresh SSH connections, as every playbook run starts)."""
    started = time.monotonic()
    subprocess.run(
        [str(VENV_BIN / "ansible"), "all", "-i", str(INVENTORY), "-m", "ansible.builtin.setup"],
        cwd=ROOT,
        env=playbook_runs.ansible_env(Path("/tmp"), {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.minimal"}),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.monotonic() - started


def job_run(kind: str, playbook: str, index: int) -> dict[str, Any]:
    """One train.yml or launch.yml run and its job's phases."""
    job_id = f"iter-{kind}-{datetime.datetime.now(datetime.UTC):%H%M%S}-{index}"
    step = run(f"{kind}-{index}", playbook, {"launcher_job_id": job_id})
    if not step.ok:
        raise SystemExit(f"{kind} run {index} failed: {step.error}")
    phases = json.loads((RUNS_DIR / job_id / "summary.json").read_text())["phases"]
    tasks = dict(step.task_seconds)
    waited = next((seconds for name, seconds in tasks.items() if WAIT_TASK in name), None)
    return {
        "wall_s": step.wall_s,
        "controller_cpu_s": step.cpu_s,
        "train_s": phases["train"],
        "launch_s": phases["launch"],
        "overhead_s": round(step.wall_s - phases["train"], 2),
        "plays": step.plays,
        "tasks": tasks,
        "node_task_runs": step.node_task_runs,
        "container_start_s": next((s for name, s in tasks.items() if CONTAINER_START_TASK in name), None),
        "poll_slack_s": None if waited is None else round(waited - phases["launch"] - phases["train"], 2),
    }


def median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(statistics.median(present), 2) if present else None


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("wall_s", "controller_cpu_s", "train_s", "launch_s", "overhead_s", "node_task_runs", "container_start_s", "poll_slack_s")
    summary: dict[str, Any] = {key: median([run[key] for run in runs]) for key in keys}
    plays = {play for run in runs for play in run["plays"]}
    summary["plays"] = {play: median([run["plays"].get(play) for run in runs]) for play in sorted(plays)}
    tasks = {task for run in runs for task in run["tasks"]}
    per_task = {task: median([run["tasks"].get(task, 0.0) for run in runs]) or 0.0 for task in tasks}
    summary["task_count"] = len(tasks)
    summary["slowest_tasks"] = sorted(per_task.items(), key=lambda item: -item[1])[:TOP_TASKS]
    return summary


def markdown(results: dict[str, Any]) -> str:
    train, launch = results["train"], results["launch"]
    lines = [
        "### The iteration loop (3-node sim cluster)",
        "",
        f"`benchmarks/iteration_bench.py`, median of {results['repeats']} runs taken in rotation on this machine "
        f"({results['host']}), {results['date']}. Overhead = playbook total minus the job's training time.",
        "",
        "| measure | seconds | target |",
        "|---|---:|---:|",
        f"| floor: `ansible all -m setup` | {results['setup_floor_s']} | |",
        f"| re-run `train.yml`: total / overhead | {train['wall_s']} / **{train['overhead_s']}** | overhead <= 15 |",
        f"| `launch.yml`: total / overhead | {launch['wall_s']} / **{launch['overhead_s']}** | overhead <= 8 |",
        f"| launch phase (launch script start until every rank started) | **{launch['launch_s']}** | <= 3 |",
        "",
        "Where it goes:",
        "",
        "| | re-run `train.yml` | `launch.yml` |",
        "|---|---:|---:|",
        f"| tasks (names) | {train['task_count']} | {launch['task_count']} |",
        f"| task executions on a node (>= 1 SSH round trip each) | {train['node_task_runs']} | {launch['node_task_runs']} |",
        f"| controller CPU s | {train['controller_cpu_s']} | {launch['controller_cpu_s']} |",
        f"| launch script written and launcher container started s | {train['container_start_s']} | {launch['container_start_s']} |",
        f"| polling slack s (wait task beyond launch + training) | {train['poll_slack_s']} | {launch['poll_slack_s']} |",
    ]
    for kind in ("train", "launch"):
        lines += ["", f"Plays of `{kind}.yml` (s): " + ", ".join(f"{play} {s}" for play, s in results[kind]["plays"].items())]
        lines += ["", f"Slowest tasks of `{kind}.yml` (s, all nodes of a task together):", ""]
        lines += [f"- {task}: {seconds}" for task, seconds in results[kind]["slowest_tasks"]]
    return "\n".join(lines) + "\n"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measure, in rotation (default 3)")
    return parser.parse_args()


def main() -> None:
    options = parse_args()
    if not INVENTORY.exists():
        raise SystemExit(f"{INVENTORY} is missing: run `make sim train` first")
    playbook_runs.become_subreaper()
    floors, trains, launches = [], [], []
    for index in range(options.repeats):
        floors.append(setup_floor())
        trains.append(job_run("train", "playbooks/train.yml", index))
        launches.append(job_run("launch", "playbooks/launch.yml", index))
    uname = subprocess.run(["uname", "-sr"], capture_output=True, text=True, check=False).stdout.strip()
    results = {
        "date": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        "host": f"{uname}, {len(os.sched_getaffinity(0))} cores",
        "repeats": options.repeats,
        "setup_floor_s": median(floors),
        "train": summarize(trains),
        "launch": summarize(launches),
        "runs": {"setup_floor_s": floors, "train": trains, "launch": launches},
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
    RESULTS_MD.write_text(markdown(results))
    playbook_runs.embed_in_readme(RESULTS_MD)
    print(RESULTS_MD.read_text())


if __name__ == "__main__":
    main()
