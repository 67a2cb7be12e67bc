# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/mirror.py: listing, comparing and syncing a node directory with a controller one."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils import mirror
from ansible_collections.multinode.training.plugins.module_utils.mirror import Entry

UID, GID = os.getuid(), os.getgid()
T0 = 1_700_000_000


def write(path: Path, content: bytes, *, mode: int = 0o644, mtime: float = T0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(mode)
    os.utime(path, (mtime, mtime))
    return path


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# --------------------------------------------------------------------------- listing


def test_listing_gives_size_whole_second_mtime_and_executable_bit(tmp_path: Path) -> None:
    write(tmp_path / "train.py", b"print(1)\n", mtime=T0 + 0.9)
    write(tmp_path / "bin" / "run.sh", b"#!/bin/sh\n", mode=0o755, mtime=T0 + 5)
    write(tmp_path / "bin" / "user_only", b"x", mode=0o700, mtime=T0 + 6)

    assert mirror.listing(str(tmp_path)) == {
        "train.py": Entry(size=9, mtime=T0, executable=False),
        "bin/run.sh": Entry(size=10, mtime=T0 + 5, executable=True),
        "bin/user_only": Entry(size=1, mtime=T0 + 6, executable=True),
    }


def test_listing_includes_hidden_files_and_directories(tmp_path: Path) -> None:
    write(tmp_path / ".env", b"A=1\n")
    write(tmp_path / ".git" / "HEAD", b"ref\n")

    assert sorted(mirror.listing(str(tmp_path))) == [".env", ".git/HEAD"]


def test_listing_follows_a_symlinked_file_to_its_target(tmp_path: Path) -> None:
    target = write(tmp_path / "elsewhere" / "weights.bin", b"0123456", mode=0o755, mtime=T0 + 42)
    root = tmp_path / "root"
    root.mkdir()
    (root / "weights.bin").symlink_to(target)

    assert mirror.listing(str(root)) == {"weights.bin": Entry(size=7, mtime=T0 + 42, executable=True)}


def test_listing_follows_a_symlinked_directory(tmp_path: Path) -> None:
    write(tmp_path / "shared" / "data.csv", b"a,b\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "data").symlink_to(tmp_path / "shared")

    assert mirror.listing(str(root)) == {"data/data.csv": Entry(size=4, mtime=T0, executable=False)}


def test_listing_skips_what_is_not_a_regular_file(tmp_path: Path) -> None:
    write(tmp_path / "file", b"x")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "empty_dir").mkdir()

    assert list(mirror.listing(str(tmp_path))) == ["file"]


def test_listing_of_a_missing_directory_is_empty(tmp_path: Path) -> None:
    assert mirror.listing(str(tmp_path / "absent")) == {}


def test_entries_turns_plain_data_back_into_entries() -> None:
    raw = {"a": {"size": "3", "mtime": 7.0, "executable": 1}}
    assert mirror.entries(raw) == {"a": Entry(3, 7, True)}
    assert mirror.entries({"a": Entry(3, 7, True).as_dict()}) == {"a": Entry(3, 7, True)}


# --------------------------------------------------------------------------- differences

NOTHING = mirror.Differences(to_send=[], to_verify=[], to_remove=[])


def test_differences_sends_missing_and_resized_files_verifies_retimed_ones_and_removes_extra_ones() -> None:
    wanted = {
        "missing": Entry(1, T0, False),
        "equal": Entry(2, T0, False),
        "other_size": Entry(3, T0, False),
        "other_mtime": Entry(4, T0, False),
    }
    present = {
        "equal": Entry(2, T0, False),
        "other_size": Entry(30, T0, False),
        "other_mtime": Entry(4, T0 + 1, False),
        "extra_b": Entry(5, T0, False),
        "extra_a": Entry(6, T0, False),
    }

    assert mirror.differences(wanted, present) == mirror.Differences(
        to_send=["missing", "other_size"], to_verify=["other_mtime"], to_remove=["extra_a", "extra_b"]
    )


def test_differences_ignores_the_executable_bit_which_is_fixed_in_place() -> None:
    assert mirror.differences({"run.sh": Entry(9, T0, True)}, {"run.sh": Entry(9, T0, False)}) == NOTHING


def test_differences_of_equal_trees_is_nothing() -> None:
    tree = {"a": Entry(1, T0, False), "b/c": Entry(2, T0 + 1, True)}
    assert mirror.differences(tree, dict(tree)) == NOTHING


# --------------------------------------------------------------------------- bad_names


def test_bad_names_are_absolute_paths_and_paths_through_dot_dot() -> None:
    paths = ["ok.txt", "sub/ok", "/etc/passwd", "../x", "a/../../b", "a/..", "..hidden", "a/..b", "./here"]
    assert mirror.bad_names(paths) == ["/etc/passwd", "../x", "a/../../b", "a/.."]


# --------------------------------------------------------------------------- remove_files


def test_remove_files_removes_the_directories_left_empty_but_keeps_the_others(tmp_path: Path) -> None:
    for name in ("a/b/c.txt", "a/keep.txt", "d/e/f.txt", "top.txt", "stays.txt"):
        write(tmp_path / name, b"x")

    mirror.remove_files(str(tmp_path), ["a/b/c.txt", "d/e/f.txt", "top.txt"])

    assert sorted(mirror.listing(str(tmp_path))) == ["a/keep.txt", "stays.txt"]
    assert not (tmp_path / "a" / "b").exists()
    assert not (tmp_path / "d").exists()


def test_remove_files_never_removes_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "only.txt", b"x")
    write(root / "sub" / "deep.txt", b"x")

    mirror.remove_files(str(root), ["only.txt", "sub/deep.txt"])

    assert root.is_dir()
    assert os.listdir(root) == []


def test_remove_files_keeps_a_directory_that_still_holds_an_empty_directory(tmp_path: Path) -> None:
    write(tmp_path / "a" / "f.txt", b"x")
    (tmp_path / "a" / "empty").mkdir()

    mirror.remove_files(str(tmp_path), ["a/f.txt"])

    assert os.listdir(tmp_path / "a") == ["empty"]


def test_remove_files_of_a_whole_tree_with_files_at_several_levels(tmp_path: Path) -> None:
    write(tmp_path / "a" / "f.txt", b"x")
    write(tmp_path / "a" / "b" / "c" / "g.txt", b"x")

    mirror.remove_files(str(tmp_path), ["a/f.txt", "a/b/c/g.txt"])

    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- fix_owners_and_modes


def test_fix_owners_and_modes_fixes_files_executables_and_directories_once(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "plain.txt", b"x", mode=0o600)
    write(root / "run.sh", b"x", mode=0o644)
    write(root / "sub" / "ok.txt", b"x", mode=0o640)
    write(root / "unlisted.txt", b"x", mode=0o600)
    root.chmod(0o755)
    (root / "sub").chmod(0o755)
    wanted = {
        "plain.txt": Entry(1, T0, False),
        "run.sh": Entry(1, T0, True),
        "sub/ok.txt": Entry(1, T0, False),
        "missing.txt": Entry(1, T0, False),
    }

    fixed = mirror.fix_owners_and_modes(str(root), wanted, UID, GID)

    assert fixed == [".", "sub", "plain.txt", "run.sh"]
    assert mode_of(root) == 0o750
    assert mode_of(root / "sub") == 0o750
    assert mode_of(root / "plain.txt") == 0o640
    assert mode_of(root / "run.sh") == 0o750
    assert mode_of(root / "sub" / "ok.txt") == 0o640
    assert mode_of(root / "unlisted.txt") == 0o600  # not in the listing: left alone
    assert not (root / "missing.txt").exists()
    assert mirror.fix_owners_and_modes(str(root), wanted, UID, GID) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another owner needs root")
def test_fix_owners_and_modes_fixes_the_owner_of_a_file_whose_mode_is_right(tmp_path: Path) -> None:
    tmp_path.chmod(0o750)
    path = write(tmp_path / "f.txt", b"x", mode=0o640)
    os.chown(path, 4321, 4321)

    assert mirror.fix_owners_and_modes(str(tmp_path), {"f.txt": Entry(1, T0, False)}, UID, GID) == ["f.txt"]
    assert (path.stat().st_uid, path.stat().st_gid) == (UID, GID)


# --------------------------------------------------------------------------- pack and unpack


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "controller"
    write(root / "train.py", b"print('train')\n", mode=0o644, mtime=T0 + 10)
    write(root / "bin" / "run.sh", b"#!/bin/sh\nexec true\n", mode=0o755, mtime=T0 + 20)
    write(root / "data" / ".hidden", b"secret", mode=0o600, mtime=T0 + 30)
    write(root / "not_wanted.txt", b"nope", mtime=T0 + 40)
    return root


def round_trip(source: Path, node: Path, archive: Path, wanted: dict[str, Entry]) -> list[str]:
    mirror.pack(str(source), sorted(mirror.listing(str(source))), str(archive))
    return mirror.unpack(str(archive), str(node), wanted, UID, GID)


def test_pack_then_unpack_writes_content_mode_and_the_listing_mtime(source: Path, tmp_path: Path) -> None:
    wanted = mirror.listing(str(source))
    del wanted["not_wanted.txt"]
    node = tmp_path / "node"
    node.mkdir()

    written = round_trip(source, node, tmp_path / "files.tar", wanted)

    assert written == ["bin/run.sh", "data/.hidden", "train.py"]
    assert (node / "train.py").read_bytes() == b"print('train')\n"
    assert (node / "bin" / "run.sh").read_bytes() == b"#!/bin/sh\nexec true\n"
    assert (node / "data" / ".hidden").read_bytes() == b"secret"
    assert mode_of(node / "train.py") == 0o640
    assert mode_of(node / "bin" / "run.sh") == 0o750
    assert mode_of(node / "data" / ".hidden") == 0o640
    assert mode_of(node / "bin") == 0o750
    assert mode_of(node / "data") == 0o750
    assert os.stat(node / "train.py").st_mtime == T0 + 10
    assert os.stat(node / "bin" / "run.sh").st_mtime == T0 + 20
    assert not (node / "not_wanted.txt").exists()
    assert mirror.differences(wanted, mirror.listing(str(node))) == NOTHING


def test_unpack_applies_the_listing_mtime_not_the_archived_one(source: Path, tmp_path: Path) -> None:
    wanted = {"train.py": Entry(15, T0 - 1000, False)}
    node = tmp_path / "node"
    node.mkdir()

    assert round_trip(source, node, tmp_path / "files.tar", wanted) == ["train.py"]
    assert os.stat(node / "train.py").st_mtime == T0 - 1000


def test_unpack_replaces_an_existing_file_and_leaves_no_temporary_file(source: Path, tmp_path: Path) -> None:
    wanted = {"train.py": mirror.listing(str(source))["train.py"]}
    node = tmp_path / "node"
    write(node / "train.py", b"old content, other size\n", mode=0o600)

    round_trip(source, node, tmp_path / "files.tar", wanted)

    assert (node / "train.py").read_bytes() == b"print('train')\n"
    assert os.listdir(node) == ["train.py"]


def test_unpack_skips_names_through_dot_dot_even_when_wanted(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        for name in ("../escape.txt", "fine.txt"):
            info = tarfile.TarInfo(name)
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
    node = tmp_path / "node"
    node.mkdir()
    wanted = {"../escape.txt": Entry(4, T0, False), "fine.txt": Entry(4, T0, False)}

    assert mirror.unpack(str(archive), str(node), wanted, UID, GID) == ["fine.txt"]
    assert not (tmp_path / "escape.txt").exists()
    assert os.listdir(node) == ["fine.txt"]


def test_unpack_replaces_a_node_file_where_the_controller_now_has_a_directory(tmp_path: Path) -> None:
    controller = tmp_path / "controller"
    write(controller / "models" / "best.pt", b"weights", mtime=T0 + 7)
    node = tmp_path / "node"
    write(node / "models", b"was a file")
    wanted = mirror.listing(str(controller))

    assert round_trip(controller, node, tmp_path / "files.tar", wanted) == ["models/best.pt"]
    assert (node / "models").is_dir()
    assert mode_of(node / "models") == 0o750
    assert (node / "models" / "best.pt").read_bytes() == b"weights"


def test_a_symlinked_controller_file_arrives_as_its_target_content(tmp_path: Path) -> None:
    target = write(tmp_path / "elsewhere" / "config.yml", b"lr: 0.1\n", mtime=T0 + 3)
    controller = tmp_path / "controller"
    controller.mkdir()
    (controller / "config.yml").symlink_to(target)
    node = tmp_path / "node"
    node.mkdir()
    wanted = mirror.listing(str(controller))

    assert round_trip(controller, node, tmp_path / "files.tar", wanted) == ["config.yml"]
    assert (node / "config.yml").read_bytes() == b"lr: 0.1\n"


def test_content_hash_is_the_sha256_of_the_content(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"test")
    assert mirror.content_hash(str(path)) == "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def test_listing_walks_a_link_back_up_the_tree_only_once(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path)
    assert sorted(mirror.listing(str(tmp_path))) == ["pkg/mod.py"]



# --------------------------------------------------------------------------- retime_files and pending


def test_retime_files_gives_a_listed_file_the_listing_time_and_ignores_unlisted_and_missing_ones(tmp_path: Path) -> None:
    listed = write(tmp_path / "listed.py", b"x", mtime=T0 + 100)
    unlisted = write(tmp_path / "unlisted.py", b"x", mtime=T0 + 100)
    wanted = {"listed.py": Entry(1, T0, False), "missing.py": Entry(1, T0, False)}

    mirror.retime_files(str(tmp_path), wanted, ["listed.py", "unlisted.py", "missing.py"])

    assert listed.stat().st_mtime == T0
    assert unlisted.stat().st_mtime == T0 + 100
    assert not (tmp_path / "missing.py").exists()


def test_retime_files_leaves_a_listed_directory_alone(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    os.utime(tmp_path / "pkg", (T0 + 100, T0 + 100))

    mirror.retime_files(str(tmp_path), {"pkg": Entry(1, T0, False)}, ["pkg"])

    assert (tmp_path / "pkg").stat().st_mtime == T0 + 100


def tree_result(to_send: list[str] | None = None, to_verify: dict[str, str] | None = None) -> dict[str, object]:
    """One tree of mirror_trees's result, nothing left to do unless given."""
    return {"to_send": to_send or [], "to_verify": to_verify or {}, "removed": [], "fixed": [], "written": []}


@pytest.mark.parametrize(
    ("trees", "expected"),
    [
        ({}, False),
        ({"/a": tree_result(), "/b": tree_result()}, False),
        ({"/a": tree_result(), "/b": tree_result(to_send=["train.py"])}, True),
        ({"/a": tree_result(to_verify={"train.py": "0" * 64})}, True),
    ],
    ids=["no tree", "nothing left", "a file to send", "a file to verify"],
)
def test_pending_when_a_tree_has_a_file_to_send_or_to_verify(trees: dict[str, dict[str, object]], expected: bool) -> None:
    assert mirror.pending(trees) is expected


def test_pending_ignores_what_was_already_done() -> None:
    done = {**tree_result(), "removed": ["old.py"], "fixed": ["."], "written": ["train.py"]}
    assert mirror.pending({"/a": done}) is False
