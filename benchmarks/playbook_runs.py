#!/usr/bin/env python3
"""Running ansible-playbook for the benchmarks and measuring it: wall seconds, the controller's CPU seconds of the
whole process tree (SSH ControlMasters included), per-play and per-task seconds from the ansible.posix.json
callback, the recap totals and the first failure."""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
SIM_INVENTORY = ROOT / "inventories" / "sim" / "hosts.yml"
RUNS_DIR = ROOT / "runs"
BENCHMARKS_DOC = ROOT / "docs" / "BENCHMARKS.md"


def result_files(name: str) -> tuple[Path, Path, Path]:
    """A benchmark's results (JSON), its section for docs/BENCHMARKS.md (markdown) and its log directory."""
    return RESULTS_DIR / f"{name}.json", RESULTS_DIR / f"{name}.md", RESULTS_DIR / f"{name}_logs"
VENV_BIN = ROOT / ".venv" / "bin"
STEP_TIMEOUT_S = 3600
PR_SET_CHILD_SUBREAPER = 36


class Sampler(Protocol):
    """Something measured while a step runs (a context manager) that reports its peaks afterwards."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> Any: ...

    def peaks(self) -> dict[str, float] | None: ...


@dataclass
class Step:
    """One ansible-playbook run: wall and controller CPU seconds, per-play seconds, recap."""

    name: str
    ok: bool
    rc: int
    wall_s: float
    cpu_s: float
    plays: dict[str, float] = field(default_factory=dict)
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    slowest_tasks: list[tuple[str, float]] = field(default_factory=list)
    task_seconds: list[tuple[str, float]] = field(default_factory=list)  # every task, slowest first
    node_task_runs: int = 0  # task executions on a node: not skipped, not delegated, not controller-only
    error: str = ""
    memory: dict[str, float] | None = None
    load_before: float = 0.0  # the machine's 1-minute load average when the step started


def become_subreaper() -> None:
    """Adopt orphaned descendants (daemonized ssh ControlMasters), so their CPU reaches RUSAGE_CHILDREN."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans(timeout_s: float = 10.0) -> None:
    """Wait for adopted descendants that are exiting; leave any still running after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


def close_ssh_masters(control_dir: Path) -> None:
    """End the step's persistent SSH connections (ansible.cfg: ControlPersist=60s) and reap them."""
    for socket_path in sorted(control_dir.glob("*")):
        subprocess.run(
            ["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", "scale-node"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )
    reap_orphans()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ansible_env(control_dir: Path, overrides: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        PATH=f"{VENV_BIN}:{env.get('PATH', '')}",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_JSON_INDENT="0",
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(control_dir),
        ANSIBLE_NOCOLOR="1",
    )
    env.update(overrides)
    return env


def playbook_argv(playbook: str, inventory: str, extra_vars: dict[str, Any], args: list[str]) -> list[str]:
    return [str(VENV_BIN / "ansible-playbook"), playbook, "-i", inventory, "-e", json.dumps(extra_vars), *args]


def run_playbook(
    name: str,
    playbook: str,
    extra_vars: dict[str, Any],
    *,
    inventory: str,
    log_dir: Path,
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
    sampler: Sampler | None = None,
) -> Step:
    """Run one playbook from ROOT; wall time, controller CPU and the json callback's report."""
    log = log_dir / name
    log.parent.mkdir(parents=True, exist_ok=True)
    control_dir = Path(tempfile.mkdtemp(prefix="scb-", dir="/tmp"))
    argv = playbook_argv(playbook, inventory, extra_vars, args or [])
    print(f"  {name}: {' '.join(argv[1:2] + argv[3:4])} ...", flush=True)
    reap_orphans(0)
    load_before = os.getloadavg()[0]
    cpu_before = children_cpu()
    started = time.monotonic()
    try:
        with sampler or contextlib.nullcontext(), open(f"{log}.json", "wb") as out, open(f"{log}.stderr", "wb") as err:
            proc = subprocess.run(
                argv,
                cwd=ROOT,
                env=ansible_env(control_dir, env or {}),
                stdout=out,
                stderr=err,
                timeout=STEP_TIMEOUT_S,
                check=False,
            )
        wall = time.monotonic() - started
        close_ssh_masters(control_dir)
        cpu = children_cpu() - cpu_before
    finally:
        shutil.rmtree(control_dir, ignore_errors=True)
    step = parse_report(name, Path(f"{log}.json").read_text(errors="replace"), proc.returncode, wall, cpu)
    if not step.ok and not step.error:
        step.error = tail(Path(f"{log}.stderr").read_text(errors="replace"))
    step.load_before = round(load_before, 2)
    if sampler is not None:
        step.memory = sampler.peaks()
    print(
        f"    {'ok' if step.ok else 'FAILED'} in {wall:.1f} s, controller CPU {cpu:.1f} s, changed {step.changed}"
        + (f": {step.error}" if step.error else ""),
        flush=True,
    )
    return step


def tail(text: str, lines: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def iso_seconds(value: str) -> float:
    return datetime.datetime.fromisoformat(value).timestamp()


def parse_report(name: str, stdout: str, rc: int, wall: float, cpu: float) -> Step:
    """The ansible.posix.json callback's report: play seconds, recap totals, slowest tasks, first failure."""
    report = json_document(stdout)
    step = Step(name=name, ok=rc == 0, rc=rc, wall_s=round(wall, 2), cpu_s=round(cpu, 2))
    if report is None:
        step.ok = False
        return step
    tasks: list[tuple[str, float]] = []
    for play in report.get("plays", []):
        duration = play["play"]["duration"]
        if "end" in duration:
            step.plays[play["play"]["name"]] = round(iso_seconds(duration["end"]) - iso_seconds(duration["start"]), 2)
        for task in play.get("tasks", []):
            task_duration = task["task"]["duration"]
            if "end" in task_duration:
                tasks.append(
                    (task["task"]["name"], iso_seconds(task_duration["end"]) - iso_seconds(task_duration["start"]))
                )
            step.error = step.error or first_failure(task)
            step.node_task_runs += sum(map(ran_on_node, task.get("hosts", {}).values()))
    totals = report.get("stats", {}).values()
    step.changed = sum(host.get("changed", 0) for host in totals)
    step.failed = sum(host.get("failures", 0) for host in totals)
    step.unreachable = sum(host.get("unreachable", 0) for host in totals)
    step.task_seconds = [(task, round(seconds, 2)) for task, seconds in merge_tasks(tasks)]
    step.slowest_tasks = step.task_seconds[:8]
    step.ok = step.ok and step.failed == 0 and step.unreachable == 0
    return step


def json_document(stdout: str) -> dict[str, Any] | None:
    start = stdout.find("{")
    if start < 0:
        return None
    try:
        document, _ = json.JSONDecoder().raw_decode(stdout[start:])
    except json.JSONDecodeError:
        return None
    return document if isinstance(document, dict) else None


def first_failure(task: dict[str, Any]) -> str:
    for host, result in task.get("hosts", {}).items():
        if (result.get("failed") and not result.get("ignore_errors")) or result.get("unreachable"):
            return f"{host}: {task['task']['name']}: {' '.join(str(result.get('msg', '')).split())[:600]}"
    return ""


# Actions the controller does alone: no SSH round trip to the node.
CONTROLLER_ACTIONS = frozenset(
    "ansible.builtin." + action
    for action in ("set_fact", "assert", "debug", "fail", "include_tasks", "import_tasks", "validate_argument_spec", "meta")
) | {"multinode.training.preflight"}


def ran_on_node(result: dict[str, Any]) -> bool:
    action = str(result.get("action", ""))
    short = "ansible.builtin." + action if "." not in action else action
    return not (result.get("skipped") or "_ansible_delegated_vars" in result or short in CONTROLLER_ACTIONS)


def merge_tasks(tasks: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Seconds per task name (a task included in a loop appears several times), slowest first."""
    merged: dict[str, float] = {}
    for task, seconds in tasks:
        merged[task] = merged.get(task, 0.0) + seconds
    return sorted(merged.items(), key=lambda item: -item[1])


def write_results(results: dict[str, Any], json_path: Path, md_path: Path, markdown: str) -> None:
    """Write a benchmark's results (JSON) and its generated section (markdown); embed it in docs/BENCHMARKS.md."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    md_path.write_text(markdown)
    embed_in_readme(md_path)


def embed_in_readme(generated: Path) -> None:
    """Put a generated results file into docs/BENCHMARKS.md between its BEGIN/END markers (a unit test checks them).

    (The name is from when the benchmark sections were in README.md.)
    """
    doc = BENCHMARKS_DOC
    name = str(generated.relative_to(ROOT))
    begin, end = f"<!-- BEGIN {name} -->\n", f"<!-- END {name} -->"
    text = doc.read_text()
    if begin not in text or end not in text:
        return
    before, rest = text.split(begin, 1)
    doc.write_text(before + begin + generated.read_text() + end + rest.split(end, 1)[1])
