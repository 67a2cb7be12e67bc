# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one writer of ``summary.json``: :func:`write_summary` checks a summary against the run schema
(run_schema.SUMMARY_SCHEMA) as it writes it, and refuses one that departs from it, naming every problem.

Every summary.json goes through it: the run_summary action (a run over SSH, each restarted attempt's too) and the
write_summary action (a run on Kubernetes, and a run a restart could not repair). What is checked is what lands on
disk: the summary as JSON, read back.

The check is this file's own, for exactly the JSON Schema keywords SUMMARY_SCHEMA uses: the ``jsonschema`` package
is a test dependency, not installed where the collection runs. test_summary_file.py holds it to jsonschema's verdicts.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Tuple, Union

from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_SCHEMA

Location = Tuple[Union[str, int], ...]


class Problem(NamedTuple):
    """One way a value departs from a schema: where (keys and indexes from the top) and what."""

    path: Location
    text: str

    def __str__(self) -> str:
        return f"{'.'.join(map(str, self.path))}: {self.text}" if self.path else self.text


class SummaryError(ValueError):
    """A summary the run schema refuses; nothing was written."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"summary.json refused, it departs from the run schema: {'; '.join(problems)}")
        self.problems = problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# JSON Schema's types, most specific first (a whole float is an integer, as in JSON Schema).
_TYPES: dict[str, Callable[[Any], bool]] = {
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: _is_number(value) and float(value).is_integer(),
    "number": _is_number,
    "string": lambda value: isinstance(value, str),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


def _type_name(value: Any) -> str:
    return next((name for name, is_a in _TYPES.items() if is_a(value)), type(value).__name__)


def _type(expected: str | list[str], value: Any, _schema: Mapping[str, Any], path: Location) -> list[Problem]:
    names = [expected] if isinstance(expected, str) else expected
    if any(_TYPES[name](value) for name in names):
        return []
    return [Problem(path, f"expected {' or '.join(names)}, got {_type_name(value)}")]


def _enum(options: list[Any], value: Any, _schema: Mapping[str, Any], path: Location) -> list[Problem]:
    return [] if value in options else [Problem(path, f"expected one of {', '.join(map(repr, options))}, got {value!r}")]


def _required(keys: list[str], value: Any, _schema: Mapping[str, Any], path: Location) -> list[Problem]:
    if not isinstance(value, dict):
        return []
    return [Problem(path, f"missing required key {key!r}") for key in keys if key not in value]


def _properties(
    properties: Mapping[str, Any], value: Any, _schema: Mapping[str, Any], path: Location
) -> list[Problem]:
    if not isinstance(value, dict):
        return []
    return [found for key, sub in properties.items() if key in value for found in problems(value[key], sub, (*path, key))]


def _additional_properties(
    allowed: bool | Mapping[str, Any], value: Any, schema: Mapping[str, Any], path: Location
) -> list[Problem]:
    if not isinstance(value, dict):
        return []
    others = [key for key in value if key not in schema.get("properties", {})]
    if allowed is False:
        return [Problem(path, f"unknown key{'s' * (len(others) > 1)} {', '.join(map(repr, others))}")] if others else []
    return [found for key in others for found in problems(value[key], allowed, (*path, key))]


def _items(sub: Mapping[str, Any], value: Any, _schema: Mapping[str, Any], path: Location) -> list[Problem]:
    if not isinstance(value, list):
        return []
    return [found for index, item in enumerate(value) for found in problems(item, sub, (*path, index))]


def _min_length(least: int, value: Any, _schema: Mapping[str, Any], path: Location) -> list[Problem]:
    if not isinstance(value, str) or len(value) >= least:
        return []
    return [Problem(path, f"expected at least {least} characters, got {len(value)}")]


def _minimum(least: float, value: Any, _schema: Mapping[str, Any], path: Location) -> list[Problem]:
    return [Problem(path, f"expected at least {least}, got {value}")] if _is_number(value) and value < least else []


def _any_of(options: list[Mapping[str, Any]], value: Any, _schema: Mapping[str, Any], path: Location) -> list[Problem]:
    failed = [problems(value, option) for option in options]
    if not all(failed):
        return []
    return [Problem(path, "matches none of its forms: " + " | ".join("; ".join(map(str, each)) for each in failed))]


# The keywords SUMMARY_SCHEMA uses: each checks one value against its keyword's setting.
KEYWORDS: dict[str, Callable[[Any, Any, Mapping[str, Any], Location], list[Problem]]] = {
    "type": _type,
    "enum": _enum,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "items": _items,
    "minLength": _min_length,
    "minimum": _minimum,
    "anyOf": _any_of,
}
# Keywords that say what a schema is and check nothing.
ANNOTATIONS = frozenset({"$schema", "title", "description"})


def problems(value: Any, schema: Mapping[str, Any], path: Location = ()) -> list[Problem]:
    """Every way ``value`` departs from ``schema`` (one of JSON Schema's, with the keywords above only)."""
    found: list[Problem] = []
    for keyword, setting in schema.items():
        if keyword in ANNOTATIONS:
            continue
        if keyword not in KEYWORDS:
            raise ValueError(f"summary_file cannot check the JSON Schema keyword {keyword!r}")
        found += KEYWORDS[keyword](setting, value, schema, path)
    return found


def summary_problems(summary: Any) -> list[str]:
    """Every way ``summary`` departs from the run schema, readably (``failure_reasons: expected array, got string``);
    empty when it conforms."""
    return [str(problem) for problem in problems(summary, SUMMARY_SCHEMA)]


def summary_text(summary: Mapping[str, Any]) -> str:
    """summary.json's content for ``summary``: JSON with sorted keys, indented by 2, ending in a newline (the form of
    every JSON file of a run, run_report.write_json). Raises :class:`SummaryError` when it departs from the schema."""
    try:
        text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
    except (TypeError, ValueError) as error:
        raise SummaryError([f"not JSON: {error}"]) from error
    found = summary_problems(json.loads(text))
    if found:
        raise SummaryError(found)
    return text


def write_summary(path: Path, summary: Mapping[str, Any]) -> None:
    """Write ``summary`` to ``path`` whole (a temporary file beside it renamed over it), readable by its owner only
    (0600); a missing directory is created 0700. A summary the schema refuses raises :class:`SummaryError` and
    nothing is written."""
    text = summary_text(summary)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.")  # created 0600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
