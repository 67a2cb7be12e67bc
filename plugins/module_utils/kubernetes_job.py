# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kubernetes manifests of a training job, for the Kubeflow operators: PyTorchJob, TrainJob and MPIJob.

The same job the launch module starts over SSH (one program per rank, ``nodes`` x ``procs_per_node`` ranks,
the rank tuning environment) described as a custom resource, so a cluster's Kubeflow operator starts the
ranks instead. Each renderer returns plain dicts and lists, ready for ``yaml.safe_dump`` or the Kubernetes
API; nothing here talks to a cluster. The fields written are those of the CRDs of the releases named below
(their OpenAPI schemas are the unit tests' fixtures, tests/unit/plugins/module_utils/fixtures/crds):

- ``kubeflow.org/v1`` PyTorchJob: training operator v1.9.4 (kubeflow/trainer, tag v1.9.4).
- ``trainer.kubeflow.org/v1alpha1`` TrainJob: Kubeflow Trainer v2.3.0 (kubeflow/trainer, tag v2.3.0).
- ``kubeflow.org/v2beta1`` MPIJob: MPI operator v0.8.x (kubeflow/mpi-operator).

torchrun jobs become a PyTorchJob or a TrainJob, mpiexec (Intel MPI) and mpirun (Open MPI) jobs an MPIJob.

The renderers trust their job. What an operator would refuse is said by the rule functions below (each returns a
problem or None), which the preflight applies to the launcher role's Kubernetes inputs before anything is rendered:
the Kubernetes path has no validator of its own.

Pure Python (no Ansible imports) so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY

# The launchers that run on Kubernetes, and the ones each kind can start (their registry entries' kubernetes_kinds).
LAUNCHERS = tuple(name for name, launcher in REGISTRY.items() if launcher.kubernetes_kinds)
KINDS = {
    kind: tuple(name for name in LAUNCHERS if kind in REGISTRY[name].kubernetes_kinds)
    for name in LAUNCHERS
    for kind in REGISTRY[name].kubernetes_kinds
}
MANAGED_BY = "multinode.training"

# RFC 1035 labels: every operator here checks job names with it (the PyTorchJob webhook with
# NameIsDNS1035Label, the MPIJob webhook on "<name>-worker-<i>", the TrainJob CRD with a CEL rule),
# since they become pod host names and Service names. A subset of RFC 1123 labels.
DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253

# Image references, after the grammar of distribution/reference (reference.go in distribution/reference):
# an optional registry host (with port), lowercase path components, an optional tag and an optional digest.
# Only sha256 digests are accepted.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?"
)
IMAGE_NAME_MAX = 255

# Resource names (cpu, memory, vendor.com/gpu) and quantities (Kubernetes' resource.Quantity).
RESOURCE_NAME = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
QUANTITY = re.compile(
    r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+))?"
)

# Variables the operators set in the rank containers themselves; a second definition would be ignored or,
# for TrainJob, rejected by its webhook (constants.TorchRunReservedEnvNames).
# PyTorchJob: pkg/controller.v1/pytorch/envvar.go and master.go; MPIJob: pkg/controller/mpi_job_controller.go.
RESERVED_ENV = {
    "torchrun": frozenset(
        ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
        + ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
    ),
    "mpi": frozenset(
        ("OMPI_MCA_orte_default_hostfile", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_plm_rsh_args")
        + ("I_MPI_HYDRA_HOST_FILE", "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "K_MPI_JOB_ROLE")
    ),
}

# PyTorchJob: the operator finds the rank container by this name (PyTorchJobDefaultContainerName).
PYTORCH_CONTAINER = "pytorch"
# TrainJob: the torch-distributed ClusterTrainingRuntime's replicated job and its container, both "node".
TRAIN_RUNTIME = "torch-distributed"
TRAIN_REPLICATED_JOB = "node"
TRAIN_CONTAINER = "node"
# MPIJob: sshd on the workers listens where mpi-operator's own images have it (build/base/Dockerfile).
MPI_SSH_PORT = 2222
# The launcher's ssh options for the workers: their sshd's port; no host key check (every worker presents the
# job's key and the mounted .ssh is read-only, so nothing could be remembered), as mpi-operator's images set in
# /etc/ssh/ssh_config; ConnectionAttempts=10 as the operator itself sets (OMPI_MCA_plm_rsh_args,
# I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS), which the launcher's flags override.
MPI_SSH_OPTIONS = (
    f"-p {MPI_SSH_PORT} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectionAttempts=10"
)
MPI_IMPLEMENTATION = {"mpiexec": "Intel", "mpirun": "OpenMPI"}
DATA_VOLUME = "data"
OUTPUT_VOLUME = "outputs"


@dataclass(frozen=True)
class KubernetesJob:
    """One training job: ``nodes`` pods, ``procs_per_node`` ranks in each, every rank running ``command``.

    ``name`` is the job id and the custom resource's name. ``env`` is the rank environment (OMP_NUM_THREADS,
    KMP_*, interface variables, ...). ``resources`` (e.g. ``{"cpu": "4", "memory": "8Gi"}``) are each rank
    pod's requests and limits. ``data_claim`` / ``output_claim`` are PersistentVolumeClaims mounted at
    ``data_mount`` / ``output_mount``, announced to the ranks as DATA_DIR / OUTPUT_DIR; with more than one
    node they must be ReadWriteMany, every pod mounts them. ``proxy_config_map`` names a ConfigMap whose
    keys become variables of every container (``envFrom``). ``ssh_auth_mount_path`` (MPIJob only) is
    where the MPI operator mounts the job's SSH keys: the ``.ssh`` directory of the image's user.
    ``max_restarts`` is how often the operator may restart the job's pods after a failure (``launcher_max_restarts``).
    """

    name: str
    image: str
    command: list[str]
    nodes: int
    procs_per_node: int
    launcher: str
    namespace: str = "default"
    env: dict[str, str] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)
    data_claim: str | None = None
    output_claim: str | None = None
    data_mount: str = "/data"
    output_mount: str = "/outputs"
    proxy_config_map: str | None = None
    ssh_auth_mount_path: str = "/home/dev/.ssh"
    max_restarts: int = 0


# ---------------------------------------------------------------- rules
#
# What the operators would refuse, one input at a time: each function returns what is wrong, or None. The preflight
# (plugin_utils/preflight.py) judges the launcher role's Kubernetes inputs with them before anything is described,
# rendered or written; the renderers below trust the job they are given and judge nothing themselves.
# Fields no input of the role can make invalid have no rule: ``command`` is written by kubernetes_run.describe
# (python3, then launcher_script, which the preflight's own rule holds to a non-empty relative path), every ``env``
# value is made a string there (the preflight refuses lists and mappings), and ``ssh_auth_mount_path`` is no
# variable of the role (its default is used).

_LABEL_1035 = (
    "an RFC 1035 label: lowercase letters, digits and '-', starting with a letter and ending with a letter or"
    f" digit, at most {LABEL_MAX} characters"
)
_LABEL_1123 = (
    "a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit,"
    f" at most {LABEL_MAX} characters"
)
_SUBDOMAIN = f"a DNS subdomain: DNS labels joined by '.', at most {SUBDOMAIN_MAX} characters"


def _name_problem(value: Any, pattern: re.Pattern[str], limit: int, allowed: str) -> str | None:
    if isinstance(value, str) and len(value) <= limit and pattern.fullmatch(value):
        return None
    return f"{value!r} is not {allowed}"


def job_name_problem(name: Any) -> str | None:
    """The custom resource's name: an RFC 1035 label (it becomes the pods' host names and Service names)."""
    return _name_problem(name, DNS_1035_LABEL, LABEL_MAX, _LABEL_1035)


def namespace_problem(namespace: Any) -> str | None:
    return _name_problem(namespace, DNS_1123_LABEL, LABEL_MAX, _LABEL_1123)


def object_name_problem(name: Any) -> str | None:
    """A PersistentVolumeClaim's or ConfigMap's name: a DNS subdomain."""
    return _name_problem(name, DNS_1123_SUBDOMAIN, SUBDOMAIN_MAX, _SUBDOMAIN)


def launcher_problem(launcher: Any) -> str | None:
    """A launcher no kind runs."""
    if launcher in LAUNCHERS:
        return None
    return f"{launcher!r} has no Kubernetes kind; use one of {', '.join(LAUNCHERS)}"


def kind_problem(kind: Any, launcher: Any) -> str | None:
    """A kind that cannot start ``launcher``'s ranks; '' (the launcher's usual kind) fits every launcher. A kind
    outside KINDS is the argument spec's to report (its choices), a launcher no kind runs launcher_problem's."""
    if kind not in KINDS or launcher not in LAUNCHERS or launcher in KINDS[kind]:
        return None
    fits = [other for other, launchers in KINDS.items() if launcher in launchers]
    return f"a {kind} runs {' or '.join(KINDS[kind])} jobs, not launcher_type {launcher!r}; use {' or '.join(fits)}"


def _longest_host_name(name: str, kind: str, nodes: int) -> str:
    """The longest pod host name the ``kind``'s operator derives from the job name: it must be an RFC 1035 label too."""
    return {
        "PyTorchJob": f"{name}-worker-{max(nodes - 2, 0)}",
        "TrainJob": f"{name}-{TRAIN_REPLICATED_JOB}-0-{nodes - 1}",
        "MPIJob": f"{name}-worker-{nodes - 1}",
    }[kind]


def host_name_problem(name: str, kind: str, nodes: int) -> str | None:
    host = _longest_host_name(name, kind, nodes)
    if len(host) <= LABEL_MAX:
        return None
    return f"too long for a {kind} of {nodes} nodes: its pod host name {host!r} would exceed {LABEL_MAX} characters"


def image_problem(image: Any) -> str | None:
    match = IMAGE_REFERENCE.fullmatch(image) if isinstance(image, str) else None
    if match is not None and len(match.group("name")) <= IMAGE_NAME_MAX:
        return None
    return (
        f"{image!r} is not an image reference [registry[:port]/]path[:tag][@sha256:<64 hex digits>]"
        " with a lowercase path (letters, digits, '.', '_', '-'), a tag of at most 128 letters, digits,"
        " '_', '.' and '-' (not starting with '.' or '-'), and no spaces"
    )


def env_problem(names: Iterable[str], launcher: str, claimed: Iterable[str]) -> str | None:
    """Rank variables the job may not set: those the operator of ``launcher``'s kind sets itself, and ``claimed``
    (DATA_DIR, OUTPUT_DIR: set from a claim's mount path). The names' own form is the preflight's environment rule."""
    reserved = RESERVED_ENV["torchrun" if launcher == "torchrun" else "mpi"]
    by_operator = sorted(set(names) & reserved)
    from_claims = sorted(set(names) & set(claimed))
    problems = []
    if by_operator:
        problems.append(
            f"the operator sets {', '.join(by_operator)} itself for {launcher} jobs; it reserves {', '.join(sorted(reserved))}"
        )
    if from_claims:
        problems.append(f"{', '.join(from_claims)} comes from the claim's mount path; leave it out")
    return "; ".join(problems) or None


# The resource names Kubernetes itself defines without a domain; any other (a device plugin's) is domain-qualified.
NATIVE_RESOURCES = ("cpu", "memory", "ephemeral-storage")
NATIVE_RESOURCE_PREFIXES = ("hugepages-",)


def _native_or_qualified(name: str) -> bool:
    return "/" in name or name in NATIVE_RESOURCES or name.startswith(NATIVE_RESOURCE_PREFIXES)


def resources_problem(resources: Any) -> str | None:
    """What is wrong with a pod's resources (requests and limits alike), or None."""
    if not isinstance(resources, Mapping):
        return f"must be a mapping such as {{'cpu': '4', 'memory': '8Gi'}}, got {resources!r}"
    for name, quantity in resources.items():
        if not isinstance(name, str) or not RESOURCE_NAME.fullmatch(name) or not _native_or_qualified(name):
            return (
                f"{name!r} is not a resource name: use cpu, memory, ephemeral-storage, hugepages-<size>, or a device"
                " plugin's domain-qualified name (gpu.intel.com/i915, gpu.intel.com/xe, ...)"
            )
        if isinstance(quantity, bool) or not QUANTITY.fullmatch(str(quantity)):
            return f"{name}: {quantity!r} is not a quantity (4, 500m, 8Gi, ...)"
    return None


def mount_problem(path: Any) -> str | None:
    """Where a claim is mounted in the rank containers."""
    if isinstance(path, str) and path.startswith("/") and ":" not in path and len(path) >= 2:
        return None
    return f"{path!r} is not allowed; use an absolute path other than '/' without ':'"


def shared_mount_problem(data_mount: str, output_mount: str) -> str | None:
    """Both claims mounted at one path (judged when both are set)."""
    return f"{output_mount!r} is also the data claim's mount path; mount the claims apart" if data_mount == output_mount else None


# ---------------------------------------------------------------- shared pieces


def _metadata(job: KubernetesJob) -> dict[str, Any]:
    return {"name": job.name, "namespace": job.namespace, "labels": {"app.kubernetes.io/managed-by": MANAGED_BY}}


def _env(job: KubernetesJob) -> list[dict[str, str]]:
    """The rank environment as a container's ``env`` list: ``env`` first, then DATA_DIR and OUTPUT_DIR."""
    env = [{"name": name, "value": value} for name, value in job.env.items()]
    if job.data_claim is not None:
        env.append({"name": "DATA_DIR", "value": job.data_mount})
    if job.output_claim is not None:
        env.append({"name": "OUTPUT_DIR", "value": job.output_mount})
    return env


def _env_from(job: KubernetesJob) -> list[dict[str, Any]]:
    return [] if job.proxy_config_map is None else [{"configMapRef": {"name": job.proxy_config_map}}]


def _resources(job: KubernetesJob) -> dict[str, dict[str, str]]:
    """Requests equal to limits: each rank pod gets exactly what it asked for (Guaranteed QoS)."""
    if not job.resources:
        return {}
    quantities = {name: str(quantity) for name, quantity in job.resources.items()}
    return {"requests": dict(quantities), "limits": dict(quantities)}


def _claims(job: KubernetesJob) -> list[tuple[str, str, str]]:
    """(volume name, claim, mount path) of each claim set."""
    claims = [(DATA_VOLUME, job.data_claim, job.data_mount), (OUTPUT_VOLUME, job.output_claim, job.output_mount)]
    return [(volume, claim, path) for volume, claim, path in claims if claim is not None]


def _volumes(job: KubernetesJob) -> list[dict[str, Any]]:
    return [{"name": volume, "persistentVolumeClaim": {"claimName": claim}} for volume, claim, _path in _claims(job)]


def _volume_mounts(job: KubernetesJob) -> list[dict[str, str]]:
    return [{"name": volume, "mountPath": path} for volume, _claim, path in _claims(job)]


def _container(
    job: KubernetesJob, name: str, command: list[str], mounts: bool = True, resources: bool = True
) -> dict[str, Any]:
    """A container of the job's image; empty lists and maps are left out."""
    container: dict[str, Any] = {
        "name": name,
        "image": job.image,
        "command": command,
        "env": _env(job),
        "envFrom": _env_from(job),
        "resources": _resources(job) if resources else {},
        "volumeMounts": _volume_mounts(job) if mounts else [],
    }
    return {key: value for key, value in container.items() if value != [] and value != {}}


def _pod_template(containers: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if volumes:
        spec["volumes"] = volumes
    return {"spec": spec}


def _torchrun_command(job: KubernetesJob) -> list[str]:
    """torchrun in each pod, starting ``procs_per_node`` ranks of the program.

    The operators give torchrun its whole configuration through PET_* variables (torch.distributed.run
    reads every flag from PET_<FLAG>): PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and
    PET_MASTER_PORT; the rendezvous is torchrun's default, static. ``--no-python``: the command is a
    program, as for the launch module's torchrun.
    """
    return ["torchrun", "--no-python", *job.command]


# ---------------------------------------------------------------- PyTorchJob (kubeflow.org/v1)


def pytorch_job(job: KubernetesJob) -> dict[str, Any]:
    """A PyTorchJob: a Master pod (node rank 0) and ``nodes - 1`` Worker pods, each running torchrun.

    ``nprocPerNode`` is a string in the CRD (it also takes "auto", "cpu", "gpu"). Without restarts,
    ``restartPolicy: Never``: a failed rank fails the job. With ``max_restarts``, ``restartPolicy: ExitCode`` and
    ``runPolicy.backoffLimit``: the operator restarts a pod whose container ended with a retryable code (128 and
    above: killed by a signal, as the collection's own restart policy does) and fails the job on a code below 128
    (the script's own error), at most ``max_restarts`` times. The operator adds the master port
    (``pytorchjob-port``, 23456) to the ``pytorch`` container.
    """
    replica_specs = {"Master": _pytorch_replicas(job, 1)}
    if job.nodes > 1:
        replica_specs["Worker"] = _pytorch_replicas(job, job.nodes - 1)
    spec: dict[str, Any] = {"nprocPerNode": str(job.procs_per_node), "pytorchReplicaSpecs": replica_specs}
    if job.max_restarts:
        spec["runPolicy"] = {"backoffLimit": job.max_restarts}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": _metadata(job), "spec": spec}


def _pytorch_replicas(job: KubernetesJob, replicas: int) -> dict[str, Any]:
    """A replica spec of its own (no dict shared with the other one, which YAML would dump as an alias)."""
    template = _pod_template([_container(job, PYTORCH_CONTAINER, _torchrun_command(job))], _volumes(job))
    return {"replicas": replicas, "restartPolicy": "ExitCode" if job.max_restarts else "Never", "template": template}


# ---------------------------------------------------------------- TrainJob (trainer.kubeflow.org/v1alpha1)


def train_job(job: KubernetesJob) -> dict[str, Any]:
    """A TrainJob on the ``torch-distributed`` ClusterTrainingRuntime: ``nodes`` pods, each running torchrun.

    ``spec.trainer`` carries the image, command, node and process counts, environment and per-node
    resources (as requests and limits). The claims are mounted through ``spec.runtimePatches`` (the v2.3
    replacement of ``podTemplateOverrides``), which patches the runtime's ``node`` job: its pod's volumes
    and its ``node`` container's volume mounts.

    ``max_restarts`` is left out too: the v1alpha1 TrainJob has no restart field; restarts are the
    ClusterTrainingRuntime's (its JobSet's ``failurePolicy.maxRestarts``).

    ``proxy_config_map`` is left out: the v1alpha1 schema has no ``envFrom`` anywhere (``spec.trainer``
    takes ``env`` only, and the runtime patch of a container takes ``env``, ``volumeMounts`` and
    ``securityContext``), so a proxy must come from the ClusterTrainingRuntime or from ``env``.
    """
    trainer: dict[str, Any] = {
        "image": job.image,
        "command": _torchrun_command(job),
        "numNodes": job.nodes,
        "numProcPerNode": job.procs_per_node,
        "env": _env(job),
        "resourcesPerNode": _resources(job),
    }
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": TRAIN_RUNTIME},
        "trainer": {key: value for key, value in trainer.items() if value != [] and value != {}},
    }
    if _claims(job):
        spec["runtimePatches"] = [_runtime_patch(job)]
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": _metadata(job), "spec": spec}


def _runtime_patch(job: KubernetesJob) -> dict[str, Any]:
    """The claims' volumes and mounts as a patch of the runtime's ``node`` job, owned by this collection."""
    pod_spec = {
        "volumes": _volumes(job),
        "containers": [{"name": TRAIN_CONTAINER, "volumeMounts": _volume_mounts(job)}],
    }
    replicated_job = {"name": TRAIN_REPLICATED_JOB, "template": {"spec": {"template": {"spec": pod_spec}}}}
    return {
        "manager": MANAGED_BY,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [replicated_job]}}},
    }


# ---------------------------------------------------------------- MPIJob (kubeflow.org/v2beta1)


def mpi_job(job: KubernetesJob) -> dict[str, Any]:
    """An MPIJob: a Launcher pod running mpiexec (Intel MPI) or mpirun (Open MPI), ``nodes`` Worker pods.

    As in mpi-operator's examples (examples/v2beta1/pi/pi.yaml and pi-intel.yaml), the workers run sshd in
    the foreground and the launcher starts every rank on them over SSH, with the keys the operator mounts
    at ``sshAuthMountPath`` and the host file it writes (``slotsPerWorker`` slots per worker). The launcher
    is created once every worker is ready (its sshd answers) and the job fails with its first failed rank
    (``restartPolicy: Never``, ``backoffLimit: 0``); with ``max_restarts`` the launcher pod is restarted
    (``OnFailure``), which runs every rank again, at most ``max_restarts`` times (``runPolicy.backoffLimit``).
    ``cleanPodPolicy: Running`` removes the workers when
    the launcher ends. The claims are mounted in the workers, where the ranks run; ``resources`` apply to
    the workers, the launcher only runs the MPI launcher.
    """
    launcher = _container(job, "mpi-launcher", _mpi_launch_command(job), mounts=False, resources=False)
    worker = _container(job, "mpi-worker", _sshd_command(job))
    worker["readinessProbe"] = {"tcpSocket": {"port": MPI_SSH_PORT}, "initialDelaySeconds": 2}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": _metadata(job),
        "spec": {
            "slotsPerWorker": job.procs_per_node,
            "mpiImplementation": MPI_IMPLEMENTATION[job.launcher],
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": job.max_restarts},
            "sshAuthMountPath": job.ssh_auth_mount_path,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "restartPolicy": "OnFailure" if job.max_restarts else "Never",
                    "template": _pod_template([launcher], []),
                },
                "Worker": {"replicas": job.nodes, "template": _pod_template([worker], _volumes(job))},
            },
        },
    }


def _rank_env_names(job: KubernetesJob) -> list[str]:
    return [entry["name"] for entry in _env(job)]


def _mpi_launch_command(job: KubernetesJob) -> list[str]:
    """The launcher's command: every rank of the program, ``procs_per_node`` on each worker.

    Ranks started over SSH do not inherit the worker container's environment, so the launcher forwards the
    rank environment from its own: Intel MPI with ``-genvlist`` (hydra also forwards the rest of the
    launcher's environment by default, the proxy variables included), Open MPI with one ``-x NAME`` each
    (Open MPI forwards nothing else: the proxy ConfigMap's variables do not reach its ranks). Flags as in
    launch.py (``mpiexec.hydra -n -ppn``, ``mpirun -np --map-by ppr:N:node``).
    """
    world = str(job.nodes * job.procs_per_node)
    names = _rank_env_names(job)
    if job.launcher == "mpiexec":
        forward = ["-genvlist", ",".join(names)] if names else []
        flags = ["-n", world, "-ppn", str(job.procs_per_node)]
        ssh = ["-bootstrap", "ssh", "-bootstrap-exec-args", MPI_SSH_OPTIONS]
        return ["mpiexec.hydra", *flags, *ssh, *forward, *job.command]
    forward = [word for name in names for word in ("-x", name)]
    flags = ["-np", world, "--map-by", f"ppr:{job.procs_per_node}:node"]
    ssh = ["--mca", "plm_rsh_args", MPI_SSH_OPTIONS]
    return ["mpirun", *flags, *ssh, *forward, *job.command]


def _sshd_command(job: KubernetesJob) -> list[str]:
    """sshd in the foreground as the image's (unprivileged) user, configured on its command line.

    The settings of mpi-operator's build/base/sshd_config (the job's mounted private key as host key, a
    writable pid file, StrictModes off for the read-only mounted keys) and its port, as ``-o`` options
    over an empty configuration, so the image needs sshd but no configuration file for it.
    """
    return [
        "/usr/sbin/sshd",
        "-D",
        "-e",
        "-f",
        "/dev/null",
        *("-o", f"Port={MPI_SSH_PORT}"),
        *("-o", f"HostKey={job.ssh_auth_mount_path}/id_rsa"),
        *("-o", "PidFile=/tmp/sshd.pid"),
        *("-o", "StrictModes=no"),
    ]


# ---------------------------------------------------------------- dispatch

_RENDERERS: dict[str, Callable[[KubernetesJob], dict[str, Any]]] = {
    "PyTorchJob": pytorch_job,
    "TrainJob": train_job,
    "MPIJob": mpi_job,
}


def render(job: KubernetesJob, kind: str) -> dict[str, Any]:
    """The ``kind`` manifest of ``job``: PyTorchJob or TrainJob for torchrun, MPIJob for mpiexec and mpirun."""
    return _RENDERERS[kind](job)
