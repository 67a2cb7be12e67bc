# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubernetes_crd.py: whether the cluster's CRD keeps a job whole, against the upstream CRDs (fixtures/crds) of the
releases targeted, and against an older release's (the same CRD without the fields it added)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.multinode.training.plugins.module_utils import kubernetes_crd
from ansible_collections.multinode.training.plugins.module_utils.kubernetes_job import KubernetesJob, render

CRDS = Path(__file__).parent / "fixtures" / "crds"
FILES = {"PyTorchJob": "kubeflow.org_pytorchjobs.yaml", "TrainJob": "trainer.kubeflow.org_trainjobs.yaml", "MPIJob": "kubeflow.org_mpijobs.yaml"}
LAUNCHER = {"PyTorchJob": "torchrun", "TrainJob": "torchrun", "MPIJob": "mpiexec"}


def stored_crd(kind: str) -> dict[str, Any]:
    return yaml.load((CRDS / FILES[kind]).read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def manifest(kind: str) -> dict[str, Any]:
    """The kind's manifest with every optional part this collection writes (claims, resources, env)."""
    job = KubernetesJob(
        name="job-x",
        launcher=LAUNCHER[kind],
        image="registry.example/train:1",
        command=["python3", "train.py"],
        nodes=2,
        procs_per_node=2,
        env={"OMP_NUM_THREADS": "4"},
        resources={"cpu": "4"},
        data_claim="data",
        output_claim="outputs",
    )
    return render(job, kind)


def without(crd: dict[str, Any], api_version: str, path: list[str]) -> dict[str, Any]:
    """``crd`` as an older release had it: the property at ``path`` (below the served version's schema) gone."""
    older = copy.deepcopy(crd)
    schema = kubernetes_crd.served_schema(older, api_version)
    assert schema is not None
    for name in path[:-1]:
        schema = schema["properties"][name]
    del schema["properties"][path[-1]]
    return older


@pytest.mark.parametrize("kind", sorted(FILES))
def test_the_targeted_releases_crd_keeps_every_field_written(kind: str) -> None:
    assert kubernetes_crd.crd_problems(manifest(kind), kind, [stored_crd(kind)]) == []


def test_a_trainer_older_than_v2_3_would_drop_the_runtime_patches() -> None:
    older = without(stored_crd("TrainJob"), "trainer.kubeflow.org/v1alpha1", ["spec", "runtimePatches"])
    (problem,) = kubernetes_crd.crd_problems(manifest("TrainJob"), "TrainJob", [older])
    assert problem == (
        "the cluster's TrainJob definition (trainjobs.trainer.kubeflow.org) does not know spec.runtimePatches, which it"
        " would drop silently: install Kubeflow Trainer v2.3 or later"
    )


def test_a_field_deep_in_a_list_is_named_with_its_place() -> None:
    older = without(stored_crd("PyTorchJob"), "kubeflow.org/v1", ["spec", "nprocPerNode"])
    (problem,) = kubernetes_crd.crd_problems(manifest("PyTorchJob"), "PyTorchJob", [older])
    assert "does not know spec.nprocPerNode," in problem and "the Kubeflow Training Operator v1.9" in problem


def test_no_definition_on_the_cluster() -> None:
    assert kubernetes_crd.crd_problems(manifest("MPIJob"), "MPIJob", []) == [
        "the cluster has no MPIJob definition (mpijobs.kubeflow.org): install the MPI Operator v0.8 or later"
    ]


def test_a_definition_that_does_not_serve_the_version_written() -> None:
    crd = copy.deepcopy(stored_crd("MPIJob"))
    for version in crd["spec"]["versions"]:
        version["served"] = False
    (problem,) = kubernetes_crd.crd_problems(manifest("MPIJob"), "MPIJob", [crd])
    assert "does not serve kubeflow.org/v2beta1" in problem


@pytest.mark.parametrize("kind", sorted(FILES))
def test_each_kinds_crd_is_named_as_on_the_cluster(kind: str) -> None:
    crd = stored_crd(kind)
    assert kubernetes_crd.crd_name(kind) == crd["metadata"]["name"]
    assert kubernetes_crd.TARGETS[kind][0].split("/")[0] == crd["spec"]["group"]
