"""TensorBoard and MLflow, for real: event files read back with tensorboard's own reader, an MLflow run in a SQLite
store (no server) read back with MLflow's client, a resumed job continuing the same MLflow run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.multinode.training.plugins.module_utils.run_report import run_summary, write_json
from mlflow.tracking import MlflowClient
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from multinode_training.__main__ import main
from multinode_training.trackers import JOB_IDS_TAG, record_run


def finished_run(runs: Path, job_id: str, epochs: range, job_name: str = "cifar") -> Path:
    """A run directory as the launcher leaves it: summary.json and progress.jsonl with one epoch record each."""
    run_dir = runs / job_id
    run_dir.mkdir(parents=True)
    records = [
        {
            "kind": "epoch",
            "rank": 0,
            "node": "node1",
            "epoch": epoch,
            "loss": round(2.0 / epoch, 4),
            "samples_per_s": 100.0 + epoch,
            "time": 1000.0 + epoch,
        }
        for epoch in epochs
    ]
    (run_dir / "progress.jsonl").write_text("".join(f"{json.dumps(record)}\n" for record in records))
    summary = {
        "job_id": job_id,
        "job_name": job_name,
        "status": "succeeded",
        "launcher": "torchrun",
        "world_size": 3,
        "nodes": ["a", "b", "c"],
        "test_accuracy": 0.9,
        "failure_reasons": [],
        "phases": {"train": 12.0},
        "started_at": 1000.0,
        "settings": {"script": "train.py", "script_args": ["--epochs", "5"], "runtime": "container", "backend": "gloo"},
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def test_tensorboard_reads_every_epochs_loss_and_each_ranks_throughput(tmp_path: Path) -> None:
    run_dir = finished_run(tmp_path / "runs", "job-1", range(1, 5))
    written = record_run(run_dir)
    assert written["tensorboard"] == str(run_dir / "tensorboard")
    events = EventAccumulator(written["tensorboard"])
    events.Reload()
    loss = events.Scalars("loss")
    assert [(event.step, round(event.value, 4)) for event in loss] == [
        (epoch, round(2.0 / epoch, 4)) for epoch in range(1, 5)
    ]
    assert [event.value for event in events.Scalars("samples_per_s/rank0")] == [101.0, 102.0, 103.0, 104.0]
    assert [event.step for event in events.Scalars("test_accuracy")] == [4]
    record_run(run_dir)  # written again: the same run, the same events, not twice over
    again = EventAccumulator(written["tensorboard"])
    again.Reload()
    assert len(again.Scalars("loss")) == 4


def test_a_resumed_job_continues_its_mlflow_run_in_a_sqlite_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working directory of whoever logs gets nothing
    (tmp_path / "store").mkdir()
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    first = finished_run(tmp_path / "runs", "20261127-100000-torchrun", range(1, 4))
    resumed = finished_run(tmp_path / "runs", "20261127-110000-torchrun", range(4, 6))
    first_id = record_run(first, mlflow_tracking_uri=uri)["mlflow"]
    second_id = record_run(resumed, mlflow_tracking_uri=uri)["mlflow"]
    assert first_id == second_id, "the resumed job continues the MLflow run of its name"

    client = MlflowClient(tracking_uri=uri)
    [run] = client.search_runs([client.get_experiment_by_name("multinode-training").experiment_id])
    assert run.info.run_name == "cifar" and run.info.status == "FINISHED"
    assert run.data.params == {
        "launcher": "torchrun",
        "world_size": "3",
        "nodes": "3",
        "script": "train.py",
        "script_args": "--epochs 5",
        "runtime": "container",
        "backend": "gloo",
    }
    history = client.get_metric_history(run.info.run_id, "loss")
    assert sorted((metric.step, metric.value) for metric in history) == [
        (epoch, round(2.0 / epoch, 4)) for epoch in range(1, 6)
    ]
    assert run.data.tags[JOB_IDS_TAG] == "20261127-100000-torchrun 20261127-110000-torchrun"
    artifacts = {
        entry.path
        for job in ("20261127-100000-torchrun", "20261127-110000-torchrun")
        for entry in client.list_artifacts(run.info.run_id, f"jobs/{job}")
    }
    assert not list(elsewhere.iterdir()), "the artifacts are kept beside the store's database"
    assert (tmp_path / "store" / "mlruns").is_dir()
    assert artifacts == {
        f"jobs/{job}/{name}"
        for job in ("20261127-100000-torchrun", "20261127-110000-torchrun")
        for name in ("summary.json", "report.html")
    }


@pytest.mark.parametrize(
    ("blocked", "part", "hint"),
    [
        ("tensorboard", "tensorboard", "pip install 'multinode-training[tensorboard]'"),
        ("mlflow", "mlflow", "pip install 'multinode-training[mlflow]'"),
    ],
)
def test_without_a_tracker_installed_the_run_gets_a_one_line_hint(
    tmp_path: Path, blocked: str, part: str, hint: str
) -> None:
    run_dir = finished_run(tmp_path / "runs", "job-1", range(1, 3))
    code = (
        f"import sys, json; sys.modules[{blocked!r}] = None\n"
        "from multinode_training.trackers import record_run\n"
        f"print(json.dumps(record_run({str(run_dir)!r}, mlflow_tracking_uri='sqlite:///{tmp_path}/m.db')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600, cwd=tmp_path
    )
    written = json.loads(result.stdout)
    assert written[part].startswith("not written: ") and hint in written[part]
    assert written["report"] == str(run_dir / "report.html"), "the report does not depend on the trackers"


def test_the_report_command_records_an_old_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = finished_run(tmp_path / "runs", "job-2", range(1, 3))
    assert main(["report", str(run_dir), "--mlflow-tracking-uri", f"sqlite:///{tmp_path / 'm.db'}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [f"report: {run_dir / 'report.html'}", f"tensorboard: {run_dir / 'tensorboard'}"]
    assert out[2].startswith("mlflow: ") and "not written" not in out[2]


def test_a_job_s_secret_environment_values_reach_no_report_tracker_or_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary as the launcher's run_summary writes it, from a job whose launcher_env holds HF_TOKEN."""
    monkeypatch.chdir(tmp_path)
    run_dir = finished_run(tmp_path / "runs", "job-3", range(1, 3))
    env = {"HF_TOKEN": "s3cr3t-value", "KMP_BLOCKTIME": "1"}
    params = {
        "run_dir": str(run_dir), "job_id": "job-3", "job_name": "cifar", "resumed_from": "", "launcher": "torchrun",
        "nodes": ["10.0.0.1"], "node_names": ["node1"], "world_size": 2, "launcher_exit_code": 0, "timed_out": False,
        "worker_states": {}, "phase_stats": {}, "secret_env_names": [],
        "settings": {"script": "train.py", "script_args": [], "runtime": "container", "backend": "gloo",
                     "interfaces": {"node1": "eth0"}, "tuning": {"node1": {"slots": 2, "omp_num_threads": 4, "env": env}}},
    }
    write_json(run_dir / "summary.json", run_summary(params))
    (tmp_path / "store").mkdir()
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    written = record_run(run_dir, mlflow_tracking_uri=uri)
    assert not any(what.startswith("not written") for what in written.values()), written
    assert "HF_TOKEN=***" in (run_dir / "report.html").read_text(), "the name stays, the value goes"
    client = MlflowClient(tracking_uri=uri)
    [run] = client.search_runs([client.get_experiment_by_name("multinode-training").experiment_id])
    assert "s3cr3t-value" not in json.dumps(run.data.params)
    artifacts = [entry.path for entry in client.list_artifacts(run.info.run_id, "jobs/job-3")]
    assert artifacts == ["jobs/job-3/report.html", "jobs/job-3/summary.json"]
    holding = [path for root in (run_dir, tmp_path / "store") for path in root.rglob("*")
               if path.is_file() and b"s3cr3t-value" in path.read_bytes()]
    assert not holding, "no file of the run, no MLflow artifact or store"
    assert (run_dir / "report.html").stat().st_mode & 0o777 == 0o600
