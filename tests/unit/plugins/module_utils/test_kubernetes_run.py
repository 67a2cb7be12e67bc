# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/kubernetes_run.py: a Kubeflow job's state, its pods' ends, its summary, its spec."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils import kubernetes_job, kubernetes_run
from ansible_collections.multinode.training.plugins.module_utils.kubernetes_run import KubernetesRunError

KINDS = ("PyTorchJob", "TrainJob", "MPIJob")
SUCCESS = {"PyTorchJob": "Succeeded", "TrainJob": "Complete", "MPIJob": "Succeeded"}
NAME = "job-20261125-130501-torchrun"

# ---------------------------------------------------------------- API-shaped fixtures


def condition(type_: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, str]:
    """One entry of ``status.conditions`` as the API server returns it."""
    item = {"type": type_, "status": status, "lastTransitionTime": "2026-11-25T10:00:10Z"}
    if reason:
        item["reason"] = reason
    if message:
        item["message"] = message
    return item


def resource(kind: str, *conditions: dict[str, str], name: str = NAME) -> dict[str, Any]:
    """A custom resource read back from the API server, with ``conditions`` (none: no ``status`` at all)."""
    body: dict[str, Any] = {
        "apiVersion": kubernetes_run.API_VERSIONS[kind],
        "kind": kind,
        "metadata": {"name": name, "namespace": "training"},
        "spec": {},
    }
    if conditions:
        body["status"] = {"conditions": list(conditions)}
    return body


def terminated(exit_code: int, reason: str = "", finished_at: str = "", signal: int | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"exitCode": exit_code, "startedAt": "2026-11-25T09:59:00Z"}
    if reason:
        record["reason"] = reason
    if finished_at:
        record["finishedAt"] = finished_at
    if signal is not None:
        record["signal"] = signal
    return record


def pod(
    name: str,
    *,
    role: str | None = None,
    index: int | None = None,
    completion_index: int | None = None,
    completion_in_annotation: bool = False,
    exit_code: int | None = None,
    reason: str = "",
    finished_at: str = "",
    ip: str = "10.244.1.10",
    container: str = "pytorch",
    job_name: str = NAME,
) -> dict[str, Any]:
    """A pod as the API server lists it.

    ``role``/``index``: a kubeflow.org pod (training.kubeflow.org labels); ``completion_index``: a TrainJob pod
    (JobSet labels, the completion index as a label or an annotation). ``exit_code`` None: still running.
    """
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    if role is not None:
        labels[kubernetes_run.JOB_NAME_LABEL] = job_name
        labels[kubernetes_run.REPLICA_TYPE_LABEL] = role
        if index is not None:
            labels[kubernetes_run.REPLICA_INDEX_LABEL] = str(index)
    if completion_index is not None:
        labels[kubernetes_run.JOBSET_NAME_LABEL] = job_name
        target = annotations if completion_in_annotation else labels
        target[kubernetes_run.COMPLETION_INDEX] = str(completion_index)
    if exit_code is None:
        state: dict[str, Any] = {"running": {"startedAt": "2026-11-25T09:59:00Z"}}
        phase = "Running"
    else:
        state = {
            "terminated": terminated(exit_code, reason or ("Completed" if exit_code == 0 else "Error"), finished_at)
        }
        phase = "Succeeded" if exit_code == 0 else "Failed"
    metadata: dict[str, Any] = {"name": name, "namespace": "training", "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "metadata": metadata,
        "status": {
            "phase": phase,
            "podIP": ip,
            "containerStatuses": [{"name": container, "ready": exit_code is None, "restartCount": 0, "state": state}],
        },
    }


def job_facts(kind: str = "PyTorchJob", **changes: Any) -> dict[str, Any]:
    """summarize()'s ``job``: what the launcher role knows of the run."""
    facts: dict[str, Any] = {
        "id": "20261125-130501-torchrun",
        "launcher": "mpirun" if kind == "MPIJob" else "torchrun",
        "nodes": 3,
        "procs_per_node": 2,
        "namespace": "training",
        "name": NAME,
        "script": "train.py",
        "script_args": ["--epochs", "2"],
        "image": "ghcr.io/example/train:1.0",
        "seconds": 42.5,
    }
    facts.update(changes)
    return facts


def params(**changes: Any) -> dict[str, Any]:
    """describe()'s ``params``: the launcher role's job variables, as the role's defaults give them."""
    values: dict[str, Any] = {
        "job_id": "20261125-130501-torchrun",
        "launcher": "torchrun",
        "kind": "",
        "image": "ghcr.io/example/train:1.0",
        "script": "train.py",
        "script_args": [],
        "workdir": "/workspace",
        "nodes": 2,
        "procs_per_node": 2,
        "omp_num_threads": "auto",
        "env": {},
        "namespace": "training",
        "resources": {},
        "data_claim": "",
        "output_claim": "",
        "proxy_config_map": "",
        "data_mount": "/data",
        "output_mount": "/outputs",
    }
    values.update(changes)
    return values


def pytorch_pods(**exits: tuple[int, str]) -> list[dict[str, Any]]:
    """A 3-pod PyTorchJob's ended pods; ``exits`` maps master / worker0 / worker1 to (exit code, finishedAt)."""
    layout = {"master": ("master", 0), "worker0": ("worker", 0), "worker1": ("worker", 1)}
    pods = []
    for key, (role, index) in layout.items():
        code, finished = exits.get(key, (0, "2026-11-25T10:00:09Z"))
        pods.append(pod(f"{NAME}-{role}-{index}", role=role, index=index, exit_code=code, finished_at=finished))
    return pods


# ---------------------------------------------------------------- job_state


@pytest.mark.parametrize("kind", KINDS)
def test_job_state_without_status_is_running(kind: str) -> None:
    assert kubernetes_run.job_state(kind, resource(kind)) == "running"
    assert kubernetes_run.job_state(kind, None) == "running"


@pytest.mark.parametrize("kind", KINDS)
def test_job_state_created_and_running_are_running(kind: str) -> None:
    body = resource(kind, condition("Created", reason="JobCreated"), condition("Running", reason="JobRunning"))
    assert kubernetes_run.job_state(kind, body) == "running"


@pytest.mark.parametrize("kind", KINDS)
def test_job_state_success_condition_of_the_kind_is_succeeded(kind: str) -> None:
    body = resource(kind, condition("Created"), condition("Running", status="False"), condition(SUCCESS[kind]))
    assert kubernetes_run.job_state(kind, body) == "succeeded"


def test_job_state_trainjob_with_succeeded_is_still_running() -> None:
    assert kubernetes_run.job_state("TrainJob", resource("TrainJob", condition("Succeeded"))) == "running"


@pytest.mark.parametrize("kind", KINDS)
def test_job_state_failed_wins_over_success(kind: str) -> None:
    body = resource(kind, condition(SUCCESS[kind]), condition("Failed", reason="JobFailed"))
    assert kubernetes_run.job_state(kind, body) == "failed"


@pytest.mark.parametrize("kind", KINDS)
def test_job_state_false_conditions_do_not_count(kind: str) -> None:
    assert kubernetes_run.job_state(kind, resource(kind, condition(SUCCESS[kind], status="False"))) == "running"
    body = resource(kind, condition("Failed", status="False"), condition(SUCCESS[kind]))
    assert kubernetes_run.job_state(kind, body) == "succeeded"


def test_job_state_unknown_kind_raises() -> None:
    with pytest.raises(KubernetesRunError, match="kind: 'TFJob' is not one of PyTorchJob, TrainJob, MPIJob"):
        kubernetes_run.job_state("TFJob", resource("PyTorchJob", condition("Succeeded")))


# ---------------------------------------------------------------- kind_for, resource_name, pod_selector


@pytest.mark.parametrize(
    ("launcher", "kind"), [("torchrun", "PyTorchJob"), ("mpiexec", "MPIJob"), ("mpirun", "MPIJob")]
)
def test_kind_for_defaults_per_launcher(launcher: str, kind: str) -> None:
    assert kubernetes_run.kind_for(launcher) == kind
    assert kubernetes_run.kind_for(launcher, "") == kind


def test_kind_for_explicit_kind_is_kept() -> None:
    assert kubernetes_run.kind_for("torchrun", "TrainJob") == "TrainJob"


@pytest.mark.parametrize(
    ("job_id", "name"),
    [
        ("20261125-130501-torchrun", "job-20261125-130501-torchrun"),
        ("bert-base", "bert-base"),
        ("My_Job.v2", "my-job-v2"),
        ("2026_11_25.Run", "job-2026-11-25-run"),
    ],
)
def test_resource_name_is_an_rfc1035_label(job_id: str, name: str) -> None:
    assert kubernetes_run.resource_name(job_id) == name
    assert kubernetes_job.DNS_1035_LABEL.fullmatch(name)


@pytest.mark.parametrize(
    ("kind", "selector"),
    [
        ("PyTorchJob", f"training.kubeflow.org/job-name={NAME}"),
        ("MPIJob", f"training.kubeflow.org/job-name={NAME}"),
        ("TrainJob", f"jobset.sigs.k8s.io/jobset-name={NAME}"),
    ],
)
def test_pod_selector_per_kind(kind: str, selector: str) -> None:
    assert kubernetes_run.pod_selector(kind, NAME) == selector


def test_pod_selector_unknown_kind_raises() -> None:
    with pytest.raises(KubernetesRunError, match="kind: 'TFJob'"):
        kubernetes_run.pod_selector("TFJob", NAME)


# ---------------------------------------------------------------- pod_outcome


def test_pod_outcome_from_terminated_state() -> None:
    outcome = kubernetes_run.pod_outcome(
        pod("w-1", role="worker", index=1, exit_code=3, finished_at="2026-11-25T10:00:01Z", ip="10.244.2.7")
    )
    assert outcome == {
        "name": "w-1",
        "address": "10.244.2.7",
        "role": "worker",
        "index": 1,
        "phase": "Failed",
        "exit_code": 3,
        "reason": "Error",
        "signal": None,
        "finished_at": "2026-11-25T10:00:01Z",
    }


def test_pod_outcome_from_last_state_when_the_container_restarted() -> None:
    body = pod("m-0", role="master", index=0)
    body["status"]["containerStatuses"][0].update(
        restartCount=1, lastState={"terminated": terminated(1, "Error", "2026-11-25T10:00:02Z")}
    )
    outcome = kubernetes_run.pod_outcome(body)
    assert (outcome["exit_code"], outcome["reason"], outcome["finished_at"]) == (1, "Error", "2026-11-25T10:00:02Z")
    assert outcome["phase"] == "Running"


def test_pod_outcome_exit_code_is_none_while_running() -> None:
    outcome = kubernetes_run.pod_outcome(pod("m-0", role="master", index=0))
    assert (outcome["exit_code"], outcome["reason"], outcome["finished_at"]) == (None, "", "")


def test_pod_outcome_of_a_pending_pod_without_container_statuses() -> None:
    body = {"metadata": {"name": "p"}, "status": {"phase": "Pending"}}
    outcome = kubernetes_run.pod_outcome(body)
    assert (outcome["phase"], outcome["exit_code"], outcome["address"], outcome["role"]) == (
        "Pending",
        None,
        "",
        "node",
    )


def test_pod_outcome_first_non_zero_container_wins_over_a_zero_one() -> None:
    body = pod("m-0", role="master", index=0, exit_code=0, finished_at="2026-11-25T10:00:00Z")
    body["status"]["containerStatuses"].append(
        {"name": "sidecar", "state": {"terminated": terminated(2, "Error", "2026-11-25T10:00:03Z")}}
    )
    body["status"]["containerStatuses"].append(
        {"name": "other", "state": {"terminated": terminated(5, "Error", "2026-11-25T10:00:04Z")}}
    )
    outcome = kubernetes_run.pod_outcome(body)
    assert (outcome["exit_code"], outcome["finished_at"]) == (2, "2026-11-25T10:00:03Z")


def test_pod_outcome_signal_is_read() -> None:
    body = pod("m-0", role="master", index=0)
    body["status"]["containerStatuses"][0]["state"] = {"terminated": terminated(137, "Error", signal=9)}
    assert kubernetes_run.pod_outcome(body)["signal"] == 9


@pytest.mark.parametrize(
    ("body", "role", "index"),
    [
        (pod("a", role="master", index=0), "master", 0),
        (pod("b", role="worker", index=12), "worker", 12),
        (pod("c", role="launcher"), "launcher", None),
        (pod("d", completion_index=2), "node", 2),
        (pod("e", completion_index=3, completion_in_annotation=True), "node", 3),
        (pod("f"), "node", None),
    ],
)
def test_pod_outcome_role_and_index(body: dict[str, Any], role: str, index: int | None) -> None:
    outcome = kubernetes_run.pod_outcome(body)
    assert (outcome["role"], outcome["index"]) == (role, index)


# ---------------------------------------------------------------- summarize: success


def test_summarize_pytorchjob_success() -> None:
    pods = [
        pod(f"{NAME}-worker-1", role="worker", index=1, exit_code=0, ip="10.244.3.3"),
        pod(f"{NAME}-master-0", role="master", index=0, exit_code=0, ip="10.244.1.1"),
        pod(f"{NAME}-worker-0", role="worker", index=0, exit_code=0, ip="10.244.2.2"),
    ]
    body = resource("PyTorchJob", condition("Created"), condition("Running", "False"), condition("Succeeded"))
    summary = kubernetes_run.summarize("PyTorchJob", job_facts(), body, pods)
    names = [f"{NAME}-master-0", f"{NAME}-worker-0", f"{NAME}-worker-1"]
    assert summary["status"] == "succeeded"
    assert summary["failure_reasons"] == []
    assert summary["job_id"] == "20261125-130501-torchrun"
    assert summary["launcher"] == "torchrun"
    assert summary["world_size"] == 6
    assert summary["node_names"] == names
    assert summary["nodes"] == ["10.244.1.1", "10.244.2.2", "10.244.3.3"]
    assert summary["node_exit_codes"] == dict.fromkeys(names, 0)
    assert summary["launcher_exit_code"] is None
    assert summary["rank_exit_codes"] == {}
    assert summary["timed_out"] is False
    assert summary["phases"] == {"train": 42.5}
    scheduler = summary["scheduler"]
    assert scheduler["type"] == "kubernetes"
    assert (scheduler["kind"], scheduler["api_version"], scheduler["state"]) == (
        "PyTorchJob",
        "kubeflow.org/v1",
        "succeeded",
    )
    assert (scheduler["name"], scheduler["namespace"]) == (NAME, "training")
    assert scheduler["conditions"] == body["status"]["conditions"]
    assert [item["name"] for item in scheduler["pods"]] == names
    assert summary["settings"] == {
        "runtime": "kubernetes",
        "image": "ghcr.io/example/train:1.0",
        "script": "train.py",
        "script_args": ["--epochs", "2"],
    }


def test_summarize_orders_workers_by_numeric_index() -> None:
    pods = [pod(f"w-{index}", role="worker", index=index, exit_code=0) for index in (10, 2, 1)]
    pods.append(pod("m-0", role="master", index=0, exit_code=0))
    summary = kubernetes_run.summarize(
        "PyTorchJob", job_facts(nodes=4), resource("PyTorchJob", condition("Succeeded")), pods
    )
    assert summary["node_names"] == ["m-0", "w-1", "w-2", "w-10"]


def test_summarize_mpijob_lists_the_launcher_first() -> None:
    pods = [
        pod(f"{NAME}-worker-1", role="worker", index=1, exit_code=0, container="mpi-worker"),
        pod(f"{NAME}-worker-0", role="worker", index=0, exit_code=0, container="mpi-worker"),
        pod(f"{NAME}-launcher-x7k2p", role="launcher", exit_code=0, container="mpi-launcher"),
    ]
    summary = kubernetes_run.summarize(
        "MPIJob", job_facts("MPIJob", nodes=2), resource("MPIJob", condition("Succeeded")), pods
    )
    assert summary["node_names"] == [f"{NAME}-launcher-x7k2p", f"{NAME}-worker-0", f"{NAME}-worker-1"]
    assert summary["launcher_exit_code"] == 0
    assert summary["scheduler"]["api_version"] == "kubeflow.org/v2beta1"


def test_summarize_trainjob_orders_nodes_by_completion_index() -> None:
    pods = [
        pod(f"{NAME}-node-0-{index}-abcde", completion_index=index, exit_code=0, container="node")
        for index in (2, 0, 1)
    ]
    summary = kubernetes_run.summarize("TrainJob", job_facts(), resource("TrainJob", condition("Complete")), pods)
    assert summary["status"] == "succeeded"
    assert summary["node_names"] == [f"{NAME}-node-0-{index}-abcde" for index in (0, 1, 2)]


def test_summarize_empty_pod_list_with_succeeded_is_succeeded() -> None:
    summary = kubernetes_run.summarize("PyTorchJob", job_facts(), resource("PyTorchJob", condition("Succeeded")), [])
    assert (summary["status"], summary["failure_reasons"], summary["node_names"]) == ("succeeded", [], [])


def test_summarize_mpijob_workers_killed_after_a_good_launcher_is_succeeded() -> None:
    pods = [
        pod(f"{NAME}-launcher-x7k2p", role="launcher", exit_code=0, finished_at="2026-11-25T10:00:05Z"),
        pod(f"{NAME}-worker-0", role="worker", index=0, exit_code=137, finished_at="2026-11-25T10:00:06Z"),
        pod(f"{NAME}-worker-1", role="worker", index=1, exit_code=137, finished_at="2026-11-25T10:00:06Z"),
    ]
    summary = kubernetes_run.summarize(
        "MPIJob", job_facts("MPIJob", nodes=2), resource("MPIJob", condition("Succeeded")), pods
    )
    assert summary["status"] == "succeeded"
    assert summary["failure_reasons"] == []
    assert summary["node_exit_codes"][f"{NAME}-worker-0"] == 137


# ---------------------------------------------------------------- summarize: failure


def test_summarize_first_failed_pod_is_the_root_cause() -> None:
    pods = pytorch_pods(master=(1, "2026-11-25T10:00:05Z"), worker1=(3, "2026-11-25T10:00:01Z"))
    failed = condition(
        "Failed", reason="PyTorchJobFailed", message="PyTorchJob job-x is failed because 1 Worker replica(s) failed."
    )
    summary = kubernetes_run.summarize(
        "PyTorchJob", job_facts(), resource("PyTorchJob", condition("Created"), failed), pods
    )
    reasons = summary["failure_reasons"]
    assert summary["status"] == "failed"
    assert summary["scheduler"]["state"] == "failed"
    assert len(reasons) == 3
    assert reasons[0] == f"pod {NAME}-worker-1 (worker 1) exited 3"
    assert reasons[1] == f"pod {NAME}-master-0 (master 0) exited 1"
    assert reasons[2].startswith(f"PyTorchJob {NAME} failed: PyTorchJobFailed: ")
    assert reasons[2].endswith("1 Worker replica(s) failed.")


def test_summarize_oomkilled_pod_is_described_as_oomkilled() -> None:
    pods = pytorch_pods()
    pods[1] = pod(
        f"{NAME}-worker-0",
        role="worker",
        index=0,
        exit_code=137,
        reason="OOMKilled",
        finished_at="2026-11-25T10:00:01Z",
    )
    summary = kubernetes_run.summarize("PyTorchJob", job_facts(), resource("PyTorchJob", condition("Failed")), pods)
    assert summary["failure_reasons"][0] == (
        f"pod {NAME}-worker-0 (worker 0) killed for using more memory than its limit (OOMKilled, exit code 137)"
    )


def test_summarize_exit_143_without_reason_is_sigterm() -> None:
    pods = pytorch_pods()
    pods[0]["status"]["containerStatuses"][0]["state"] = {
        "terminated": {"exitCode": 143, "finishedAt": "2026-11-25T10:00:01Z"}
    }
    summary = kubernetes_run.summarize("PyTorchJob", job_facts(), resource("PyTorchJob", condition("Failed")), pods)
    assert summary["failure_reasons"][0] == f"pod {NAME}-master-0 (master 0) killed by signal 15 (SIGTERM)"


@pytest.mark.parametrize(
    ("code", "described"),
    [(170, "exited 170"), (159, "killed by signal 31 (SIGSYS)"), (137, "killed by signal 9 (SIGKILL")],
)
def test_summarize_exit_codes_past_128(code: int, described: str) -> None:
    """128 + a signal number is the kill; 160 and above (realtime signals, or a program's own code) is an exit."""
    pods = pytorch_pods(worker0=(code, "2026-11-25T10:00:01Z"))
    summary = kubernetes_run.summarize("PyTorchJob", job_facts(), resource("PyTorchJob", condition("Failed")), pods)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"][0].startswith(f"pod {NAME}-worker-0 (worker 0) {described}")


def test_summarize_mpijob_failed_launcher_is_named() -> None:
    pods = [
        pod(f"{NAME}-launcher-x7k2p", role="launcher", exit_code=2, finished_at="2026-11-25T10:00:05Z"),
        pod(f"{NAME}-worker-0", role="worker", index=0, exit_code=137, finished_at="2026-11-25T10:00:04Z"),
    ]
    body = resource("MPIJob", condition("Failed", reason="MPIJobFailed", message="launcher failed"))
    summary = kubernetes_run.summarize("MPIJob", job_facts("MPIJob", nodes=1), body, pods)
    assert summary["status"] == "failed"
    assert summary["launcher_exit_code"] == 2
    assert summary["failure_reasons"] == [
        f"pod {NAME}-launcher-x7k2p (launcher) exited 2",
        f"MPIJob {NAME} failed: MPIJobFailed: launcher failed",
    ]


def test_summarize_succeeded_condition_with_a_failed_pod_is_failed() -> None:
    pods = pytorch_pods(worker0=(1, "2026-11-25T10:00:01Z"))
    summary = kubernetes_run.summarize("PyTorchJob", job_facts(), resource("PyTorchJob", condition("Succeeded")), pods)
    assert summary["status"] == "failed"
    assert summary["scheduler"]["state"] == "succeeded"
    assert summary["failure_reasons"] == [f"pod {NAME}-worker-0 (worker 0) exited 1"]


def test_summarize_timed_out_is_failed_even_without_a_failed_pod() -> None:
    pods = [pod(f"{NAME}-master-0", role="master", index=0), pod(f"{NAME}-worker-0", role="worker", index=0)]
    summary = kubernetes_run.summarize(
        "PyTorchJob", job_facts(nodes=2), resource("PyTorchJob", condition("Running")), pods, timed_out=True
    )
    assert summary["status"] == "failed"
    assert summary["timed_out"] is True
    assert summary["node_exit_codes"] == {f"{NAME}-master-0": None, f"{NAME}-worker-0": None}
    assert summary["failure_reasons"] == [
        "timed out: the PyTorchJob did not finish within launcher_timeout and was deleted"
    ]


def test_summarize_timed_out_overrides_a_success_condition() -> None:
    summary = kubernetes_run.summarize(
        "TrainJob", job_facts(), resource("TrainJob", condition("Complete")), [], timed_out=True
    )
    assert summary["status"] == "failed"
    assert summary["failure_reasons"][0].startswith("timed out: the TrainJob")


@pytest.mark.parametrize("kind", KINDS)
def test_summarize_without_success_condition_or_failed_pod_is_failed(kind: str) -> None:
    pods = [pod("p-0", role="launcher" if kind == "MPIJob" else "master", index=0, exit_code=0)]
    summary = kubernetes_run.summarize(kind, job_facts(kind), resource(kind, condition("Created")), pods)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == [f"the {kind} ended without the {SUCCESS[kind]} condition"]


def test_summarize_without_resource_is_failed() -> None:
    summary = kubernetes_run.summarize("PyTorchJob", job_facts(), None, [])
    assert summary["status"] == "failed"
    assert summary["scheduler"]["conditions"] == []
    assert summary["failure_reasons"] == ["the PyTorchJob ended without the Succeeded condition"]


def test_summarize_failed_condition_without_reason_or_message() -> None:
    summary = kubernetes_run.summarize("TrainJob", job_facts(), resource("TrainJob", condition("Failed")), [])
    assert summary["failure_reasons"] == [f"TrainJob {NAME} failed: no reason given"]


def test_summarize_unknown_kind_raises() -> None:
    with pytest.raises(KubernetesRunError, match="kind: 'TFJob'"):
        kubernetes_run.summarize("TFJob", job_facts(), None, [])


# ---------------------------------------------------------------- describe


@pytest.mark.parametrize(
    ("launcher", "kind"), [("torchrun", "PyTorchJob"), ("mpiexec", "MPIJob"), ("mpirun", "MPIJob")]
)
def test_describe_default_kind_per_launcher(launcher: str, kind: str) -> None:
    spec = kubernetes_run.describe(params(launcher=launcher))
    assert spec["kind"] == kind
    assert spec["job"]["launcher"] == launcher


@pytest.mark.parametrize(
    ("launcher", "kind", "api_version", "selector"),
    [
        ("torchrun", "", "kubeflow.org/v1", f"training.kubeflow.org/job-name={NAME}"),
        ("torchrun", "TrainJob", "trainer.kubeflow.org/v1alpha1", f"jobset.sigs.k8s.io/jobset-name={NAME}"),
        ("mpirun", "", "kubeflow.org/v2beta1", f"training.kubeflow.org/job-name={NAME}"),
    ],
)
def test_describe_api_version_and_pod_selector_match_the_kind(
    launcher: str, kind: str, api_version: str, selector: str
) -> None:
    spec = kubernetes_run.describe(params(launcher=launcher, kind=kind))
    assert (spec["api_version"], spec["pod_selector"]) == (api_version, selector)
    assert spec["job"]["name"] == NAME


def test_describe_job_fields() -> None:
    job = kubernetes_run.describe(params(namespace="", proxy_config_map="proxy-env"))["job"]
    assert job["namespace"] == "default"
    assert (job["data_claim"], job["output_claim"], job["proxy_config_map"]) == (None, None, "proxy-env")
    assert (job["data_mount"], job["output_mount"]) == ("/data", "/outputs")
    assert job["image"] == "ghcr.io/example/train:1.0"


@pytest.mark.parametrize(("value", "procs"), [("auto", 1), ("2", 2), (4, 4)])
def test_describe_procs_per_node(value: Any, procs: int) -> None:
    assert kubernetes_run.describe(params(procs_per_node=value))["job"]["procs_per_node"] == procs


@pytest.mark.parametrize(("value", "nodes"), [("3", 3), (3, 3)])
def test_describe_nodes_as_string_or_int(value: Any, nodes: int) -> None:
    assert kubernetes_run.describe(params(nodes=value))["job"]["nodes"] == nodes


@pytest.mark.parametrize(
    ("omp", "resources", "procs", "threads"),
    [
        ("6", {"cpu": "8"}, 2, "6"),
        (3, {}, 2, "3"),
        ("auto", {"cpu": "8", "memory": "16Gi"}, 2, "4"),
        ("auto", {"cpu": "7"}, 2, "3"),
        ("auto", {}, 2, None),
        ("auto", {"memory": "8Gi"}, 2, None),
        ("auto", {"cpu": "500m"}, 1, None),
        ("auto", {"cpu": "1"}, 2, None),
    ],
)
def test_describe_omp_num_threads(omp: Any, resources: dict[str, str], procs: int, threads: str | None) -> None:
    env = kubernetes_run.describe(params(omp_num_threads=omp, resources=resources, procs_per_node=procs))["job"]["env"]
    assert env.get("OMP_NUM_THREADS") == threads


def test_describe_job_id_always_in_env() -> None:
    assert kubernetes_run.describe(params())["job"]["env"] == {"JOB_ID": "20261125-130501-torchrun"}


def test_describe_command_with_placeholders() -> None:
    args = [
        "--out", "{output_dir}/model",
        "--ckpt={checkpoint_dir}",
        "--data", "{data_dir}",
        "--code", "{work_dir}",
        "--run", "{job_id}",
        "--resume", "{resume_from}",
        "--fmt", "{epoch:03d}",
    ]  # fmt: skip
    spec = kubernetes_run.describe(
        params(script_args=args, data_claim="train-data", output_claim="train-outputs", output_mount="/mnt/out")
    )
    assert spec["job"]["command"] == [
        "python3", "/workspace/train.py",
        "--out", "/mnt/out/model",
        "--ckpt=/mnt/out/checkpoints",
        "--data", "/data",
        "--code", "/workspace",
        "--run", "20261125-130501-torchrun",
        "--resume", "",
        "--fmt", "{epoch:03d}",
    ]  # fmt: skip


def test_describe_command_without_workdir() -> None:
    spec = kubernetes_run.describe(params(workdir="", script_args=["{work_dir}"]))
    assert spec["job"]["command"] == ["python3", "train.py", "."]


def test_describe_checkpoint_dir_only_with_an_output_claim() -> None:
    assert "CHECKPOINT_DIR" not in kubernetes_run.describe(params(data_claim="train-data"))["job"]["env"]
    env = kubernetes_run.describe(params(output_claim="train-outputs"))["job"]["env"]
    assert env["CHECKPOINT_DIR"] == "/outputs/checkpoints"


def test_describe_launcher_env_overrides_computed_values() -> None:
    env = kubernetes_run.describe(
        params(
            output_claim="train-outputs",
            resources={"cpu": "8"},
            env={"OMP_NUM_THREADS": "1", "CHECKPOINT_DIR": "/outputs/ckpt", "JOB_ID": "mine", "KMP_BLOCKTIME": 1},
        )
    )["job"]["env"]
    assert env == {"JOB_ID": "mine", "OMP_NUM_THREADS": "1", "CHECKPOINT_DIR": "/outputs/ckpt", "KMP_BLOCKTIME": "1"}


@pytest.mark.parametrize(
    ("launcher", "kind"), [("torchrun", "PyTorchJob"), ("torchrun", "TrainJob"), ("mpiexec", "MPIJob")]
)
def test_describe_job_renders(launcher: str, kind: str) -> None:
    spec = kubernetes_run.describe(
        params(
            launcher=launcher,
            kind=kind,
            nodes="3",
            resources={"cpu": "8", "memory": "16Gi"},
            data_claim="train-data",
            output_claim="train-outputs",
            script_args=["--out", "{output_dir}"],
        )
    )
    manifest = kubernetes_job.render(kubernetes_job.KubernetesJob(**spec["job"]), spec["kind"])
    assert (manifest["kind"], manifest["apiVersion"]) == (kind, spec["api_version"])
    assert manifest["metadata"] == {
        "name": NAME,
        "namespace": "training",
        "labels": {"app.kubernetes.io/managed-by": "multinode.training"},
    }


# ---------------------------------------------------------------- launcher_max_restarts


def test_describe_takes_max_restarts_as_extra_vars_give_it() -> None:
    assert kubernetes_run.describe(params(max_restarts="3"))["job"]["max_restarts"] == 3
    assert kubernetes_run.describe(params())["job"]["max_restarts"] == 0


# ---------------------------------------------------------------- summarize: the run schema (run_schema.py)


@pytest.mark.parametrize(
    ("kind", "pods", "conditions", "timed_out"),
    [
        ("PyTorchJob", pytorch_pods(), (condition("Succeeded"),), False),
        ("PyTorchJob", pytorch_pods(worker1=(3, "2026-11-25T10:00:01Z")), (condition("Failed", message="failed"),), False),
        ("PyTorchJob", pytorch_pods(), (condition("Running"),), True),
        ("MPIJob", [pod(f"{NAME}-launcher-x", role="launcher", exit_code=0)], (condition("Succeeded"),), False),
        ("TrainJob", [pod(f"{NAME}-node-0-0-a", completion_index=0, exit_code=None, container="node")], (), False),
        ("TrainJob", [], (condition("Complete"),), False),
    ],
)
def test_every_summary_of_a_kubernetes_run_has_the_runs_schema(
    kind: str, pods: list[dict[str, Any]], conditions: tuple[dict[str, str], ...], timed_out: bool, summary_problems: Any
) -> None:
    summary = kubernetes_run.summarize(kind, job_facts(kind, script_args=["--epochs", 2]), resource(kind, *conditions), pods, timed_out)
    assert summary_problems(summary) == []
    assert summary["scheduler"]["type"] == "kubernetes" and summary["settings"]["script_args"] == ["--epochs", "2"]
