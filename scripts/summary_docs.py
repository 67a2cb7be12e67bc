#!/usr/bin/env python3
"""Write (or, with --check, compare) the README's table of summary.json's keys from the run schema.

plugins/module_utils/run_schema.py is the source of truth: every key, whether every run writes it or only a run
over SSH, and what it means. The table sits between the markers below.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "collections"))

# pylint: disable-next=wrong-import-position
from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_SCHEMA  # noqa: E402

README = ROOT / "README.md"
BEGIN, END = "<!-- BEGIN SUMMARY KEYS (scripts/summary_docs.py) -->", "<!-- END SUMMARY KEYS -->"


def key_table() -> str:
    """The keys as a Markdown table: every run's first, in the schema's order."""
    required = set(SUMMARY_SCHEMA["required"])
    rows = ["| key | written by | what it holds |", "|---|---|---|"]
    for name, spec in SUMMARY_SCHEMA["properties"].items():
        who = "every run" if name in required else "a run over SSH"
        rows.append(f"| `{name}` | {who} | {spec['description']} |")
    return "\n".join(rows) + "\n"


def updated_readme(readme: str) -> str:
    """``readme`` with the table between the markers replaced by the current one."""
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    return readme[:start] + "\n" + key_table() + readme[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when the README's table is not up to date")
    args = parser.parse_args()
    readme = README.read_text()
    wanted = updated_readme(readme)
    if wanted == readme:
        return 0
    if args.check:
        print("README.md: the summary.json key table is out of date (run scripts/summary_docs.py)", file=sys.stderr)
        return 1
    README.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
