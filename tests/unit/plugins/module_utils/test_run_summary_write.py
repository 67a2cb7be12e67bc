# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of run_report.run_summary, collected_outputs and write_json: summarizing a collected run directory
(what the run_summary action does) and writing summary.json."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils.run_report import collected_outputs, run_summary, write_json

T0 = 1_000.0
NAMES = ["node1", "node2"]
NODES = ["10.0.0.1", "10.0.0.2"]
RANK_NODES = {0: "node1", 1: "node1", 2: "node2", 3: "node2"}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def json_lines(*objects: dict[str, Any]) -> str:
    return "".join(json.dumps(obj) + "\n" for obj in objects)


def rank_status(rank: int, code: int = 0) -> dict[str, Any]:
    """What the rank wrapper writes to status/rank-<N>.json."""
    node = RANK_NODES[rank]
    return {"rank": rank, "node": node, "host": node, "started": T0 + 5 + rank, "ended": T0 + 30 + rank, "code": code, "signal": None, "stopped": False}


def collected_run(run_dir: Path, failing_rank: int | None = None) -> Path:
    """A torchrun run of 4 ranks on 2 nodes as job_collect leaves it: status files, the launcher's events, outputs."""
    for rank, node in RANK_NODES.items():
        code = 1 if rank == failing_rank else 0
        write(run_dir / "nodes" / node / "status" / f"rank-{rank}.json", json.dumps(rank_status(rank, code)))
        write(run_dir / "nodes" / node / "logs" / f"rank-{rank}.log", f"rank {rank} says hello\n")
    failed_node = RANK_NODES[failing_rank] if failing_rank is not None else None
    launcher_code = 1 if failing_rank is not None else 0
    events = [{"event": "launch", "launcher": "torchrun", "time": T0}]
    events += [{"event": "ssh_check", "node": node, "code": 0, "time": T0 + 1} for node in NAMES]
    events += [
        {"event": "node_exit", "node": node, "code": 1 if node == failed_node else 0, "after_abort": False, "time": T0 + 40}
        for node in NAMES
    ]
    events.append({"event": "launcher_exit", "code": launcher_code, "time": T0 + 41})
    write(run_dir / "nodes" / "node1" / "logs" / "launcher.log", "+ starting\n" + json_lines(*events))
    write(run_dir / "nodes" / "node1" / "outputs" / "model.pt", "weights")
    write(run_dir / "nodes" / "node2" / "work" / "metrics.csv", "a,b\n")
    return run_dir


def params(run_dir: Path, **changes: Any) -> dict[str, Any]:
    """The run_summary action's arguments, after its argument spec filled the defaults."""
    values: dict[str, Any] = {
        "run_dir": str(run_dir),
        "job_id": "job-1",
        "job_name": "",
        "resumed_from": "",
        "launcher": "torchrun",
        "nodes": NODES,
        "node_names": NAMES,
        "world_size": 4,
        "launcher_exit_code": 0,
        "timed_out": False,
        "worker_states": {},
        "phase_stats": {},
        "settings": {},
    }
    return {**values, **changes}


# --------------------------------------------------------------------------- write_json


def test_write_json_writes_sorted_indented_json_ending_in_a_newline(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    data = {"status": "succeeded", "b": [1, 2], "a": {"z": 1, "y": None}}

    write_json(path, data)

    text = path.read_text()
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert text.startswith('{\n  "a": {\n    "y": null,\n    "z": 1\n  },\n  "b": [')
    assert json.loads(text) == data


def test_write_json_is_readable_by_its_owner_only_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"

    write_json(path, {"a": 1})

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["summary.json"]


def test_write_json_creates_the_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "job-1" / "summary.json"

    write_json(path, {"a": 1})

    assert json.loads(path.read_text()) == {"a": 1}
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_write_json_replaces_an_existing_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text('{"old": "a much longer earlier summary than the new one"}\n')
    path.chmod(0o644)

    write_json(path, {"new": 1})

    assert path.read_text() == '{\n  "new": 1\n}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["summary.json"]


# --------------------------------------------------------------------------- collected_outputs


def test_collected_outputs_lists_the_files_of_outputs_and_work_relative_to_the_run_dir(tmp_path: Path) -> None:
    for name in (
        "nodes/node1/outputs/model.pt",
        "nodes/node1/outputs/checkpoints/epoch-1.pt",
        "nodes/node1/work/result.json",
        "nodes/node1/logs/rank-0.log",
        "nodes/node1/status/rank-0.json",
        "nodes/node2/work/.hidden",
        "nodes/node3/outputs/not_a_node_of_the_run.txt",
    ):
        write(tmp_path / name, "x")
    (tmp_path / "nodes" / "node2" / "outputs" / "empty_dir").mkdir(parents=True)

    assert collected_outputs(tmp_path, NAMES) == [
        "nodes/node1/outputs/checkpoints/epoch-1.pt",
        "nodes/node1/outputs/model.pt",
        "nodes/node1/work/result.json",
        "nodes/node2/work/.hidden",
    ]


def test_collected_outputs_of_a_run_that_collected_none(tmp_path: Path) -> None:
    assert collected_outputs(tmp_path / "absent", NAMES) == []


# --------------------------------------------------------------------------- run_summary


def test_run_summary_of_a_successful_run(tmp_path: Path) -> None:
    run_dir = collected_run(tmp_path / "run")
    settings = {"omp_num_threads": 8}

    summary = run_summary(
        params(run_dir, job_name="mnist", phase_stats={"provision": {"seconds": 12.345, "changed": 3}}, settings=settings)
    )

    assert summary["status"] == "succeeded"
    assert summary["failure_reasons"] == []
    assert summary["world_size"] == 4
    assert summary["job_id"] == "job-1"
    assert summary["job_name"] == "mnist"
    assert summary["resumed_from"] is None
    assert summary["nodes"] == NODES
    assert summary["ranks_started"] == [0, 1, 2, 3]
    assert summary["rank_exit_codes"] == {"0": 0, "1": 0, "2": 0, "3": 0}
    assert summary["rank_nodes"] == {"0": "node1", "1": "node1", "2": "node2", "3": "node2"}
    assert summary["node_exit_codes"] == {"node1": 0, "node2": 0}
    assert summary["outputs"] == ["nodes/node1/outputs/model.pt", "nodes/node2/work/metrics.csv"]
    assert summary["provision_changed"] == 3
    assert summary["phases"] == {"provision": 12.35, "launch": 8.0, "train": 25.0}
    assert summary["settings"] == settings


def test_run_summary_names_the_rank_whose_status_has_code_1(tmp_path: Path) -> None:
    run_dir = collected_run(tmp_path / "run", failing_rank=2)

    summary = run_summary(params(run_dir, launcher_exit_code=1, resumed_from="/ckpt/epoch-3"))

    assert summary["status"] == "failed"
    assert summary["failure_reasons"][0] == "rank 2 on node2 exited 1"
    assert summary["failure_reasons"] == ["rank 2 on node2 exited 1", "node2: torchrun agent exited 1", "launcher exited 1"]
    assert summary["rank_exit_codes"] == {"0": 0, "1": 0, "2": 1, "3": 0}
    assert summary["resumed_from"] == "/ckpt/epoch-3"
    assert summary["job_name"] is None


def test_run_summary_of_a_run_where_a_rank_never_started(tmp_path: Path) -> None:
    run_dir = collected_run(tmp_path / "run")
    (run_dir / "nodes" / "node2" / "status" / "rank-3.json").unlink()

    summary = run_summary(params(run_dir))

    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["rank 3 never started"]


def test_run_summary_result_is_what_write_json_can_write(tmp_path: Path) -> None:
    run_dir = collected_run(tmp_path / "run")
    summary = run_summary(params(run_dir))

    write_json(run_dir / "summary.json", summary)

    assert json.loads((run_dir / "summary.json").read_text()) == summary


def slurm(state: str, exit_code: str) -> dict[str, str]:
    return {"type": "slurm", "job_id": "42", "state": state, "exit_code": exit_code, "node_list": "node[1-3]"}


def test_run_summary_records_the_scheduler_job(tmp_path: Path) -> None:
    summary = run_summary(params(collected_run(tmp_path / "run"), scheduler=slurm("COMPLETED", "0:0")))
    assert summary["status"] == "succeeded"
    assert summary["scheduler"] == slurm("COMPLETED", "0:0")


def test_run_summary_without_a_scheduler_records_none(tmp_path: Path) -> None:
    assert run_summary(params(collected_run(tmp_path / "run")))["scheduler"] is None


def test_a_scheduler_job_that_did_not_complete_fails_the_run_naming_it(tmp_path: Path) -> None:
    summary = run_summary(params(collected_run(tmp_path / "run"), scheduler=slurm("NODE_FAIL", "0:0")))
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["slurm job 42 ended NODE_FAIL (exit code 0:0)"]


def test_a_failed_rank_stays_the_first_reason_under_a_scheduler(tmp_path: Path) -> None:
    run_dir = collected_run(tmp_path / "run", failing_rank=1)
    summary = run_summary(params(run_dir, launcher_exit_code=1, scheduler=slurm("FAILED", "1:0")))
    assert summary["status"] == "failed"
    assert "rank 1" in summary["failure_reasons"][0]
    assert summary["failure_reasons"][-1] == "slurm job 42 ended FAILED (exit code 1:0)"


# --------------------------------------------------------------------------- the schema (run_schema.py)

# What the launcher role passes as settings (roles/launcher/tasks/attempt.yml), for one node.
ROLE_SETTINGS = {
    "runtime": "container",
    "backend": "gloo",
    "hostfile_dialect": "torchrun",
    "script": "train.py",
    "script_args": ["--epochs", 3],
    "data_dir": "",
    "requirements": {},
    "health": {},
    "interfaces": {"node1": "eth0"},
    "tuning": {"node1": {"slots": 2}},
    "topology": {"node1": {"sockets": 1}},
    "devices": {"node1": []},
}


@pytest.mark.parametrize(
    ("failing_rank", "changes"),
    [
        (None, {"job_name": "mnist", "phase_stats": {"provision": {"seconds": 12.3, "changed": 3}}}),
        (2, {"launcher_exit_code": 1, "resumed_from": "/ckpt/epoch-3"}),
        (None, {"timed_out": True, "launcher_exit_code": 124}),
        (None, {"scheduler": slurm("COMPLETED", "0:0")}),
        (1, {"launcher_exit_code": 1, "scheduler": slurm("FAILED", "1:0")}),
    ],
)
def test_every_summary_of_an_ssh_run_has_the_runs_schema(
    tmp_path: Path, failing_rank: int | None, changes: dict[str, Any], summary_problems: Any
) -> None:
    summary = run_summary(params(collected_run(tmp_path / "run", failing_rank=failing_rank), settings=ROLE_SETTINGS, **changes))
    # the run_summary action's bookkeeping (plugins/action/run_summary.py)
    summary.update(attempt=1, restarts=[])
    assert summary_problems(summary) == []
    assert summary["settings"]["script_args"] == ["--epochs", "3"]
    assert summary["timed_out"] is changes.get("timed_out", False)


def test_the_secret_values_of_a_job_s_environment_never_reach_summary_json(tmp_path: Path) -> None:
    env = {"HF_TOKEN": "s3cr3t-value", "MY_NOTE": "s3cr3t-value-2", "KMP_BLOCKTIME": "1"}
    settings = {**ROLE_SETTINGS, "tuning": {"node1": {"slots": 2, "env": env}, "node2": {"slots": 2, "env": env}}}
    summary = run_summary(params(collected_run(tmp_path / "run"), settings=settings, secret_env_names=["MY_NOTE"]))
    write_json(tmp_path / "run" / "summary.json", summary)
    written = (tmp_path / "run" / "summary.json").read_bytes()
    assert b"s3cr3t-value" not in written
    shown = json.loads(written)["settings"]["tuning"]["node2"]["env"]
    assert shown == {"HF_TOKEN": "***", "MY_NOTE": "***", "KMP_BLOCKTIME": "1"}, "the names stay, the values go"


def test_a_summary_that_departs_from_the_schema_is_caught(tmp_path: Path, summary_problems: Any) -> None:
    summary = run_summary(params(collected_run(tmp_path / "run"), settings=ROLE_SETTINGS))
    summary["status"] = "ok"
    summary["scheduler"] = {"scheduler": "slurm"}
    del summary["timed_out"]
    found = summary_problems(summary)
    assert any(problem.startswith("status: 'ok' is not one of") for problem in found)
    assert any(problem.startswith("scheduler: ") for problem in found)
    assert any("'timed_out' is a required property" in problem for problem in found)
