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
PARAMS: dict[str, Any] = {
    "job_id": "20261125-100000-torchrun",
    "launcher": "torchrun",
    "kind": "",
    "image": "registry.example/train:1",
    "script": "train.py",
    "script_args": [],
    "workdir": "/app",
    "nodes": "2",
    "procs_per_node": "auto",
    "omp_num_threads": "auto",
    "env": {},
    "namespace": "default",
    "resources": {},
    "data_claim": "",
    "output_claim": "",
    "proxy_config_map": "",
    "data_mount": "/data",
    "output_mount": "/outputs",
}


def test_job_spec_describes_the_job_variables() -> None:
    spec = FILTERS["kubernetes_job_spec"](PARAMS)
    assert (spec["kind"], spec["api_version"]) == ("PyTorchJob", "kubeflow.org/v1")
    assert spec["job"]["name"] == "job-20261125-100000-torchrun" and spec["job"]["nodes"] == 2
    assert MANIFEST(spec["job"], spec["kind"])["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1


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
