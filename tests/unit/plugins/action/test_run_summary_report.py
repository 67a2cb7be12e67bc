# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_summary writes report.html beside the final summary when the Python package can draw it, else says why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.action.run_summary import written_report

SUMMARY = {"job_id": "job-1", "status": "failed", "failure_reasons": ["rank 1 on node2 exited 3"], "phases": {}}


def run_dir_with_summary(tmp_path: Path) -> Path:
    run_dir = tmp_path / "job-1"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps(SUMMARY))
    return run_dir


def test_the_report_is_written_beside_the_summary(tmp_path: Path) -> None:
    run_dir = run_dir_with_summary(tmp_path)
    assert written_report(run_dir) == str(run_dir / "report.html")
    assert "rank 1 on node2 exited 3" in (run_dir / "report.html").read_text()


def test_without_the_package_the_run_says_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "multinode_training.report", None)
    run_dir = run_dir_with_summary(tmp_path)
    assert written_report(run_dir).startswith("no report.html: pip install 'multinode-training[report]'")
    assert not (run_dir / "report.html").exists()


def test_a_report_that_cannot_be_drawn_never_fails_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "job-2"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text("{not json")
    assert written_report(run_dir).startswith("no report.html: ")
