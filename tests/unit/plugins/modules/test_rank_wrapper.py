# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank_wrapper module passes the job's collective backend to the wrapper it writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils import rank_exit_guard
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import (
    EXIT_GUARD_DIR,
    JobPaths,
    NodeDefaults,
    render_rank_wrapper,
)
from ansible_collections.multinode.training.plugins.modules import rank_wrapper

NODE = {"node": "node2", "node_index": 1, "slots": 4, "master_addr": "10.0.0.1"}
JOB = {"job_id": "job-1", "work_dir": "/w", "output_dir": "/o", "checkpoint_dir": "/c"}


def args(tmp_path: Path, **changes: object) -> dict[str, object]:
    return {
        "path": str(tmp_path / "rank.sh"),
        "job_dir": str(tmp_path),
        "env": {"OMP_NUM_THREADS": 8},
        **NODE,
        **JOB,
        **changes,
    }


@pytest.mark.parametrize("backend", ["", "gloo", "xccl"])
def test_the_wrapper_is_rendered_for_the_backend(tmp_path: Path, run_module, backend: str) -> None:
    result = run_module(rank_wrapper.main, **args(tmp_path, backend=backend), _ansible_check_mode=True)
    node = NodeDefaults(master_port=29500, **NODE)
    job = JobPaths(job_dir=str(tmp_path), **JOB)
    assert result["content"] == render_rank_wrapper(node, job, {"OMP_NUM_THREADS": "8"}, backend=backend)
    assert ('export CCL_LOCAL_RANK="$LOCAL_RANK"' in result["content"]) is (backend == "xccl")
    assert not (tmp_path / "rank.sh").exists()


def test_an_unknown_backend_is_refused(tmp_path: Path, run_module) -> None:
    result = run_module(rank_wrapper.main, **args(tmp_path, backend="nccl"), _ansible_check_mode=True)
    assert "value of backend must be one of: , gloo, ccl, mpi, xccl, got: nccl" in result["msg"]


def test_the_exit_guard_is_written_beside_the_wrapper_and_first_on_the_ranks_pythonpath(tmp_path: Path, run_module) -> None:
    job_dir = tmp_path / "job"
    result = run_module(rank_wrapper.main, **args(tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh")))
    guard = job_dir / EXIT_GUARD_DIR / "sitecustomize.py"
    assert guard.read_text() == Path(rank_exit_guard.__file__).read_text()
    assert guard.stat().st_mode & 0o777 == 0o640
    assert str(guard.parent) in result["created"]
    assert f'export PYTHONPATH={guard.parent}"${{PYTHONPATH:+:$PYTHONPATH}}"' in result["content"]
    again = run_module(rank_wrapper.main, **args(tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh")))
    assert not again["changed"]
