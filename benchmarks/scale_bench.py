#!/usr/bin/env python3
"""Benchmark: provisioning and launch cost against simulated clusters of N nodes (host mode).

For each size N it creates a simulated cluster of N bare node containers (harness/sim_cluster.yml,
cluster "scale" on 172.30.79.0/24), measures, and removes it again:

- preflight: the first play of playbooks/provision.yml ("Preflight and cluster facts"), its wall
  seconds inside the first provisioning, and that play alone (a copy taken from provision.yml at
  run time) for its controller CPU;
- first provisioning and re-provisioning (which must change nothing) with playbooks/provision.yml;
- launch latency (summary.json phases.launch: launch script start until every rank started) and
  launch.yml's wall time, under mpiexec and torchrun, with benchmarks/scale_workload/train.py;
- the controller's CPU seconds of every step: user+sys of the ansible-playbook process tree
  (getrusage(RUSAGE_CHILDREN) deltas; this process is a child subreaper and closes the step's SSH
  ControlMaster connections before it reads them, so their CPU counts too);
- at the largest size, re-provisioning under the Ansible settings docs/BENCHMARKS.md discusses (forks,
  pipelining, strategy, fact caching), each --repeats times round-robin, medians reported.

Per-step logs (the json callback's report and stderr) go to benchmarks/results/scale_logs/.

Lightweight nodes: the job runs on the hosts (cluster_runtime=host). A warm-up (not measured)
provisions a 1-node cluster whose heavy directories (the host_runtime virtualenv with torch, the
oneapi pip prefix with Intel MPI) are Docker volumes scale-*; every benchmark node mounts them
read-only at the same paths, so the roles find them built (fingerprint marker, wheels present)
and do everything else for real. Per-play durations come from the ansible.posix.json callback.
Then it fits t = a + b*N per measure (least squares), extrapolates to 1,000 nodes and writes
benchmarks/results/scale_bench.json and, from that JSON, benchmarks/results/scale_bench.md.

    .venv/bin/python benchmarks/scale_bench.py --sizes 4 8 16 32
    .venv/bin/python benchmarks/scale_bench.py --report-only     # regenerate the .md from the JSON
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

import playbook_runs
from playbook_runs import ROOT, VENV_BIN, Step, become_subreaper

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS_JSON = RESULTS_DIR / "scale_bench.json"
RESULTS_MD = RESULTS_DIR / "scale_bench.md"
LOG_DIR = RESULTS_DIR / "scale_logs"
WORKLOAD_DIR = ROOT / "benchmarks" / "scale_workload"
PROVISION = "playbooks/provision.yml"
LAUNCH = "playbooks/launch.yml"
PREFLIGHT_PLAY = "Preflight and cluster facts"

CLUSTER = "scale"
NETWORK = "172.30.79"
INVENTORY = ROOT / "inventories" / CLUSTER / "hosts.yml"
STATE_DIR = Path.home() / ".multinode-training" / CLUSTER
CONTAINER_PREFIX = f"mnt-{CLUSTER}-"  # the sim_cluster role's names: mnt-<name>-node<i>, mnt-<name>-net
# Shared read-only volumes: name -> path on every node (host_runtime's venv at <cluster_root>/venv,
# the oneapi role's pip prefix).
VOLUMES = {
    "scale-venv": f"/opt/multinode/{CLUSTER}/venv",
    "scale-oneapi": "/opt/intel/oneapi-pip",
}
VOLUME_LABEL = "multinode.bench=scale"
COMMON_VARS: dict[str, Any] = {"cluster_runtime": "host", "workload_src": str(WORKLOAD_DIR)}
LAUNCHERS = ("mpiexec", "torchrun")
EXTRAPOLATE_TO = 1000


# ---------------------------------------------------------------------------------------------
# Running ansible-playbook and measuring it


# ---------------------------------------------------------------------------------------------
# Memory of the node containers (cgroup v1 or v2), sampled while a step runs


class MemorySampler:
    """Peak of the node containers' anonymous memory (sum over nodes and per node) while active."""

    def __init__(self, container_ids: list[str], interval_s: float = 0.5) -> None:
        self._files = [path for path in map(memory_stat_file, container_ids) if path is not None]
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._peak_total = 0
        self._peak_node = 0

    def __enter__(self) -> MemorySampler:
        self._peak_total = self._peak_node = 0
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            sizes = [anon_bytes(path) for path in self._files]
            self._peak_total = max(self._peak_total, sum(sizes))
            self._peak_node = max([self._peak_node, *sizes])
            self._stop.wait(self._interval)

    def peaks(self) -> dict[str, float] | None:
        if not self._files:
            return None
        return {"peak_total_mib": round(self._peak_total / 2**20), "peak_node_mib": round(self._peak_node / 2**20)}


def memory_stat_file(container_id: str) -> Path | None:
    for path in (
        Path(f"/sys/fs/cgroup/memory/docker/{container_id}/memory.stat"),
        Path(f"/sys/fs/cgroup/docker/{container_id}/memory.stat"),
        Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/memory.stat"),
    ):
        if path.exists():
            return path
    return None


def anon_bytes(path: Path) -> int:
    """Anonymous memory of a cgroup: total_rss (v1) or anon (v2)."""
    try:
        fields = dict(line.split() for line in path.read_text().splitlines() if line.count(" ") == 1)
    except OSError:
        return 0
    return int(fields.get("total_rss", fields.get("anon", 0)))


def mem_available_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


# ---------------------------------------------------------------------------------------------
# Docker: the shared volumes and the node containers


def docker(*args: str, check: bool = True) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check).stdout.strip()


def node_names(nodes: int) -> list[str]:
    return [f"{CONTAINER_PREFIX}node{index}" for index in range(1, nodes + 1)]


def container_ids(nodes: int) -> list[str]:
    return docker("inspect", "-f", "{{.Id}}", *node_names(nodes)).splitlines()


def node_disk_mib(nodes: int) -> dict[str, float]:
    """Each node's own writable layer after provisioning (the shared volumes not counted)."""
    sizes = [int(size) for size in docker("inspect", "--size", "-f", "{{.SizeRw}}", *node_names(nodes)).split()]
    return {"max_node_mib": round(max(sizes) / 2**20), "total_mib": round(sum(sizes) / 2**20)}


def volume_exists(name: str) -> bool:
    return bool(docker("volume", "ls", "-q", "--filter", f"name=^{name}$"))


def create_volumes() -> None:
    for name in VOLUMES:
        if not volume_exists(name):
            docker("volume", "create", "--label", VOLUME_LABEL, name)


def remove_volumes() -> None:
    for name in VOLUMES:
        if volume_exists(name):
            docker("volume", "rm", name, check=False)


def volume_sizes() -> dict[str, dict[str, Any]]:
    sizes: dict[str, dict[str, Any]] = {}
    for name, target in VOLUMES.items():
        mountpoint = docker("volume", "inspect", "-f", "{{.Mountpoint}}", name)
        used = subprocess.run(["du", "-sm", mountpoint], capture_output=True, text=True, check=False).stdout.split()
        sizes[name] = {"target": target, "mib": int(used[0]) if used else None}
    return sizes


def volume_mounts(read_only: bool) -> list[dict[str, Any]]:
    return [
        {"type": "volume", "source": name, "target": target, "read_only": read_only} for name, target in VOLUMES.items()
    ]


def leftovers() -> bool:
    """Anything of an earlier, interrupted run: containers labelled with the cluster, or its node volumes."""
    containers = docker("ps", "-aq", "--filter", f"label=multinode.sim={CLUSTER}")
    volumes = [
        v
        for v in docker("volume", "ls", "-q", "--filter", f"name={CONTAINER_PREFIX}").split()
        if v.startswith(CONTAINER_PREFIX)
    ]
    return bool(containers or volumes)


# ---------------------------------------------------------------------------------------------
# The simulated cluster


def sim_vars(nodes: int, mounts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    variables: dict[str, Any] = {
        "sim_cluster_name": CLUSTER,
        "sim_cluster_network": NETWORK,
        "sim_cluster_nodes": nodes,
    }
    if mounts is not None:
        variables["sim_cluster_node_mounts"] = mounts
    return variables


def run_playbook(name: str, playbook: str, extra_vars: dict[str, Any], **options: Any) -> Step:
    """playbook_runs.run_playbook against the scale cluster's inventory, logging to scale_logs/."""
    options.setdefault("inventory", str(INVENTORY))
    return playbook_runs.run_playbook(name, playbook, extra_vars, log_dir=LOG_DIR, **options)


def bring_up(label: str, nodes: int, mounts: list[dict[str, Any]]) -> Step:
    """A fresh cluster: new keys (the state directory is emptied first), new containers."""
    shutil.rmtree(STATE_DIR, ignore_errors=True)
    # An empty host list: the play runs on the implicit localhost (connection local, the venv's python).
    return run_playbook(f"{label}-sim-up", "harness/sim_cluster.yml", sim_vars(nodes, mounts), inventory=",")


def tear_down(label: str, nodes: int) -> Step:
    step = run_playbook(f"{label}-sim-down", "harness/sim_teardown.yml", sim_vars(nodes), inventory=",")
    with contextlib.suppress(OSError):
        INVENTORY.parent.rmdir()
    return step


@contextlib.contextmanager
def sim_cluster(label: str, nodes: int, mounts: list[dict[str, Any]], record: dict[str, Any]) -> Iterator[None]:
    """Bring a cluster up for the block and always remove it, also on errors and Ctrl-C."""
    try:
        up = bring_up(label, nodes, mounts)
        record["bring_up_s"] = up.wall_s
        if not up.ok:
            raise BenchError(f"creating the {nodes}-node cluster failed: {up.error}")
        yield
    finally:
        down = tear_down(label, nodes)
        record["teardown_s"] = down.wall_s
        if not down.ok:
            print(f"  teardown failed; run: {manual_teardown_command(nodes)}", file=sys.stderr)


def manual_teardown_command(nodes: int) -> str:
    return (
        f"ANSIBLE_CONFIG={ROOT}/ansible.cfg {VENV_BIN}/ansible-playbook harness/sim_teardown.yml -i , "
        f"-e '{json.dumps(sim_vars(nodes))}'"
    )


class BenchError(Exception):
    """A step failed; the size's remaining steps are skipped."""


# ---------------------------------------------------------------------------------------------
# The measured steps of one size


def preflight_playbook() -> Path:
    """The first play of provision.yml, alone (taken from the file at run time, so it cannot drift)."""
    plays = yaml.safe_load((ROOT / PROVISION).read_text())
    play = next(play for play in plays if play.get("name") == PREFLIGHT_PLAY)
    path = Path(tempfile.mkstemp(prefix="scale-preflight-", suffix=".yml")[1])
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return path


def measure_preflight(nodes: int) -> Step:
    path = preflight_playbook()
    try:
        return run_playbook(f"n{nodes}-preflight", str(path), COMMON_VARS)
    finally:
        path.unlink(missing_ok=True)


def measure_provision(label: str, sampler: MemorySampler | None = None, env: dict[str, str] | None = None) -> Step:
    return run_playbook(label, PROVISION, COMMON_VARS, env=env, sampler=sampler)


def job_id(launcher: str, nodes: int) -> str:
    return f"scale-{launcher}-{nodes}"


def measure_launch(launcher: str, nodes: int, sampler: MemorySampler) -> dict[str, Any]:
    """launch.yml with the trivial workload; the launch latency comes from the run's summary.json."""
    job = job_id(launcher, nodes)
    shutil.rmtree(ROOT / "runs" / job, ignore_errors=True)
    extra = {
        **COMMON_VARS,
        "launcher_type": launcher,
        "launcher_script": "train.py",
        "launcher_nproc_per_node": 1,
        "launcher_job_id": job,
        "launcher_timeout": 900,
    }
    step = run_playbook(f"n{nodes}-launch-{launcher}", LAUNCH, extra, sampler=sampler)
    summary = read_summary(job)
    return {
        "step": asdict(step),
        "job_id": job,
        "status": summary.get("status"),
        "launch_latency_s": (summary.get("phases") or {}).get("launch"),
        "train_s": (summary.get("phases") or {}).get("train"),
        "world_size": summary.get("world_size"),
        "failure_reasons": summary.get("failure_reasons", []),
    }


def read_summary(job: str) -> dict[str, Any]:
    path = ROOT / "runs" / job / "summary.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


@contextlib.contextmanager
def runs_latest_kept() -> Iterator[None]:
    """launch.yml points runs/latest at its run; put back whatever it pointed at before."""
    latest = ROOT / "runs" / "latest"
    before = os.readlink(latest) if latest.is_symlink() else None
    try:
        yield
    finally:
        if before is not None and latest.is_symlink() and os.readlink(latest) != before:
            latest.unlink()
            latest.symlink_to(before)


def torchrun_fits(nodes: int, per_node_mib: float, reserve_mib: int) -> tuple[bool, str]:
    need = nodes * per_node_mib
    available = mem_available_mib() - reserve_mib
    if need <= available:
        return True, ""
    return False, (
        f"skipped: {nodes} torchrun agents need ~{need / 1024:.1f} GiB ({per_node_mib:.0f} MiB per node), "
        f"{max(available, 0) / 1024:.1f} GiB available after keeping {reserve_mib / 1024:.0f} GiB free"
    )


def tuning_variants(nodes: int) -> list[tuple[str, str, dict[str, str]]]:
    """(key, description, environment) of each re-provisioning variant."""
    return [
        ("baseline", "ansible.cfg as is: forks 10, pipelining on, linear strategy, no fact cache", {}),
        ("forks_n", f"forks = N ({nodes})", {"ANSIBLE_FORKS": str(nodes)}),
        ("no_pipelining", "pipelining off", {"ANSIBLE_PIPELINING": "False"}),
        ("strategy_free", "strategy free", {"ANSIBLE_STRATEGY": "free"}),
        ("fact_cache", "jsonfile fact cache, warm (the cluster role skips setup when facts are cached)", {}),
    ]


def measure_tuning(nodes: int, repeats: int) -> dict[str, Any]:
    """Every variant `repeats` times, round-robin (a load change on the machine hits all of them alike).

    The fact cache is filled once, before the first round, by one more run of its own.
    """
    variants = tuning_variants(nodes)
    runs: dict[str, list[Step]] = {key: [] for key, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="scale-facts-") as cache:
        cache_env = {
            "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile",
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": cache,
            "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "86400",
        }
        fill = measure_provision(f"n{nodes}-tuning-fact_cache_fill", env=cache_env)
        for round_number in range(1, repeats + 1):
            for key, _, env in variants:
                if runs[key] and not runs[key][-1].ok:
                    continue  # a variant that failed once is not tried again
                step_env = cache_env if key == "fact_cache" else env
                runs[key].append(measure_provision(f"n{nodes}-tuning-{key}-{round_number}", env=step_env))
    results = {key: summarize_runs(description, runs[key]) for key, description, _ in variants}
    results["fact_cache_fill"] = summarize_runs("jsonfile fact cache, cold (the run that fills it)", [fill])
    return results


def summarize_runs(description: str, steps: list[Step]) -> dict[str, Any]:
    """Median wall and CPU of a variant's runs, with every run kept."""
    ok = [step for step in steps if step.ok]
    return {
        "description": description,
        "ok": len(ok) == len(steps),
        "wall_s": round(float(statistics.median(step.wall_s for step in ok)), 2) if ok else None,
        "cpu_s": round(float(statistics.median(step.cpu_s for step in ok)), 2) if ok else None,
        "walls_s": [step.wall_s for step in steps],
        "changed": max((step.changed for step in steps), default=0),
        "error": next((step.error for step in steps if not step.ok), ""),
        "steps": [asdict(step) for step in steps],
    }


def bench_size(
    nodes: int, options: argparse.Namespace, largest: bool, memory_per_node: dict[str, float]
) -> dict[str, Any]:
    record: dict[str, Any] = {"nodes": nodes, "ok": False, "error": None, "launches": {}}
    started = time.monotonic()
    print(f"== {nodes} nodes", flush=True)
    try:
        with sim_cluster(f"n{nodes}", nodes, volume_mounts(read_only=True), record):
            sampler = MemorySampler(container_ids(nodes))
            run_size_steps(nodes, options, largest, memory_per_node, record, sampler)
        record["ok"] = record["error"] is None
    except BenchError as error:
        record["error"] = str(error)
    record["total_s"] = round(time.monotonic() - started, 1)
    return record


def require(step: Step, what: str) -> Step:
    if not step.ok:
        raise BenchError(f"{what} failed: {step.error or f'rc {step.rc}'}")
    return step


def run_size_steps(
    nodes: int,
    options: argparse.Namespace,
    largest: bool,
    memory_per_node: dict[str, float],
    record: dict[str, Any],
    sampler: MemorySampler,
) -> None:
    record["preflight_alone"] = asdict(require(measure_preflight(nodes), "preflight"))
    first = require(measure_provision(f"n{nodes}-provision-first", sampler), "first provisioning")
    record["provision_first"] = asdict(first)
    record["preflight_s"] = first.plays.get(PREFLIGHT_PLAY)
    record["disk"] = node_disk_mib(nodes)
    again = measure_provision(f"n{nodes}-provision-again", sampler)
    record["provision_again"] = asdict(require(again, "re-provisioning"))
    if again.changed:
        record["error"] = f"re-provisioning changed {again.changed} tasks (expected 0)"
    with runs_latest_kept():
        for launcher in options.launchers:
            record["launches"][launcher] = launch_or_skip(launcher, nodes, options, memory_per_node, sampler)
    if largest and options.tuning:
        record["tuning"] = measure_tuning(nodes, options.repeats)


def launch_or_skip(
    launcher: str,
    nodes: int,
    options: argparse.Namespace,
    memory_per_node: dict[str, float],
    sampler: MemorySampler,
) -> dict[str, Any]:
    if launcher == "torchrun":
        fits, reason = torchrun_fits(
            nodes, memory_per_node.get(launcher, options.torchrun_mib_per_node), options.reserve_mib
        )
        if not fits:
            print(f"  torchrun at {nodes} nodes {reason}", flush=True)
            return {"skipped": reason}
    launch = measure_launch(launcher, nodes, sampler)
    memory = launch["step"].get("memory") or {}
    if memory.get("peak_node_mib"):
        # The next, larger size is judged by what a node really used here (with 25 % headroom).
        memory_per_node[launcher] = max(memory_per_node.get(launcher, 0.0), memory["peak_node_mib"] * 1.25)
    if launch["status"] != "succeeded":
        raise BenchError(
            f"{launcher} launch: {launch['status']}: {'; '.join(launch['failure_reasons']) or launch['step']['error']}"
        )
    return launch


# ---------------------------------------------------------------------------------------------
# Warm-up: build the shared volumes once


def warm_up(options: argparse.Namespace) -> dict[str, Any]:
    """Provision a 1-node cluster whose venv and oneapi prefix are the shared volumes (read-write)."""
    record: dict[str, Any] = {}
    if options.reuse_volumes and all(volume_exists(name) for name in VOLUMES):
        print("== warm-up skipped: reusing the existing volumes", flush=True)
        record["skipped"] = True
    else:
        print("== warm-up: building the shared volumes on a 1-node cluster (not measured)", flush=True)
        create_volumes()
        with sim_cluster("warmup", 1, volume_mounts(read_only=False), record):
            record["provision"] = asdict(require(measure_provision("warmup-provision"), "warm-up provisioning"))
    record["volumes"] = volume_sizes()
    return record


# ---------------------------------------------------------------------------------------------
# Cost model: t = a + b*N


MEASURES: list[tuple[str, str]] = [
    ("preflight_s", "preflight (play) s"),
    ("preflight_cpu_s", "preflight alone, controller CPU s"),
    ("provision_first_s", "first provisioning s"),
    ("provision_first_cpu_s", "first provisioning, controller CPU s"),
    ("provision_again_s", "re-provisioning s"),
    ("provision_again_cpu_s", "re-provisioning, controller CPU s"),
    ("mpiexec_launch_s", "mpiexec launch latency s"),
    ("mpiexec_launch_yml_s", "mpiexec launch.yml s"),
    ("mpiexec_launch_yml_cpu_s", "mpiexec launch.yml, controller CPU s"),
    ("torchrun_launch_s", "torchrun launch latency s"),
    ("torchrun_launch_yml_s", "torchrun launch.yml s"),
    ("torchrun_launch_yml_cpu_s", "torchrun launch.yml, controller CPU s"),
]


def point(size: dict[str, Any]) -> dict[str, float | None]:
    """The measures of one size, flat (None where a step did not run)."""
    values: dict[str, float | None] = {
        "preflight_s": size.get("preflight_s"),
        "preflight_cpu_s": (size.get("preflight_alone") or {}).get("cpu_s"),
        "provision_first_s": (size.get("provision_first") or {}).get("wall_s"),
        "provision_first_cpu_s": (size.get("provision_first") or {}).get("cpu_s"),
        "provision_again_s": (size.get("provision_again") or {}).get("wall_s"),
        "provision_again_cpu_s": (size.get("provision_again") or {}).get("cpu_s"),
    }
    for launcher in LAUNCHERS:
        launch = size.get("launches", {}).get(launcher) or {}
        step = launch.get("step") or {}
        ok = launch.get("status") == "succeeded"
        values[f"{launcher}_launch_s"] = launch.get("launch_latency_s") if ok else None
        values[f"{launcher}_launch_yml_s"] = step.get("wall_s") if ok else None
        values[f"{launcher}_launch_yml_cpu_s"] = step.get("cpu_s") if ok else None
    return values


def fit(points: list[tuple[int, float]]) -> dict[str, Any] | None:
    """Least squares t = a + b*N (statistics.linear_regression); None with fewer than two sizes."""
    if len({nodes for nodes, _ in points}) < 2:
        return None
    xs, ys = [float(nodes) for nodes, _ in points], [value for _, value in points]
    slope, intercept = statistics.linear_regression(xs, ys)
    r2 = statistics.correlation(xs, ys) ** 2 if len(set(ys)) > 1 else 1.0
    return {
        "a": round(intercept, 3),
        "b": round(slope, 4),
        "r2": round(r2, 3),
        "points": len(points),
        "at_1000": round(intercept + slope * EXTRAPOLATE_TO, 1),
    }


def cost_models(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    models: dict[str, Any] = {}
    for key, _ in MEASURES:
        points = [(size["nodes"], value) for size in sizes if (value := point(size)[key]) is not None]
        models[key] = fit(points)
    return models


# ---------------------------------------------------------------------------------------------
# Output: JSON, table, markdown


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def points_table(sizes: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| nodes | preflight s | first provisioning s (CPU s) | re-provisioning s (CPU s) | changed | "
        "mpiexec launch s (launch.yml s, CPU s) | torchrun launch s (launch.yml s, CPU s) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        values = point(size)
        launches = [launch_cell(size, launcher, values) for launcher in LAUNCHERS]
        again = size.get("provision_again") or {}
        rows.append(
            f"| {size['nodes']} | {fmt(values['preflight_s'])} | {fmt(values['provision_first_s'])} "
            f"({fmt(values['provision_first_cpu_s'])}) | {fmt(values['provision_again_s'])} "
            f"({fmt(values['provision_again_cpu_s'])}) | {fmt(again.get('changed'))} | {launches[0]} | {launches[1]} |"
        )
    return rows


def launch_cell(size: dict[str, Any], launcher: str, values: dict[str, float | None]) -> str:
    launch = size.get("launches", {}).get(launcher)
    if launch is None:
        return "not run"
    if "skipped" in launch:
        return "skipped (memory)"
    if values[f"{launcher}_launch_s"] is None:
        return f"failed ({launch.get('status')})"
    return (
        f"{fmt(values[f'{launcher}_launch_s'], 2)} ({fmt(values[f'{launcher}_launch_yml_s'])}, "
        f"{fmt(values[f'{launcher}_launch_yml_cpu_s'])})"
    )


def models_table(models: dict[str, Any]) -> list[str]:
    rows = ["| measure | a (s) | b (s per node) | R² | sizes | at 1,000 nodes (s) |", "|---|---:|---:|---:|---:|---:|"]
    for key, title in MEASURES:
        model = models.get(key)
        if model is None:
            rows.append(f"| {title} | – | – | – | – | needs two sizes |")
            continue
        hours = f" (~{model['at_1000'] / 3600:.1f} h)" if model["at_1000"] >= 3600 else ""
        rows.append(
            f"| {title} | {model['a']:.2f} | {model['b']:.3f} | {model['r2']:.2f} | {model['points']} | "
            f"{model['at_1000']:,.0f}{hours} |"
        )
    return rows


def relative(value: float | None, baseline: float | None) -> str:
    return f"{(value / baseline - 1) * 100:+.0f} %" if value and baseline else "–"


def tuning_table(tuning: dict[str, Any]) -> list[str]:
    baseline = tuning.get("baseline") or {}
    rows = [
        "| re-provisioning with | wall s (median) | runs s | vs ansible.cfg | controller CPU s (median) | "
        "vs ansible.cfg | changed | ok |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for variant in tuning.values():
        runs = ", ".join(f"{wall:.0f}" for wall in variant["walls_s"])
        rows.append(
            f"| {variant['description']} | {fmt(variant['wall_s'])} | {runs} | "
            f"{relative(variant['wall_s'], baseline.get('wall_s'))} | {fmt(variant['cpu_s'])} | "
            f"{relative(variant['cpu_s'], baseline.get('cpu_s'))} | {variant['changed']} | "
            f"{'yes' if variant['ok'] else 'no (below)'} |"
        )
    return rows


def tuning_findings(size: dict[str, Any]) -> list[str]:
    """Plain sentences from the tuning block: the run-to-run noise, then what each setting did."""
    tuning = size["tuning"]
    baseline = tuning.get("baseline") or {}
    same = [
        wall
        for wall in [
            (size.get("provision_again") or {}).get("wall_s"),
            *baseline.get("walls_s", []),
            *(tuning.get("fact_cache_fill") or {}).get("walls_s", []),
        ]
        if wall
    ]
    lines = []
    if len(same) > 1:
        lines.append(
            f"- The same re-provisioning (ansible.cfg as is) ran {len(same)} times: {min(same):.0f} to "
            f"{max(same):.0f} s ({(max(same) / min(same) - 1) * 100:.0f} % apart); wall differences of that "
            "order are the machine's load, not the setting. Controller CPU varies less."
        )
    for key, variant in tuning.items():
        if key in ("baseline", "fact_cache_fill"):
            continue
        if not variant["ok"]:
            lines.append(f"- {variant['description']}: fails, {variant['error'][:300]}")
        elif baseline.get("ok"):
            lines.append(
                f"- {variant['description']}: wall {relative(variant['wall_s'], baseline['wall_s'])}, "
                f"controller CPU {relative(variant['cpu_s'], baseline['cpu_s'])} (medians)."
            )
    return lines


def run_time_text(results: dict[str, Any]) -> str:
    warmup = results.get("warmup") or {}
    parts = ["warm-up " + ("skipped" if warmup.get("skipped") else f"{warmup_seconds(warmup):.0f} s")]
    parts += [f"{size['nodes']} nodes {size.get('total_s', 0):.0f} s" for size in results["sizes"]]
    total = results.get("total_s")
    return "the run above took " + (f"{total / 60:.0f} min: " if total else "") + ", ".join(parts)


def warmup_seconds(warmup: dict[str, Any]) -> float:
    return (
        float(warmup.get("bring_up_s", 0))
        + float((warmup.get("provision") or {}).get("wall_s", 0))
        + float(warmup.get("teardown_s", 0))
    )


def resources_lines(results: dict[str, Any]) -> list[str]:
    lines = []
    for name, volume in (results.get("warmup") or {}).get("volumes", {}).items():
        lines.append(
            f"- shared volume `{name}` at `{volume['target']}` (read-only on every node): {fmt(volume['mib'])} MiB"
        )
    for size in results["sizes"]:
        disk = size.get("disk") or {}
        memory = {
            launcher: ((size["launches"].get(launcher) or {}).get("step") or {}).get("memory") or {}
            for launcher in LAUNCHERS
        }
        provision_memory = (size.get("provision_first") or {}).get("memory") or {}
        parts = [
            f"{size['nodes']} nodes: each node's own disk after provisioning ≤ {fmt(disk.get('max_node_mib'))} MiB"
        ]
        parts.append(f"peak anonymous memory per node: provisioning {fmt(provision_memory.get('peak_node_mib'))} MiB")
        parts += [
            f"{launcher} {fmt(memory[launcher].get('peak_node_mib'))} MiB "
            f"(all nodes {fmt(memory[launcher].get('peak_total_mib'))} MiB)"
            for launcher in LAUNCHERS
        ]
        lines.append("- " + "; ".join(parts))
    return lines


def slowest_lines(size: dict[str, Any]) -> list[str]:
    lines = []
    for key, title in (("provision_first", "first provisioning"), ("provision_again", "re-provisioning")):
        tasks = (size.get(key) or {}).get("slowest_tasks") or []
        if tasks:
            listed = "; ".join(f"{name} {seconds:.1f} s" for name, seconds in tasks[:5])
            lines.append(f"- {title} at {size['nodes']} nodes: {listed}")
    return lines


def skipped_lines(sizes: list[dict[str, Any]]) -> list[str]:
    lines = []
    for size in sizes:
        if size.get("error"):
            lines.append(f"- {size['nodes']} nodes: {size['error']}")
        for launcher, launch in size.get("launches", {}).items():
            if "skipped" in launch:
                lines.append(f"- {size['nodes']} nodes, {launcher}: {launch['skipped']}")
    return lines


def markdown(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    largest = max((size for size in sizes if size.get("tuning")), key=lambda size: size["nodes"], default=None)
    host = results["host"]
    out = [
        "### Scale benchmark (simulated nodes)",
        "",
        f"`benchmarks/scale_bench.py` against simulated clusters of bare node containers on one machine "
        f"({host['cpus']} cores, {host['mem_gib']} GiB; the nodes and the controller share it), host mode "
        f"(`cluster_runtime=host`), ansible-core {results['ansible_core']}, `ansible.cfg` as shipped (forks "
        f"{results['settings']['forks']}, pipelining, SSH ControlPersist). Each step starts with cold SSH connections. "
        "The nodes mount one prebuilt virtualenv (torch) and oneapi pip prefix read-only, so the provisioning "
        "below is everything except installing those (apt, users, SSH mesh, code, sshd, the oneAPI and "
        "torch import checks). Generated from `benchmarks/results/scale_bench.json` "
        f"({results['generated']}).",
        "",
        "Launch latency is `phases.launch` of the run's `summary.json` (launch script start until every rank "
        "started; one rank per node, a script that only joins); CPU is the controller's user+sys seconds of the "
        "whole ansible-playbook process tree, SSH included (the JSON also has each step's per-play seconds, "
        "slowest tasks and the machine's load average when it started).",
        "",
        *points_table(sizes),
        "",
        f"Least-squares fit t = a + b·N per measure and its extrapolation to {EXTRAPOLATE_TO:,} nodes (linear in N "
        f"holds once N is well past forks; the simulated nodes compete for the same {host['cpus']} cores as the "
        "controller, so b is pessimistic for real nodes and optimistic for a controller serving 1,000 of them):",
        "",
        *models_table(results["models"]),
        "",
    ]
    if largest is not None:
        out += [
            f"Ansible settings, re-provisioning {largest['nodes']} nodes (changes nothing, so it is pure Ansible overhead):",
            "",
            *tuning_table(largest["tuning"]),
            "",
            *tuning_findings(largest),
            "",
        ]
    out += ["Per node resources:", "", *resources_lines(results), ""]
    slow = [line for size in sizes[-1:] for line in slowest_lines(size)]
    if slow:
        out += ["Slowest tasks (wall seconds over all nodes):", "", *slow, ""]
    notes = skipped_lines(sizes)
    if notes:
        out += ["Skipped or failed:", "", *notes, ""]
    out += [
        "Run it (it removes everything it created, also when interrupted; " + run_time_text(results) + "):",
        "",
        "    .venv/bin/python benchmarks/scale_bench.py --sizes 4 8 16 32",
        "    .venv/bin/python benchmarks/scale_bench.py --report-only   # this section again from the JSON",
        "",
    ]
    return "\n".join(out)


def print_table(results: dict[str, Any]) -> None:
    print()
    print("\n".join(points_table(results["sizes"])))
    print()
    print("\n".join(models_table(results["models"])))
    for size in results["sizes"]:
        if size.get("tuning"):
            print()
            print("\n".join(tuning_table(size["tuning"])))
    for line in skipped_lines(results["sizes"]):
        print(line)


def host_info() -> dict[str, Any]:
    mem_kib = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:")
    )
    return {"cpus": os.cpu_count(), "mem_gib": round(mem_kib / 2**20, 1)}


def ansible_core_version() -> str:
    from ansible.release import __version__

    return str(__version__)


def ansible_cfg_forks() -> int:
    import configparser

    parser = configparser.ConfigParser()
    parser.read(ROOT / "ansible.cfg")
    return parser.getint("defaults", "forks", fallback=5)


def write_results(results: dict[str, Any]) -> None:
    results["models"] = cost_models(results["sizes"])
    playbook_runs.write_results(results, RESULTS_JSON, RESULTS_MD, markdown(results))


# ---------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32], help="cluster sizes (nodes)")
    parser.add_argument("--launchers", nargs="+", choices=LAUNCHERS, default=list(LAUNCHERS))
    parser.add_argument(
        "--no-tuning",
        dest="tuning",
        action="store_false",
        help="skip the forks/pipelining/strategy/fact-cache re-provisionings at the largest size",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=2,
        help="runs of each tuning variant, round-robin; medians are reported (default 2)",
    )
    parser.add_argument(
        "--reuse-volumes",
        action="store_true",
        help="skip the warm-up when the scale-* volumes exist (they must match the wheelhouse)",
    )
    parser.add_argument("--keep-volumes", action="store_true", help="keep the scale-* volumes for a later run")
    parser.add_argument(
        "--reserve-mib",
        type=int,
        default=4096,
        help="memory to leave free when judging whether torchrun fits (default 4096)",
    )
    parser.add_argument(
        "--torchrun-mib-per-node",
        type=float,
        default=600.0,
        help="a node's torchrun memory before one was measured (default 600)",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the .md (and models) from the JSON, run nothing"
    )
    options = parser.parse_args()
    if any(size < 1 or size > 200 for size in options.sizes):
        parser.error("sizes must be 1..200 (one /24 network)")
    options.sizes = sorted(set(options.sizes))
    return options


def stop_on_sigterm() -> None:
    """SIGTERM ends the run like Ctrl-C: the clusters are torn down and the results written."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def check_prerequisites() -> None:
    if not (VENV_BIN / "ansible-playbook").exists():
        raise SystemExit(f"{VENV_BIN}/ansible-playbook is missing: make venv")
    if not docker("image", "ls", "-q", "multinode/sim-node:bookworm"):
        raise SystemExit("image multinode/sim-node:bookworm is missing: make images")


def main() -> None:
    options = parse_args()
    if options.report_only:
        results = json.loads(RESULTS_JSON.read_text())
        write_results(results)
        print_table(results)
        return
    check_prerequisites()
    become_subreaper()
    stop_on_sigterm()
    results: dict[str, Any] = {
        "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": host_info(),
        "ansible_core": ansible_core_version(),
        "settings": {
            "sizes": options.sizes,
            "launchers": options.launchers,
            "cluster": CLUSTER,
            "network": f"{NETWORK}.0/24",
            "forks": ansible_cfg_forks(),
            "volumes": VOLUMES,
        },
        "sizes": [],
    }
    if leftovers():
        print("== removing what an earlier run left behind", flush=True)
        tear_down("leftover", max(options.sizes))
    started = time.monotonic()
    memory_per_node: dict[str, float] = {}
    try:
        try:
            results["warmup"] = warm_up(options)
        except BenchError as error:
            results["warmup"] = {"error": str(error)}
            raise SystemExit(f"warm-up failed: {error}") from error
        for nodes in options.sizes:
            results["sizes"].append(bench_size(nodes, options, nodes == options.sizes[-1], memory_per_node))
            write_results(results)
    finally:
        if not options.keep_volumes:
            remove_volumes()
        shutil.rmtree(STATE_DIR, ignore_errors=True)
        results["total_s"] = round(time.monotonic() - started, 1)
        write_results(results)
    print_table(results)
    print(f"\nwrote {RESULTS_JSON.relative_to(ROOT)} and {RESULTS_MD.relative_to(ROOT)} ({results['total_s']:.0f} s)")


if __name__ == "__main__":
    main()
