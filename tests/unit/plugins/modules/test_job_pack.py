# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job_pack module run in-process: the job's files packed at dest, or in a temporary file returned inline (base64)
when small enough, else left for the caller to fetch."""

from __future__ import annotations

import base64
import io
import os
import pwd
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any, Callable

import pytest

from ansible_collections.multinode.training.plugins.modules import job_pack

RunModule = Callable[..., dict[str, Any]]
TEMP_PREFIX = "multinode-collect-"
# What job_files.job_files() collects from the job directory below (outputs=False, launcher=False), relative to it.
JOB_MEMBERS = {"rank.sh", "logs/rank-0.log", "status/rank-0.json"}
LARGE_INLINE_MAX_BYTES = 64 * 1024 * 1024


def write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    """A finished job of one rank: its wrapper, log and status file, with a working and an output directory."""
    job = tmp_path / "jobs" / "20261101-120000-torchrun"
    write(job / "rank.sh", "#!/bin/sh\n")
    write(job / "logs" / "rank-0.log", "step 1 loss 0.5\n")
    write(job / "status" / "rank-0.json", '{"rank": 0, "exit_code": 0}\n')
    write(tmp_path / "work" / "train.py", "print('train')\n")
    write(tmp_path / "outputs" / "metrics.json", "{}\n")
    return job


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory of its own as tempfile's directory (TMPDIR; tempfile's cached choice forgotten)."""
    directory = tmp_path / "node-tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert tempfile.gettempdir() == str(directory)
    return directory


def pack(run_module: RunModule, job_dir: Path, **args: Any) -> dict[str, Any]:
    work_dir, output_dir = job_dir.parents[1] / "work", job_dir.parents[1] / "outputs"
    return run_module(job_pack.main, job_dir=str(job_dir), work_dir=str(work_dir), output_dir=str(output_dir), **args)


def temp_archives() -> set[str]:
    """The module's temporary archives in tempfile's directory."""
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(TEMP_PREFIX)}


def member_names(archive_file: IO[bytes]) -> set[str]:
    with tarfile.open(fileobj=archive_file) as archive:
        return set(archive.getnames())


def file_member_names(path: str | Path) -> set[str]:
    with open(path, "rb") as archive_file:
        return member_names(archive_file)


def current_user() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def test_without_dest_a_small_archive_comes_back_inline_and_leaves_no_temporary_file(
    run_module: RunModule, job_dir: Path, temp_dir: Path
) -> None:
    before = temp_archives()

    result = pack(run_module, job_dir, inline_max_bytes=LARGE_INLINE_MAX_BYTES)

    assert "archive_path" not in result
    assert member_names(io.BytesIO(base64.b64decode(result["archive"], validate=True))) == JOB_MEMBERS
    assert result["changed"] is True
    assert result["files"] == len(JOB_MEMBERS)
    assert temp_archives() == before


def test_without_dest_an_archive_over_inline_max_bytes_is_left_as_a_private_file(
    run_module: RunModule, job_dir: Path, temp_dir: Path
) -> None:
    result = pack(run_module, job_dir, inline_max_bytes=1, owner=current_user())

    assert "archive" not in result
    archive_path = Path(result["archive_path"])
    assert archive_path.parent == temp_dir
    assert archive_path.name.startswith(TEMP_PREFIX)
    assert archive_path.is_file()
    assert stat.S_IMODE(archive_path.stat().st_mode) == 0o600
    assert file_member_names(archive_path) == JOB_MEMBERS
    assert temp_archives() == {archive_path.name}


def test_without_dest_the_default_inline_max_bytes_leaves_the_archive_as_a_file(
    run_module: RunModule, job_dir: Path, temp_dir: Path
) -> None:
    result = pack(run_module, job_dir)

    assert "archive" not in result
    assert file_member_names(result["archive_path"]) == JOB_MEMBERS


def test_with_dest_the_archive_is_written_there_and_not_returned(
    run_module: RunModule, job_dir: Path, temp_dir: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "collect.tar"

    result = pack(run_module, job_dir, dest=str(dest), inline_max_bytes=LARGE_INLINE_MAX_BYTES)

    assert "archive" not in result
    assert "archive_path" not in result
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert file_member_names(dest) == JOB_MEMBERS
    assert result["changed"] is True
    assert temp_archives() == set()


@pytest.mark.parametrize("with_dest", [False, True], ids=["without-dest", "with-dest"])
def test_check_mode_writes_no_archive_and_returns_none(
    run_module: RunModule, job_dir: Path, temp_dir: Path, tmp_path: Path, with_dest: bool
) -> None:
    dest = tmp_path / "collect.tar"
    dest_args = {"dest": str(dest)} if with_dest else {}

    result = pack(run_module, job_dir, inline_max_bytes=LARGE_INLINE_MAX_BYTES, _ansible_check_mode=True, **dest_args)

    assert "archive" not in result
    assert "archive_path" not in result
    assert result["changed"] is False
    assert result["files"] == len(JOB_MEMBERS)
    assert not dest.exists()
    assert temp_archives() == set()
