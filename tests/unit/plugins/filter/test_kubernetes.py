# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubernetes_manifest filter: the module_utils renderer behind a template's values, errors as filter errors."""

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


def test_a_bad_job_fails_naming_the_field() -> None:
    with pytest.raises(AnsibleFilterError, match="kubernetes_manifest: procs_per_node"):
        MANIFEST({**JOB, "procs_per_node": 0}, "PyTorchJob")


def test_an_unknown_field_is_named() -> None:
    with pytest.raises(AnsibleFilterError, match=r"unknown fields \['gpus'\]"):
        MANIFEST({**JOB, "gpus": 1}, "PyTorchJob")


def test_a_missing_field_fails() -> None:
    job = {key: value for key, value in JOB.items() if key != "image"}
    with pytest.raises(AnsibleFilterError, match="kubernetes_manifest: .*image"):
        MANIFEST(job, "PyTorchJob")
