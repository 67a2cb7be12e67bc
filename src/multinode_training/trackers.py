"""What a run leaves for the tools researchers already use: report.html, TensorBoard event files and an MLflow run.

:func:`record_run` is called at the end of every run (the launcher role's run_summary action, when this package is
on the controller) and by ``multinode-training report``. Each part is an optional extra of the package; one that is
not installed, or fails, is named in one line and never fails the run.

- TensorBoard: ``runs/<id>/tensorboard/`` (``tensorboard --logdir runs`` shows every run side by side): each
  metric the ranks reported per epoch (step = epoch), samples/s per reporting rank, the test accuracy.
- MLflow, when a tracking URI is named (``launcher_mlflow_tracking_uri``, by default the controller's
  ``MLFLOW_TRACKING_URI``): the parameters (launcher, world size, script, its arguments, runtime, backend), the
  metrics per epoch, the summary and the report as artifacts. The MLflow run is named after the job's name
  (``launcher_job_name``, else its id): a later job of the same name, resumed from its checkpoint, continues the
  same MLflow run with the epochs it adds.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from multinode_training.api import PROGRESS_FILE, SUMMARY_FILE, run_dir_at
from multinode_training.event_file import FILE_VERSION, event_file_path, write_record
from multinode_training.report import ReportUnavailable, epoch_series, progress_records, rate_records, write_report

TENSORBOARD_DIR = "tensorboard"
JOB_NAME_TAG = "multinode.job_name"
JOB_IDS_TAG = "multinode.job_ids"
DEFAULT_EXPERIMENT = "multinode-training"


class TrackerUnavailable(RuntimeError):
    """A tracker's package is not installed: the message is the one-line hint."""


def record_run(
    run: str | Path, *, mlflow_tracking_uri: str = "", mlflow_experiment: str = DEFAULT_EXPERIMENT
) -> dict[str, str]:
    """report.html, the TensorBoard event files and (with a tracking URI) the MLflow run of a run that ended:
    what each is (a path, an MLflow run id) or why it was not written."""
    run_dir = run_dir_at(run)
    written = {"report": attempt(lambda: str(write_report(run_dir)))}
    written["tensorboard"] = attempt(lambda: str(write_tensorboard(run_dir)))
    if mlflow_tracking_uri:
        written["mlflow"] = attempt(lambda: log_mlflow(run_dir, mlflow_tracking_uri, mlflow_experiment))
    return written


def attempt(write: Any) -> str:
    """What ``write()`` returned, or ``not written: <why>``: a tracker never fails the run."""
    try:
        return str(write())
    except (ReportUnavailable, TrackerUnavailable) as error:
        return f"not written: {error}"
    # Any tracker failure is only reported.
    except Exception as error:  # pylint: disable=broad-exception-caught
        return f"not written: {type(error).__name__}: {error}"


def summary_and_epochs(run_dir: Path) -> tuple[dict[str, Any], dict[str, list[tuple[int, float]]]]:
    """The run's summary, and metric -> [(epoch, value)] of what its ranks reported."""
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    return summary, epoch_series(progress_records(run_dir / PROGRESS_FILE), summary)


def rank_rates(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """``rank N`` -> [(epoch, samples/s)] of each rank that reported its throughput."""
    rates: dict[str, list[tuple[int, float]]] = {}
    for record in rate_records(progress_records(run_dir / PROGRESS_FILE)):
        rates.setdefault(f"rank {record.get('rank')}", []).append(
            (int(record["epoch"]), float(record["samples_per_s"]))
        )
    return rates


def write_tensorboard(run_dir: Path) -> Path:
    """The run's event files in ``run_dir/tensorboard`` (written again from scratch: the same run, the same file)."""
    try:
        from tensorboard.compat.proto.event_pb2 import Event  # noqa: PLC0415 (an optional extra)
        from tensorboard.compat.proto.summary_pb2 import Summary  # noqa: PLC0415
    except ImportError as error:
        raise TrackerUnavailable(
            f"tensorboard is not installed ({error}); pip install 'multinode-training[tensorboard]'"
        ) from error
    summary, series = summary_and_epochs(run_dir)
    directory = run_dir / TENSORBOARD_DIR
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    now = time.time()
    events = [Event(wall_time=now, file_version=FILE_VERSION)]

    def scalar(tag: str, step: int, value: float) -> None:
        events.append(Event(wall_time=now, step=step, summary=Summary(value=[Summary.Value(tag=tag, simple_value=value)])))

    for name, points in series.items():
        for epoch, value in points:
            scalar(name, epoch, value)
    for rank, points in rank_rates(run_dir).items():
        for epoch, value in points:
            scalar(f"samples_per_s/{rank.replace(' ', '')}", epoch, value)
    if isinstance(summary.get("test_accuracy"), (int, float)):
        last_epoch = max((epoch for points in series.values() for epoch, _ in points), default=0)
        scalar("test_accuracy", last_epoch, float(summary["test_accuracy"]))
    with event_file_path(directory, now).open("wb") as file:
        for event in events:
            write_record(file, event.SerializeToString())
    return directory


def job_name(summary: Mapping[str, Any]) -> str:
    return str(summary.get("job_name") or summary["job_id"])


def run_parameters(summary: Mapping[str, Any]) -> dict[str, str]:
    settings = summary.get("settings") or {}
    return {
        "launcher": str(summary.get("launcher")),
        "world_size": str(summary.get("world_size")),
        "nodes": str(len(summary.get("nodes") or [])),
        "script": str(settings.get("script", "")),
        "script_args": " ".join(map(str, settings.get("script_args") or [])),
        "runtime": str(settings.get("runtime", "")),
        "backend": str(settings.get("backend", "")),
    }


def artifact_location(tracking_uri: str) -> str | None:
    """Where a new experiment keeps its artifacts: beside a SQLite store's database (``mlruns/`` in its directory),
    not in the working directory of whatever process logs first (ansible-playbook's is the collection); the
    server's own choice for any other store."""
    prefix = "sqlite:///"
    if not tracking_uri.startswith(prefix):
        return None
    return (Path(tracking_uri[len(prefix) :]).expanduser().resolve().parent / "mlruns").as_uri()


def log_mlflow(run_dir: Path, tracking_uri: str, experiment: str = DEFAULT_EXPERIMENT) -> str:
    """The run in MLflow (the one of its job's name, continued, or a new one); its MLflow run id."""
    try:
        from mlflow.tracking import MlflowClient  # noqa: PLC0415 (an optional extra)
    except ImportError as error:
        raise TrackerUnavailable(
            f"mlflow is not installed ({error}); pip install 'multinode-training[mlflow]'"
        ) from error
    summary, series = summary_and_epochs(run_dir)
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    experiment_id = (
        found.experiment_id if found else client.create_experiment(experiment, artifact_location(tracking_uri))
    )
    name = job_name(summary)
    earlier = client.search_runs([experiment_id], filter_string=f"tags.`{JOB_NAME_TAG}` = '{name}'", max_results=1)
    if earlier:
        run_id = earlier[0].info.run_id
        client.update_run(run_id, status="RUNNING")
        job_ids = earlier[0].data.tags.get(JOB_IDS_TAG, "").split()
    else:
        run_id = client.create_run(experiment_id, run_name=name, tags={JOB_NAME_TAG: name}).info.run_id
        job_ids = []
        for key, value in run_parameters(summary).items():
            client.log_param(run_id, key, value)
    for metric, points in series.items():
        logged = {entry.step for entry in client.get_metric_history(run_id, metric)}
        for epoch, value in points:
            if epoch not in logged:
                client.log_metric(run_id, metric, value, step=epoch)
    if isinstance(summary.get("test_accuracy"), (int, float)):
        client.log_metric(run_id, "test_accuracy", float(summary["test_accuracy"]))
    client.set_tag(run_id, JOB_IDS_TAG, " ".join(dict.fromkeys([*job_ids, str(summary["job_id"])])))
    artifacts = f"jobs/{summary['job_id']}"
    for file_name in (SUMMARY_FILE, "report.html"):
        if (run_dir / file_name).exists():
            client.log_artifact(run_id, str(run_dir / file_name), artifact_path=artifacts)
    client.set_terminated(run_id, status="FINISHED" if summary.get("status") == "succeeded" else "FAILED")
    return run_id
