#!/usr/bin/env python3
"""Write (or, with --check, compare) the variable table of every role's README from its argument spec.

The table sits between the markers below under the README's "## Variables" heading; the first run
replaces the first table after that heading and adds the markers. meta/argument_specs.yml is the
source of truth; defaults/main.yml gives the default column. An entry point other than main whose options
are not all main's (the launcher's kubernetes) gets a table of its own where the README puts the markers
naming it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

BEGIN, END = "<!-- BEGIN VARIABLES (scripts/role_docs.py) -->", "<!-- END VARIABLES -->"
ENTRY_BEGIN, ENTRY_END = "<!-- BEGIN VARIABLES {entry} (scripts/role_docs.py) -->", "<!-- END VARIABLES {entry} -->"
_MARKUP = re.compile(r"\b(?:C|V|O|M|RV|I|B)\((.*?)\)")
_TABLE = re.compile(r"(## Variables\n(?:(?!\n\|).)*?\n)(\|.*?\n)(?!\|)", re.S)


def _inline(text: str) -> str:
    """Ansible doc markup (C(x), V(x), O(x), ...) as Markdown code spans."""
    return _MARKUP.sub(lambda match: f"`{match.group(1)}`", " ".join(str(text).split()))


def _default(name: str, defaults: dict[str, Any], spec: dict[str, Any]) -> str:
    if name in defaults:
        value = defaults[name]
    elif "default" in spec:
        value = spec["default"]
    else:
        return "(unset)"
    shown = value if isinstance(value, str) and value else json.dumps(value)
    return f"`{' '.join(str(shown).split())}`".replace("|", "\\|")


def _kind(spec: dict[str, Any]) -> str:
    kind = spec.get("type", "str")
    if kind == "list" and "elements" in spec:
        kind = f"list of {spec['elements']}"
    if "choices" in spec:
        kind += "; one of " + ", ".join(f"`{choice}`" for choice in spec["choices"])
    return kind


def entry_points(role: Path) -> dict[str, dict[str, Any]]:
    """Each entry point's options."""
    specs = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]
    return {entry: spec.get("options") or {} for entry, spec in specs.items()}


def variable_table(role: Path, entry: str = "main") -> str:
    options = entry_points(role)[entry]
    defaults_path = role / "defaults/main.yml"
    defaults = (yaml.safe_load(defaults_path.read_text()) or {}) if defaults_path.exists() else {}
    rows = ["| Variable | Default | Description |", "|---|---|---|"]
    for name, spec in options.items():
        description = spec.get("description", "")
        text = " ".join(description) if isinstance(description, list) else description
        rows.append(f"| `{name}` | {_default(name, defaults, spec)} | {_inline(text)} ({_kind(spec)}) |")
    return "\n".join(rows) + "\n"


def updated_readme(readme: str, table: str) -> str:
    block = f"{BEGIN}\n{table}{END}\n"
    if BEGIN in readme:
        head, rest = readme.split(BEGIN, 1)
        return head + block + rest.split(END + "\n", 1)[1]
    match = _TABLE.search(readme)
    if match is None:
        raise ValueError("no '## Variables' heading followed by a table")
    return readme[: match.start(2)] + block + readme[match.end(2):]


def updated_entry_tables(readme: str, role: Path) -> str:
    """``readme`` with the table of every entry point that has options of its own, where its markers are."""
    entries = entry_points(role)
    for entry, options in entries.items():
        if entry == "main" or set(options) <= set(entries.get("main", {})):
            continue
        begin, end = ENTRY_BEGIN.format(entry=entry), ENTRY_END.format(entry=entry)
        if begin not in readme or end not in readme:
            continue
        head, rest = readme.split(begin, 1)
        readme = f"{head}{begin}\n{variable_table(role, entry)}{end}{rest.split(end, 1)[1]}"
    return readme


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when a README's table is not up to date")
    parser.add_argument("roles", nargs="*", type=Path, help="role directories (default: roles/* and harness/roles/*)")
    args = parser.parse_args()
    roles = args.roles or sorted(
        path.parent.parent for directory in ("roles", "harness/roles") for path in Path(directory).glob("*/meta/argument_specs.yml")
    )
    stale = []
    for role in roles:
        readme_path = role / "README.md"
        readme = readme_path.read_text()
        wanted = updated_entry_tables(updated_readme(readme, variable_table(role)), role)
        if wanted != readme:
            stale.append(str(readme_path))
            if not args.check:
                readme_path.write_text(wanted)
    if stale and args.check:
        print("variable tables out of date (run scripts/role_docs.py):", ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
