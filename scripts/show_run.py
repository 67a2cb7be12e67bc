#!/usr/bin/env python3
"""Print where a run's results are and how it went, from its summary.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def describe(run_dir: Path) -> str:
    summary = json.loads((run_dir / "summary.json").read_text())
    phases = ", ".join(
        f"{name} {'n/a' if seconds is None else f'{seconds}s'}" for name, seconds in summary["phases"].items()
    )
    lines = [
        f"run {summary['job_id']}: {summary['status']}",
        f"  results:          {run_dir.resolve()}",
        f"  launcher:         {summary['launcher']} on {len(summary['nodes'])} nodes, world size {summary['world_size']}",
        f"  rank exit codes:  {summary['rank_exit_codes']}",
        f"  test accuracy:    {summary['test_accuracy']}",
        f"  outputs:          {', '.join(summary.get('outputs', [])) or 'none'}",
        f"  resumed from:     {summary.get('resumed_from') or 'nothing (a fresh start)'}",
        f"  phases:           {phases}",
        f"  provision:        {summary['provision_changed']} changed tasks",
    ]
    lines += _node_lines(summary.get("settings", {}))
    lines += [f"  failure: {reason}" for reason in summary["failure_reasons"]]
    return "\n".join(lines)


def _node_lines(settings: dict) -> list[str]:
    """One line per node: interface, ranks, OpenMP threads and where they came from (topology or user)."""
    if "tuning" not in settings:
        return []
    lines = [f"  runtime:          {settings.get('runtime', 'container')}, {settings['hostfile_dialect']} hostfile,"
             f" backend {settings['backend']}"]
    for node, tuning in settings["tuning"].items():
        topology = settings["topology"][node]
        lines.append(
            f"  {node + ':':<17} {settings['interfaces'][node]}, {tuning['slots']} rank(s) x"
            f" {tuning['omp_num_threads']} OpenMP threads ({tuning['source']['omp_num_threads']};"
            f" {topology['sockets']} socket(s), {topology['numa_nodes']} NUMA node(s),"
            f" {topology['physical_cores']} physical cores)"
        )
    return lines


def main() -> int:
    run_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/latest")
    if not (run_dir / "summary.json").is_file():
        print(f"no summary.json in {run_dir}", file=sys.stderr)
        return 1
    print(describe(run_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
