#!/usr/bin/env python3
"""Benchmark: what checkpoint replicas cost the training they copy, on the provisioned 3-node sim cluster (issue 41).

The CNN example (examples/cifar_cnn, a checkpoint after every epoch) runs with launch.yml, alternately with
``launcher_checkpoint_replicas: 1`` (each checkpoint copied to node2 while the job trains) and ``0`` (none),
--repeats times each. Measured in each run: the seconds of every epoch after the first, as the example prints them
(``epoch N loss L (S s)`` in rank 0's log; the first epoch includes the start), and from the launcher node's
logs/replicas.jsonl the copies made and their seconds. Writes benchmarks/results/replica_bench.json and .md, the
section docs/BENCHMARKS.md embeds.

    make sim train                      # once: a provisioned sim cluster (inventories/sim)
    .venv/bin/python benchmarks/replica_bench.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
from typing import Any

from playbook_runs import ROOT, RUNS_DIR, SIM_INVENTORY, VENV_BIN, result_files, write_results

RESULTS_JSON, RESULTS_MD, LOG_DIR = result_files("replica_bench")
DATA_DIR = ROOT / "benchmarks" / "results" / "restart_data"
EPOCHS = 8
CORES = os.cpu_count() or 1
# The example's epoch line: its number, loss and seconds.
EPOCH_LINE = re.compile(r"^epoch (\d+) loss \S+ \(([\d.]+) s\)$", re.MULTILINE)


def run_job(job_id: str, replicas: int) -> dict[str, Any]:
    """One CNN job with ``replicas``; its epochs' seconds and its copies."""
    extra_vars = {
        "workload_src": str(ROOT / "examples" / "cifar_cnn"),
        "workload_data_src": str(DATA_DIR),
        "launcher_job_id": job_id,
        "launcher_script_args": ["--epochs", str(EPOCHS)],
        "launcher_checkpoint_replicas": replicas,
    }
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(RUNS_DIR / job_id, ignore_errors=True)  # never an earlier run's summary
    argv = [
        str(VENV_BIN / "ansible-playbook"),
        "playbooks/launch.yml",
        "-i",
        str(SIM_INVENTORY),
        "-e",
        json.dumps(extra_vars),
    ]
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    with open(LOG_DIR / f"{job_id}.log", "wb") as log:
        rc = subprocess.run(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0:
        raise RuntimeError(f"{job_id} failed (rc {rc}); see {LOG_DIR / (job_id + '.log')}")
    summary = json.loads((RUNS_DIR / job_id / "summary.json").read_text())
    logs = RUNS_DIR / job_id / "nodes" / summary["node_names"][0] / "logs"
    epochs = EPOCH_LINE.findall((logs / "rank-0.log").read_text())
    epoch_seconds = [float(seconds) for number, seconds in epochs if int(number) > 1]
    copies_log = logs / "replicas.jsonl"
    copies = [json.loads(line) for line in copies_log.read_text().splitlines()] if copies_log.exists() else []
    made = [copy for copy in copies if copy.get("ok") and "entry" in copy and not copy.get("removed")]
    costs = [copy["cpu_seconds"] for copy in copies if "cpu_seconds" in copy]
    return {
        "job_id": job_id,
        "replicas": replicas,
        "rc": rc,
        "status": summary["status"],
        "epoch_seconds": epoch_seconds,
        "copies": len(made),
        "copy_seconds": [copy["seconds"] for copy in made],
        "copy_bytes": [copy["bytes"] for copy in made],
        # The replicator's own record of the CPU it took on the launcher node, and the seconds the ranks trained.
        "replicator_cpu_seconds": costs[-1] if costs else None,
        "train_seconds": summary["phases"]["train"],
    }


def report(results: list[dict[str, Any]]) -> str:
    def seconds(replicas: int) -> list[float]:
        return [value for run in results if run["replicas"] == replicas for value in run["epoch_seconds"]]

    def per_run(replicas: int) -> str:
        return ", ".join(
            f"{statistics.median(run['epoch_seconds']):.2f}" for run in results if run["replicas"] == replicas
        )

    with_copies, without = statistics.median(seconds(1)), statistics.median(seconds(0))
    copies = [run for run in results if run["replicas"] == 1]
    # Each alternated pair's runs (one with, one without, one after the other): the machine's drift cancels.
    pairs = [
        100 * (statistics.median(with_run["epoch_seconds"]) - statistics.median(plain["epoch_seconds"]))
        / statistics.median(plain["epoch_seconds"])
        for with_run, plain in zip(copies, [run for run in results if run["replicas"] == 0])
    ]
    cpu = [run["replicator_cpu_seconds"] for run in copies if run["replicator_cpu_seconds"] is not None]
    cpu_share = [
        100 * run["replicator_cpu_seconds"] / (run["train_seconds"] * CORES)
        for run in copies
        if run["replicator_cpu_seconds"] is not None and run["train_seconds"]
    ]
    copy_seconds = [value for run in copies for value in run["copy_seconds"]]
    sizes = [value for run in copies for value in run["copy_bytes"]]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = len(results) // 2
    return "\n".join(
        [
            "### Checkpoint replicas (3-node sim cluster)",
            "",
            f"`benchmarks/replica_bench.py` ({when}, this machine: 2 cores): the CNN example ({EPOCHS} epochs, a"
            f" checkpoint after each) with `launcher_checkpoint_replicas: 1` and `0`, {runs} runs each, alternated."
            " Epoch seconds are what the example prints for each epoch after the first (median over every such"
            " epoch); the copies are the replicator's records on the launcher node.",
            "",
            "| measure | replicas 1 | replicas 0 |",
            "|---|---:|---:|",
            f"| seconds per epoch, median | {with_copies:.2f} | {without:.2f} |",
            f"| copies to node2 per run | {statistics.median([run['copies'] for run in copies]):.0f} | 0 |",
            f"| seconds per copy, median | {statistics.median(copy_seconds) if copy_seconds else 0:.2f} | - |",
            f"| bytes per checkpoint | {statistics.median(sizes) if sizes else 0:.0f} | - |",
            f"| replicator CPU seconds per run, launcher node | {statistics.median(cpu) if cpu else 0:.2f} | - |",
            f"| its share of the machine's CPU while the ranks trained | {statistics.median(cpu_share) if cpu_share else 0:.2f}% | - |",
            "",
            f"An epoch with replicas took {100 * (with_copies - without) / without:+.1f}% of the time without (pooled"
            f" medians); the alternated pairs' differences, median {statistics.median(pairs):+.1f}%"
            f" ({', '.join(f'{value:+.1f}' for value in pairs)}). Each run's median epoch seconds, replicas 1:"
            f" {per_run(1)}; replicas 0: {per_run(0)}. The replicator's CPU is what it can take from the ranks on the"
            f" launcher node ({CORES} cores; each replica node does the mirror of it: decryption and unpacking): the"
            " step time it can cost where the ranks use every core.",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    subprocess.run(
        [str(VENV_BIN / "python"), str(ROOT / "examples" / "cifar_cnn" / "make_data.py"), str(DATA_DIR)],
        check=True,
        capture_output=True,
    )
    results = []
    for repeat in range(1, args.repeats + 1):
        for replicas in (1, 0):
            result = run_job(f"bench-replica-{replicas}-{repeat}", replicas)
            print(json.dumps(result), flush=True)
            results.append(result)
    write_results({"results": results}, RESULTS_JSON, RESULTS_MD, report(results))
    print(RESULTS_MD.read_text())


if __name__ == "__main__":
    main()
