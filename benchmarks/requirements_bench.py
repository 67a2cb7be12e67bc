#!/usr/bin/env python3
"""Benchmark: what a workload's own requirements cost on the provisioned 3-node sim cluster (issue 26).

The same small DDP script, run with ``playbooks/train.yml`` with and without a requirements file beside it (one
package the training image lacks, einops), in rotation, --repeats times (default 3); medians reported:

- the first run with the requirements: the layer resolved and built on the controller, probed on and shipped to
  every node (a fresh key each time the benchmark runs, so this is really the cold path);
- warm runs with the requirements (the layer on every node: one stat per node) beside runs without: the
  difference of the whole playbook's wall seconds is what the requirements cost on every later run;
- changed tasks of the warm runs (the target is 0 in provisioning).

Writes benchmarks/results/requirements_bench.json and requirements_bench.md generated from it (docs/BENCHMARKS.md embeds it).

    make sim train                      # once: a provisioned sim cluster (inventories/sim)
    .venv/bin/python benchmarks/requirements_bench.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

import playbook_runs
from playbook_runs import ROOT, Step

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS_JSON = RESULTS_DIR / "requirements_bench.json"
RESULTS_MD = RESULTS_DIR / "requirements_bench.md"
LOG_DIR = RESULTS_DIR / "requirements_logs"
INVENTORY = ROOT / "inventories" / "sim" / "hosts.yml"
RUNS_DIR = ROOT / "runs"
SCRIPT = """import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(total)
print(f"rank {dist.get_rank()}: {total.item()}", flush=True)
"""
LAYER_TASKS = ("requirements", "layer", "training environment", "training image")


def workload(root: Path, requirements: str | None) -> Path:
    """A workload directory with the script, and a requirements file when ``requirements`` is given."""
    root.mkdir(parents=True)
    (root / "train.py").write_text(SCRIPT)
    if requirements is not None:
        (root / "requirements.txt").write_text(requirements)
    return root


def job_run(name: str, source: Path) -> dict[str, Any]:
    """One train.yml run of the workload in ``source``: its wall seconds, changes and the layer's tasks."""
    job_id = f"req-{name}-{datetime.datetime.now(datetime.UTC):%H%M%S}"
    extra_vars = {"workload_src": str(source), "launcher_script": "train.py", "launcher_job_id": job_id}
    step: Step = playbook_runs.run_playbook(name, "playbooks/train.yml", extra_vars, inventory=str(INVENTORY), log_dir=LOG_DIR)
    if not step.ok:
        raise SystemExit(f"{name} failed: {step.error}")
    summary = json.loads((RUNS_DIR / job_id / "summary.json").read_text())
    layer_s = sum(seconds for task, seconds in step.task_seconds if any(word in task for word in LAYER_TASKS))
    return {
        "wall_s": round(step.wall_s, 2),
        "changed": step.changed,
        "provision_changed": summary.get("provision_changed"),
        "train_s": summary["phases"]["train"],
        "layer_tasks_s": round(layer_s, 2),
        "layer": summary["settings"].get("requirements") or {},
    }


def median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def markdown(results: dict[str, Any]) -> str:
    cold, warm, plain = results["cold"], results["warm"], results["plain"]
    return "\n".join(
        [
            "### Your script's own packages (3-node sim cluster)",
            "",
            f"`benchmarks/requirements_bench.py`, {results['date']}, {results['host']}: `train.yml` with a requirements "
            f"file of one package the image lacks ({results['requirements']}), median of {results['repeats']} runs in "
            "rotation with the same script without it.",
            "",
            "| measure | seconds |",
            "|---|---:|",
            f"| first run: layer built on the controller and shipped (its tasks) | {cold['wall_s']} ({cold['layer_tasks_s']}) |",
            f"| warm run with requirements | {median([run['wall_s'] for run in warm])} |",
            f"| warm run without | {median([run['wall_s'] for run in plain])} |",
            f"| **what the requirements cost a warm run** | **{results['warm_cost_s']}** |",
            "",
            f"Changed tasks of the warm runs with requirements: {[run['changed'] for run in warm]} (provisioning: "
            f"{[run['provision_changed'] for run in warm]}).",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    if not INVENTORY.exists():
        raise SystemExit(f"{INVENTORY} is missing: run `make sim train` first")
    playbook_runs.become_subreaper()
    # A comment unique to this benchmark run gives the file a new key: the first run really builds its layer.
    requirements = f"einops==0.8.2  # requirements_bench {uuid.uuid4().hex[:8]}\n"
    with tempfile.TemporaryDirectory(prefix="requirements-bench-") as scratch:
        with_requirements = workload(Path(scratch) / "with", requirements)
        without = workload(Path(scratch) / "without", None)
        cold = job_run("cold", with_requirements)
        warm, plain = [], []
        for index in range(options.repeats):
            plain.append(job_run(f"plain-{index}", without))
            warm.append(job_run(f"warm-{index}", with_requirements))
    uname = subprocess.run(["uname", "-sr"], capture_output=True, text=True, check=False).stdout.strip()
    results = {
        "date": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        "host": f"{uname}, {len(os.sched_getaffinity(0))} cores",
        "repeats": options.repeats,
        "requirements": requirements.split("#")[0].strip(),
        "cold": cold,
        "warm": warm,
        "plain": plain,
        "warm_cost_s": round(median([run["wall_s"] for run in warm]) - median([run["wall_s"] for run in plain]), 2),
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
    RESULTS_MD.write_text(markdown(results))
    playbook_runs.embed_in_readme(RESULTS_MD)
    print(RESULTS_MD.read_text())


if __name__ == "__main__":
    main()
