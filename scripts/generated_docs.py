#!/usr/bin/env python3
"""Write (or, with --check, compare) the docs' tables that are generated from the code's single definitions.

- docs/RUNS.md: summary.json's keys, from the run schema (plugins/module_utils/run_schema.py);
- docs/ARCHITECTURE.md: the launchers, from the launcher registry (REGISTRY in plugins/module_utils/launch.py).

Each table sits between its markers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY  # noqa: E402
from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_SCHEMA  # noqa: E402


def summary_keys() -> str:
    """summary.json's keys as a Markdown table: every run's first, in the schema's order."""
    required = set(SUMMARY_SCHEMA["required"])
    rows = ["| key | written by | what it holds |", "|---|---|---|"]
    for name, spec in SUMMARY_SCHEMA["properties"].items():
        who = "every run" if name in required else "a run over SSH"
        rows.append(f"| `{name}` | {who} | {spec['description']} |")
    return "\n".join(rows) + "\n"


def launchers() -> str:
    """The launcher registry as a Markdown table, one declaration a row."""
    rows = [
        "| launcher | what it does | hostfile | rank variables it sets | runs | Kubernetes | image |",
        "|---|---|---|---|---|---|---|",
    ]
    for launcher in REGISTRY.values():
        runs = " and ".join(launcher.runtimes)
        if launcher.scheduler != "none":
            runs += f", under {launcher.scheduler}"
        if launcher.node_agent:
            runs += f"; a {launcher.node_agent} per node"
        if launcher.one_rank_per_node:
            runs += "; one rank per node"
        if launcher.shell_joined:
            runs += "; the words through a shell"
        kinds = ", ".join(launcher.kubernetes_kinds) or "-"
        image = f"`images/{launcher.image}`" if launcher.image else "- (the hosts)"
        variables = ", ".join(f"`{name}`" for name in launcher.rank_variables)
        rows.append(f"| `{launcher.name}` | {launcher.summary} | {launcher.hostfile_dialect} | {variables} | {runs} | {kinds} | {image} |")
    return "\n".join(rows) + "\n"


TABLES: dict[str, tuple[Path, Callable[[], str]]] = {
    "SUMMARY KEYS": (ROOT / "docs" / "RUNS.md", summary_keys),
    "LAUNCHERS": (ROOT / "docs" / "ARCHITECTURE.md", launchers),
}


def updated(text: str, marker: str, table: str) -> str:
    """``text`` with the table between the marker's BEGIN and END replaced by ``table``."""
    begin, end = f"<!-- BEGIN {marker} (scripts/generated_docs.py) -->", f"<!-- END {marker} -->"
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + table + text[stop:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when a table is not up to date")
    args = parser.parse_args()
    stale = []
    for marker, (path, render) in TABLES.items():
        text = path.read_text()
        wanted = updated(text, marker, render())
        if wanted != text:
            stale.append(f"{path.relative_to(ROOT)} ({marker.lower()})")
            if not args.check:
                path.write_text(wanted)
    if stale and args.check:
        print("generated tables out of date (run scripts/generated_docs.py):", ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
