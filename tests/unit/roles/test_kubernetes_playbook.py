# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/kubernetes.yml as a user runs it, against an API server on loopback that plays a Kubeflow operator.

No Kubernetes cluster can run on these machines. What runs here for real is everything on the controller side:
ansible-playbook, the launcher role's kubernetes entry point, kubernetes.core's k8s, k8s_info and k8s_log
modules with the official Python client (API discovery, create, get, delete, list by label selector, logs), the
run directory and the summary. The server below answers the Kubernetes REST paths those calls use and moves a
created job through the conditions a Kubeflow operator sets, with pods whose exit codes and logs each test
chooses. It does not run the pods: whether a real operator accepts the manifest is checked apart, against the
operators' CRD schemas (test_kubernetes_job.py).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
GROUPS = {"kubeflow.org": ["v1", "v2beta1"], "trainer.kubeflow.org": ["v1alpha1"], "apiextensions.k8s.io": ["v1"]}
KINDS = {
    "kubeflow.org/v1": ("pytorchjobs", "PyTorchJob"),
    "kubeflow.org/v2beta1": ("mpijobs", "MPIJob"),
    "trainer.kubeflow.org/v1alpha1": ("trainjobs", "TrainJob"),
    "apiextensions.k8s.io/v1": ("customresourcedefinitions", "CustomResourceDefinition"),
}
CLUSTER_SCOPED = {"CustomResourceDefinition"}
CRD_PATH = re.compile(r"/apis/apiextensions\.k8s\.io/v1/customresourcedefinitions/(?P<name>[^/]+)$")
# The upstream CRDs of the releases the collection targets (what a current operator installs).
STORED_CRDS = {
    crd["metadata"]["name"]: crd
    for crd in (
        yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in (REPO / "tests/unit/plugins/module_utils/fixtures/crds").glob("*.yaml")
    )
}
RESOURCE_PATH = re.compile(
    r"/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?$"
)
POD_PATH = re.compile(r"/api/v1/namespaces/(?P<ns>[^/]+)/pods(?:/(?P<name>[^/]+)(?P<log>/log)?)?$")


@dataclass
class FakePod:
    """A pod the pretend operator reports once the job has run: its role, exit code and log."""

    role: str
    index: int
    exit_code: int
    finished_at: str
    log: str
    reason: str = ""


@dataclass
class Operator:
    """How the pretend operator moves a created job: running for ``run_seconds``, then ``end`` (or never)."""

    run_seconds: float
    end: str | None  # a condition type (Succeeded, Failed, Complete) or None for a job that never ends
    pods: list[FakePod]
    message: str = ""
    # The CRDs the cluster has, by name (its operators' releases); 403 for a user who may not read them.
    crds: dict[str, Any] = field(default_factory=lambda: dict(STORED_CRDS))
    crd_status: int = 200
    created: dict[str, Any] = field(default_factory=dict)  # name -> the body the client sent
    created_at: dict[str, float] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def status(self, name: str) -> dict[str, Any]:
        conditions = [{"type": "Created", "status": "True", "reason": "Created"}]
        if time.monotonic() - self.created_at[name] < self.run_seconds or self.end is None:
            conditions.append({"type": "Running", "status": "True", "reason": "Running"})
        else:
            conditions.append({"type": "Running", "status": "False", "reason": "Finished"})
            conditions.append({"type": self.end, "status": "True", "reason": f"Job{self.end}", "message": self.message})
        return {"conditions": conditions}

    def pod(self, job: dict[str, Any], pod: FakePod) -> dict[str, Any]:
        name = job["metadata"]["name"]
        kind = job["kind"]
        if kind == "TrainJob":
            labels = {
                "jobset.sigs.k8s.io/jobset-name": name,
                "batch.kubernetes.io/job-completion-index": str(pod.index),
            }
            pod_name = f"{name}-node-0-{pod.index}"
        else:
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/replica-type": pod.role,
                "training.kubeflow.org/replica-index": str(pod.index),
            }
            pod_name = f"{name}-{pod.role}-{pod.index}"
        terminated = {
            "exitCode": pod.exit_code,
            "finishedAt": pod.finished_at,
            "reason": pod.reason or ("Completed" if pod.exit_code == 0 else "Error"),
        }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": job["metadata"]["namespace"], "labels": labels},
            "spec": {"containers": [{"name": "pytorch", "image": "registry.example/train:1"}]},
            "status": {
                "phase": "Succeeded" if pod.exit_code == 0 else "Failed",
                "podIP": f"10.244.0.{10 + pod.index}",
                "containerStatuses": [{"name": "pytorch", "state": {"terminated": terminated}}],
            },
        }


def _resource_list(group_version: str, resources: list[tuple[str, str]]) -> dict[str, Any]:
    verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": [
            {"name": plural, "singularName": kind.lower(), "namespaced": kind not in CLUSTER_SCOPED, "kind": kind, "verbs": verbs}
            for plural, kind in resources
        ],
    }


def _group_list() -> dict[str, Any]:
    groups = []
    for group, versions in GROUPS.items():
        listed = [{"groupVersion": f"{group}/{version}", "version": version} for version in versions]
        groups.append({"name": group, "versions": listed, "preferredVersion": listed[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _not_found(name: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "NotFound",
        "code": 404,
        "message": f"{name} not found",
    }


class Handler(BaseHTTPRequestHandler):
    operator: Operator

    def log_message(self, *args: Any) -> None:  # quiet: the test reads what it needs from the operator
        pass

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        self.operator.requests.append(f"GET {url.path}")
        if url.path == "/version":
            return self._send(200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0"})
        if url.path == "/api":
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if url.path == "/apis":
            return self._send(200, _group_list())
        if url.path == "/api/v1":
            return self._send(200, _resource_list("v1", [("pods", "Pod"), ("pods/log", "Pod")]))
        if url.path.count("/") == 3 and url.path.startswith("/apis/"):
            group_version = url.path[len("/apis/") :]
            return self._send(200, _resource_list(group_version, [KINDS[group_version]]))
        if match := CRD_PATH.match(url.path):
            return self._get_crd(match.group("name"))
        if match := RESOURCE_PATH.match(url.path):
            return self._get_job(match.group("name"))
        if match := POD_PATH.match(url.path):
            return self._get_pods(match, parse_qs(url.query))
        return self._send(404, _not_found(url.path))

    def _get_crd(self, name: str) -> None:
        if self.operator.crd_status != 200:
            forbidden = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403}
            return self._send(self.operator.crd_status, {**forbidden, "message": f"cannot get {name}"})
        crd = self.operator.crds.get(name)
        return self._send(200, crd) if crd else self._send(404, _not_found(name))

    def _job_named(self, name: str) -> dict[str, Any] | None:
        job = self.operator.created.get(name)
        return None if job is None else {**job, "status": self.operator.status(name)}

    def _get_job(self, name: str) -> None:
        job = self._job_named(name)
        self._send(200, job) if job else self._send(404, _not_found(name))

    def _pods(self) -> list[dict[str, Any]]:
        """The pods of every job that has ended (a running job's pods are not asked for here)."""
        pods = []
        for name, job in self.operator.created.items():
            pods += [self.operator.pod(job, pod) for pod in self.operator.pods]
        return pods

    def _get_pods(self, match: re.Match[str], query: dict[str, list[str]]) -> None:
        pods = self._pods()
        if match.group("name") is None:
            wanted = dict(item.split("=", 1) for item in query.get("labelSelector", [""])[0].split(",") if item)
            items = [pod for pod in pods if wanted.items() <= pod["metadata"]["labels"].items()]
            return self._send(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
        found = {
            pod["metadata"]["name"]: (pod, fake)
            for pod, fake in zip(pods, self.operator.pods * len(self.operator.created))
        }
        if match.group("name") not in found:
            return self._send(404, _not_found(match.group("name")))
        pod, fake = found[match.group("name")]
        return self._send(200, fake.log, "text/plain") if match.group("log") else self._send(200, pod)

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        name = body["metadata"]["name"]
        self.operator.requests.append(f"POST {self.path}")
        self.operator.created[name] = body
        self.operator.created_at[name] = time.monotonic()
        self._send(201, {**body, "metadata": {**body["metadata"], "uid": "u-1", "resourceVersion": "1"}})

    def do_DELETE(self) -> None:  # noqa: N802
        match = RESOURCE_PATH.match(urlparse(self.path).path)
        self.operator.requests.append(f"DELETE {urlparse(self.path).path}")
        name = match.group("name") if match else ""
        if name not in self.operator.created:
            return self._send(404, _not_found(name))
        del self.operator.created[name]
        return self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})


@pytest.fixture()
def serve(tmp_path: Path):
    """Start the pretend API server for an Operator; yields a function returning the kubeconfig's path."""
    servers: list[ThreadingHTTPServer] = []

    def start(operator: Operator) -> Path:
        handler = type("OperatorHandler", (Handler,), {"operator": operator})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
                    "users": [{"name": "me", "user": {"token": "test"}}],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "me"}}],
                    "current-context": "fake",
                }
            ),
            encoding="utf-8",
        )
        return kubeconfig

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def run_playbook(tmp_path: Path, *extra: str, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """playbooks/kubernetes.yml from a directory of the user's own, as they would run it."""
    environ = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        # the client's discovery cache stays in the test's directory
        "HOME": str(tmp_path),
        "KUBECONFIG": "/nonexistent",
        **(environment or {}),
    }
    command = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        str(REPO / "playbooks/kubernetes.yml"),
        "-e",
        "launcher_kubernetes_image=registry.example/train:1",
        *extra,
    ]
    return subprocess.run(command, env=environ, capture_output=True, text=True, check=False, cwd=tmp_path, timeout=300)


def run_on_cluster(tmp_path: Path, kubeconfig: Path, job_id: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """The playbook with a kubeconfig: it submits job ``job_id``, reading its state every second."""
    cluster = [f"launcher_kubernetes_kubeconfig={kubeconfig}", "launcher_kubernetes_poll_interval=1"]
    words = [word for value in [f"launcher_job_id={job_id}", *cluster, *extra] for word in ("-e", value)]
    return run_playbook(tmp_path, *words)


def summary(tmp_path: Path, job_id: str) -> dict[str, Any]:
    return json.loads((tmp_path / "runs" / job_id / "summary.json").read_text(encoding="utf-8"))


def test_renders_only_without_a_kubeconfig(tmp_path: Path) -> None:
    result = run_playbook(
        tmp_path, "-e", "launcher_job_id=render1", "-e", "launcher_kubernetes_nodes=3", "-e", "launcher_type=mpiexec"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = yaml.safe_load((tmp_path / "runs/render1/mpijob.yaml").read_text(encoding="utf-8"))
    assert manifest["kind"] == "MPIJob" and manifest["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    assert not (tmp_path / "runs/render1/summary.json").exists()
    assert os.readlink(tmp_path / "runs/latest") == "render1"


def test_a_bad_job_fails_before_anything_is_written(tmp_path: Path) -> None:
    """The preflight refuses it, a value alone and the job's values together, naming each variable: the rendering
    judges nothing (test_preflight_kubernetes.py has every rule)."""
    result = run_playbook(tmp_path, "-e", "launcher_job_id=bad", "-e", "launcher_kubernetes_nodes=0", "-e", '{"launcher_env": {"RANK": "0"}}')
    assert result.returncode != 0
    assert problem_lines(result.stdout) == {
        "- launcher_kubernetes_nodes: 0 is not allowed; use a whole number of pods >= 1",
        "- launcher_env: the operator sets RANK itself for torchrun jobs; it reserves MASTER_ADDR, MASTER_PORT,"
        " PET_MASTER_ADDR, PET_MASTER_PORT, PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, RANK, WORLD_SIZE",
    }, result.stdout
    assert "changed=0" in result.stdout and not (tmp_path / "runs").exists()


# A job an SSH run refuses is refused on Kubernetes too, in the same words, before anything is written.
SSH_PREFLIGHT = """\
- hosts: all
  gather_facts: false
  tasks:
    - {multinode.training.preflight: {}, run_once: true}
"""
SSH_INVENTORY = """\
all:
  vars: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
  children:
    launcher: {hosts: {node1: {}}}
    workers: {hosts: {node2: {}}}
"""


def problem_lines(output: str) -> set[str]:
    return {line for line in output.splitlines() if line.startswith("- ")}


def ssh_preflight(tmp_path: Path, value: str) -> subprocess.CompletedProcess[str]:
    """The SSH path's first task (train.yml's preflight) given ``value`` with -e."""
    (tmp_path / "ssh").mkdir()
    (tmp_path / "ssh/hosts.yml").write_text(SSH_INVENTORY, encoding="utf-8")
    (tmp_path / "ssh/play.yml").write_text(SSH_PREFLIGHT, encoding="utf-8")
    environ = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "hosts.yml", "-e", value, "play.yml"]
    return subprocess.run(command, env=environ, capture_output=True, text=True, check=False, cwd=tmp_path / "ssh", timeout=300)


@pytest.mark.parametrize(
    "value",
    [
        '{"launcher_timeout": -5}',
        '{"launcher_env": {"HTTP_PROXY": {"host": "proxy"}}}',
        '{"launcher_omp_num_threads": -1}',
        '{"launcher_kubernetes_resources": {"gpu": "1"}}',
        '{"launcher_script": "../../etc/passwd"}',
    ],
)
def test_a_job_the_ssh_path_refuses_is_refused_in_its_words_before_anything_is_written(tmp_path: Path, value: str) -> None:
    result = run_playbook(tmp_path, "-e", "launcher_job_id=refused", "-e", value)
    assert result.returncode != 0
    assert "changed=0" in result.stdout and not (tmp_path / "runs").exists()
    refused = problem_lines(result.stdout)
    assert len(refused) == 1, result.stdout
    ssh = ssh_preflight(tmp_path, value)
    assert ssh.returncode != 0
    assert refused <= problem_lines(ssh.stdout)


def test_a_job_that_succeeds(tmp_path: Path, serve, summary_problems) -> None:
    operator = Operator(
        run_seconds=1.5,
        end="Succeeded",
        pods=[
            FakePod("master", 0, 0, "2026-11-25T10:00:09Z", "epoch 1 loss 0.5\nrank 0 done\n"),
            FakePod("worker", 0, 0, "2026-11-25T10:00:08Z", "rank 1 done\n"),
            FakePod("worker", 1, 0, "2026-11-25T10:00:08Z", "rank 2 done\n"),
        ],
    )
    kubeconfig = serve(operator)
    result = run_on_cluster(tmp_path, kubeconfig, "20261125-100000-torchrun", "launcher_kubernetes_nodes=3")
    assert result.returncode == 0, result.stdout + result.stderr
    run = tmp_path / "runs/20261125-100000-torchrun"
    # what reached the API server is the manifest the run keeps
    assert operator.created["job-20261125-100000-torchrun"] == yaml.safe_load(
        (run / "pytorchjob.yaml").read_text(encoding="utf-8")
    )
    found = summary(tmp_path, "20261125-100000-torchrun")
    assert summary_problems(found) == []
    # the cluster's PyTorchJob definition was read and keeps every field of the job
    assert "GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/pytorchjobs.kubeflow.org" in operator.requests
    assert "could not read" not in result.stdout
    assert found["status"] == "succeeded" and found["failure_reasons"] == []
    assert found["world_size"] == 3 and found["launcher"] == "torchrun"
    assert found["node_names"] == [
        "job-20261125-100000-torchrun-master-0",
        "job-20261125-100000-torchrun-worker-0",
        "job-20261125-100000-torchrun-worker-1",
    ]
    assert found["scheduler"]["kind"] == "PyTorchJob" and found["scheduler"]["state"] == "succeeded"
    assert found["phases"]["train"] >= 1.0  # the pretend operator kept it running for 1.5 s
    assert (
        (run / "nodes/job-20261125-100000-torchrun-master-0/logs/pod.log")
        .read_text(encoding="utf-8")
        .startswith("epoch 1 loss 0.5")
    )


def test_a_failed_rank_fails_the_run_naming_the_first_pod(tmp_path: Path, serve, summary_problems) -> None:
    operator = Operator(
        run_seconds=0.5,
        end="Failed",
        message="PyTorchJob job-fail1 is failed because 1 Worker replica(s) failed.",
        pods=[
            FakePod("master", 0, 1, "2026-11-25T10:00:05Z", "rank 0: peer closed\n"),
            FakePod("worker", 0, 0, "2026-11-25T10:00:04Z", "rank 1 done\n"),
            FakePod("worker", 1, 3, "2026-11-25T10:00:01Z", "Traceback ...\nSystemExit: 3\n"),
        ],
    )
    kubeconfig = serve(operator)
    result = run_on_cluster(tmp_path, kubeconfig, "fail1", "launcher_kubernetes_nodes=3")
    assert result.returncode != 0
    assert "job fail1 failed: pod fail1-worker-1 (worker 1) exited 3" in result.stdout
    found = summary(tmp_path, "fail1")
    assert summary_problems(found) == []
    assert found["status"] == "failed"
    assert found["failure_reasons"][0] == "pod fail1-worker-1 (worker 1) exited 3"
    assert found["failure_reasons"][1] == "pod fail1-master-0 (master 0) exited 1"
    assert "1 Worker replica(s) failed" in found["failure_reasons"][-1]
    assert "SystemExit: 3" in (tmp_path / "runs/fail1/nodes/fail1-worker-1/logs/pod.log").read_text(encoding="utf-8")


def test_a_job_past_its_time_is_deleted_and_reported(tmp_path: Path, serve, summary_problems) -> None:
    operator = Operator(run_seconds=0, end=None, pods=[FakePod("master", 0, 0, "", "still going\n")])
    kubeconfig = serve(operator)
    result = run_on_cluster(tmp_path, kubeconfig, "slow1", "launcher_timeout=2")
    assert result.returncode != 0
    found = summary(tmp_path, "slow1")
    assert summary_problems(found) == []
    assert found["status"] == "failed" and found["timed_out"] is True
    assert found["failure_reasons"][0].startswith("timed out")
    assert "DELETE /apis/kubeflow.org/v1/namespaces/default/pytorchjobs/slow1" in operator.requests
    assert operator.created == {}


def older_trainer() -> dict[str, Any]:
    """The TrainJob CRD as a Trainer older than v2.3 serves it: no spec.runtimePatches."""
    crd = copy.deepcopy(STORED_CRDS["trainjobs.trainer.kubeflow.org"])
    (served,) = [version for version in crd["spec"]["versions"] if version["name"] == "v1alpha1"]
    del served["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["runtimePatches"]
    return crd


def test_a_job_an_older_operator_would_keep_only_in_part_is_refused_before_it_is_submitted(tmp_path: Path, serve) -> None:
    crds = {**STORED_CRDS, "trainjobs.trainer.kubeflow.org": older_trainer()}
    operator = Operator(run_seconds=0, end="Complete", pods=[], crds=crds)
    kubeconfig = serve(operator)
    claim = ["launcher_kubernetes_kind=TrainJob", "launcher_kubernetes_data_claim=train-data"]
    result = run_on_cluster(tmp_path, kubeconfig, "old1", *claim)
    assert result.returncode != 0
    assert (
        "job old1: the cluster's TrainJob definition (trainjobs.trainer.kubeflow.org) does not know"
        " spec.runtimePatches, which it would drop silently: install Kubeflow Trainer v2.3 or later"
    ) in result.stdout
    assert operator.created == {} and not any(request.startswith("POST") for request in operator.requests)


def test_a_cluster_without_the_operator_is_named_before_anything_is_submitted(tmp_path: Path, serve) -> None:
    operator = Operator(run_seconds=0, end="Succeeded", pods=[], crds={})
    result = run_on_cluster(tmp_path, serve(operator), "none1")
    assert result.returncode != 0
    assert "the cluster has no PyTorchJob definition (pytorchjobs.kubeflow.org): install the Kubeflow Training Operator v1.9 or later" in result.stdout
    assert operator.created == {}


def test_a_user_who_may_not_read_definitions_gets_the_job_submitted_and_told_it_was_not_checked(tmp_path: Path, serve) -> None:
    operator = Operator(run_seconds=0.5, end="Succeeded", pods=[FakePod("master", 0, 0, "2026-11-25T10:00:09Z", "done\n")], crd_status=403)
    result = run_on_cluster(tmp_path, serve(operator), "nocheck1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "could not read pytorchjobs.kubeflow.org" in result.stdout and "submitted without checking" in result.stdout
    assert summary(tmp_path, "nocheck1")["status"] == "succeeded"


# A controller with this collection only: no kubernetes.core (an SSH-only user's).
WITHOUT_KUBERNETES_CORE = {"ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false", "ANSIBLE_COLLECTIONS_PATH": str(REPO / "collections")}


def test_rendering_needs_no_kubernetes_core(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, "-e", "launcher_job_id=plain1", environment=WITHOUT_KUBERNETES_CORE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "runs/plain1/pytorchjob.yaml").is_file()


def test_running_without_kubernetes_core_says_what_to_install(tmp_path: Path) -> None:
    result = run_playbook(
        tmp_path, "-e", "launcher_job_id=plain2", "-e", "launcher_kubernetes_kubeconfig=/nonexistent", environment=WITHOUT_KUBERNETES_CORE
    )
    assert result.returncode != 0
    assert "needs the kubernetes.core collection (3.0 or later)" in result.stdout
    assert "ansible-galaxy collection install kubernetes.core" in result.stdout
