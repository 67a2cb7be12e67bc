# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import dataclasses
import os
import stat

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import HostEntry
from ansible_collections.multinode.training.plugins.module_utils.launch import LaunchSpec, build
from ansible_collections.multinode.training.plugins.module_utils.launch_script import render_launch_script
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
    assert list(launch_script.SPEC_OPTIONS) == list(fields)
    for name, option in launch_script.SPEC_OPTIONS.items():
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
