# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_summary records a run that ended (report.html, TensorBoard, MLflow) when the Python package is on the
controller, else says how to get it; nothing it records can fail the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.action.run_summary import recorded

SUMMARY = {"job_id": "job-1", "status": "failed", "failure_reasons": ["rank 1 on node2 exited 3"], "phases": {}}


def run_dir_with_summary(tmp_path: Path) -> Path:
    run_dir = tmp_path / "job-1"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps(SUMMARY))
    return run_dir


def test_the_report_and_the_event_files_are_written_beside_the_summary(tmp_path: Path) -> None:
    run_dir = run_dir_with_summary(tmp_path)
    written = recorded(run_dir, "", "multinode-training")
    assert written == {"report": str(run_dir / "report.html"), "tensorboard": str(run_dir / "tensorboard")}
    assert "rank 1 on node2 exited 3" in (run_dir / "report.html").read_text()


def test_without_the_package_the_run_says_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "multinode_training.trackers", None)
    run_dir = run_dir_with_summary(tmp_path)
    written = recorded(run_dir, "", "multinode-training")
    assert written["report"].startswith("not written: pip install 'multinode-training[report]'")
    assert not (run_dir / "report.html").exists()


def test_a_run_that_cannot_be_recorded_never_fails(tmp_path: Path) -> None:
    run_dir = tmp_path / "job-2"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text("{not json")
    assert all(what.startswith("not written: ") for what in recorded(run_dir, "", "multinode-training").values())
