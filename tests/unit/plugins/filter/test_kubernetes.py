# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubernetes_manifest filter: the module_utils renderer behind a template's values, errors as filter errors.

The job's values are judged by the preflight (tests/unit/plugins/plugin_utils/test_preflight_kubernetes.py), not here.
"""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.filter.kubernetes import FilterModule

MANIFEST = FilterModule().filters()["kubernetes_manifest"]
JOB: dict[str, Any] = {
    "name": "mnist",
    "image": "registry.example/train:1",
    "command": ["python3", "train.py"],
    "nodes": 3,
    "procs_per_node": 2,
    "launcher": "torchrun",
    "env": {"OMP_NUM_THREADS": "4"},
}


def test_renders_the_asked_kind() -> None:
    manifest = MANIFEST(JOB, "PyTorchJob")
    assert (manifest["apiVersion"], manifest["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    assert manifest["metadata"]["name"] == "mnist"
    assert MANIFEST({**JOB, "launcher": "mpiexec"}, "MPIJob")["kind"] == "MPIJob"


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(AnsibleFilterError, match=r"kubernetes_manifest: unknown kind 'Job'; expected one of \['PyTorchJob'"):
        MANIFEST(JOB, "Job")


def test_an_unknown_field_is_named() -> None:
    with pytest.raises(AnsibleFilterError, match=r"unknown fields \['gpus'\]"):
        MANIFEST({**JOB, "gpus": 1}, "PyTorchJob")


def test_a_missing_field_fails() -> None:
    job = {key: value for key, value in JOB.items() if key != "image"}
    with pytest.raises(AnsibleFilterError, match="kubernetes_manifest: .*image"):
        MANIFEST(job, "PyTorchJob")


FILTERS = FilterModule().filters()
JOB_OBJECT: dict[str, Any] = {
    "id": "20261125-100000-torchrun",
    "launcher": "torchrun",
    "script": "train.py",
    "script_args": [],
    "procs_per_node": "auto",
    "omp_num_threads": "auto",
    "env": {},
    "max_restarts": 3,
    "timeout": 1800,
}
SETTINGS: dict[str, Any] = {
    "kind": "",
    "image": "registry.example/train:1",
    "workdir": "/app",
    "nodes": "2",
    "namespace": "default",
    "resources": {},
    "data_claim": "",
    "output_claim": "",
    "proxy_config_map": "",
    "data_mount": "/data",
    "output_mount": "/outputs",
}


def test_job_spec_describes_the_job_object_with_the_kubernetes_settings() -> None:
    spec = FILTERS["kubernetes_job_spec"](JOB_OBJECT, SETTINGS)
    assert (spec["kind"], spec["api_version"]) == ("PyTorchJob", "kubeflow.org/v1")
    assert spec["job"]["name"] == "job-20261125-100000-torchrun" and spec["job"]["nodes"] == 2
    assert spec["job"]["max_restarts"] == 3 and spec["job"]["command"] == ["python3", "/app/train.py"]
    assert MANIFEST(spec["job"], spec["kind"])["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1


def test_job_spec_refuses_a_job_field_given_as_a_setting() -> None:
    with pytest.raises(AnsibleFilterError, match="kubernetes_job_spec: launcher: the job's own"):
        FILTERS["kubernetes_job_spec"](JOB_OBJECT, {**SETTINGS, "launcher": "mpiexec"})


def test_state_and_summary_of_a_finished_job() -> None:
    resource = {"metadata": {"name": "j"}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert FILTERS["kubernetes_job_state"](resource, "TrainJob") == "succeeded"
    assert FILTERS["kubernetes_job_state"](None, "TrainJob") == "running"
    job = {"id": "j", "name": "j", "namespace": "default", "launcher": "torchrun", "nodes": 1, "procs_per_node": 1,
           "image": "registry.example/train:1", "script": "train.py", "script_args": [], "seconds": 1.0}
    summary = FILTERS["kubernetes_run_summary"](resource, "TrainJob", job, [])
    assert summary["status"] == "succeeded" and summary["scheduler"]["kind"] == "TrainJob"
    with pytest.raises(AnsibleFilterError, match="kubernetes_run_summary: kind: 'Job'"):
        FILTERS["kubernetes_run_summary"](resource, "Job", job, [])
