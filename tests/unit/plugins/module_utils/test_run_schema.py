# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run schema (run_schema.py): a valid JSON Schema that recorded runs of both producers conform to, and the one
source of the Python API's ``Summary`` type, its file name and the key table in docs/RUNS.md.

The producers themselves are held to it where they are tested: test_run_summary_write.py (a run over SSH),
test_kubernetes_run.py and test_kubernetes_playbook.py (a run on Kubernetes); molecule's verify checks every
summary its real runs wrote (molecule/default/files/check_summaries.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from multinode_training import api, summary

from ansible_collections.multinode.training.plugins.module_utils import run_schema
from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_SCHEMA

REPO = Path(run_schema.__file__).resolve().parents[2]
RECORDED = Path(__file__).parent / "fixtures" / "summaries"


def test_the_schema_is_a_valid_json_schema() -> None:
    Draft202012Validator.check_schema(SUMMARY_SCHEMA)


def test_every_key_says_what_it_holds() -> None:
    assert all(spec.get("description") for spec in SUMMARY_SCHEMA["properties"].values())


@pytest.mark.parametrize("path", sorted(RECORDED.glob("*.json")), ids=lambda path: path.stem)
def test_recorded_runs_of_both_producers_conform(path: Path, summary_problems: Any) -> None:
    assert summary_problems(json.loads(path.read_text())) == []


def test_the_recorded_runs_cover_both_producers_and_every_ending() -> None:
    recorded = [json.loads(path.read_text()) for path in RECORDED.glob("*.json")]
    assert {item["settings"]["runtime"] for item in recorded} >= {"container", "kubernetes"}
    assert {item["status"] for item in recorded} >= {"succeeded", "failed"}
    assert any(item.get("restarts") for item in recorded)


def test_the_python_apis_summary_type_has_the_schemas_keys() -> None:
    assert list(summary.Summary.__annotations__) == list(SUMMARY_SCHEMA["properties"])
    assert set(summary.Summary.__required_keys__) == set(SUMMARY_SCHEMA["required"])


def test_the_python_api_reads_the_schemas_file() -> None:
    assert api.SUMMARY_FILE == run_schema.SUMMARY_FILE


def test_the_generated_doc_tables_are_current() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts/generated_docs.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
