# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes entry point's inputs, judged by the shared preflight (scope job) and by nothing else.

Issue 42: "The Kubernetes path calls no validator of its own." Every rule the renderers once enforced themselves
(kubernetes_job.check(), the refusals of kubernetes_run.describe()) is a preflight rule here, refusing one bad value
per case and naming the variable the user sets; and the rendering path is held to raising nothing.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.multinode.training.plugins.module_utils import kubernetes_job, kubernetes_run
from ansible_collections.multinode.training.plugins.plugin_utils import preflight
from ansible_collections.multinode.training.plugins.plugin_utils.preflight import Problem

SPECS = yaml.safe_load((Path(preflight.__file__).resolve().parents[2] / "roles/launcher/meta/argument_specs.yml").read_text(encoding="utf-8"))
# The options the Kubernetes entry point's preflight task judges by (roles: [launcher]), and their defaults.
OPTIONS = preflight.merge_options([SPECS])
DEFAULTS = preflight.spec_defaults(OPTIONS)
ENTRY_POINT = SPECS["argument_specs"]["kubernetes"]["options"]


def job_problems(**values: Any) -> list[Problem]:
    """What the preflight's scope job finds in a Kubernetes job whose user sets ``values`` (the action plugin's
    judgement of its one host)."""
    return preflight.value_problems(OPTIONS, values) + preflight.kubernetes_problems({**DEFAULTS, **values})


def refused(former: str, values: dict[str, Any], variable: str, expected: str) -> Any:
    """``values`` are refused on ``variable`` alone, saying ``expected``: the rule of the former check's field ``former``."""
    return pytest.param(former, values, variable, expected, id=f"{former}:{values!r}"[:70])


IMAGE_REFERENCE = "is not an image reference [registry[:port]/]path[:tag]"
LABEL_1035 = "is not an RFC 1035 label: lowercase letters, digits and '-', starting with a letter"
LABEL_1123 = "is not a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
SUBDOMAIN = "is not a DNS subdomain: DNS labels joined by '.', at most 253 characters"
MOUNT = "is not allowed; use an absolute path other than '/' without ':'"
RESOURCE_NAME = "is not a resource name: use cpu, memory, ephemeral-storage, hugepages-<size>, or a device plugin's"
CLAIMS = {"launcher_kubernetes_data_claim": "train-data", "launcher_kubernetes_output_claim": "train-outputs"}

# Every case of the former check() (tests/unit/plugins/module_utils/test_kubernetes_job.py) and of describe()'s
# refusals (test_kubernetes_run.py), as the variable a user sets. Names the role's job id makes valid (it lowercases
# the id, makes '_' and '.' a '-', and puts 'job-' in front of a digit) are among the valid jobs below.
REFUSED = [
    *[
        refused("procs_per_node", {"launcher_nproc_per_node": value}, "launcher_nproc_per_node", "use a whole number >= 1 or 'auto'")
        for value in (0, -2, "zero", "0", "-1")
    ],
    *[
        refused("nodes", {"launcher_kubernetes_nodes": value}, "launcher_kubernetes_nodes", expected)
        for value, expected in (
            (0, "0 is not allowed; use a whole number of pods >= 1"),
            ("0", "0 is not allowed; use a whole number of pods >= 1"),
            (True, "True is not allowed; use a whole number of pods >= 1"),
            (1.5, "unable to convert to int"),
            ("three", "unable to convert to int"),
        )
    ],
    *[
        refused("max_restarts", {"launcher_max_restarts": value}, "launcher_max_restarts", "is not allowed; use 0 (never restart)")
        for value in (-1, "-1", True)
    ],
    *[
        refused("launcher", {"launcher_type": launcher}, "launcher_type", f"{launcher!r} has no Kubernetes kind; use one of torchrun, mpiexec, mpirun")
        for launcher in ("horovodrun", "deepspeed", "slurm")
    ],
    refused("launcher", {"launcher_type": "srun"}, "launcher_type", "must be one of: torchrun, mpiexec, mpirun"),
    refused(
        "kind",
        {"launcher_type": "torchrun", "launcher_kubernetes_kind": "MPIJob"},
        "launcher_kubernetes_kind",
        "a MPIJob runs mpiexec or mpirun jobs, not launcher_type 'torchrun'; use PyTorchJob or TrainJob",
    ),
    *[
        refused(
            "kind",
            {"launcher_type": launcher, "launcher_kubernetes_kind": kind},
            "launcher_kubernetes_kind",
            f"a {kind} runs torchrun jobs, not launcher_type {launcher!r}; use MPIJob",
        )
        for kind in ("PyTorchJob", "TrainJob")
        for launcher in ("mpiexec", "mpirun")
    ],
    refused("kind", {"launcher_kubernetes_kind": "Job"}, "launcher_kubernetes_kind", "must be one of: , PyTorchJob, TrainJob, MPIJob"),
    refused("name", {"launcher_job_id": "train-"}, "launcher_job_id", f"names the job's custom resource: 'train-' {LABEL_1035}"),
    refused("name", {"launcher_job_id": "train_"}, "launcher_job_id", f"'train-' {LABEL_1035}"),
    refused("name", {"launcher_job_id": "1" + "j" * 62}, "launcher_job_id", f"'job-1{'j' * 62}' {LABEL_1035}"),
    refused("name", {"launcher_job_id": "j" * 64}, "launcher_job_id", "is not allowed; use empty, or 1-63 letters"),
    refused("name", {"launcher_job_name": "mnist."}, "launcher_job_name", f"'job-<date>-<time>-mnist-' {LABEL_1035}"),
    refused("name", {"launcher_job_name": "j" * 50}, "launcher_job_name", f"'job-<date>-<time>-{'j' * 50}' {LABEL_1035}"),
    refused(
        "name",
        {"launcher_job_id": "j" * 55, "launcher_kubernetes_nodes": 12, "launcher_type": "mpirun"},
        "launcher_job_id",
        f"too long for a MPIJob of 12 nodes: its pod host name '{'j' * 55}-worker-11' would exceed 63 characters",
    ),
    refused(
        "name",
        {"launcher_job_id": "j" * 55, "launcher_kubernetes_nodes": 13},
        "launcher_job_id",
        f"too long for a PyTorchJob of 13 nodes: its pod host name '{'j' * 55}-worker-11'",
    ),
    refused(
        "name",
        {"launcher_job_id": "j" * 54, "launcher_kubernetes_nodes": 12, "launcher_kubernetes_kind": "TrainJob"},
        "launcher_job_id",
        f"too long for a TrainJob of 12 nodes: its pod host name '{'j' * 54}-node-0-11'",
    ),
    *[
        refused("namespace", {"launcher_kubernetes_namespace": value}, "launcher_kubernetes_namespace", f"{value!r} {LABEL_1123}")
        for value in ("Training", "Bad_NS", "a" * 64, "-a")
    ],
    *[
        refused("image", {"launcher_kubernetes_image": image}, "launcher_kubernetes_image", f"{image!r} {IMAGE_REFERENCE}")
        for image in (
            "Ubuntu:Latest",
            "registry/x@sha256:abc",
            "",
            "a b",
            "registry.example.org/Multinode/training",
            "training:la$test",
            "training:-1",
            "Example/Train:latest with spaces",
        )
    ],
    # The command is python3, then launcher_script (kubernetes_run.describe): its own rule keeps the program there.
    refused("command", {"launcher_script": ""}, "launcher_script", "'' is not allowed; use a path relative to the code directory"),
    refused("env", {"launcher_env": {"1BAD": "x"}}, "launcher_env", "invalid variable names ['1BAD']"),
    refused("env", {"launcher_env": {"GOOD": ["x"]}}, "launcher_env", "values of ['GOOD'] are lists or mappings"),
    refused("env", {"launcher_env": {"MASTER_ADDR": "10.0.0.1"}}, "launcher_env", "the operator sets MASTER_ADDR itself for torchrun jobs"),
    refused("env", {"launcher_env": {"RANK": "0"}}, "launcher_env", "the operator sets RANK itself for torchrun jobs"),
    refused(
        "env",
        {"launcher_type": "mpirun", "launcher_env": {"OMPI_MCA_orte_default_hostfile": "0"}},
        "launcher_env",
        "the operator sets OMPI_MCA_orte_default_hostfile itself for mpirun jobs",
    ),
    refused(
        "env",
        {"launcher_type": "mpiexec", "launcher_env": {"I_MPI_HYDRA_HOST_FILE": "/tmp/hosts"}},
        "launcher_env",
        "the operator sets I_MPI_HYDRA_HOST_FILE itself for mpiexec jobs",
    ),
    refused(
        "env",
        {"launcher_env": {"DATA_DIR": "/x"}, "launcher_kubernetes_data_claim": "data"},
        "launcher_env",
        "DATA_DIR comes from the claim's mount path; leave it out",
    ),
    refused(
        "env",
        {"launcher_env": {"OUTPUT_DIR": "/x"}, "launcher_kubernetes_output_claim": "outputs"},
        "launcher_env",
        "OUTPUT_DIR comes from the claim's mount path; leave it out",
    ),
    refused("resources", {"launcher_kubernetes_resources": {"cpu": "four"}}, "launcher_kubernetes_resources", "cpu: 'four' is not a quantity"),
    *[
        refused("resources", {"launcher_kubernetes_resources": {name: "1"}}, "launcher_kubernetes_resources", f"{name!r} {RESOURCE_NAME}")
        for name in ("c p u", "gpu", "i915")
    ],
    refused("data_claim", {"launcher_kubernetes_data_claim": "Data"}, "launcher_kubernetes_data_claim", f"'Data' {SUBDOMAIN}"),
    refused("output_claim", {"launcher_kubernetes_output_claim": "o_1"}, "launcher_kubernetes_output_claim", f"'o_1' {SUBDOMAIN}"),
    refused(
        "proxy_config_map",
        {"launcher_kubernetes_proxy_config_map": "proxy env"},
        "launcher_kubernetes_proxy_config_map",
        f"'proxy env' {SUBDOMAIN}",
    ),
    *[
        refused("data_mount", {"launcher_kubernetes_data_mount": path}, "launcher_kubernetes_data_mount", f"{path!r} {MOUNT}")
        for path in ("data", "/", "/a:b")
    ],
    refused("output_mount", {"launcher_kubernetes_output_mount": "outputs"}, "launcher_kubernetes_output_mount", f"'outputs' {MOUNT}"),
    refused(
        "output_mount",
        {**CLAIMS, "launcher_kubernetes_output_mount": "/data"},
        "launcher_kubernetes_output_mount",
        "'/data' is also the data claim's mount path; mount the claims apart",
    ),
    *[
        refused(
            "command",
            {"launcher_script_args": ["--dir", f"{placeholder}/sub"]},
            "launcher_script_args",
            f"{placeholder} has no value on Kubernetes without {variable}",
        )
        for placeholder, variable in (
            ("{output_dir}", "launcher_kubernetes_output_claim"),
            ("{checkpoint_dir}", "launcher_kubernetes_output_claim"),
            ("{data_dir}", "launcher_kubernetes_data_claim"),
        )
    ],
]


@pytest.mark.parametrize(("former", "values", "variable", "expected"), REFUSED)
def test_a_bad_kubernetes_input_is_refused_by_the_preflight_naming_its_variable(
    former: str, values: dict[str, Any], variable: str, expected: str
) -> None:
    problems = job_problems(**values)
    assert [problem.variable for problem in problems] == [variable], problems
    assert expected in problems[0].message, problems[0]


# KubernetesJob fields no variable of the role sets (kubernetes_job.py says why each needs no rule).
WITHOUT_A_VARIABLE = {"ssh_auth_mount_path"}


def test_every_field_of_a_kubernetes_job_is_judged_by_a_preflight_rule() -> None:
    judged = {former for former, *_rest in (case.values for case in REFUSED)}
    assert judged >= {field.name for field in fields(kubernetes_job.KubernetesJob)} - WITHOUT_A_VARIABLE
    assert "kind" in judged


def test_the_refused_variables_are_inputs_of_the_kubernetes_entry_point() -> None:
    assert {variable for _former, _values, variable, _expected in (case.values for case in REFUSED)} <= set(ENTRY_POINT)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"launcher_type": "mpiexec", "launcher_kubernetes_nodes": 3},
        {"launcher_type": "mpirun", "launcher_kubernetes_kind": "MPIJob"},
        {"launcher_kubernetes_kind": "TrainJob"},
        {"launcher_nproc_per_node": "4", "launcher_max_restarts": "3", "launcher_kubernetes_nodes": "3"},
        # the job id becomes a label: lowercased, '_' and '.' as '-', 'job-' in front of a digit
        *[{"launcher_job_id": job_id} for job_id in ("Job-1", "1job", "job_1", "My_Job.v2", "j" * 54)],
        {"launcher_job_name": "mnist"},
        # the longest pod host names that fit: '<name>-worker-0' of one pod, '<name>-worker-10' of 11
        {"launcher_job_id": "j" * 53, "launcher_kubernetes_nodes": 11, "launcher_type": "mpirun"},
        {"launcher_env": {"GOOD": 1, "KMP_BLOCKTIME": "1"}},  # the role makes every value a string
        {"launcher_env": {"DATA_DIR": "/x", "MASTER_ADDR": "x"}, "launcher_type": "mpirun"},
        {"launcher_kubernetes_namespace": "", "launcher_kubernetes_data_claim": "", "launcher_kubernetes_output_claim": ""},
        {"launcher_kubernetes_proxy_config_map": "proxy-env.v1"},
        {**CLAIMS, "launcher_kubernetes_output_mount": "/mnt/out", "launcher_script_args": ["{data_dir}", "{checkpoint_dir}"]},
        {"launcher_script_args": ["{work_dir}", "{job_id}", "{resume_from}", "{epoch:03d}"]},
        *[
            {"launcher_kubernetes_image": image}
            for image in (
                "ubuntu",
                "ubuntu:24.04",
                "localhost:5000/team/training_v2:latest",
                "ghcr.io/org/repo/image:v1.2.3-rc.1",
                "[::1]:5000/image",
                f"registry.example.org/training@sha256:{'a' * 64}",
                f"training:2.13@sha256:{'0123456789abcdef' * 4}",
            )
        ],
        *[
            {"launcher_kubernetes_resources": resources}
            for resources in (
                {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "10Gi"},
                {"hugepages-2Mi": "1Gi"},
                {"gpu.intel.com/i915": 1},
                {"gpu.intel.com/xe": "2"},
            )
        ],
    ],
)
def test_a_good_kubernetes_job_passes(values: dict[str, Any]) -> None:
    assert job_problems(**{"launcher_kubernetes_image": "registry.example/train:1", **values}) == []


def test_every_mistake_of_a_job_is_reported_at_once() -> None:
    problems = job_problems(
        launcher_kubernetes_namespace="Bad_NS", launcher_kubernetes_image="Bad Image", launcher_env={"RANK": "0"}, launcher_job_id="x-"
    )
    assert {problem.variable for problem in problems} == {
        "launcher_kubernetes_namespace",
        "launcher_kubernetes_image",
        "launcher_env",
        "launcher_job_id",
    }


# ---------------------------------------------------------------- the rendering path judges nothing


def test_the_renderers_have_no_validator() -> None:
    assert not hasattr(kubernetes_job, "check")
    assert not hasattr(kubernetes_job, "KubernetesJobError")
    assert not _raises(ast.parse(inspect.getsource(kubernetes_job))), "kubernetes_job.py raises: a rule belongs to the preflight"


def test_describing_a_job_refuses_nothing() -> None:
    """kubernetes_run.describe (the filter kubernetes_job_spec) and every function of its module it calls."""
    module = ast.parse(inspect.getsource(kubernetes_run))
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    reached, pending = set(), ["describe"]
    while pending:
        name = pending.pop()
        reached.add(name)
        called = {node.func.id for node in ast.walk(functions[name]) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        pending += sorted(called & set(functions) - reached)
    assert {"describe", "kind_for", "_procs_per_node", "_command", "pod_selector"} <= reached
    # pod_selector's _known_kind refuses a kind describe cannot give (kind_for's is one of the registry's).
    assert sorted(name for name in reached - {"_known_kind"} if _raises(functions[name])) == []


def _raises(tree: ast.AST) -> bool:
    return any(isinstance(node, ast.Raise) for node in ast.walk(tree))
