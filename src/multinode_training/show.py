"""What the command line prints of runs: one run's results (``show``) and the table of runs (``list``)."""

from __future__ import annotations

import datetime
import io
from typing import Any

from multinode_training.api import FOLLOWING_FILE
from multinode_training.jobs import Job, read_job_file

LIST_COLUMNS = ("run", "status", "launcher", "world", "submitted", "took")


def describe(job: Job) -> str:
    """Where a run's results are and how it went, from its summary.json (its state until it has one)."""
    summary = job.summary
    if summary is None:
        record = read_job_file(job.run_dir) or {}
        status = job.status()
        lines = [f"run {job.id}: {status}", f"  directory:        {job.run_dir}"]
        if status in ("lost", "cancelled") and (job.run_dir / FOLLOWING_FILE).exists():
            lines.append(f"  nobody follows it: `multinode-training attach {job.run_dir}` collects it")
        return "\n".join(lines + [f"  failure: {reason}" for reason in record.get("failures") or []])
    phases = ", ".join(
        f"{name} {'n/a' if seconds is None else f'{seconds}s'}" for name, seconds in summary["phases"].items()
    )
    lines = [
        f"run {summary['job_id']}: {summary['status']}",
        f"  results:          {job.run_dir}",
        f"  launcher:         {summary['launcher']} on {len(summary['nodes'])} nodes, world size {summary['world_size']}",
        f"  rank exit codes:  {summary['rank_exit_codes']}",
        f"  test accuracy:    {summary['test_accuracy']}",
        f"  outputs:          {', '.join(summary.get('outputs', [])) or 'none'}",
        f"  resumed from:     {summary.get('resumed_from') or 'nothing (a fresh start)'}",
        f"  restarts:         {len(summary.get('restarts') or [])}",
        f"  phases:           {phases}",
        f"  provision:        {summary['provision_changed']} changed tasks",
    ]
    lines += node_lines(summary.get("settings", {}))
    lines += [f"  failure: {reason}" for reason in summary["failure_reasons"]]
    if summary.get("root_cause_error"):
        lines.append(f"  its error: {summary['root_cause_error']}")
    return "\n".join(lines)


def node_lines(settings: dict[str, Any]) -> list[str]:
    """One line per node: interface, ranks, OpenMP threads and where they came from (topology or user)."""
    if "tuning" not in settings:
        return []
    lines = [
        f"  runtime:          {settings.get('runtime', 'container')}, {settings['hostfile_dialect']} hostfile,"
        f" backend {settings['backend']}"
    ]
    for node, tuning in settings["tuning"].items():
        topology = settings["topology"][node]
        lines.append(
            f"  {node + ':':<17} {settings['interfaces'][node]}, {tuning['slots']} rank(s) x"
            f" {tuning['omp_num_threads']} OpenMP threads ({tuning['source']['omp_num_threads']};"
            f" {topology['sockets']} socket(s), {topology['numa_nodes']} NUMA node(s),"
            f" {topology['physical_cores']} physical cores{shared_kernel(tuning)})"
        )
    return lines


def shared_kernel(tuning: dict[str, Any]) -> str:
    """What the node's threads were split with: the other nodes on its kernel (a run before them says nothing)."""
    nodes = int(tuning.get("nodes_on_kernel") or 1)
    return f" shared by {nodes} nodes on one kernel" if nodes > 1 else ""


def run_row(job: Job) -> tuple[str, ...]:
    """One run's row of the ``list`` table (LIST_COLUMNS)."""
    summary = job.summary or {}
    record = read_job_file(job.run_dir) or {}
    submitted = record.get("submitted_at") or job.run_dir.stat().st_mtime
    when = datetime.datetime.fromtimestamp(float(submitted)).strftime("%Y-%m-%d %H:%M:%S")
    took = sum(float(seconds or 0) for seconds in (summary.get("phases") or {}).values())
    launcher = summary.get("launcher") or (record.get("extravars") or {}).get("launcher_type", "")
    return (
        job.id,
        job.status(),
        str(launcher),
        str(summary.get("world_size") or ""),
        when,
        f"{took:.0f} s" if took else "",
    )


def runs_table(jobs: list[Job], terminal: bool) -> str:
    """The runs as a table: drawn with rich on a terminal, plain tab-separated text otherwise."""
    rows = [run_row(job) for job in jobs]
    if not terminal:
        return "\n".join("\t".join(row) for row in [LIST_COLUMNS, *rows])
    from rich.console import Console  # noqa: PLC0415 (only on a terminal)
    from rich.table import Table  # noqa: PLC0415

    table = Table(*LIST_COLUMNS)
    for row in rows:
        table.add_row(*row)
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    console.print(table)
    return console.file.getvalue().rstrip("\n")
