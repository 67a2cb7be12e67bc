# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/stamp.py: reading a marker file, comparing it with a value, writing it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.multinode.training.plugins.module_utils import stamp

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
ATTRIBUTES = {"owner": None, "group": None, "mode": "0600"}


def new_module(check_mode: bool = False) -> AnsibleModule:
    with patch_module_args({"_ansible_check_mode": check_mode}):
        return AnsibleModule(argument_spec={}, supports_check_mode=True)


@pytest.fixture
def module() -> AnsibleModule:
    return new_module()


def test_a_missing_file_records_nothing(tmp_path: Path) -> None:
    raw = stamp.read_bytes(str(tmp_path / "marker"))
    assert raw is None
    assert stamp.recorded(raw) is None
    assert stamp.matches(raw, DIGEST) is False


def test_a_missing_directory_records_nothing(tmp_path: Path) -> None:
    assert stamp.read_bytes(str(tmp_path / "absent" / "marker")) is None
    (tmp_path / "file").write_text("not a directory\n")
    assert stamp.read_bytes(str(tmp_path / "file" / "marker")) is None


def test_another_value_does_not_match(tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text("0123abcd\n")
    raw = stamp.read_bytes(str(path))
    assert stamp.recorded(raw) == "0123abcd"
    assert stamp.matches(raw, DIGEST) is False


@pytest.mark.parametrize("text", [f"{DIGEST}\n", DIGEST, f"  {DIGEST}\r\n\n"])
def test_the_same_value_matches_whatever_whitespace_surrounds_it(tmp_path: Path, text: str) -> None:
    path = tmp_path / "marker"
    path.write_bytes(text.encode())
    raw = stamp.read_bytes(str(path))
    assert stamp.recorded(raw) == DIGEST
    assert stamp.matches(raw, DIGEST) is True


def test_an_empty_file_matches_no_value(tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_bytes(b"")
    raw = stamp.read_bytes(str(path))
    assert stamp.recorded(raw) == ""
    assert stamp.matches(raw, DIGEST) is False


def test_undecodable_content_is_read_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_bytes(b"\xff\xfe\n")
    assert stamp.matches(stamp.read_bytes(str(path)), DIGEST) is False


def test_other_read_errors_are_raised(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        stamp.read_bytes(str(tmp_path))


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (DIGEST, None),
        ("a b", None),
        ("", "value is empty"),
        ("  \n", "value is empty"),
        (f"{DIGEST}\n", "whitespace"),
        (f" {DIGEST}", "whitespace"),
    ],
)
def test_value_error(value: str, error: str | None) -> None:
    found = stamp.value_error(value)
    assert found is None if error is None else error in found


def test_content_is_the_value_and_a_newline() -> None:
    assert stamp.content(DIGEST) == f"{DIGEST}\n".encode()


def test_ensure_creates_the_file_with_the_value_and_a_newline(module: AnsibleModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is True
    assert path.read_bytes() == f"{DIGEST}\n".encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stamp.matches(stamp.read_bytes(str(path)), DIGEST) is True
    assert os.listdir(tmp_path) == ["marker"]  # no temporary file left behind


def test_ensure_is_idempotent(module: AnsibleModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is True
    before = path.stat()
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is False
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_ensure_replaces_another_value(module: AnsibleModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text("0123abcd\n")
    path.chmod(0o600)
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is True
    assert path.read_text() == f"{DIGEST}\n"


def test_ensure_rewrites_the_value_without_its_newline(module: AnsibleModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text(DIGEST)
    path.chmod(0o600)
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is True
    assert path.read_text() == f"{DIGEST}\n"


def test_ensure_fixes_only_the_mode(module: AnsibleModule, tmp_path: Path) -> None:
    path = tmp_path / "marker"
    path.write_text(f"{DIGEST}\n")
    path.chmod(0o644)
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stamp.ensure(module, str(path), DIGEST, {**ATTRIBUTES, "mode": "0644"}) is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_ensure_in_check_mode_writes_nothing(tmp_path: Path) -> None:
    module = new_module(check_mode=True)
    path = tmp_path / "marker"
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is True
    assert not path.exists()
    path.write_text("0123abcd\n")
    path.chmod(0o644)
    assert stamp.ensure(module, str(path), DIGEST, ATTRIBUTES) is True
    assert path.read_text() == "0123abcd\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_ensure_without_the_directory_raises(module: AnsibleModule, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        stamp.ensure(module, str(tmp_path / "absent" / "marker"), DIGEST, ATTRIBUTES)
