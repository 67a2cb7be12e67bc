# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch_script module's hostfile_dialect option (the hostfile written in the same run), and the SSH
multiplexing of the torchrun launch script it renders."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Any, Callable

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import HostfileError, normalize_hosts, render_hostfile
from ansible_collections.multinode.training.plugins.module_utils.launch_script import SSH_MULTIPLEXING
from ansible_collections.multinode.training.plugins.modules import launch_script

RunModule = Callable[..., dict[str, Any]]
HOSTS = [
    {"name": "node1", "address": "10.0.0.1", "slots": 2},
    {"name": "node2", "address": "10.0.0.2", "slots": 2},
    {"name": "node3", "address": "10.0.0.3", "slots": 2},
]
SPEC_ARGS = {
    "launcher": "torchrun",
    "hosts": HOSTS,
    "launcher_address": "10.0.0.1",
    "iface": "eth1",
    "ssh_port": 2222,
    "job_id": "job-1",
    "command": ["bash", "/work/jobs/job-1/rank.sh", "python3", "train.py"],
    "omp_num_threads": 8,
}
DIRS = {"job_dir": "/work/jobs/job-1", "work_dir": "/work/jobs/job-1/work"}


def run(run_module: RunModule, tmp_path: Path, **changes: Any) -> dict[str, Any]:
    """The module writing launch.sh and (with hostfile_dialect) the hostfile into tmp_path; owner/group omitted."""
    args = {"path": str(tmp_path / "launch.sh"), "hostfile_path": str(tmp_path / "hostfile"), **DIRS, **SPEC_ARGS}
    return run_module(launch_script.main, **{**args, **changes})


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("dialect", ["openmpi", "mpich", "intelmpi", "deepspeed"])
def test_hostfile_is_written_with_mode_0640_and_returned(run_module: RunModule, tmp_path: Path, dialect: str) -> None:
    expected = render_hostfile(normalize_hosts(HOSTS), dialect)

    result = run(run_module, tmp_path, hostfile_dialect=dialect, mode="0750")

    assert result["changed"] is True
    assert result["hostfile"] == expected
    assert (tmp_path / "hostfile").read_text() == expected
    assert mode_of(tmp_path / "hostfile") == 0o640
    assert mode_of(tmp_path / "launch.sh") == 0o750
    assert sorted(os.listdir(tmp_path)) == ["hostfile", "launch.sh"]  # no temporary file left behind


def test_openmpi_hostfile_content(run_module: RunModule, tmp_path: Path) -> None:
    result = run(run_module, tmp_path, hostfile_dialect="openmpi")

    assert result["hostfile"] == "10.0.0.1 slots=2\n10.0.0.2 slots=2\n10.0.0.3 slots=2\n"


def test_second_identical_run_changes_nothing(run_module: RunModule, tmp_path: Path) -> None:
    run(run_module, tmp_path, hostfile_dialect="mpich", mode="0750")

    second = run(run_module, tmp_path, hostfile_dialect="mpich", mode="0750")

    assert second["changed"] is False
    assert second["hostfile"] == "10.0.0.1:2\n10.0.0.2:2\n10.0.0.3:2\n"


def test_only_the_hostfile_changing_makes_the_run_changed(run_module: RunModule, tmp_path: Path) -> None:
    run(run_module, tmp_path, hostfile_dialect="openmpi", mode="0750")

    result = run(run_module, tmp_path, hostfile_dialect="mpich", mode="0750")

    assert result["changed"] is True
    assert (tmp_path / "hostfile").read_text() == "10.0.0.1:2\n10.0.0.2:2\n10.0.0.3:2\n"


def test_a_hostfile_with_another_mode_is_fixed(run_module: RunModule, tmp_path: Path) -> None:
    run(run_module, tmp_path, hostfile_dialect="openmpi", mode="0750")
    (tmp_path / "hostfile").chmod(0o666)

    result = run(run_module, tmp_path, hostfile_dialect="openmpi", mode="0750")

    assert result["changed"] is True
    assert mode_of(tmp_path / "hostfile") == 0o640
    assert mode_of(tmp_path / "launch.sh") == 0o750


def test_check_mode_writes_no_hostfile(run_module: RunModule, tmp_path: Path) -> None:
    result = run(run_module, tmp_path, hostfile_dialect="openmpi", _ansible_check_mode=True)

    assert result["changed"] is True
    assert result["hostfile"] == "10.0.0.1 slots=2\n10.0.0.2 slots=2\n10.0.0.3 slots=2\n"
    assert os.listdir(tmp_path) == []


def test_without_hostfile_dialect_no_hostfile_is_written_or_returned(run_module: RunModule, tmp_path: Path) -> None:
    result = run(run_module, tmp_path, mode="0750")

    assert result["changed"] is True
    assert "hostfile" not in result
    assert os.listdir(tmp_path) == ["launch.sh"]


def test_a_hostfile_the_dialect_cannot_express_fails_cleanly(run_module: RunModule, tmp_path: Path) -> None:
    hosts = [HOSTS[0], HOSTS[1], {**HOSTS[2], "slots": 4}]

    result = run(run_module, tmp_path, hosts=hosts, hostfile_dialect="intelmpi")

    assert result["failed"] is True
    assert "-ppn" in result["msg"]


# --------------------------------------------------------------------------- SSH multiplexing


def test_torchrun_script_multiplexes_ssh_on_the_check_and_every_agent_line(run_module: RunModule, tmp_path: Path) -> None:
    ssh = shlex.join(["ssh", "-p", "2222", *SSH_MULTIPLEXING])
    assert "ControlMaster=auto" in ssh and "ControlPersist=" in ssh

    lines = run(run_module, tmp_path)["content"].splitlines()

    check_lines = [line for line in lines if line.startswith("check() {")]
    assert len(check_lines) == 1
    assert check_lines[0].startswith(f'check() {{ {ssh} "$2" true ')
    agent_lines = [line for line in lines if line.startswith("ssh ")]
    assert [line.split()[len(ssh.split())] for line in agent_lines] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    for line in agent_lines:
        assert line.startswith(f"{ssh} ")
        assert "torchrun" in line
    content = "\n".join(lines)
    assert content.count("ssh -p 2222") == content.count(ssh)  # the abort's kill too: no ssh without it
