# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from typing import Any, Callable

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import HostEntry, HostfileError, normalize_hosts, render_hostfile
from ansible_collections.multinode.training.plugins.module_utils import launch_files
from ansible_collections.multinode.training.plugins.module_utils.launch import LaunchSpec, build
from ansible_collections.multinode.training.plugins.module_utils.launch_script import SSH_MULTIPLEXING, render_launch_script
from ansible_collections.multinode.training.plugins.modules import launch_script

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
    "hostfile_path": "/work/jobs/job-1/hostfile",
    "ssh_port": 2222,
    "job_id": "job-1",
    "command": ["bash", "/work/jobs/job-1/rank.sh", "python3", "train.py"],
    "omp_num_threads": 8,
}
DIRS = {"job_dir": "/work/jobs/job-1", "work_dir": "/work/jobs/job-1/work"}


def expected(**changes) -> LaunchSpec:
    values = {**SPEC_ARGS, "hosts": [HostEntry(**host) for host in HOSTS], **changes}
    return LaunchSpec(**values)


def run(run_module, path, **changes):
    return run_module(launch_script.main, path=str(path), **DIRS, **{**SPEC_ARGS, **changes})


def test_options_mirror_launch_spec():
    fields = {field.name: field for field in dataclasses.fields(LaunchSpec)}
    assert list(launch_files.SPEC_OPTIONS) == list(fields)
    for name, option in launch_files.SPEC_OPTIONS.items():
        default = fields[name].default
        if fields[name].default_factory is not dataclasses.MISSING:
            default = fields[name].default_factory()
        if default is dataclasses.MISSING:
            assert option.get("required") is True, name
        else:
            assert option.get("default") == default, name


def test_writes_then_is_idempotent(tmp_path, run_module):
    path = tmp_path / "launch.sh"

    first = run(run_module, path, mode="0750")
    assert first["changed"] is True
    assert path.read_text() == render_launch_script(expected(), **DIRS)
    assert first["content"] == path.read_text()
    assert first["path"] == str(path)
    assert first["argvs"] == build(expected())
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert "diff" not in first

    second = run(run_module, path, mode="0750")
    assert second["changed"] is False
    assert sorted(os.listdir(tmp_path)) == ["launch.sh"]  # no temporary file left behind


def test_passes_the_options_to_the_builder_with_env_values_as_strings(tmp_path, run_module):
    changes = {"launcher": "mpirun", "master_port": 29600, "ssh_port": 22}
    result = run(run_module, tmp_path / "launch.sh", env={"KMP_BLOCKTIME": 1, "FOO": "a b"}, **changes)
    assert result["argvs"] == build(expected(env={"KMP_BLOCKTIME": "1", "FOO": "a b"}, **changes))
    assert '>"$logs/mpirun.log"' in result["content"]


def test_rewrites_changed_content(tmp_path, run_module):
    path = tmp_path / "launch.sh"
    run(run_module, path)
    result = run(run_module, path, launcher="mpiexec", _ansible_diff=True)
    assert result["changed"] is True
    assert path.read_text() == render_launch_script(expected(launcher="mpiexec"), **DIRS)
    assert result["diff"]["before"] == render_launch_script(expected(), **DIRS)
    assert result["diff"]["after"] == path.read_text()


def test_check_mode_does_not_write(tmp_path, run_module):
    path = tmp_path / "launch.sh"
    result = run(run_module, path, _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True
    assert result["content"] == render_launch_script(expected(), **DIRS)
    assert result["diff"]["before"] == ""
    assert not path.exists()

    path.write_text("stale\n")
    assert run(run_module, path, _ansible_check_mode=True)["changed"] is True
    assert path.read_text() == "stale\n"


def test_ipexrun_names_the_host_that_is_first_instead_of_the_launcher(tmp_path, run_module):
    path = tmp_path / "launch.sh"
    result = run(run_module, path, launcher="ipexrun", hosts=[HOSTS[1], HOSTS[0], HOSTS[2]])
    assert result["failed"] is True
    assert "first host of its hostfile, but that is 'node2' (10.0.0.2)" in result["msg"]
    assert not path.exists()


@pytest.fixture
def warned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The module's warnings. (Run in the test's process, where Ansible's controller is imported, AnsibleModule.warn
    hands them to the controller's display instead of the result.)"""
    messages: list[str] = []
    monkeypatch.setattr(launch_script.AnsibleModule, "warn", lambda module, message: messages.append(message))
    return messages


def test_ipexrun_still_works_and_warns_that_it_is_legacy(tmp_path, run_module, warned):
    result = run(run_module, tmp_path / "launch.sh", launcher="ipexrun")
    assert result["changed"] is True
    assert result["argvs"] == build(expected(launcher="ipexrun"))
    assert warned == [
        "ipexrun is legacy: Intel Extension for PyTorch stopped after 2.8 and torch-ccl (backend ccl) is end of life;"
        " on PyTorch XPU builds (2.8 and later) run torchrun or mpiexec with launcher_backend=xccl"
    ]


@pytest.mark.parametrize("launcher", ["torchrun", "mpiexec", "mpirun"])
def test_other_launchers_warn_of_nothing(tmp_path, run_module, warned, launcher):
    assert run(run_module, tmp_path / "launch.sh", launcher=launcher)["changed"] is True
    assert warned == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hosts": [HOSTS[0], {**HOSTS[1], "address": "10.0.0.1"}]}, "share the address '10.0.0.1'"),
        ({"omp_num_threads": 0}, "omp_num_threads must be >= 1, got 0"),
        ({"hosts": [{"name": "node 1", "address": "10.0.0.1"}]}, "node name 'node 1' cannot name a log file"),
    ],
)
def test_invalid_spec_fails(tmp_path, run_module, changes, message):
    result = run(run_module, tmp_path / "launch.sh", **changes)
    assert result["failed"] is True
    assert message in result["msg"]


def test_expands_the_placeholders_of_the_command(tmp_path, run_module):
    command = ["python3", "train.py", "--out={output_dir}", "--resume", "{resume_from}", '{"lr": 1}', "{other}"]
    placeholders = {"output_dir": "/work/jobs/job-1/outputs", "resume_from": "/ck/epoch-3.pt"}
    result = run(run_module, tmp_path / "launch.sh", command=command, placeholders=placeholders)
    assert result["argvs"][0][-6:] == [
        "train.py",
        "--out=/work/jobs/job-1/outputs",
        "--resume",
        "/ck/epoch-3.pt",
        '{"lr": 1}',
        "{other}",
    ]


def test_refuses_an_unknown_placeholder_value(tmp_path, run_module):
    result = run(run_module, tmp_path / "launch.sh", placeholders={"outdir": "/x"})
    assert result["failed"] is True
    assert "unknown placeholders outdir" in result["msg"]


def test_stages_the_given_paths(tmp_path, run_module):
    result = run(run_module, tmp_path / "launch.sh", stage_paths=["/ck/named job/epoch-3.pt"])
    assert "tar -C '/ck/named job' -cf - epoch-3.pt" in result["content"]


# ---------------------------------------------------------------- hostfile_dialect and container: one module run

RunModule = Callable[..., dict[str, Any]]


def run_in(run_module: RunModule, tmp_path: Path, **changes: Any) -> dict[str, Any]:
    """The module writing launch.sh and (with hostfile_dialect) the hostfile into tmp_path; owner/group omitted."""
    return run(run_module, tmp_path / "launch.sh", **{"hostfile_path": str(tmp_path / "hostfile"), **changes})


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("dialect", ["openmpi", "mpich", "intelmpi", "deepspeed"])
def test_hostfile_is_written_with_mode_0640_and_returned(run_module: RunModule, tmp_path: Path, dialect: str) -> None:
    expected = render_hostfile(normalize_hosts(HOSTS), dialect)

    result = run_in(run_module, tmp_path, hostfile_dialect=dialect, mode="0750")

    assert result["changed"] is True
    assert result["hostfile"] == expected
    assert (tmp_path / "hostfile").read_text() == expected
    assert mode_of(tmp_path / "hostfile") == 0o640
    assert mode_of(tmp_path / "launch.sh") == 0o750
    assert sorted(os.listdir(tmp_path)) == ["hostfile", "launch.sh"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("launcher", "dialect"), [("torchrun", "intelmpi"), ("mpiexec", "intelmpi"), ("mpirun", "openmpi"), ("deepspeed", "deepspeed")]
)
def test_auto_writes_the_dialect_the_launcher_reads(run_module: RunModule, tmp_path: Path, launcher: str, dialect: str) -> None:
    result = run_in(run_module, tmp_path, launcher=launcher, hostfile_dialect="auto", ssh_port=22)

    assert result["hostfile_dialect"] == dialect
    assert result["hostfile"] == render_hostfile(normalize_hosts(HOSTS), dialect)


def test_openmpi_hostfile_content(run_module: RunModule, tmp_path: Path) -> None:
    result = run_in(run_module, tmp_path, hostfile_dialect="openmpi")

    assert result["hostfile"] == "10.0.0.1 slots=2\n10.0.0.2 slots=2\n10.0.0.3 slots=2\n"


def test_second_identical_run_changes_nothing(run_module: RunModule, tmp_path: Path) -> None:
    run_in(run_module, tmp_path, hostfile_dialect="mpich", mode="0750")

    second = run_in(run_module, tmp_path, hostfile_dialect="mpich", mode="0750")

    assert second["changed"] is False
    assert second["hostfile"] == "10.0.0.1:2\n10.0.0.2:2\n10.0.0.3:2\n"


def test_only_the_hostfile_changing_makes_the_run_changed(run_module: RunModule, tmp_path: Path) -> None:
    run_in(run_module, tmp_path, hostfile_dialect="openmpi", mode="0750")

    result = run_in(run_module, tmp_path, hostfile_dialect="mpich", mode="0750")

    assert result["changed"] is True
    assert (tmp_path / "hostfile").read_text() == "10.0.0.1:2\n10.0.0.2:2\n10.0.0.3:2\n"


def test_a_hostfile_with_another_mode_is_fixed(run_module: RunModule, tmp_path: Path) -> None:
    run_in(run_module, tmp_path, hostfile_dialect="openmpi", mode="0750")
    (tmp_path / "hostfile").chmod(0o666)

    result = run_in(run_module, tmp_path, hostfile_dialect="openmpi", mode="0750")

    assert result["changed"] is True
    assert mode_of(tmp_path / "hostfile") == 0o640
    assert mode_of(tmp_path / "launch.sh") == 0o750


def test_check_mode_writes_no_hostfile(run_module: RunModule, tmp_path: Path) -> None:
    result = run_in(run_module, tmp_path, hostfile_dialect="openmpi", _ansible_check_mode=True)

    assert result["changed"] is True
    assert result["hostfile"] == "10.0.0.1 slots=2\n10.0.0.2 slots=2\n10.0.0.3 slots=2\n"
    assert os.listdir(tmp_path) == []


def test_without_hostfile_dialect_no_hostfile_is_written_or_returned(run_module: RunModule, tmp_path: Path) -> None:
    result = run_in(run_module, tmp_path, mode="0750")

    assert result["changed"] is True
    assert "hostfile" not in result
    assert os.listdir(tmp_path) == ["launch.sh"]


def test_a_hostfile_the_dialect_cannot_express_fails_cleanly(run_module: RunModule, tmp_path: Path) -> None:
    hosts = [HOSTS[0], HOSTS[1], {**HOSTS[2], "slots": 4}]

    result = run_in(run_module, tmp_path, hosts=hosts, hostfile_dialect="intelmpi")

    assert result["failed"] is True
    assert "-ppn" in result["msg"]


# --------------------------------------------------------------------------- SSH multiplexing


def test_torchrun_script_multiplexes_ssh_on_the_check_and_every_agent_line(run_module: RunModule, tmp_path: Path) -> None:
    ssh = f"ssh -p 2222 {SSH_MULTIPLEXING}"

    lines = run_in(run_module, tmp_path)["content"].splitlines()

    assert '  ssh_mux=(-o ControlMaster=auto -o "ControlPath=$ssh_mux_dir/%C" -o ControlPersist=10)' in lines
    check_lines = [line for line in lines if line.startswith("check() {")]
    assert len(check_lines) == 1
    assert check_lines[0].startswith(f'check() {{ {ssh} -- "$2" true ')
    agent_lines = [line for line in lines if line.startswith("ssh ")]
    assert [line.split()[len(ssh.split()) + 1] for line in agent_lines] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    for line in agent_lines:
        assert line.startswith(f"{ssh} ")
        assert "torchrun" in line
    content = "\n".join(lines)
    assert content.count("ssh -p 2222") == content.count(ssh)  # the abort's kill too: no ssh without it


CONTAINER = {"name": "job-launcher", "image": "img:latest", "command": ["bash", "launch.sh"]}


def test_check_mode_starts_no_container(run_module: RunModule, tmp_path: Path) -> None:
    result = run_in(run_module, tmp_path, container={**CONTAINER, "docker_socket": str(tmp_path / "none.sock")}, _ansible_check_mode=True)
    assert "container_id" not in result
    assert not result.get("failed")


def test_a_container_that_cannot_start_fails_naming_the_written_script(run_module: RunModule, tmp_path: Path) -> None:
    result = run_in(run_module, tmp_path, container={**CONTAINER, "docker_socket": str(tmp_path / "none.sock")})
    assert result["failed"] is True
    assert "the launch script is written, but its container did not start" in result["msg"]
    assert (tmp_path / "launch.sh").exists()
