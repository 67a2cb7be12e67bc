# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank_wrapper module passes the job's collective backend to the wrapper it writes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest

from ansible_collections.multinode.training.plugins.module_utils import mirror, rank_exit_guard
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


def launch_options(job_dir: Path, **changes: object) -> dict[str, object]:
    """What the launcher role passes as ``launch`` (launch_script's options), for a mpiexec job of 2 nodes."""
    return {
        "path": str(job_dir / "launch.sh"),
        "job_dir": str(job_dir),
        "work_dir": str(job_dir / "work"),
        "launcher": "mpiexec",
        "hosts": [{"name": "node1", "address": "10.0.0.1", "slots": 1}, {"name": "node2", "address": "10.0.0.2", "slots": 1}],
        "launcher_address": "10.0.0.1",
        "iface": "eth1",
        "hostfile_path": str(job_dir / "hostfile"),
        "hostfile_dialect": "auto",
        "ssh_port": 2222,
        "job_id": "job-1",
        "command": ["bash", str(job_dir / "rank.sh"), "python3", "train.py"],
        "omp_num_threads": 4,
        "wait_ready": True,
        **changes,
    }


def test_the_launcher_nodes_set_up_writes_its_token_then_the_launch_in_one_run(tmp_path: Path, run_module) -> None:
    job_dir = tmp_path / "job"
    result = run_module(
        rank_wrapper.main,
        **args(tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh"), directories=[str(job_dir)]),
        ready_token="job-1-1-20261128T024301",
        launch=launch_options(job_dir),
        mode="0750",
    )
    assert (job_dir / "ready").read_text() == "job-1-1-20261128T024301\n"
    assert (job_dir / "ready").stat().st_mode & 0o777 == 0o640
    launch = result["launch"]
    assert (job_dir / "launch.sh").read_text() == launch["content"]
    assert (job_dir / "launch.sh").stat().st_mode & 0o777 == 0o750
    assert (job_dir / "hostfile").read_text() == launch["hostfile"] and launch["hostfile_dialect"] == "intelmpi"
    assert (job_dir / "hostfile").stat().st_mode & 0o777 == 0o640
    assert f"ready_token=$(cat {job_dir / 'ready'}" in launch["content"]
    assert "container_id" not in launch and result["changed"]


def test_a_worker_writes_its_token_and_launches_nothing(tmp_path: Path, run_module) -> None:
    result = run_module(rank_wrapper.main, **args(tmp_path), ready_token="job-1-1-x")
    assert (tmp_path / "ready").read_text() == "job-1-1-x\n"
    assert "launch" not in result and not (tmp_path / "launch.sh").exists()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"ready_token": "job 1; rm -rf /"}, "ready_token 'job 1; rm -rf /': only letters, digits"),
        ({"launch": {"path": "/x/launch.sh"}}, "missing required arguments"),
        ({"launch": {"launcher": "srun-ish"}}, "value of launcher must be one of"),
    ],
)
def test_a_bad_token_or_launch_is_refused_before_anything_is_written(tmp_path: Path, run_module, changes: dict, message: str) -> None:
    job_dir = tmp_path / "job"
    if "launch" in changes and "path" not in changes["launch"]:
        changes = {"launch": launch_options(job_dir, **changes["launch"])}
    result = run_module(rank_wrapper.main, **args(tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh")), **changes)
    assert result["failed"] and message in result["msg"]
    assert not job_dir.exists(), "the node was set up although the module failed"


def test_a_launch_that_cannot_be_built_is_refused_before_the_node_is_set_up(tmp_path: Path, run_module) -> None:
    job_dir = tmp_path / "job"
    launch = launch_options(job_dir, launcher="torchrun", elastic_min=3, elastic_max=2)
    result = run_module(rank_wrapper.main, **args(tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh")), launch=launch)
    assert result["failed"] and "elastic" in result["msg"]
    assert not job_dir.exists(), "the node was set up although its launch could not be built"


SECRET = "s3cr3t-value-9f2"


def test_a_secret_variable_goes_to_a_file_only_the_training_user_reads_never_into_the_scripts(
    tmp_path: Path, run_module
) -> None:
    job_dir = tmp_path / "job"
    env = {"OMP_NUM_THREADS": 8, "HF_TOKEN": SECRET, "TEAM_CODE": "abcd-1234"}
    result = run_module(
        rank_wrapper.main,
        **args(
            tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh"), env=env, secret_env_names=["TEAM_CODE"],
            launch=launch_options(job_dir, env=env, secret_env_names=["TEAM_CODE"]),
        ),
    )
    secret_file = job_dir / rank_wrapper.SECRET_ENV_FILE
    assert secret_file.stat().st_mode & 0o777 == 0o600
    assert secret_file.read_text() == f"export HF_TOKEN={SECRET}\nexport TEAM_CODE=abcd-1234\n"
    for written in (job_dir / "rank.sh", job_dir / "launch.sh", job_dir / "hostfile"):
        assert SECRET not in written.read_text() and "abcd-1234" not in written.read_text(), written
    assert "export OMP_NUM_THREADS=8" in (job_dir / "rank.sh").read_text()
    assert f". {secret_file} || exit" in (job_dir / "rank.sh").read_text()
    assert SECRET not in str(result) and "abcd-1234" not in str(result)


def test_the_rank_gets_the_secret_variable_from_the_file(tmp_path: Path, run_module) -> None:
    job_dir = tmp_path / "job"
    run_module(
        rank_wrapper.main,
        **args(tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh"), env={"HF_TOKEN": SECRET},
               directories=[str(job_dir / "logs"), str(job_dir / "status"), str(tmp_path / "w")], work_dir=str(tmp_path / "w")),
    )
    launcher_env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "PATH": "/usr/bin:/bin"}
    shown = subprocess.run(
        ["bash", str(job_dir / "rank.sh"), "sh", "-c", 'echo "token=$HF_TOKEN"'],
        env=launcher_env, capture_output=True, text=True, timeout=30, check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"token={SECRET}" in shown.stdout


def test_a_job_without_secrets_has_no_secret_file(tmp_path: Path, run_module) -> None:
    job_dir = tmp_path / "job"
    paths = {"job_dir": str(job_dir), "path": str(job_dir / "rank.sh")}
    run_module(rank_wrapper.main, **args(tmp_path, env={"HF_TOKEN": SECRET}, **paths))
    result = run_module(rank_wrapper.main, **args(tmp_path, **paths))
    assert result["changed"]
    assert not (job_dir / rank_wrapper.SECRET_ENV_FILE).exists()
    assert ". " + str(job_dir / rank_wrapper.SECRET_ENV_FILE) not in result["content"]


# --------------------------------------------------------------------------- sync: the code mirrored in the set-up's run

RunModule = Callable[..., dict[str, Any]]
UID, GID = os.getuid(), os.getgid()
T0 = 1_700_000_000
CODE = {"train.py": (b"print('train')\n", T0 + 1), "lib/util.py": (b"x = 1\n", T0 + 2)}


def write_file(path: Path, content: bytes, mtime: int) -> None:
    """A file as the mirror leaves it on a node: mode 0640 (its directories 0750), the given modification time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o750)
    path.write_bytes(content)
    path.chmod(0o640)
    os.utime(path, (mtime, mtime))


def write_tree(root: Path, files: dict[str, tuple[bytes, int]]) -> Path:
    for name, (content, mtime) in files.items():
        write_file(root / name, content, mtime)
    root.chmod(0o750)
    return root


@pytest.fixture
def controller(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "controller", CODE)


def sync_option(controller: Path, dest: Path, **changes: object) -> dict[str, object]:
    """O(sync) as the action plugin passes it: the controller's listing of ``controller`` for ``dest``."""
    files = {path: entry.as_dict() for path, entry in mirror.listing(str(controller)).items()}
    return {"trees": [{"src": str(controller), "dest": str(dest), "files": files}], "owner": UID, "group": GID, **changes}


def set_up_with_sync(run_module: RunModule, tmp_path: Path, sync: dict[str, object], **extra: object) -> dict[str, Any]:
    """The job's set-up in ``tmp_path/job`` with ``sync``."""
    job_dir = tmp_path / "job"
    return run_module(rank_wrapper.main, **args(tmp_path, job_dir=str(job_dir), path=str(job_dir / "rank.sh")), sync=sync, **extra)


def test_sync_into_a_node_lacking_the_files_returns_them_to_send_before_setting_up_the_job(
    tmp_path: Path, run_module: RunModule, controller: Path
) -> None:
    dest = tmp_path / "node" / "code"

    result = set_up_with_sync(run_module, tmp_path, sync_option(controller, dest))

    assert result["sync_pending"] is True
    assert result["sync"]["trees"][str(dest)]["to_send"] == ["lib/util.py", "train.py"]
    assert "content" not in result
    assert not (tmp_path / "job").exists(), "the job was set up although its code was not synced yet"


def test_sync_into_a_matching_node_copy_sets_up_the_job_and_changes_no_code(tmp_path: Path, run_module: RunModule, controller: Path) -> None:
    dest = write_tree(tmp_path / "node" / "code", CODE)

    result = set_up_with_sync(run_module, tmp_path, sync_option(controller, dest))

    assert "sync_pending" not in result
    assert (tmp_path / "job" / "rank.sh").read_text() == result["content"]
    assert result["sync"]["changed"] is False
    assert result["sync"]["trees"][str(dest)] == {"to_send": [], "to_verify": {}, "removed": [], "fixed": [], "written": []}


def test_a_node_file_of_another_time_is_verified_then_retimed_and_the_job_set_up(tmp_path: Path, run_module: RunModule, controller: Path) -> None:
    dest = write_tree(tmp_path / "node" / "code", {**CODE, "train.py": (CODE["train.py"][0], T0 + 100)})

    first = set_up_with_sync(run_module, tmp_path, sync_option(controller, dest))
    again = set_up_with_sync(run_module, tmp_path, sync_option(controller, dest, retime={str(dest): ["train.py"]}))

    assert first["sync_pending"] is True
    assert first["sync"]["trees"][str(dest)]["to_send"] == []
    assert list(first["sync"]["trees"][str(dest)]["to_verify"]) == ["train.py"]
    assert "sync_pending" not in again
    assert (tmp_path / "job" / "rank.sh").read_text() == again["content"]
    assert (dest / "train.py").stat().st_mtime == CODE["train.py"][1]
    assert again["sync"]["trees"][str(dest)]["to_verify"] == {}


def test_the_files_sent_are_unpacked_and_the_job_set_up_in_the_same_run(tmp_path: Path, run_module: RunModule, controller: Path) -> None:
    dest = tmp_path / "node" / "code"
    archive = tmp_path / "tree-0.tar"
    mirror.pack(str(controller), sorted(CODE), str(archive))

    result = set_up_with_sync(run_module, tmp_path, sync_option(controller, dest, archives={str(dest): str(archive)}))

    assert "sync_pending" not in result
    assert (tmp_path / "job" / "rank.sh").read_text() == result["content"]
    assert result["sync"]["trees"][str(dest)]["written"] == ["lib/util.py", "train.py"]
    assert (dest / "train.py").read_bytes() == CODE["train.py"][0]
    assert (dest / "train.py").stat().st_mtime == CODE["train.py"][1]


def test_check_mode_with_a_differing_node_copy_renders_the_set_up_and_changes_nothing(
    tmp_path: Path, run_module: RunModule, controller: Path
) -> None:
    dest = write_tree(tmp_path / "node" / "code", {**CODE, "train.py": (b"print('old version')\n", T0)})

    result = set_up_with_sync(run_module, tmp_path, sync_option(controller, dest), _ansible_check_mode=True)

    assert "sync_pending" not in result and "content" in result
    assert result["sync"]["trees"][str(dest)]["to_send"] == ["train.py"]
    assert (dest / "train.py").read_bytes() == b"print('old version')\n"
    assert not (tmp_path / "job").exists()
