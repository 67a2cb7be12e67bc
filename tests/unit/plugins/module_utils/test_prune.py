# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/prune.py: which run directories go, and that only those go."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils.prune import Entry, directories, remove, to_remove

RUNS = [Entry("a", 1.0), Entry("b", 2.0), Entry("c", 3.0), Entry("d", 4.0)]


@pytest.mark.parametrize(
    ("keep", "protected", "expected"),
    [
        (0, frozenset(), []),
        (10, frozenset(), []),
        (4, frozenset(), []),
        (2, frozenset(), ["a", "b"]),
        (1, frozenset(), ["a", "b", "c"]),
        # The run in progress counts towards keep, even when an older directory has a newer mtime.
        (2, frozenset({"a"}), ["b", "c"]),
        (1, frozenset({"a"}), ["b", "c", "d"]),
    ],
)
def test_to_remove_keeps_the_newest(keep: int, protected: frozenset[str], expected: list[str]) -> None:
    assert to_remove(RUNS, keep, protected) == expected


def test_equal_times_fall_back_to_the_name() -> None:
    same = [Entry("20261123-100000-torchrun", 5.0), Entry("20261123-110000-torchrun", 5.0)]
    assert to_remove(same, 1) == ["20261123-100000-torchrun"]


def test_directories_skips_links_and_files(tmp_path: Path) -> None:
    for name, mtime in (("old", 100), ("new", 200)):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (mtime, mtime))
    (tmp_path / "latest").symlink_to("new")
    (tmp_path / "notes.txt").write_text("x")
    assert sorted(directories(str(tmp_path)), key=lambda entry: entry.name) == [Entry("new", 200.0), Entry("old", 100.0)]
    assert directories(str(tmp_path / "missing")) == []


def test_remove_deletes_whole_trees(tmp_path: Path) -> None:
    (tmp_path / "old" / "logs").mkdir(parents=True)
    (tmp_path / "old" / "logs" / "rank-0.log").write_text("x")
    (tmp_path / "new").mkdir()
    remove(str(tmp_path), to_remove(directories(str(tmp_path)), 1, frozenset({"new"})))
    assert [path.name for path in tmp_path.iterdir()] == ["new"]
