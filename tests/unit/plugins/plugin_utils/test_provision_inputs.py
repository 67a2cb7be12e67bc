# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of plugin_utils/provision_inputs.py: the one hash over a provisioning run's inputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.plugin_utils import provision_inputs
from ansible_collections.multinode.training.plugins.plugin_utils.provision_inputs import (
    PROVISIONING_ROLES,
    file_stamp,
    inputs_hash,
    without_defaults,
)

REPO = Path(__file__).resolve().parents[4]
VALUES = {"cluster_ssh_port": 2222, "workers": ["node1", "node2"], "oneapi": {"version": "2024.1", "path": "/opt"}}
NS = 1_700_000_000_000_000_000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fake collection: a few roles and plugins files, plus things that are not code."""
    collection = tmp_path / "collection"
    for name, content in {
        "roles/ssh_mesh/tasks/main.yml": "- name: mesh\n",
        "roles/workers/defaults/main.yml": "workers_port: 1\n",
        "plugins/modules/node_state.py": "print('x')\n",
        "plugins/module_utils/node_state.py": "X = 1\n",
    }.items():
        path = collection / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return collection


@pytest.fixture
def tarball(tmp_path: Path) -> Path:
    path = tmp_path / "training.tar"
    path.write_bytes(b"0123456789")
    os.utime(path, ns=(NS, NS))
    return path


def h(values: dict, tarball: Path | str | None, root: Path) -> str:
    return inputs_hash(values, str(tarball) if isinstance(tarball, Path) else tarball, collection_root=root)


# --------------------------------------------------------------------------- values


def test_stable_for_same_values(root: Path, tarball: Path) -> None:
    first = h(VALUES, tarball, root)
    assert len(first) == 64
    assert first == h(dict(VALUES), tarball, root)


def test_key_order_irrelevant(root: Path, tarball: Path) -> None:
    shuffled = {"oneapi": {"path": "/opt", "version": "2024.1"}, "workers": ["node1", "node2"], "cluster_ssh_port": 2222}
    assert list(shuffled) != list(VALUES)
    assert h(VALUES, tarball, root) == h(shuffled, tarball, root)


@pytest.mark.parametrize(
    "changed",
    [
        {**VALUES, "cluster_ssh_port": 2223},
        {**VALUES, "workers": ["node2", "node1"]},  # list order is meaningful
        {**VALUES, "oneapi": {"version": "2024.2", "path": "/opt"}},
        {**VALUES, "extra": None},
        {name: value for name, value in VALUES.items() if name != "workers"},
    ],
)
def test_changes_with_a_value(root: Path, tarball: Path, changed: dict) -> None:
    assert h(changed, tarball, root) != h(VALUES, tarball, root)


def test_non_json_values_are_accepted(root: Path, tarball: Path) -> None:
    # default=str: a Path (or any object) hashes by its text.
    assert h({"p": Path("/a")}, tarball, root) == h({"p": "/a"}, tarball, root)
    assert h({"p": Path("/a")}, tarball, root) != h({"p": Path("/b")}, tarball, root)


# --------------------------------------------------------------------------- tarball


def test_tarball_size_change(root: Path, tarball: Path) -> None:
    before = h(VALUES, tarball, root)
    tarball.write_bytes(b"01234567890")
    os.utime(tarball, ns=(NS, NS))  # same mtime: only the size differs
    assert h(VALUES, tarball, root) != before


def test_tarball_mtime_change(root: Path, tarball: Path) -> None:
    before = h(VALUES, tarball, root)
    os.utime(tarball, ns=(NS, NS + 1_000_000_000))
    assert h(VALUES, tarball, root) != before
    os.utime(tarball, ns=(NS, NS))
    assert h(VALUES, tarball, root) == before


def test_tarball_content_alone_is_not_hashed(root: Path, tarball: Path) -> None:
    # By design (documented): size and mtime only, no gigabyte read.
    before = h(VALUES, tarball, root)
    tarball.write_bytes(b"abcdefghij")
    os.utime(tarball, ns=(NS, NS))
    assert h(VALUES, tarball, root) == before


def test_tarball_absent_vs_present(root: Path, tarball: Path, tmp_path: Path) -> None:
    present = h(VALUES, tarball, root)
    tarball.unlink()
    absent = h(VALUES, tarball, root)
    assert absent != present
    assert absent == h(VALUES, tmp_path / "other_missing.tar", root)  # absent is absent
    assert absent != h(VALUES, None, root)  # a missing tarball is not "no tarball"


def test_no_tarball(root: Path) -> None:
    assert h(VALUES, None, root) == h(VALUES, "", root)


def test_file_stamp(tarball: Path, tmp_path: Path) -> None:
    assert file_stamp(str(tarball)) == f"10 {NS}"
    assert file_stamp(str(tmp_path / "missing")) == "absent"


# --------------------------------------------------------------------------- collection code


@pytest.mark.parametrize("name", ["roles/ssh_mesh/tasks/main.yml", "plugins/module_utils/node_state.py"])
def test_code_size_change(root: Path, tarball: Path, name: str) -> None:
    path = root / name
    os.utime(path, ns=(NS, NS))
    before = h(VALUES, tarball, root)
    path.write_text(path.read_text() + "# more\n")
    os.utime(path, ns=(NS, NS))  # same mtime: only the size differs
    assert h(VALUES, tarball, root) != before


@pytest.mark.parametrize("name", ["roles/workers/defaults/main.yml", "plugins/modules/node_state.py"])
def test_code_same_content_other_time_is_the_same_input(root: Path, tarball: Path, name: str) -> None:
    """An installed copy of the collection (other times, same files) is the same input."""
    path = root / name
    os.utime(path, ns=(NS, NS))
    before = h(VALUES, tarball, root)
    os.utime(path, ns=(NS, NS + 10**9))
    assert h(VALUES, tarball, root) == before


@pytest.mark.parametrize("name", ["roles/workers/defaults/main.yml", "plugins/modules/node_state.py"])
def test_code_same_size_other_content_changes_it(root: Path, tarball: Path, name: str) -> None:
    path = root / name
    before = h(VALUES, tarball, root)
    text = path.read_text()
    path.write_text(text[:-1] + ("x" if text[-1:] != "x" else "y"))
    assert h(VALUES, tarball, root) != before


@pytest.mark.parametrize("name", ["roles/oneapi/tasks/main.yml", "plugins/action/new.py", "roles/ssh_mesh/files/x"])
def test_code_file_added(root: Path, tarball: Path, name: str) -> None:
    before = h(VALUES, tarball, root)
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    assert h(VALUES, tarball, root) != before


def test_code_file_removed(root: Path, tarball: Path) -> None:
    before = h(VALUES, tarball, root)
    (root / "roles/workers/defaults/main.yml").unlink()
    assert h(VALUES, tarball, root) != before


def test_code_file_renamed(root: Path, tarball: Path) -> None:
    path = root / "plugins/modules/node_state.py"
    os.utime(path, ns=(NS, NS))
    before = h(VALUES, tarball, root)
    path.rename(root / "plugins/modules/node_state2.py")
    assert h(VALUES, tarball, root) != before


def test_pycache_is_ignored(root: Path, tarball: Path) -> None:
    before = h(VALUES, tarball, root)
    cache = root / "plugins" / "module_utils" / "__pycache__"
    cache.mkdir()
    compiled = cache / "node_state.cpython-311.pyc"
    compiled.write_bytes(b"\x00" * 10)
    assert h(VALUES, tarball, root) == before
    compiled.write_bytes(b"\x00" * 20)
    os.utime(compiled, ns=(NS, NS + 5))
    assert h(VALUES, tarball, root) == before


def test_files_outside_roles_and_plugins_are_ignored(root: Path, tarball: Path) -> None:
    before = h(VALUES, tarball, root)
    (root / "README.md").write_text("docs")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("")
    assert h(VALUES, tarball, root) == before


def test_code_paths_are_relative_to_the_root(tmp_path: Path, tarball: Path) -> None:
    # The same collection at two places (same sizes and mtimes) hashes the same.
    for place in ("one", "two"):
        path = tmp_path / place / "roles" / "r" / "main.yml"
        path.parent.mkdir(parents=True)
        path.write_text("x")
        os.utime(path, ns=(NS, NS))
        (tmp_path / place / "plugins").mkdir()
    assert h(VALUES, tarball, tmp_path / "one") == h(VALUES, tarball, tmp_path / "two")


def test_missing_code_dirs(tmp_path: Path, tarball: Path, root: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert h(VALUES, tarball, empty) != h(VALUES, tarball, root)


# --------------------------------------------------------------------------- the real collection


def test_default_root_is_the_repository() -> None:
    assert provision_inputs.COLLECTION_ROOT.resolve() == REPO
    assert (REPO / "roles").is_dir() and (REPO / "plugins").is_dir()


def test_provisioning_roles() -> None:
    assert PROVISIONING_ROLES
    assert "workload" not in PROVISIONING_ROLES
    assert "launcher" not in PROVISIONING_ROLES
    assert len(set(PROVISIONING_ROLES)) == len(PROVISIONING_ROLES)
    for role in PROVISIONING_ROLES:
        assert (REPO / "roles" / role).is_dir(), role


# --------------------------------------------------------------------------- files named by a value


def test_the_same_file_content_at_two_paths_is_the_same_input(root: Path, tmp_path: Path) -> None:
    # The requirements file of the git checkout and of an installed copy of the collection.
    checkout, installed = tmp_path / "checkout" / "requirements.txt", tmp_path / "installed" / "requirements.txt"
    for path in (checkout, installed):
        path.parent.mkdir()
        path.write_text("torch==2.9.1\n")
    assert h({"host_runtime_requirements": str(checkout)}, None, root) == h(
        {"host_runtime_requirements": str(installed)}, None, root
    )


def test_an_edited_file_is_a_new_input_at_the_same_path(root: Path, tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch==2.9.1\n")
    before = h({"nested": {"files": [str(requirements)]}}, None, root)
    requirements.write_text("torch==2.9.2\n")
    assert h({"nested": {"files": [str(requirements)]}}, None, root) != before


def test_content_stamp_of_a_large_file_is_its_size_and_time(tarball: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision_inputs, "CONTENT_LIMIT", 5)
    assert provision_inputs.content_stamp(str(tarball)) == f"file 10 {NS}"


def test_only_existing_absolute_files_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    values = {"dir": str(tmp_path), "missing": str(tmp_path / "missing"), "relative": "a.txt", "port": 22}
    assert provision_inputs.by_content(values) == values
    assert provision_inputs.by_content([str(tmp_path / "a.txt")])[0].startswith("file sha256:")


# --- a variable spelled out with its default's value is the same input as leaving it out ---

OPTIONS = {
    "cluster_runtime": {"type": "str", "choices": ["container", "host"], "default": "container"},
    "cluster_ssh_port": {"type": "int", "default": 12345},
    "cluster_gpu": {"type": "bool", "default": False},
    "cluster_extra_env": {"type": "dict", "default": {}},
    "cluster_image": {"type": "str"},
}


@pytest.mark.parametrize(
    "given",
    [
        {"cluster_runtime": "container"},
        {"cluster_ssh_port": "12345"},
        {"cluster_ssh_port": 12345},
        {"cluster_gpu": "false"},
        {"cluster_gpu": "no"},
        {"cluster_extra_env": {}},
    ],
)
def test_a_value_restating_its_default_is_left_out(given: dict) -> None:
    assert without_defaults(OPTIONS, {**given, "cluster": {"runtime": "container"}}) == {"cluster": {"runtime": "container"}}


@pytest.mark.parametrize(
    "given",
    [
        {"cluster_runtime": "host"},
        {"cluster_ssh_port": 2222},
        {"cluster_gpu": True},
        {"cluster_extra_env": {"A": "1"}},
        {"cluster_image": "multinode/training:latest"},  # no default in its spec
        {"cluster_unknown": "x"},  # no spec
        {"cluster_ssh_port": "not a port"},  # refused by the spec: kept, the preflight names it
    ],
)
def test_a_value_other_than_its_default_stays(given: dict) -> None:
    assert without_defaults(OPTIONS, given) == given


def test_runs_with_and_without_a_default_spelled_out_hash_the_same(root: Path, tarball: Path) -> None:
    spelled_out = without_defaults(OPTIONS, {"cluster_runtime": "container", "cluster_ssh_port": "12345"})
    left_out = without_defaults(OPTIONS, {})
    assert inputs_hash(spelled_out, str(tarball), root) == inputs_hash(left_out, str(tarball), root)
