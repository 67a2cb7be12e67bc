# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/kubernetes_job.py: the manifests against the operators' own CRD schemas.

Every manifest is checked three ways: with jsonschema against the CRD's OpenAPI v3 schema (fixtures/crds, see
its README.md for their sources), with a strict walk that finds keys the schema does not know (Kubernetes
structural schemas allow unknown keys, which the API server then drops silently), and, for the Kubernetes
objects inside them (pod templates, object metadata), with kubernetes_validate's strict schemas.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from ansible_collections.multinode.training.plugins.module_utils.kubernetes_crd import unknown_keys
from ansible_collections.multinode.training.plugins.module_utils.kubernetes_job import (
    KubernetesJob,
    mpi_job,
    pytorch_job,
    render,
    train_job,
)

CRDS = Path(__file__).parent / "fixtures" / "crds"
CRD_FILES = {
    "PyTorchJob": ("kubeflow.org_pytorchjobs.yaml", "kubeflow.org/v1"),
    "TrainJob": ("trainer.kubeflow.org_trainjobs.yaml", "trainer.kubeflow.org/v1alpha1"),
    "MPIJob": ("kubeflow.org_mpijobs.yaml", "kubeflow.org/v2beta1"),
}
KUBERNETES_VERSION = "1.33"
IMAGE = "registry.example.org:5000/multinode/training:2.13.0"
COMMAND = ["python3", "/opt/train/train.py", "--epochs", "2"]
ENV = {"OMP_NUM_THREADS": "8", "KMP_BLOCKTIME": "1", "KMP_AFFINITY": "granularity=fine,compact,1,0"}
FULL = {
    "resources": {"cpu": "4", "memory": "8Gi"},
    "data_claim": "train-data",
    "output_claim": "train-outputs",
    "proxy_config_map": "proxy-env",
}


def job(**changes: Any) -> KubernetesJob:
    values: dict[str, Any] = {
        "name": "job-20260101-1",
        "image": IMAGE,
        "command": COMMAND,
        "nodes": 3,
        "procs_per_node": 4,
        "launcher": "torchrun",
        "env": dict(ENV),
    }
    values.update(changes)
    return KubernetesJob(**values)


# ---------------------------------------------------------------- the CRD schemas


@functools.lru_cache(maxsize=None)
def crd_schema(kind: str) -> dict[str, Any]:
    """The stored CRD's openAPIV3Schema of the API version the module writes for ``kind``."""
    filename, api_version = CRD_FILES[kind]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load((CRDS / filename).read_text(encoding="utf-8"), Loader=loader)  # nosec B506: a safe loader
    group, version = api_version.split("/")
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind
    (served,) = [entry for entry in crd["spec"]["versions"] if entry["name"] == version]
    return served["schema"]["openAPIV3Schema"]


def json_schema(node: Any) -> Any:
    """A Kubernetes structural schema as plain JSON Schema (draft 4) by dropping or translating its extensions.

    ``x-kubernetes-int-or-string`` becomes "integer or string"; ``x-kubernetes-preserve-unknown-fields`` needs
    nothing (these schemas never forbid unknown keys); ``nullable`` admits null; the other ``x-kubernetes-*``
    keys (list types, CEL rules) are dropped.
    """
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-"):
            continue
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {name: json_schema(schema) for name, schema in value.items()}
        else:
            out[key] = (
                json_schema(value)
                if key in ("items", "additionalProperties", "not", "anyOf", "allOf", "oneOf")
                else value
            )
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    out.pop("nullable", None)
    return out


@functools.lru_cache(maxsize=None)
def crd_validator(kind: str) -> jsonschema.Draft4Validator:
    schema = json_schema(crd_schema(kind))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def schema_errors(kind: str, manifest: dict[str, Any]) -> list[str]:
    errors = crd_validator(kind).iter_errors(manifest)
    return sorted(f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in errors)


def crd_unknown_keys(kind: str, manifest: dict[str, Any]) -> list[str]:
    """kubernetes_crd.unknown_keys() (what the product checks on the cluster) below the root's metadata, which the
    CRD leaves to the API server (ObjectMeta)."""
    body = {key: value for key, value in manifest.items() if key != "metadata"}
    return unknown_keys(body, crd_schema(kind))


# ---------------------------------------------------------------- the Kubernetes objects inside


def pod_templates(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The pod templates of a manifest by replica type; for a TrainJob, the pod the runtime would make of it.

    A TrainJob holds no pod template: its trainer's fields and runtime patch are laid over the runtime's
    ``node`` pod, so they are assembled here into that pod (container ``node``) to be checked as one.
    """
    spec = manifest["spec"]
    if manifest["kind"] == "PyTorchJob":
        return {name: replica["template"] for name, replica in spec["pytorchReplicaSpecs"].items()}
    if manifest["kind"] == "MPIJob":
        return {name: replica["template"] for name, replica in spec["mpiReplicaSpecs"].items()}
    trainer = spec["trainer"]
    container = {"name": "node", "image": trainer["image"], "command": trainer["command"]}
    for source, target in (("env", "env"), ("resourcesPerNode", "resources")):
        if source in trainer:
            container[target] = trainer[source]
    pod_spec: dict[str, Any] = {"containers": [container]}
    for patch in spec.get("runtimePatches", []):
        for replicated in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            assert replicated["name"] == "node"
            patched = replicated["template"]["spec"]["template"]["spec"]
            pod_spec["volumes"] = patched["volumes"]
            for patched_container in patched["containers"]:
                assert patched_container["name"] == "node"
                container.update({key: value for key, value in patched_container.items() if key != "name"})
    return {"node": {"spec": pod_spec}}


def kubernetes_errors(manifest: dict[str, Any]) -> list[str]:
    """kubernetes_validate's strict errors for the manifest's metadata (as a ConfigMap's) and pod templates."""
    documents = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": manifest["metadata"]}]
    for name, template in pod_templates(manifest).items():
        metadata = {"name": f"{manifest['metadata']['name']}-{name.lower()}", **template.get("metadata", {})}
        documents.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]})
    errors = []
    for document in documents:
        try:
            kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            errors.append(f"{document['kind']} {'.'.join(map(str, error.path))}: {error.message}")
    return errors


def assert_valid(kind: str, manifest: dict[str, Any]) -> None:
    assert manifest["kind"] == kind
    assert manifest["apiVersion"] == CRD_FILES[kind][1]
    assert schema_errors(kind, manifest) == []
    assert crd_unknown_keys(kind, manifest) == []
    assert kubernetes_errors(manifest) == []
    assert yaml.safe_load(yaml.safe_dump(manifest)) == manifest


def container(template: dict[str, Any]) -> dict[str, Any]:
    (only,) = template["spec"]["containers"]
    return only


# ---------------------------------------------------------------- the stored CRDs


@pytest.mark.parametrize("kind", sorted(CRD_FILES))
def test_stored_crds_define_the_versions_written(kind: str) -> None:
    schema = crd_schema(kind)
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(schema["properties"])
    assert crd_validator(kind) is not None


def test_crd_readme_names_every_stored_crd() -> None:
    readme = (CRDS / "README.md").read_text(encoding="utf-8")
    stored = sorted(path.name for path in CRDS.glob("*.yaml"))
    assert stored == sorted(filename for filename, _version in CRD_FILES.values())
    for filename, api_version in CRD_FILES.values():
        assert filename in readme and api_version in readme


# ---------------------------------------------------------------- every kind, with and without the extras

CASES = [
    ("PyTorchJob", "torchrun", {}),
    ("PyTorchJob", "torchrun", FULL),
    ("PyTorchJob", "torchrun", {"nodes": 1}),
    ("TrainJob", "torchrun", {}),
    ("TrainJob", "torchrun", FULL),
    ("TrainJob", "torchrun", {"data_claim": "train-data", "nodes": 1}),
    ("MPIJob", "mpiexec", {}),
    ("MPIJob", "mpiexec", FULL),
    ("MPIJob", "mpirun", {}),
    ("MPIJob", "mpirun", FULL),
    ("MPIJob", "mpirun", {"output_claim": "train-outputs", "env": {}, "nodes": 1, "procs_per_node": 1}),
    # launcher_max_restarts: the operators' own restart settings.
    ("PyTorchJob", "torchrun", {"max_restarts": 3}),
    ("TrainJob", "torchrun", {"max_restarts": 3}),
    ("MPIJob", "mpiexec", {"max_restarts": 3}),
]


@pytest.mark.parametrize(("kind", "launcher", "extras"), CASES)
def test_manifest_is_valid_for_its_crd_and_kubernetes(kind: str, launcher: str, extras: dict[str, Any]) -> None:
    assert_valid(kind, render(job(launcher=launcher, **extras), kind))


def test_pytorch_job() -> None:
    manifest = pytorch_job(job(**FULL, namespace="training"))
    assert manifest["metadata"]["name"] == "job-20260101-1"
    assert manifest["metadata"]["namespace"] == "training"
    spec = manifest["spec"]
    assert spec["nprocPerNode"] == "4"
    master, worker = spec["pytorchReplicaSpecs"]["Master"], spec["pytorchReplicaSpecs"]["Worker"]
    assert (master["replicas"], worker["replicas"]) == (1, 2)
    assert master["restartPolicy"] == worker["restartPolicy"] == "Never"
    assert master["template"] == worker["template"] and master["template"] is not worker["template"]
    rank = container(master["template"])
    assert rank["name"] == "pytorch"
    assert rank["image"] == IMAGE
    assert rank["command"] == ["torchrun", "--no-python", *COMMAND]
    assert rank["env"] == [{"name": name, "value": value} for name, value in ENV.items()] + [
        {"name": "DATA_DIR", "value": "/data"},
        {"name": "OUTPUT_DIR", "value": "/outputs"},
    ]
    assert rank["envFrom"] == [{"configMapRef": {"name": "proxy-env"}}]
    assert rank["resources"] == {"requests": FULL["resources"], "limits": FULL["resources"]}
    assert rank["volumeMounts"] == [
        {"name": "data", "mountPath": "/data"},
        {"name": "outputs", "mountPath": "/outputs"},
    ]
    assert master["template"]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "train-data"}},
        {"name": "outputs", "persistentVolumeClaim": {"claimName": "train-outputs"}},
    ]
    assert "---" not in yaml.safe_dump(manifest) and "&id" not in yaml.safe_dump(manifest)


def test_pytorch_job_on_one_node_has_no_workers() -> None:
    manifest = pytorch_job(job(nodes=1))
    assert list(manifest["spec"]["pytorchReplicaSpecs"]) == ["Master"]
    rank = container(manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"])
    assert {"envFrom", "resources", "volumeMounts"}.isdisjoint(rank)


def test_pytorch_job_nproc_is_a_string_in_the_crd() -> None:
    manifest = pytorch_job(job())
    manifest["spec"]["nprocPerNode"] = 4
    assert schema_errors("PyTorchJob", manifest) == ["spec.nprocPerNode: 4 is not of type 'string'"]


def test_train_job() -> None:
    manifest = train_job(job(**FULL))
    spec = manifest["spec"]
    assert spec["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "torch-distributed",
    }
    trainer = spec["trainer"]
    assert trainer["image"] == IMAGE
    assert trainer["command"] == ["torchrun", "--no-python", *COMMAND]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (3, 4)
    assert {"name": "DATA_DIR", "value": "/data"} in trainer["env"]
    assert trainer["resourcesPerNode"] == {"requests": FULL["resources"], "limits": FULL["resources"]}
    (patch,) = spec["runtimePatches"]
    assert patch["manager"] == "multinode.training"
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]["spec"]
    assert pod["containers"] == [
        {
            "name": "node",
            "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "outputs", "mountPath": "/outputs"}],
        }
    ]
    assert [volume["persistentVolumeClaim"]["claimName"] for volume in pod["volumes"]] == [
        "train-data",
        "train-outputs",
    ]
    # The schema has no envFrom for a TrainJob: the proxy ConfigMap cannot be referenced.
    assert "proxy-env" not in yaml.safe_dump(manifest)


def test_train_job_without_claims_patches_nothing() -> None:
    spec = train_job(job())["spec"]
    assert "runtimePatches" not in spec
    assert "resourcesPerNode" not in spec["trainer"]


@pytest.mark.parametrize(("launcher", "implementation"), [("mpiexec", "Intel"), ("mpirun", "OpenMPI")])
def test_mpi_job(launcher: str, implementation: str) -> None:
    manifest = mpi_job(job(launcher=launcher, **FULL))
    spec = manifest["spec"]
    assert spec["slotsPerWorker"] == 4
    assert spec["mpiImplementation"] == implementation
    assert spec["runPolicy"]["cleanPodPolicy"] == "Running"
    assert spec["sshAuthMountPath"] == "/home/dev/.ssh"
    launcher_spec, worker_spec = spec["mpiReplicaSpecs"]["Launcher"], spec["mpiReplicaSpecs"]["Worker"]
    assert (launcher_spec["replicas"], worker_spec["replicas"]) == (1, 3)
    launch = container(launcher_spec["template"])["command"]
    program = len(launch) - len(COMMAND)
    assert launch[program:] == COMMAND
    if launcher == "mpiexec":
        assert launch[:5] == ["mpiexec.hydra", "-n", "12", "-ppn", "4"]
        assert launch[launch.index("-genvlist") + 1] == "OMP_NUM_THREADS,KMP_BLOCKTIME,KMP_AFFINITY,DATA_DIR,OUTPUT_DIR"
    else:
        assert launch[:5] == ["mpirun", "-np", "12", "--map-by", "ppr:4:node"]
        first_x = launch.index("-x")
        assert launch[first_x:program] == [word for name in [*ENV, "DATA_DIR", "OUTPUT_DIR"] for word in ("-x", name)]
    worker = container(worker_spec["template"])
    assert worker["command"][0] == "/usr/sbin/sshd" and "HostKey=/home/dev/.ssh/id_rsa" in worker["command"]
    assert worker["readinessProbe"]["tcpSocket"]["port"] == 2222
    assert "-p 2222" in " ".join(launch)
    assert worker["resources"] == {"requests": FULL["resources"], "limits": FULL["resources"]}
    assert [mount["mountPath"] for mount in worker["volumeMounts"]] == ["/data", "/outputs"]
    assert "volumes" not in launcher_spec["template"]["spec"]
    assert (
        container(launcher_spec["template"])["envFrom"]
        == worker["envFrom"]
        == [{"configMapRef": {"name": "proxy-env"}}]
    )


# ---------------------------------------------------------------- the checks are real


def test_strict_key_check_finds_a_misspelled_field() -> None:
    manifest = pytorch_job(job())
    manifest["spec"]["pytorchReplicaSpecs"]["Master"]["replica"] = 1
    # Plain JSON Schema accepts it, as the API server would (and drop it) ...
    assert schema_errors("PyTorchJob", manifest) == []
    # ... the strict walk does not.
    assert crd_unknown_keys("PyTorchJob", manifest) == ["spec.pytorchReplicaSpecs.Master.replica"]


@pytest.mark.parametrize("kind", ["TrainJob", "MPIJob"])
def test_strict_key_check_looks_inside_lists_and_maps(kind: str) -> None:
    manifest = render(job(launcher="torchrun" if kind == "TrainJob" else "mpirun", data_claim="d"), kind)
    broken = copy.deepcopy(manifest)
    if kind == "TrainJob":
        broken["spec"]["trainer"]["env"][0]["valu"] = "1"
        expected = "spec.trainer.env[0].valu"
    else:
        broken["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"][0]["pvc"] = {}
        expected = "spec.mpiReplicaSpecs.Worker.template.spec.volumes[0].pvc"
    assert crd_unknown_keys(kind, manifest) == []
    assert crd_unknown_keys(kind, broken) == [expected]


def test_schema_check_finds_wrong_types_values_and_missing_fields() -> None:
    manifest = mpi_job(job(launcher="mpirun", data_claim="d"))
    manifest["spec"]["mpiImplementation"] = "MVAPICH"
    manifest["spec"]["slotsPerWorker"] = "4"
    del manifest["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"][0]["name"]
    assert schema_errors("MPIJob", manifest) == [
        "spec.mpiImplementation: 'MVAPICH' is not one of ['OpenMPI', 'Intel', 'MPICH']",
        "spec.mpiReplicaSpecs.Worker.template.spec.volumes.0: 'name' is a required property",
        "spec.slotsPerWorker: '4' is not of type 'integer'",
    ]
    manifest = train_job(job())
    manifest["spec"]["trainer"]["numProcPerNode"] = "auto"
    assert schema_errors("TrainJob", manifest) == ["spec.trainer.numProcPerNode: 'auto' is not of type 'integer'"]


def test_int_or_string_fields_accept_both() -> None:
    manifest = mpi_job(job(launcher="mpirun", resources={"cpu": 4, "memory": "8Gi"}))
    resources = container(manifest["spec"]["mpiReplicaSpecs"]["Worker"]["template"])["resources"]
    assert resources["limits"]["cpu"] == "4"
    resources["limits"]["cpu"] = 4
    assert schema_errors("MPIJob", manifest) == []
    resources["limits"]["cpu"] = ["4"]
    assert schema_errors("MPIJob", manifest) != []


def test_kubernetes_validate_rejects_a_bad_pod_template() -> None:
    manifest = pytorch_job(job())
    container(manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"])["enviroment"] = []
    assert schema_errors("PyTorchJob", manifest) == []
    assert crd_unknown_keys("PyTorchJob", manifest) != []
    (error,) = kubernetes_errors(manifest)
    assert error.startswith("Pod spec.containers.0") and "enviroment" in error


# ---------------------------------------------------------------- restarts (launcher_max_restarts)


def test_pytorch_job_restarts_a_pod_killed_by_a_signal_up_to_max_restarts() -> None:
    spec = pytorch_job(job(max_restarts=3))["spec"]
    assert spec["runPolicy"] == {"backoffLimit": 3}
    assert {replica["restartPolicy"] for replica in spec["pytorchReplicaSpecs"].values()} == {"ExitCode"}


def test_pytorch_job_without_restarts_fails_at_the_first_failure() -> None:
    spec = pytorch_job(job(max_restarts=0))["spec"]
    assert "runPolicy" not in spec
    assert {replica["restartPolicy"] for replica in spec["pytorchReplicaSpecs"].values()} == {"Never"}


def test_mpi_job_restarts_its_launcher_up_to_max_restarts() -> None:
    spec = mpi_job(job(launcher="mpiexec", max_restarts=2))["spec"]
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 2}
    assert spec["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] == "OnFailure"
    assert mpi_job(job(launcher="mpiexec"))["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] == "Never"
