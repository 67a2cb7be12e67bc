# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.multinode.training.plugins.modules import hostfile

HOSTS = [
    {"name": "node1", "address": "10.0.0.1", "slots": 4},
    {"name": "node2", "address": "10.0.0.2", "slots": 4},
]


def test_writes_then_is_idempotent(tmp_path, run_module):
    path = tmp_path / "hostfile"

    first = run_module(hostfile.main, path=str(path), hosts=HOSTS, dialect="openmpi")
    assert first["changed"] is True
    assert path.read_text() == "10.0.0.1 slots=4\n10.0.0.2 slots=4\n"
    assert first["content"] == path.read_text()
    assert first["path"] == str(path)
    assert first["dialect"] == "openmpi"
    assert first["world_size"] == 8
    assert first["hosts"] == HOSTS
    assert "diff" not in first

    second = run_module(hostfile.main, path=str(path), hosts=HOSTS, dialect="openmpi")
    assert second["changed"] is False
    assert path.read_text() == "10.0.0.1 slots=4\n10.0.0.2 slots=4\n"
    assert sorted(os.listdir(tmp_path)) == ["hostfile"]  # no temporary file left behind


def test_defaults_to_intelmpi(tmp_path, run_module):
    path = tmp_path / "hostfile"
    result = run_module(hostfile.main, path=str(path), hosts=[{"name": "node1"}, {"name": "node2"}])
    assert result["changed"] is True
    assert result["dialect"] == "intelmpi"
    assert result["world_size"] == 2
    assert result["hosts"] == [
        {"name": "node1", "address": "node1", "slots": 1},
        {"name": "node2", "address": "node2", "slots": 1},
    ]
    assert path.read_text() == "node1\nnode2\n"


def test_rewrites_changed_content(tmp_path, run_module):
    path = tmp_path / "hostfile"
    path.write_text("stale\n")
    result = run_module(hostfile.main, path=str(path), hosts=HOSTS, dialect="mpich")
    assert result["changed"] is True
    assert path.read_text() == "10.0.0.1:4\n10.0.0.2:4\n"


def test_mode(tmp_path, run_module):
    path = tmp_path / "hostfile"
    assert run_module(hostfile.main, path=str(path), hosts=HOSTS, mode="0600")["changed"] is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert run_module(hostfile.main, path=str(path), hosts=HOSTS, mode="0600")["changed"] is False
    assert run_module(hostfile.main, path=str(path), hosts=HOSTS, mode="0640")["changed"] is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_check_mode_does_not_create(tmp_path, run_module):
    path = tmp_path / "hostfile"
    result = run_module(hostfile.main, path=str(path), hosts=HOSTS, mode="0600", _ansible_check_mode=True)
    assert result["changed"] is True
    assert result["content"] == "10.0.0.1\n10.0.0.2\n"
    assert not path.exists()


def test_check_mode_does_not_modify(tmp_path, run_module):
    path = tmp_path / "hostfile"
    path.write_text("stale\n")
    result = run_module(hostfile.main, path=str(path), hosts=HOSTS, _ansible_check_mode=True)
    assert result["changed"] is True
    assert path.read_text() == "stale\n"


def test_diff(tmp_path, run_module):
    path = tmp_path / "hostfile"
    created = run_module(hostfile.main, path=str(path), hosts=HOSTS, dialect="mpich", _ansible_diff=True)
    assert created["diff"] == {
        "before": "",
        "after": "10.0.0.1:4\n10.0.0.2:4\n",
        "before_header": str(path),
        "after_header": str(path),
    }

    updated = run_module(hostfile.main, path=str(path), hosts=HOSTS[:1], dialect="mpich", _ansible_diff=True)
    assert updated["changed"] is True
    assert updated["diff"]["before"] == "10.0.0.1:4\n10.0.0.2:4\n"
    assert updated["diff"]["after"] == "10.0.0.1:4\n"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"hosts": [{"name": "node1", "slots": 0}]}, "node1"),
        ({"hosts": [{"name": "node1"}, {"name": "node1"}]}, "node1"),
        ({"hosts": [{"name": "node1", "address": "10.0.0.1"}, {"name": "node2", "address": "10.0.0.1"}]}, "node2"),
        ({"hosts": [{"name": "node1", "slots": 4}, {"name": "node2", "slots": 2}]}, "node2"),
    ],
)
def test_invalid_hosts_fail(tmp_path, run_module, args, named):
    path = tmp_path / "hostfile"
    result = run_module(hostfile.main, path=str(path), **args)
    assert result["failed"] is True
    assert named in result["msg"]
    assert not path.exists()


def test_empty_host_list_fails(tmp_path, run_module):
    result = run_module(hostfile.main, path=str(tmp_path / "hostfile"), hosts=[])
    assert result["failed"] is True
    assert "empty" in result["msg"]


def test_missing_directory_fails(tmp_path, run_module):
    result = run_module(hostfile.main, path=str(tmp_path / "missing" / "hostfile"), hosts=HOSTS)
    assert result["failed"] is True
    assert "missing" in result["msg"]
