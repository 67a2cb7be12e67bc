# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror_files module run in-process: compare a node directory with a listing, remove, fix, unpack."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Callable

import pytest

from ansible_collections.multinode.training.plugins.module_utils import mirror
from ansible_collections.multinode.training.plugins.modules import mirror_files

RunModule = Callable[..., dict[str, Any]]
UID, GID = os.getuid(), os.getgid()
T0 = 1_700_000_000


def write(path: Path, content: bytes, *, mode: int = 0o644, mtime: int = T0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(mode)
    os.utime(path, (mtime, mtime))


def files_of(root: Path) -> dict[str, dict[str, int | bool]]:
    """The ``files`` option for a tree: the controller's listing of ``root`` as plain data."""
    return {path: entry.as_dict() for path, entry in mirror.listing(str(root)).items()}


def run(run_module: RunModule, trees: list[dict[str, Any]], **args: Any) -> dict[str, Any]:
    return run_module(mirror_files.main, trees=trees, owner=UID, group=GID, **args)


@pytest.fixture
def controller(tmp_path: Path) -> Path:
    root = tmp_path / "controller"
    write(root / "train.py", b"print('train')\n", mtime=T0 + 1)
    write(root / "scripts" / "run.sh", b"#!/bin/sh\n", mode=0o755, mtime=T0 + 2)
    write(root / ".config", b"a=1\n", mtime=T0 + 3)
    return root


def test_first_run_on_an_empty_node_creates_dest_and_directories_and_asks_for_every_file(
    run_module: RunModule, controller: Path, tmp_path: Path
) -> None:
    dest, jobs = tmp_path / "node" / "code", tmp_path / "node" / "jobs"

    result = run(run_module, [{"dest": str(dest), "files": files_of(controller)}], directories=[str(jobs)])

    assert result["changed"] is True
    assert result["created"] == [str(tmp_path / "node"), str(jobs), str(dest)]
    assert result["trees"] == {str(dest): {"to_send": [".config", "scripts/run.sh", "train.py"], "to_verify": {}, "removed": [], "fixed": [], "written": []}}
    for directory in (tmp_path / "node", jobs, dest):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o750
    assert os.listdir(dest) == []


def test_check_mode_creates_nothing_and_reports_changed(run_module: RunModule, controller: Path, tmp_path: Path) -> None:
    dest, jobs = tmp_path / "node" / "code", tmp_path / "node" / "jobs"

    result = run(run_module, [{"dest": str(dest), "files": files_of(controller)}], directories=[str(jobs)], _ansible_check_mode=True)

    assert result["changed"] is True
    assert result["created"] == []
    assert result["trees"][str(dest)]["to_send"] == [".config", "scripts/run.sh", "train.py"]
    assert not (tmp_path / "node").exists()


def test_check_mode_on_a_node_that_matches_reports_no_change(run_module: RunModule, controller: Path) -> None:
    os.chmod(controller, 0o750)  # the node tree is the controller's here: every mode as the module wants it
    for path in (controller / "train.py", controller / ".config"):
        path.chmod(0o640)
    (controller / "scripts").chmod(0o750)
    (controller / "scripts" / "run.sh").chmod(0o750)

    result = run(run_module, [{"dest": str(controller), "files": files_of(controller)}], _ansible_check_mode=True)

    assert result["changed"] is False
    assert result["trees"][str(controller)] == {"to_send": [], "to_verify": {}, "removed": [], "fixed": [], "written": []}


def test_check_mode_reports_the_mode_fixes_the_real_run_makes(run_module: RunModule, controller: Path) -> None:
    os.chmod(controller, 0o750)
    (controller / "scripts").chmod(0o750)  # only the files' modes differ (0644 and 0755, not 0640 and 0750)
    files = files_of(controller)

    checked = run(run_module, [{"dest": str(controller), "files": files}], _ansible_check_mode=True)
    real = run(run_module, [{"dest": str(controller), "files": files}])

    assert real["changed"] is True
    assert sorted(real["trees"][str(controller)]["fixed"]) == [".config", "scripts/run.sh", "train.py"]
    assert checked["changed"] is True


def test_extra_node_files_are_removed_with_the_directories_they_empty(run_module: RunModule, controller: Path, tmp_path: Path) -> None:
    dest = tmp_path / "node"
    for name in ("train.py", "scripts/run.sh", ".config"):
        write(dest / name, (controller / name).read_bytes(), mtime=int((controller / name).stat().st_mtime))
    write(dest / "old.py", b"gone\n")
    write(dest / "stale" / "deep" / "x.txt", b"gone\n")

    result = run(run_module, [{"dest": str(dest), "files": files_of(controller)}])

    tree = result["trees"][str(dest)]
    assert result["changed"] is True
    assert tree["removed"] == ["old.py", "stale/deep/x.txt"]
    assert tree["to_send"] == []
    assert sorted(os.listdir(dest)) == [".config", "scripts", "train.py"]
    assert stat.S_IMODE((dest / "scripts" / "run.sh").stat().st_mode) == 0o750
    assert stat.S_IMODE((dest / "train.py").stat().st_mode) == 0o640
    assert "scripts/run.sh" in tree["fixed"] and "train.py" in tree["fixed"]


def test_an_archive_is_unpacked_and_the_next_comparison_finds_nothing_to_do(
    run_module: RunModule, controller: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "node" / "code"
    files = files_of(controller)
    first = run(run_module, [{"dest": str(dest), "files": files}])
    archive = tmp_path / "tree-0.tar"
    mirror.pack(str(controller), first["trees"][str(dest)]["to_send"], str(archive))

    unpacked = run(run_module, [{"dest": str(dest), "files": files}], archives={str(dest): str(archive)})

    assert unpacked["changed"] is True
    assert unpacked["trees"][str(dest)]["written"] == [".config", "scripts/run.sh", "train.py"]
    assert unpacked["trees"][str(dest)]["to_send"] == []
    assert (dest / "train.py").read_bytes() == b"print('train')\n"
    assert (dest / "scripts" / "run.sh").stat().st_mtime == T0 + 2

    again = run(run_module, [{"dest": str(dest), "files": files}])

    assert again["changed"] is False
    assert again["created"] == []
    assert again["trees"][str(dest)] == {"to_send": [], "to_verify": {}, "removed": [], "fixed": [], "written": []}


def test_a_listing_with_a_name_outside_dest_fails_and_touches_nothing(run_module: RunModule, tmp_path: Path) -> None:
    dest = tmp_path / "node"
    files = {"../x": {"size": 1, "mtime": T0, "executable": False}, "ok": {"size": 1, "mtime": T0, "executable": False}}

    result = run(run_module, [{"dest": str(dest), "files": files}])

    assert result["failed"] is True
    assert result["msg"] == "file names outside the directory they mirror: ../x"
    assert not dest.exists()


def test_a_file_of_the_same_size_but_another_time_is_offered_for_verification_with_its_hash(run_module, tmp_path):
    dest = tmp_path / "node"
    dest.mkdir()
    (dest / "train.py").write_text("print(1)\n")
    os.utime(dest / "train.py", (1_000_000, 1_000_000))
    listing = {"train.py": {"size": 9, "mtime": 2_000_000, "executable": False}}
    result = run_module(mirror_files.main, trees=[{"dest": str(dest), "files": listing}], owner=os.getuid(), group=os.getgid())
    tree = result["trees"][str(dest)]
    assert tree["to_send"] == []
    assert tree["to_verify"] == {"train.py": mirror.content_hash(str(dest / "train.py"))}
