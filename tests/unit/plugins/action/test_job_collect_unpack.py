# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""job_collect's ``_unpack``: a node's archive extracted into the controller's directory, nothing outside it."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.action.job_collect import _unpack


def tar_of(files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> io.BytesIO:
    """An in-memory tar of ``files`` (member name: content) and ``symlinks`` (member name: target), read from its start."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    buffer.seek(0)
    return buffer


def all_paths(root: Path) -> set[str]:
    """Every file, link and directory under ``root``, relative to it."""
    return {str(path.relative_to(root)) for path in root.rglob("*")}


def test_unpack_extracts_every_member_under_dest_and_counts_them(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()

    count = _unpack(tar_of({"logs/rank-0.log": b"step 1\n", "status/rank-0.json": b"{}\n"}), str(dest))

    assert count == 2
    assert (dest / "logs" / "rank-0.log").read_bytes() == b"step 1\n"
    assert (dest / "status" / "rank-0.json").read_bytes() == b"{}\n"


@pytest.mark.parametrize("name", ["../escaped.txt", "logs/../../escaped.txt"])
def test_unpack_refuses_a_member_that_climbs_out_of_dest(tmp_path: Path, name: str) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()

    with pytest.raises(tarfile.OutsideDestinationError):
        _unpack(tar_of({name: b"out\n"}), str(dest))

    assert all_paths(tmp_path) == {"dest"}


def test_unpack_refuses_a_symlink_to_an_absolute_path(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()

    with pytest.raises(tarfile.AbsoluteLinkError):
        _unpack(tar_of({}, symlinks={"logs": str(tmp_path)}), str(dest))

    assert all_paths(tmp_path) == {"dest"}


def test_unpack_puts_a_member_with_an_absolute_path_under_dest(tmp_path: Path) -> None:
    # The data filter strips the leading "/" of an absolute member name (it refuses only a name still absolute after
    # that, as C:/x on Windows): the member lands under dest, not at its absolute path.
    dest = tmp_path / "dest"
    dest.mkdir()
    absolute = tmp_path / "outside" / "absolute.txt"

    count = _unpack(tar_of({str(absolute): b"abs\n"}), str(dest))

    assert count == 1
    assert not absolute.parent.exists()
    assert (dest / str(absolute).lstrip(os.sep)).read_bytes() == b"abs\n"
