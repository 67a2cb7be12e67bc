#!/usr/bin/env python3
"""Benchmark: what the health check (playbooks/check.yml) costs on simulated clusters of 4 to 32 nodes.

One simulated cluster of the largest size is created and provisioned in host mode the way benchmarks/scale_bench.py
does it (the shared read-only volumes of its warm-up hold host mode's torch and Intel MPI, cluster "scale" on
172.30.79.0/24); then check.yml runs against its first N nodes for each size (an inventory of those nodes, the
first the launcher), twice per size, and the cluster is removed. Each check's wall and controller CPU seconds come
from the ansible-playbook run; the probe itself reports where its time went (rendezvous, compute and memory,
network) and how many turns the nodes that share a kernel took for compute and memory.

On this machine every node shares one kernel, so compute and memory are measured in N turns: that part grows with N
here and is one turn on real nodes. The cost model fits t = a + b*N to the check's wall time and to the same time
without the turns beyond the first, and extrapolates both to 1,000 nodes: the second is what a fleet of real
servers pays (the ring is at most three rounds at any size, so the pairwise part does not grow).

    .venv/bin/python benchmarks/health_bench.py --sizes 4 8 16 32 [--reuse-volumes] [--keep-volumes]
    .venv/bin/python benchmarks/health_bench.py --report-only     # regenerate the .md from the JSON
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

import playbook_runs
import scale_bench
from playbook_runs import ROOT, become_subreaper

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS_JSON = RESULTS_DIR / "health_bench.json"
RESULTS_MD = RESULTS_DIR / "health_bench.md"
REPORTS_DIR = RESULTS_DIR / "health_logs"
CHECK = "playbooks/check.yml"
REPEATS = 2


def subset_inventory(nodes: int) -> Path:
    """The scale cluster's inventory cut to its first ``nodes`` nodes (node1 the launcher)."""
    inventory = yaml.safe_load(scale_bench.INVENTORY.read_text())
    groups = inventory["all"]["children"]
    every = {**groups["launcher"]["hosts"], **groups["workers"]["hosts"]}
    kept = list(every)[:nodes]
    groups["launcher"]["hosts"] = {kept[0]: every[kept[0]]}
    groups["workers"]["hosts"] = {name: every[name] for name in kept[1:]}
    # Outside the project: ansible-lint would read it as a playbook.
    path = Path(tempfile.mkdtemp(prefix="health-bench-")) / f"hosts-{nodes}.yml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def probe_seconds(report: dict[str, Any]) -> dict[str, float]:
    """The slowest node's seconds per phase of the probe, and the turns its compute and memory took."""
    timings = [values.get("seconds") or {} for values in (report.get("nodes") or {}).values()]
    phases = {
        phase: max(float(timing.get(phase) or 0) for timing in timings)
        for phase in ("rendezvous", "compute", "network")
    }
    turns = max(int(values.get("turns") or 1) for values in (report.get("nodes") or {}).values())
    return {**phases, "turns": turns}


def measure_check(nodes: int, repeat: int) -> dict[str, Any]:
    """check.yml against the first ``nodes`` nodes; its step and what the probe and the verdict said."""
    report_path = REPORTS_DIR / f"n{nodes}-{repeat}" / "health.json"
    # Every node here shares one kernel, so compute and memory take N turns of about 3 s: the bound on the whole
    # check (health_timeout plus a minute) is raised to fit 32 of them.
    extra = {**scale_bench.COMMON_VARS, "health_report": str(report_path), "health_timeout": 180}
    step = playbook_runs.run_playbook(
        f"n{nodes}-check-{repeat}", CHECK, extra, inventory=str(subset_inventory(nodes)), log_dir=REPORTS_DIR
    )
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    probe = probe_seconds(report) if report else {}
    # What the check costs without the turns of nodes that share a kernel beyond the first: one turn's worth of
    # compute and memory instead of ``turns`` of them.
    one_kernel = step.wall_s - probe["compute"] * (1 - 1 / probe["turns"]) if probe else None
    return {
        "step": asdict(step),
        "status": report.get("status"),
        "findings": report.get("findings", []),
        "probe": probe,
        "separate_kernels_s": round(one_kernel, 2) if one_kernel is not None else None,
    }


def bench(options: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": scale_bench.host_info(),
        "ansible_core": scale_bench.ansible_core_version(),
        "settings": {
            "sizes": options.sizes,
            "repeats": REPEATS,
            "runtime": "host",
            "forks": scale_bench.ansible_cfg_forks(),
        },
        "sizes": [],
    }
    if scale_bench.leftovers():
        scale_bench.tear_down("leftover", max(options.sizes))
    started = time.monotonic()
    try:
        results["warmup"] = scale_bench.warm_up(options)
        largest = max(options.sizes)
        record: dict[str, Any] = {}
        with scale_bench.sim_cluster("health", largest, scale_bench.volume_mounts(read_only=True), record):
            provision = scale_bench.require(
                scale_bench.measure_provision(f"health-n{largest}-provision"), "provisioning"
            )
            results["provision"] = {"nodes": largest, "wall_s": provision.wall_s, **record}
            for nodes in options.sizes:
                checks = [measure_check(nodes, repeat) for repeat in range(1, REPEATS + 1)]
                results["sizes"].append({"nodes": nodes, "checks": checks})
                write_results(results)
    finally:
        if not options.keep_volumes:
            scale_bench.remove_volumes()
        shutil.rmtree(scale_bench.STATE_DIR, ignore_errors=True)
        results["total_s"] = round(time.monotonic() - started, 1)
        write_results(results)
    return results


def median_of(size: dict[str, Any], key: str) -> float | None:
    """The median over the size's checks that reached a verdict (passed or not: a finding does not shorten a
    check) of a value (a key of the check, or of its step)."""
    values = [check.get(key, check["step"].get(key)) for check in size["checks"] if check["status"] is not None]
    values = [value for value in values if isinstance(value, (int, float))]
    return round(statistics.median(values), 2) if values else None


def models(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    """t = a + b*N for the check's wall time, its controller CPU, and the wall time on separate kernels."""
    fitted = {}
    for key in ("wall_s", "cpu_s", "separate_kernels_s"):
        points = [(size["nodes"], value) for size in sizes if (value := median_of(size, key)) is not None]
        fitted[key] = scale_bench.fit(points)
    return fitted


def markdown(results: dict[str, Any]) -> str:
    fitted = results.get("models") or {}
    lines = [
        "### The health check's cost (simulated nodes, host mode)",
        "",
        f"Health check (`playbooks/check.yml`, host mode) on one simulated cluster of {max(results['settings']['sizes'])}"
        f" nodes, checked on its first N; {results['settings']['repeats']} checks per size, medians of those that reached"
        " a verdict."
        f" {results['host'].get('cpus', '?')} CPUs, ansible-core {results['ansible_core']},"
        f" forks {results['settings']['forks']}; generated {results['generated']}"
        " from `benchmarks/results/health_bench.json` by `benchmarks/health_bench.py`.",
        "",
        "| nodes | passed | check s | controller CPU s | probe: rendezvous / compute (turns) / network s | on separate kernels s |",
        "|---:|---:|---:|---:|---|---:|",
    ]
    for size in results["sizes"]:
        passed = sum(check["status"] == "passed" for check in size["checks"])
        probe = next((check["probe"] for check in size["checks"] if check["probe"]), {})
        probe_text = (
            f"{probe['rendezvous']:.1f} / {probe['compute']:.1f} ({probe['turns']}) / {probe['network']:.1f}"
            if probe
            else "–"
        )
        lines.append(
            f"| {size['nodes']} | {passed} of {len(size['checks'])} | {scale_bench.fmt(median_of(size, 'wall_s'))} |"
            f" {scale_bench.fmt(median_of(size, 'cpu_s'))} | {probe_text} |"
            f" {scale_bench.fmt(median_of(size, 'separate_kernels_s'))} |"
        )
    lines += ["", "| cost model t = a + b·N | a | b | r² | at 1,000 nodes |", "|---|---:|---:|---:|---:|"]
    names = {
        "wall_s": "check s (this machine: compute and memory in N turns)",
        "cpu_s": "controller CPU s",
        "separate_kernels_s": "check s, one kernel per node (one turn)",
    }
    for key, name in names.items():
        model = fitted.get(key)
        if model:
            lines.append(f"| {name} | {model['a']} | {model['b']} | {model['r2']} | {model['at_1000']} |")
    findings = [finding for size in results["sizes"] for check in size["checks"] for finding in check["findings"]]
    unread = [finding for finding in findings if "the health probe failed" in finding]
    figures = [finding for finding in findings if finding not in unread]
    lines += [
        "",
        f"Findings on these healthy clusters: {len(figures)} on a node's figures"
        + (f" ({'; '.join(figures[:2])})" if figures else "")
        + f", {len(unread)} probes that could not be read"
        + (f" ({unread[0]})" if unread else "")
        + ". Either is a false alarm of this machine, where every node shares its 2 cores with the others and"
        " with the controller. The controller starts the probe on every node but the launcher detached (host mode:"
        " one SSH exec each, nothing uploaded), then runs rank 0 on the launcher node in the foreground, which prints"
        " every node's figures: it polls no probe and reads no other node (unless a rank failed), so its work grows"
        " with the nodes by one SSH exec each (the probe's start, beside the cluster facts' module run); at 1,000"
        " nodes that is the controller CPU line above,"
        " spread over the forks. The pairwise part, the ring, is at most three rounds of 64 MB sends at any number"
        " of separate servers; nodes that share one (all of them here) send one at a time, so here it grows with N (and"
        " a link under the gate sends twice more, alone, before it is named).",
        "",
        *time_split(results["sizes"]),
    ]
    return "\n".join(lines)


def time_split(sizes: list[dict[str, Any]], shown: int = 4) -> list[str]:
    """Where the largest size's first check with a verdict spent its wall time: its slowest tasks (tasks of one name
    summed, as the step keeps them), the other tasks together, and Ansible's own start and end."""
    checks = [check for check in sizes[-1]["checks"] if check["status"] is not None] if sizes else []
    if not checks:
        return []
    step = checks[0]["step"]
    tasks = step["task_seconds"]
    rest = sum(seconds for _name, seconds in tasks[shown:])
    outside = step["wall_s"] - sum(seconds for _name, seconds in tasks)
    slowest = "; ".join(f"{name.split(' : ', 1)[-1]} {seconds:.1f} s" for name, seconds in tasks[:shown])
    return [
        f"Where the {sizes[-1]['nodes']}-node check's {step['wall_s']:.1f} s went (its first check, task by task, each"
        f" from its first node's start to its last node's end, tasks of one name summed): {slowest}; the other"
        f" {len(tasks) - shown} tasks"
        f" {rest:.1f} s together; ansible-playbook's own start and end {outside:.1f} s.",
        "",
    ]


def write_results(results: dict[str, Any]) -> None:
    results["models"] = models(results["sizes"])
    playbook_runs.write_results(results, RESULTS_JSON, RESULTS_MD, markdown(results))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32], help="cluster sizes (nodes)")
    parser.add_argument("--reuse-volumes", action="store_true", help="skip the warm-up when the scale-* volumes exist")
    parser.add_argument("--keep-volumes", action="store_true", help="keep the scale-* volumes for a later run")
    parser.add_argument("--report-only", action="store_true", help="rewrite the .md from the JSON, run nothing")
    options = parser.parse_args()
    if any(size < 2 or size > 200 for size in options.sizes):
        parser.error("sizes must be 2..200 (one /24 network; a check compares nodes)")
    options.sizes = sorted(set(options.sizes))
    return options


def main() -> None:
    options = parse_args()
    if options.report_only:
        write_results(json.loads(RESULTS_JSON.read_text()))
        return
    scale_bench.check_prerequisites()
    become_subreaper()
    scale_bench.stop_on_sigterm()
    results = bench(options)
    print(RESULTS_MD.read_text())
    print(f"wrote {RESULTS_JSON.relative_to(ROOT)} and {RESULTS_MD.relative_to(ROOT)} ({results['total_s']:.0f} s)")


if __name__ == "__main__":
    main()
