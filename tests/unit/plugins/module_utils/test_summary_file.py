# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""summary_file.py, the one writer of summary.json: its schema check says what jsonschema says of the recorded runs
and of broken ones, and write_summary writes a conforming summary whole (0600) and refuses any other, writing nothing."""

from __future__ import annotations

import copy
import json
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ansible_collections.multinode.training.plugins.module_utils.run_report import write_json
from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_SCHEMA
from ansible_collections.multinode.training.plugins.module_utils.summary_file import (
    ANNOTATIONS, KEYWORDS, SummaryError, problems, summary_problems, write_summary,
)

RECORDED = sorted((Path(__file__).parent / "fixtures" / "summaries").glob("*.json"))
SSH_RUN = next(path for path in RECORDED if path.name == "ssh-torchrun-restarted.json")
KUBERNETES_RUN = next(path for path in RECORDED if path.name == "kubernetes-pytorchjob-failed.json")
JSONSCHEMA = Draft202012Validator(SUMMARY_SCHEMA)


def recorded(path: Path = SSH_RUN) -> dict[str, Any]:
    return json.loads(path.read_text())


def changed(summary: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {**copy.deepcopy(summary), **keys}


def without(summary: dict[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in summary.items() if name != key}


# One broken summary per keyword of the schema (and a few together), from a recorded run.
BROKEN: dict[str, Callable[[dict[str, Any]], Any]] = {
    "missing required key": lambda s: without(s, "job_id"),
    "missing required keys": lambda s: without(without(s, "status"), "settings"),
    "wrong type": lambda s: changed(s, failure_reasons="rank 1 exited 1"),
    "wrong type of several allowed": lambda s: changed(s, launcher_exit_code="1"),
    "a boolean is not an integer": lambda s: changed(s, world_size=True),
    "outside the enum": lambda s: changed(s, status="done"),
    "unknown key": lambda s: changed(s, verdict="failed"),
    "unknown keys": lambda s: changed(s, verdict="failed", why="no"),
    "below the minimum": lambda s: changed(s, world_size=0),
    "shorter than the minimum length": lambda s: changed(s, job_id=""),
    "an item of the wrong type": lambda s: changed(s, nodes=["10.0.0.1", 2]),
    "an additional property of the wrong type": lambda s: changed(s, node_exit_codes={"node1": "0"}),
    "a nested required key": lambda s: changed(s, phases={"launch": 1.0}),
    "a nested unknown key": lambda s: changed(s, phases={"train": 1.0, "eval": 2.0}),
    "a nested enum": lambda s: changed(s, settings={**s["settings"], "runtime": "podman"}),
    "no form of anyOf": lambda s: changed(s, scheduler={"type": "slurm"}),
    "anyOf given a string": lambda s: changed(s, scheduler="slurm"),
    "deep in arrays and objects": lambda s: changed(s, world={"formed": 1, "text": None, "group_sizes": {"4": ["a"]}}),
    "required keys of array items": lambda s: changed(s, restarts=[{"attempt": 1}], epochs=[{}]),
    "not an object": lambda s: [s],
    "several at once": lambda s: changed(without(s, "timed_out"), status=None, phases=[], extra=1),
}


def locations(summary: Any) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
    """Where this check and jsonschema find a problem, each location as often as it is named."""
    ours = Counter(problem.path for problem in problems(summary, SUMMARY_SCHEMA))
    theirs = Counter(tuple(error.absolute_path) for error in JSONSCHEMA.iter_errors(summary))
    return ours, theirs


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.stem)
def test_every_recorded_run_conforms_as_jsonschema_says(path: Path) -> None:
    summary = recorded(path)
    assert summary_problems(summary) == []
    assert list(JSONSCHEMA.iter_errors(summary)) == []


@pytest.mark.parametrize("path", [SSH_RUN, KUBERNETES_RUN], ids=lambda path: path.stem)
@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_summary_is_refused_where_jsonschema_refuses_it(name: str, path: Path) -> None:
    ours, theirs = locations(BROKEN[name](recorded(path)))
    assert theirs, "the broken variant must be broken"
    assert ours == theirs


def test_a_whole_float_is_an_integer_as_in_json_schema() -> None:
    summary = changed(recorded(), world_size=4.0)
    assert locations(summary) == (Counter(), Counter())


def schema_keywords(schema: Any) -> Iterator[str]:
    """Every keyword of a schema and of the schemas in it."""
    for keyword, setting in schema.items():
        yield keyword
        if keyword == "properties":
            for sub in setting.values():
                yield from schema_keywords(sub)
        elif keyword == "anyOf":
            for sub in setting:
                yield from schema_keywords(sub)
        elif keyword in ("items", "additionalProperties") and isinstance(setting, dict):
            yield from schema_keywords(setting)


def test_the_check_knows_every_keyword_the_schema_uses() -> None:
    assert set(schema_keywords(SUMMARY_SCHEMA)) <= set(KEYWORDS) | ANNOTATIONS


def test_a_keyword_the_check_does_not_know_is_an_error_not_a_pass() -> None:
    with pytest.raises(ValueError, match="'pattern'"):
        problems("x", {"type": "string", "pattern": "^y$"})


def test_the_problems_read_as_where_and_what() -> None:
    summary = changed(without(recorded(), "job_id"), failure_reasons="lost", verdict=1, phases={"train": "1"})
    assert sorted(summary_problems(summary)) == [
        "failure_reasons: expected array, got string",
        "missing required key 'job_id'",
        "phases.train: expected number or null, got string",
        "unknown key 'verdict'",
    ]


# --------------------------------------------------------------------------- write_summary


def test_write_summary_writes_what_write_json_writes_readable_by_its_owner_only(tmp_path: Path) -> None:
    summary = recorded(KUBERNETES_RUN)
    write_json(tmp_path / "expected.json", summary)
    path = tmp_path / "run" / "summary.json"
    write_summary(path, summary)
    assert path.read_bytes() == (tmp_path / "expected.json").read_bytes()
    assert path.read_text().endswith("}\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [item.name for item in path.parent.iterdir()] == ["summary.json"]


def test_write_summary_replaces_a_summary_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text("{ an earlier attempt's summary, much longer than this one ... }\n")
    inode = path.stat().st_ino
    write_summary(path, recorded())
    assert json.loads(path.read_text()) == recorded()
    assert path.stat().st_ino != inode  # renamed over it, never rewritten in place


def test_write_summary_checks_the_json_it_writes(tmp_path: Path) -> None:
    summary = changed(recorded(), ranks_started=(0, 1), rank_exit_codes={0: 0, 1: None})
    write_summary(tmp_path / "summary.json", summary)
    assert json.loads((tmp_path / "summary.json").read_text())["rank_exit_codes"] == {"0": 0, "1": None}


@pytest.mark.parametrize("name", ["missing required keys", "several at once", "not an object"])
def test_write_summary_refuses_a_summary_off_the_schema_naming_every_problem_and_writes_nothing(
    tmp_path: Path, name: str
) -> None:
    summary = BROKEN[name](recorded())
    path = tmp_path / "run" / "summary.json"
    with pytest.raises(SummaryError) as refused:
        write_summary(path, summary)
    assert refused.value.problems == summary_problems(summary)
    for problem in summary_problems(summary):
        assert problem in str(refused.value)
    assert not path.parent.exists()


def test_write_summary_refuses_what_is_not_json_and_leaves_the_file_there_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text("{}\n")
    with pytest.raises(SummaryError, match="not JSON: Object of type set"):
        write_summary(path, changed(recorded(), metrics={"loss": {0.5}}))
    assert [item.name for item in tmp_path.iterdir()] == ["summary.json"]
    assert path.read_text() == "{}\n"
