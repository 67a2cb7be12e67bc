# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stamp module run in-process: query a marker file, record a value, check mode, owner and mode."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path
from typing import Any, Callable

from ansible_collections.multinode.training.plugins.modules import stamp

RunModule = Callable[..., dict[str, Any]]
DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def test_query_without_a_file(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    result = run_module(stamp.main, path=str(path), value=DIGEST)
    assert result["changed"] is False
    assert result["matches"] is False
    assert result["recorded"] is None
    assert not path.exists()


def test_query_another_value(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text("0123abcd\n")
    result = run_module(stamp.main, path=str(path), value=DIGEST, state="query")
    assert (result["changed"], result["matches"], result["recorded"]) == (False, False, "0123abcd")


def test_query_the_same_value_changes_nothing(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text(DIGEST)  # no newline: the comparison strips, a query never rewrites
    path.chmod(0o644)
    result = run_module(stamp.main, path=str(path), value=DIGEST, mode="0600")
    assert (result["changed"], result["matches"], result["recorded"]) == (False, True, DIGEST)
    assert path.read_text() == DIGEST
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_query_in_check_mode(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text(f"{DIGEST}\n")
    result = run_module(stamp.main, path=str(path), value=DIGEST, _ansible_check_mode=True)
    assert (result["changed"], result["matches"], result["recorded"]) == (False, True, DIGEST)


def test_present_writes_then_is_idempotent(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"

    first = run_module(stamp.main, path=str(path), value=DIGEST, state="present")
    assert (first["changed"], first["matches"], first["recorded"]) == (True, False, None)
    assert path.read_text() == f"{DIGEST}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the default mode

    second = run_module(stamp.main, path=str(path), value=DIGEST, state="present")
    assert (second["changed"], second["matches"], second["recorded"]) == (False, True, DIGEST)
    assert os.listdir(tmp_path) == ["marker"]  # no temporary file left behind

    query = run_module(stamp.main, path=str(path), value=DIGEST)
    assert query["matches"] is True


def test_present_replaces_another_value(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text("0123abcd\n")
    result = run_module(stamp.main, path=str(path), value=DIGEST, state="present", mode="0644")
    assert (result["changed"], result["matches"], result["recorded"]) == (True, False, "0123abcd")
    assert path.read_text() == f"{DIGEST}\n"


def test_present_applies_the_mode(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    assert run_module(stamp.main, path=str(path), value=DIGEST, state="present", mode="0644")["changed"] is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert run_module(stamp.main, path=str(path), value=DIGEST, state="present", mode="0644")["changed"] is False

    result = run_module(stamp.main, path=str(path), value=DIGEST, state="present", mode="0600")
    assert (result["changed"], result["matches"]) == (True, True)  # same value, other mode
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == f"{DIGEST}\n"


def test_present_applies_owner_and_group(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    owner, group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    result = run_module(stamp.main, path=str(path), value=DIGEST, state="present", owner=owner, group=group)
    assert result["changed"] is True
    assert (path.stat().st_uid, path.stat().st_gid) == (os.getuid(), os.getgid())


def test_present_in_check_mode_writes_nothing(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    result = run_module(stamp.main, path=str(path), value=DIGEST, state="present", _ansible_check_mode=True)
    assert (result["changed"], result["matches"], result["recorded"]) == (True, False, None)
    assert not path.exists()

    path.write_text(f"{DIGEST}\n")
    path.chmod(0o644)
    result = run_module(stamp.main, path=str(path), value=DIGEST, state="present", _ansible_check_mode=True)
    assert (result["changed"], result["matches"]) == (True, True)  # the mode would change
    assert stat.S_IMODE(path.stat().st_mode) == 0o644

    result = run_module(stamp.main, path=str(path), value=DIGEST, state="present", mode="0644", _ansible_check_mode=True)
    assert result["changed"] is False


def test_present_without_the_directory_fails(run_module: RunModule, tmp_path: Path) -> None:
    path = tmp_path / "absent" / "marker"
    result = run_module(stamp.main, path=str(path), value=DIGEST, state="present")
    assert result["failed"] is True
    assert str(path) in result["msg"]


def test_an_unreadable_marker_fails(run_module: RunModule, tmp_path: Path) -> None:
    result = run_module(stamp.main, path=str(tmp_path), value=DIGEST)
    assert result["failed"] is True
    assert str(tmp_path) in result["msg"]


def test_an_empty_value_fails(run_module: RunModule, tmp_path: Path) -> None:
    result = run_module(stamp.main, path=str(tmp_path / "marker"), value="", state="present")
    assert result["failed"] is True
    assert result["msg"] == "value is empty"
    assert not (tmp_path / "marker").exists()


def test_a_value_with_surrounding_whitespace_fails(run_module: RunModule, tmp_path: Path) -> None:
    result = run_module(stamp.main, path=str(tmp_path / "marker"), value=f"{DIGEST}\n")
    assert result["failed"] is True
    assert "whitespace" in result["msg"]
