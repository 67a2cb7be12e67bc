# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a Kubeflow job did on a Kubernetes cluster: its state, each pod's end, the run's summary.

The launcher role's ``kubernetes`` entry point applies the manifest kubernetes_job.py renders, reads the custom
resource and its pods back from the API server, and hands them here. Success comes from the operator's
condition and the pods' exit codes, never from what a log says: a job is ``succeeded`` only when the operator
set its success condition and no pod of it ended with a non-zero exit code. The first reason of a failure is
the pod that failed first (its exit code, or the kubelet's reason such as OOMKilled), then the operator's
own message.

Facts used, from the operators' sources:

- PyTorchJob and MPIJob (kubeflow.org common JobStatus): conditions ``Created``, ``Running``, ``Restarting``,
  ``Suspended``, ``Succeeded``, ``Failed``; pods labelled ``training.kubeflow.org/job-name``,
  ``training.kubeflow.org/replica-type`` (master, worker, launcher) and ``training.kubeflow.org/replica-index``.
- TrainJob (trainer.kubeflow.org/v1alpha1): conditions ``Created``, ``Suspended``, ``Complete``, ``Failed``;
  its pods belong to the JobSet of the same name (``jobset.sigs.k8s.io/jobset-name``, TrainJob.PodLabelSelector),
  one Indexed Job whose completion index is the node rank (``batch.kubernetes.io/job-completion-index``).

Pure Python (no Ansible imports) so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Mapping, Sequence

from ansible_collections.multinode.training.plugins.module_utils.kubernetes_job import LAUNCHERS
from ansible_collections.multinode.training.plugins.module_utils.kubernetes_crd import TARGETS
from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import (
    PLACEHOLDERS,
    expand_placeholders,
    placeholders_in,
)
from ansible_collections.multinode.training.plugins.module_utils.run_report import describe_signal

# The API version written per kind (the release each targets: kubernetes_crd.TARGETS).
API_VERSIONS = {kind: target[0] for kind, target in TARGETS.items()}
# The condition that ends the job well, per kind; "Failed" ends it badly for every kind.
SUCCESS_CONDITION = {"PyTorchJob": "Succeeded", "TrainJob": "Complete", "MPIJob": "Succeeded"}
FAILURE_CONDITION = "Failed"
# The kind a launcher's job becomes when none is asked for: its registry entry's first.
DEFAULT_KIND = {name: REGISTRY[name].kubernetes_kinds[0] for name in LAUNCHERS}

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

RUNNING, SUCCEEDED, FAILED = "running", "succeeded", "failed"


class KubernetesRunError(ValueError):
    """An input no run on Kubernetes can be described with."""


def _known_kind(kind: str) -> str:
    if kind not in API_VERSIONS:
        raise KubernetesRunError(f"kind: {kind!r} is not one of {', '.join(API_VERSIONS)}")
    return kind


def kind_for(launcher: str, kind: str = "") -> str:
    """The custom resource kind of a ``launcher`` job: ``kind`` when given, else the launcher's usual one (the
    preflight's kubernetes_job.kind_problem and launcher_problem refused a pair that does not fit)."""
    return kind or DEFAULT_KIND[launcher]


def resource_name(job_id: str) -> str:
    """The custom resource's name for a job id: an RFC 1035 label (lower case, starting with a letter).

    Job ids start with their date (``20261125-130501-torchrun``), which a label may not; ``job-`` is put in
    front of an id that does not start with a letter.
    """
    name = job_id.lower().replace("_", "-").replace(".", "-")
    return name if name[:1].isalpha() else f"job-{name}"


def _procs_per_node(value: Any) -> int:
    """``auto`` is one rank per pod, as the operators' ``nprocPerNode: auto`` gives a CPU pod; else the whole number
    the preflight let through (launcher_nproc_per_node)."""
    return 1 if str(value) == "auto" else int(str(value))


def _threads(omp_num_threads: Any, procs_per_node: int, resources: Mapping[str, Any]) -> str | None:
    """OMP_NUM_THREADS of each rank: the one given, else the pod's whole CPUs shared by its ranks, else unset.

    Set whenever it can be known, because torchrun sets 1 when it is unset and a pod runs several ranks.
    """
    if str(omp_num_threads) != "auto":
        return str(omp_num_threads)
    cpu = str(resources.get("cpu", ""))
    if re.fullmatch(r"[0-9]+", cpu) and int(cpu) >= procs_per_node:
        return str(int(cpu) // procs_per_node)
    return None


# The placeholders of launcher_script_args that need a claim on Kubernetes, and the variable that sets it.
CLAIMED_PLACEHOLDERS = {
    "data_dir": "launcher_kubernetes_data_claim",
    "output_dir": "launcher_kubernetes_output_claim",
    "checkpoint_dir": "launcher_kubernetes_output_claim",
}


def placeholder_problem(script_args: Sequence[Any], data_claim: str, output_claim: str) -> str | None:
    """A placeholder of launcher_script_args whose path the job does not have (its claim is not set), or None."""
    claims = {"launcher_kubernetes_data_claim": data_claim, "launcher_kubernetes_output_claim": output_claim}
    missing = [
        f"{{{name}}} has no value on Kubernetes without {CLAIMED_PLACEHOLDERS[name]}"
        for name in dict.fromkeys(placeholders_in([str(word) for word in script_args]))
        if name in CLAIMED_PLACEHOLDERS and not claims[CLAIMED_PLACEHOLDERS[name]]
    ]
    return "; ".join(missing) or None


def _command(script: str, script_args: Sequence[str], workdir: str, mounts: Mapping[str, str]) -> list[str]:
    """``python3 <script> <args>``, the script under ``workdir`` (where the image holds the code) when given.

    The placeholders of launcher_script_args mean what they mean under SSH: ``{data_dir}`` and
    ``{output_dir}`` are the claims' mount paths, ``{checkpoint_dir}`` a directory on the output claim,
    ``{work_dir}`` the code's directory; one whose claim is not set was refused by the preflight
    (placeholder_problem).
    """
    values = {name: mounts.get(name, "") for name in PLACEHOLDERS}
    program = posixpath.join(workdir, script) if workdir else script
    return ["python3", program, *expand_placeholders([str(word) for word in script_args], values)]


def _whole(value: Any) -> Any:
    """Extra vars come as strings: a whole number as an int (the preflight refused anything else)."""
    return int(value) if re.fullmatch(r"[0-9]+", str(value)) else value


# The job object's fields (module_utils/job.py) a Kubernetes description takes, by the name describe() gives them.
JOB_FIELDS = {
    "job_id": "id",
    "launcher": "launcher",
    "script": "script",
    "script_args": "script_args",
    "procs_per_node": "procs_per_node",
    "omp_num_threads": "omp_num_threads",
    "env": "env",
    "max_restarts": "max_restarts",
}


def job_params(job: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """describe()'s parameters: the job object's (``job``) and the launcher_kubernetes_* settings (``settings``:
    ``kind``, ``image``, ``workdir``, ``nodes``, ``namespace``, ``resources``, the claims, mounts and proxy map)."""
    clash = sorted(set(settings) & set(JOB_FIELDS))
    if clash:
        raise KubernetesRunError(f"{', '.join(clash)}: the job's own, not a Kubernetes setting")
    return {**{name: job[field] for name, field in JOB_FIELDS.items()}, **settings}


def describe(params: Mapping[str, Any]) -> dict[str, Any]:
    """The kind and the fields of kubernetes_job.KubernetesJob for the launcher role's job variables.

    ``params``: ``job_id``, ``launcher``, ``kind`` ('' for the launcher's usual one), ``image``, ``script``,
    ``script_args``, ``workdir``, ``nodes``, ``procs_per_node``, ``omp_num_threads``, ``env``, ``namespace``,
    ``resources``, ``data_claim``, ``output_claim``, ``proxy_config_map``, ``data_mount``, ``output_mount``,
    ``max_restarts``.
    """
    kind = kind_for(str(params["launcher"]), str(params.get("kind") or ""))
    procs = _procs_per_node(params["procs_per_node"])
    resources = dict(params.get("resources") or {})
    data_claim = params.get("data_claim") or None
    output_claim = params.get("output_claim") or None
    mounts = {"job_id": str(params["job_id"]), "work_dir": str(params.get("workdir") or "."), "resume_from": ""}
    if data_claim:
        mounts["data_dir"] = str(params["data_mount"])
    if output_claim:
        mounts["output_dir"] = str(params["output_mount"])
        mounts["checkpoint_dir"] = posixpath.join(str(params["output_mount"]), "checkpoints")
    env = {"JOB_ID": str(params["job_id"])}
    threads = _threads(params.get("omp_num_threads", "auto"), procs, resources)
    if threads is not None:
        env["OMP_NUM_THREADS"] = threads
    if "checkpoint_dir" in mounts:
        env["CHECKPOINT_DIR"] = mounts["checkpoint_dir"]
    env.update({str(name): str(value) for name, value in (params.get("env") or {}).items()})
    job = {
        "name": resource_name(str(params["job_id"])),
        "image": str(params["image"]),
        "command": _command(
            str(params["script"]), list(params.get("script_args") or []), str(params.get("workdir") or ""), mounts
        ),
        "nodes": _whole(params["nodes"]),
        "procs_per_node": procs,
        "launcher": str(params["launcher"]),
        "namespace": str(params.get("namespace") or "default"),
        "env": env,
        "resources": resources,
        "data_claim": data_claim,
        "output_claim": output_claim,
        "data_mount": str(params["data_mount"]),
        "output_mount": str(params["output_mount"]),
        "proxy_config_map": params.get("proxy_config_map") or None,
        "max_restarts": _whole(params.get("max_restarts", 0)),
    }
    return {
        "kind": kind,
        "api_version": API_VERSIONS[kind],
        "pod_selector": pod_selector(kind, job["name"]),
        "job": job,
    }


def pod_selector(kind: str, name: str) -> str:
    """The label selector of the job's pods."""
    if _known_kind(kind) == "TrainJob":
        return f"{JOBSET_NAME_LABEL}={name}"
    return f"{JOB_NAME_LABEL}={name}"


def _true_conditions(resource: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = resource.get("status") or {}
    return [item for item in status.get("conditions") or [] if str(item.get("status")) == "True"]


def job_state(kind: str, resource: Mapping[str, Any] | None) -> str:
    """``running`` until the operator sets the kind's success condition (``succeeded``) or Failed (``failed``)."""
    success = SUCCESS_CONDITION[_known_kind(kind)]
    types = {str(item.get("type")) for item in _true_conditions(resource or {})}
    if FAILURE_CONDITION in types:
        return FAILED
    if success in types:
        return SUCCEEDED
    return RUNNING


def _condition_text(resource: Mapping[str, Any], kind: str) -> str:
    """The operator's words for the job's end: the Failed condition's reason and message, if any."""
    for item in _true_conditions(resource):
        if item.get("type") == FAILURE_CONDITION:
            words = [str(item.get(key)) for key in ("reason", "message") if item.get(key)]
            return (
                f"{kind} {resource.get('metadata', {}).get('name', '')} failed: {': '.join(words) or 'no reason given'}"
            )
    return ""


def _role(labels: Mapping[str, str], annotations: Mapping[str, str]) -> tuple[str, int | None]:
    """The pod's replica type and index: (master|worker|launcher, index), or (node, completion index)."""
    if REPLICA_TYPE_LABEL in labels:
        index = labels.get(REPLICA_INDEX_LABEL)
        return str(labels[REPLICA_TYPE_LABEL]).lower(), int(index) if str(index).isdigit() else None
    index = labels.get(COMPLETION_INDEX, annotations.get(COMPLETION_INDEX))
    return "node", int(index) if str(index).isdigit() else None


def _terminated(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every container's termination record (its last one when it restarted), in the pod's status order."""
    status = pod.get("status") or {}
    records = []
    for container in status.get("containerStatuses") or []:
        state = (container.get("state") or {}).get("terminated") or (container.get("lastState") or {}).get("terminated")
        if state:
            records.append({"container": container.get("name", ""), **state})
    return records


def pod_outcome(pod: Mapping[str, Any]) -> dict[str, Any]:
    """One pod's end: name, role, index, phase, exit code (the first non-zero one, else 0, None while it runs),
    the kubelet's reason (OOMKilled, Error, Completed), the signal, and when it finished."""
    metadata = pod.get("metadata") or {}
    role, index = _role(metadata.get("labels") or {}, metadata.get("annotations") or {})
    records = _terminated(pod)
    failed = [record for record in records if int(record.get("exitCode", 0)) != 0]
    record = failed[0] if failed else (records[0] if records else {})
    return {
        "name": str(metadata.get("name", "")),
        "address": str((pod.get("status") or {}).get("podIP", "")),
        "role": role,
        "index": index,
        "phase": str((pod.get("status") or {}).get("phase", "Unknown")),
        "exit_code": int(record["exitCode"]) if "exitCode" in record else None,
        "reason": str(record.get("reason", "")),
        "signal": int(record["signal"]) if record.get("signal") else None,
        "finished_at": str(record.get("finishedAt", "")),
    }


def _order(outcome: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """Launcher or master first, then the workers by index: the order of ``node_names`` in the summary."""
    rank = {"launcher": 0, "master": 1, "node": 2, "worker": 2}.get(outcome["role"], 3)
    index = outcome["index"] if outcome["index"] is not None else 1 << 30
    return rank, 0 if outcome["role"] == "master" else 1, index, outcome["name"]


def _describe_exit(outcome: Mapping[str, Any]) -> str:
    place = outcome["role"] if outcome["index"] is None else f"{outcome['role']} {outcome['index']}"
    code = outcome["exit_code"]
    if outcome["reason"] == "OOMKilled":
        return (
            f"pod {outcome['name']} ({place}) killed for using more memory than its limit (OOMKilled, exit code {code})"
        )
    if outcome["signal"]:
        return f"pod {outcome['name']} ({place}) killed by {describe_signal(outcome['signal'])}"
    # A container's main process killed by a signal exits 128 + its number (the shell convention runc follows).
    if code is not None and 128 < code < 160:
        return f"pod {outcome['name']} ({place}) killed by {describe_signal(code - 128)}"
    return f"pod {outcome['name']} ({place}) exited {code}"


def judged(kind: str, outcomes: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods whose exit codes say how the job went.

    An MPIJob's ranks run under its launcher pod (mpiexec or mpirun), whose exit code is the job's; its
    workers only run sshd, which the operator stops when the launcher ends (cleanPodPolicy). Every pod of a
    PyTorchJob or TrainJob runs ranks.
    """
    if kind == "MPIJob":
        return [item for item in outcomes if item["role"] == "launcher"]
    return list(outcomes)


def _failed(kind: str, outcomes: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [item for item in judged(kind, outcomes) if item["exit_code"] not in (None, 0)]


def failure_reasons(
    kind: str, resource: Mapping[str, Any], outcomes: Sequence[Mapping[str, Any]], timed_out: bool
) -> list[str]:
    """The causes of a failed run, root cause first: the pod that failed first, the others, the operator's words."""
    failed = _failed(kind, outcomes)
    # ISO 8601 times of one clock sort as strings; a pod without one (it was deleted) goes last.
    failed.sort(key=lambda item: (item["finished_at"] == "", item["finished_at"], _order(item)))
    reasons = [_describe_exit(item) for item in failed]
    if timed_out:
        reasons.append(f"timed out: the {kind} did not finish within launcher_timeout and was deleted")
    operator = _condition_text(resource, kind)
    if operator:
        reasons.append(operator)
    if not reasons and job_state(kind, resource) != SUCCEEDED:
        reasons.append(f"the {kind} ended without the {SUCCESS_CONDITION[kind]} condition")
    return reasons


def summarize(
    kind: str,
    job: Mapping[str, Any],
    resource: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    timed_out: bool = False,
) -> dict[str, Any]:
    """summary.json of a run on Kubernetes, with the keys of an SSH run's summary where they mean the same.

    ``job``: ``id``, ``launcher``, ``nodes``, ``procs_per_node``, ``namespace``, ``name`` (the resource's),
    ``script``, ``script_args``, ``image``, ``seconds`` (submit until the end was seen). Nodes are pods here:
    ``node_names`` lists the pods, launcher (MPIJob) or master first, ``nodes`` their addresses, and
    ``node_exit_codes`` each one's exit code (None for a pod that had not ended).
    Ranks are not observed one by one on Kubernetes: ``rank_exit_codes`` stays empty.
    """
    _known_kind(kind)
    resource = resource or {}
    outcomes = sorted((pod_outcome(pod) for pod in pods), key=_order)
    state = job_state(kind, resource)
    succeeded = state == SUCCEEDED and not timed_out and not _failed(kind, outcomes)
    launcher_pods = [item for item in outcomes if item["role"] == "launcher"]
    return {
        "status": SUCCEEDED if succeeded else FAILED,
        "failure_reasons": [] if succeeded else failure_reasons(kind, resource, outcomes, timed_out),
        "job_id": job["id"],
        "launcher": job["launcher"],
        "world_size": int(job["nodes"]) * int(job["procs_per_node"]),
        "nodes": [item["address"] for item in outcomes],
        "node_names": [item["name"] for item in outcomes],
        "node_exit_codes": {item["name"]: item["exit_code"] for item in outcomes},
        "launcher_exit_code": launcher_pods[0]["exit_code"] if launcher_pods else None,
        "rank_exit_codes": {},
        "timed_out": bool(timed_out),
        "phases": {"train": job.get("seconds")},
        "scheduler": {
            "type": "kubernetes",
            "api_version": API_VERSIONS[kind],
            "kind": kind,
            "name": job["name"],
            "namespace": job["namespace"],
            "state": state,
            "conditions": [dict(item) for item in (resource.get("status") or {}).get("conditions") or []],
            "pods": outcomes,
        },
        "settings": {
            "runtime": "kubernetes",
            "image": job["image"],
            "script": job["script"],
            "script_args": [str(word) for word in job["script_args"]],
        },
    }
