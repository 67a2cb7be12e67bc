# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input a role asserts on is judged first (issue 40): no input check of a role fails after a node changed.

The first play of provision.yml, launch.yml and attach.yml runs the cluster role, whose first task is the preflight
(multinode.training.preflight): it judges every input of the run on the controller and refuses a bad one with
nothing changed. The later roles still hold ``ansible.builtin.assert`` and ``ansible.builtin.fail`` tasks. TABLE
lists every one of them, found in roles/*/tasks/*.yml (blocks, rescue and always included), and holds each to one
of three verdicts (an assert judging several things has one verdict per thing):

- Refused: a preflight rule. The bad input is laid over a valid run and the real preflight refuses it, changed=0:
  the preflight task of the playbook's first play, loaded as ansible-playbook loads it and run through the action
  plugin's own ``run`` (or, for a rule the first play judges on the nodes' facts, the filter the role calls).
- InFirstPlay: a fact only the node knows, checked by a task of the first play (the play that changes nothing,
  any_errors_fatal), after the node facts are gathered; the test finds that task in the files the first play runs.
- Later: a reason why it can only be known after a change (a verification of an install, the job's verdict, a
  registry's or a cluster's answer) or only on the node before anything changed.

A check that judges an input the first play does not judge yet is a gap: NOT_YET_JUDGED_FIRST names it, with why.
Its case states the rule it should meet and is marked xfail(strict=True): the suite stays green while the gap is
visible, and the day the gap is closed the case passes, which strict turns into a failure until the entry moves.
"""

from __future__ import annotations

import glob
import importlib
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import yaml
from ansible import constants as C
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.playbook import Playbook
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

REPO = Path(__file__).resolve().parents[3]
PLAYBOOKS = REPO / "playbooks"
COLLECTION = "ansible_collections.multinode.training"
PREFLIGHT = "multinode.training.preflight"
CHECKS = ("ansible.builtin.assert", "ansible.builtin.fail")
# The two-node cluster every preflight case runs on: (group, inventory name, ansible_host).
NODES = (("launcher", "node1", "10.0.0.1"), ("workers", "node2", "10.0.0.2"))
# A valid run: the code, the image tarball and runs/ on the controller ({tmp}: a directory of the test's own), so a
# refusal comes from the bad input laid over it. No requirements file: resolving one is the layer build's work.
VALID_RUN = {
    "workload_src": "{tmp}/code",
    "launcher_runs_dir": "{tmp}/runs",
    "workload_requirements": "none",
    "container_runtime_image_tarball": "{tmp}/image.tar",
}

Key = tuple[str, str]


@dataclass(frozen=True)
class Refused:
    """A preflight rule: ``inputs`` laid over VALID_RUN are refused, each problem matching ``refusal`` (a regex).

    Judged by the preflight task of ``playbook``'s first play; with ``dri_devices`` (each node's /dev/dri paths, as
    node_facts finds them) by the rule the first play judges on the nodes' facts instead (the device_problems filter).
    """

    input: str
    inputs: Mapping[str, Any]
    refusal: str
    playbook: str = "provision.yml"
    dri_devices: Mapping[str, list[str]] | None = field(default=None)


@dataclass(frozen=True)
class InFirstPlay:
    """A fact only the node knows, checked in the first play of each of ``playbooks`` (which changes nothing), by this
    task itself or by the task ``by`` names."""

    input: str
    reason: str
    playbooks: tuple[str, ...] = ("provision.yml", "launch.yml")
    by: Key | None = None


@dataclass(frozen=True)
class Later:
    """Not an input rule: known only after a change, or only on the node before anything changed; ``reason`` says
    which and why."""

    input: str
    reason: str


Verdict = Refused | InFirstPlay | Later

CLUSTER = "roles/cluster/tasks/main.yml"
BUILD = "roles/container_runtime/tasks/build.yml"
LOAD = "roles/container_runtime/tasks/load.yml"
PULL = "roles/container_runtime/tasks/pull.yml"
GPU_VERIFY = "roles/gpu_drivers/tasks/verify.yml"
HEALTH = "roles/health/tasks/main.yml"
HOST_RUNTIME = "roles/host_runtime/tasks/main.yml"
ATTACH = "roles/launcher/tasks/attach_check.yml"
BESIDE = "roles/launcher/tasks/beside.yml"
KUBERNETES_RUN = "roles/launcher/tasks/kubernetes_run.yml"
APT = "roles/oneapi/tasks/apt.yml"
PIP = "roles/oneapi/tasks/pip.yml"
ONEAPI_SUPPORTED = "roles/oneapi/tasks/supported.yml"
ONEAPI_VERIFY = "roles/oneapi/tasks/verify.yml"
WORKERS = "roles/workers/tasks/main.yml"
HOST_MODE = {"cluster_runtime": "host"}
PIP_MODE = {
    **HOST_MODE,
    "oneapi_install_method": "pip",
    "host_runtime_wheelhouse": "{tmp}/wheels",
    "oneapi_pip_wheelhouse": "{tmp}/wheels",
}
AFTER_INSTALL = "verifies what the install just produced on the node"

TABLE: dict[Key, Verdict | tuple[Verdict, ...]] = {
    (CLUSTER, "Check no job is still running on the nodes"): InFirstPlay(
        "the nodes' running jobs",
        "the jobs still running on the nodes, found by node_facts in the first play (running_job_problems)",
    ),
    (
        CLUSTER,
        "Check every node's Python has host mode's wheels, its cluster address is its own, and its container engine"
        " answers",
    ): (
        InFirstPlay(
            "host_runtime_wheelhouse for each node's Python",
            "each node's /usr/bin/python3 version, read by node_facts in the first play, against the wheelhouse's"
            " wheels (python_wheel_problems)",
        ),
        InFirstPlay(
            "cluster_address / cluster_iface",
            "whether one of each node's interfaces carries its address (the nodes' IPv4 addresses, gathered in the"
            " first play; the preflight judges the address's form), and the addresses the nodes found for themselves,"
            " which can hide one machine behind two inventory names (the preflight refuses two hosts the inventory"
            " puts on one endpoint)",
        ),
        Later(
            "the node's container engine (launch.yml without train.yml)",
            "not an input: the node's state, asked of it by launch.yml's drift check (cluster_check_drift) in its"
            " first play, before anything changes (any_errors_fatal)",
        ),
    ),
    (BUILD, "Check the build context is set"): Refused(
        "container_runtime_build_context",
        {"container_runtime_image_source": "build", "container_runtime_build_context": ""},
        r"container_runtime_build_context",
    ),
    (BUILD, "Check the context holds the Dockerfile"): Refused(
        "container_runtime_build_dockerfile",
        {"container_runtime_image_source": "build", "container_runtime_build_context": "{tmp}/context"},
        r"^container_runtime_build_dockerfile: 'Dockerfile' is not a file in \S*/context",
    ),
    (
        "roles/container_runtime/tasks/supported.yml",
        "Check Docker publishes packages for this distribution and architecture",
    ): InFirstPlay(
        "container_runtime_engine_source=docker on the node's distribution and architecture",
        "facts of the node (ansible_distribution, ansible_architecture), gathered in provision.yml's first play when"
        " the engine comes from Docker's repository",
        ("provision.yml",),
    ),
    (LOAD, "Check the image tarball is set"): Refused(
        "container_runtime_image_tarball",
        {"container_runtime_image_tarball": "", "cluster_image": "registry.example/own:1"},
        r"^container_runtime_image_tarball: is not set \(cluster_image registry\.example/own:1\)",
    ),
    (LOAD, "Check the tarball exists and matches the expected checksum"): (
        Refused(
            "container_runtime_image_tarball",
            {"container_runtime_image_tarball": "{tmp}/missing.tar"},
            r"^container_runtime_image_tarball: \S*/missing\.tar is not a file on the controller",
        ),
        Refused(
            "container_runtime_image_sha256",
            {"container_runtime_image_sha256": "0" * 64},
            r"container_runtime_image_sha256",
        ),
    ),
    (LOAD, "Check the node's tarball is the controller's"): Later(
        "the tarball shipped to the node",
        "verifies the copy shipped to the node against the controller's checksum; it exists only after the copy",
    ),
    (PULL, "Say which registry refused the login (without the password)"): Later(
        "container_runtime_registry_username / _password",
        "the registry's answer to the node's login: only the registry judges the credentials, when the node logs in",
    ),
    (PULL, "Say which image could not be pulled and why"): Later(
        "cluster_image (pull)",
        "the registry's answer to the node's pull: whether the image exists there and the node may read it",
    ),
    ("roles/container_runtime/tasks/worker_check.yml", "Refuse an image that lacks what a worker needs"): Later(
        "cluster_image (its content)",
        "what the image holds (sshd, the training user and uid, Python with torch), asked of it once it is on the node",
    ),
    ("roles/gpu_drivers/tasks/supported.yml", "Check Intel's repository serves this Ubuntu release"): InFirstPlay(
        "gpu_drivers_ubuntu_packages for the node's Ubuntu release",
        "a fact of the node (ansible_distribution_release), gathered in provision.yml's first play on a node that gets"
        " the GPU runtime",
        ("provision.yml",),
    ),
    ("roles/gpu_drivers/tasks/supported.yml", "Check the node's operating system is supported"): InFirstPlay(
        "the node's distribution and architecture (a node with an Intel GPU, or gpu_drivers_force)",
        "facts of the node (ansible_distribution, ansible_architecture), gathered in provision.yml's first play on a"
        " node that gets the GPU runtime",
        ("provision.yml",),
    ),
    ("roles/gpu_drivers/tasks/user.yml", "Check the training user exists"): Later(
        "gpu_drivers_user",
        "in a run provision.yml gives gpu_drivers_user as cluster_user in host mode, the user host_runtime creates"
        " earlier in the same play (empty, and the task skipped, in container mode): it verifies that user",
    ),
    (GPU_VERIFY, "Check the Level Zero loader is installed"): Later("gpu_drivers_level_zero_loader", AFTER_INSTALL),
    (GPU_VERIFY, "Check clinfo sees as many Intel GPU devices as expected"): Later(
        "gpu_drivers_expected_devices",
        f"{AFTER_INSTALL}: the devices the installed runtime sees",
    ),
    (HEALTH, "Stop on nodes that are not provisioned, naming them"): Later(
        "the node's work directory",
        "the node's state (the work directory provision.yml makes), looked at on the node by the cluster role's node"
        " facts before the job changes anything; the preflight runs on the controller",
    ),
    (HEALTH, "Stop on nodes whose Docker engine does not answer, naming them"): Later(
        "the node's Docker engine",
        "the node's state (its engine running), asked of the node before the job changes anything; the preflight runs"
        " on the controller",
    ),
    (HEALTH, "Stop here when a node fails the gate (health_mode enforce)"): Later(
        "health_mode=enforce",
        "the health check's verdict on figures measured by running the probe on the nodes",
    ),
    (HOST_RUNTIME, "Check the controller's wheelhouse is there"): Refused(
        "host_runtime_wheelhouse",
        {**HOST_MODE, "host_runtime_wheelhouse": "{tmp}/empty-wheels"},
        r"host_runtime_wheelhouse",
    ),
    (HOST_RUNTIME, "Fail clearly when the Python stack does not import"): Later(
        "the training environment",
        AFTER_INSTALL,
    ),
    (ATTACH, "Give the verdict of a job that was judged already (nothing is taken over; fail when it did not succeed)"): InFirstPlay(
        "launcher_job_id",
        "the named run's summary.json on the controller, read in attach.yml's first play",
        ("attach.yml",),
    ),
    (ATTACH, "Check there is a job to take over, of a kind that can be"): InFirstPlay(
        "launcher_job_id",
        "the named run's follow.json on the controller and this run's runtime, read in attach.yml's first play",
        ("attach.yml",),
    ),
    (
        BESIDE,
        "Check this node has the physical cores for the ranks already running here and this job's (launcher_beside)",
    ): InFirstPlay(
        "launcher_nproc_per_node beside the ranks running",
        "the ranks already running on the node and its physical cores, facts gathered in the first play",
        ("launch.yml",),
    ),
    (BESIDE, "Check the job's ports are free on the launcher node (launcher_beside)"): InFirstPlay(
        "launcher_master_port / launcher_rdzv_port",
        "the ports already listening on the launcher node, facts gathered in the first play",
        ("launch.yml",),
    ),
    (
        BESIDE,
        "Check the job's launcher runs beside others here (launcher_beside runs with launcher_type other than slurm)",
    ): Refused(
        "launcher_beside",
        {"launcher_beside": True, "launcher_type": "slurm", "cluster_scheduler": "slurm", **HOST_MODE},
        r"launcher_beside",
        playbook="launch.yml",
    ),
    (
        "roles/launcher/tasks/devices.yml",
        "Check every node has an Intel GPU render node when the job runs on Intel GPUs (launcher_backend=xccl)",
    ): Refused(
        "launcher_backend",
        {"launcher_backend": "xccl"},
        r"^host node2: launcher_backend: 'xccl' runs every rank on an Intel GPU, and no render node",
        dri_devices={"node1": ["/dev/dri/card0", "/dev/dri/renderD128"], "node2": ["/dev/dri/card0"]},
    ),
    (
        "roles/launcher/tasks/kubernetes.yml",
        "Check kubernetes.core is installed on the controller (running a job on a cluster needs it)",
    ): Later(
        "the controller's kubernetes.core",
        "the controller's Ansible installation, not an input variable; checked before anything reaches the cluster"
        " (only the run's directory on the controller is written first)",
    ),
    (KUBERNETES_RUN, "Refuse a job the cluster's operator would not keep whole (before anything is submitted)"): Later(
        "the job's fields",
        "the cluster's definition of the job's kind (its operator's release), read from the API server before the job"
        " is submitted",
    ),
    (KUBERNETES_RUN, "Fail when the job did not succeed, root cause first"): Later(
        "the job",
        "the job's verdict, from the operator's condition and the pods' exit codes once it ended",
    ),
    ("roles/launcher/tasks/run_host.yml", "Fail clearly when a node does not answer"): Later(
        "the nodes' SSH mesh",
        "the nodes answering mpiexec.hydra over the cluster's SSH, which runs only once the workers' sshd do",
    ),
    ("roles/launcher/tasks/verdict.yml", "Fail when a rank failed or the job timed out"): Later(
        "the job",
        "the job's verdict, from its summary once it ended",
    ),
    (APT, "Check the apt settings"): Refused(
        "oneapi_apt_url",
        {**HOST_MODE, "oneapi_apt_url": ""},
        r"oneapi_apt_url",
    ),
    (APT, "Explain what failed"): Later(
        "the apt install",
        "the rescue of the apt install: the repository's, the key's or the packages' failure, known when apt runs",
    ),
    ("roles/oneapi/tasks/none.yml", "Check the given environment script exists"): Later(
        "oneapi_env_script_path (oneapi_install_method none)",
        "a file on the node, which the controller's preflight cannot see; looked at before anything changes (oneapi"
        " is the first role of the provisioning play, none.yml changes nothing before it)",
    ),
    (PIP, "Check the pip settings"): Refused(
        "oneapi_pip_prefix",
        {**PIP_MODE, "oneapi_pip_prefix": "opt/oneapi-pip"},
        r"oneapi_pip_prefix",
    ),
    (ONEAPI_SUPPORTED, "Check the node's C library is glibc"): InFirstPlay(
        "the node's C library (oneapi_install_method pip)",
        "a fact of the node (its Python's libc), probed in provision.yml's first play in host mode",
        ("provision.yml",),
    ),
    (ONEAPI_SUPPORTED, "Check the wheelhouse exists on the controller"): Refused(
        "oneapi_pip_wheelhouse",
        {**PIP_MODE, "oneapi_pip_wheelhouse": "{tmp}/no-wheelhouse"},
        r"oneapi_pip_wheelhouse",
    ),
    (ONEAPI_SUPPORTED, "Check the wheelhouse has every wheel the node needs"): InFirstPlay(
        "oneapi_pip_wheelhouse for the node's Python and platform",
        "the controller's wheelhouse resolved for facts of the node (Python version, machine, glibc), probed in"
        " provision.yml's first play in host mode",
        ("provision.yml",),
    ),
    (PIP, "Explain what failed"): Later(
        "the pip install",
        "the rescue of the pip block: it says again which step failed (the checks above have their own entries; the"
        " install itself fails only when it runs)",
    ),
    (ONEAPI_VERIFY, "Check the environment script exists"): Later("the oneAPI environment script", AFTER_INSTALL),
    (ONEAPI_VERIFY, "Check every verification step succeeded"): Later("the oneAPI runtime", AFTER_INSTALL),
    ("roles/slurm/tasks/main.yml", "Fail, naming the nodes Slurm does not consider usable"): Later(
        "the Slurm nodes",
        "slurmd registering with slurmctld, known once the daemons the role starts run",
    ),
    (WORKERS, "Check the SSH mesh is in place"): Later(
        "the SSH mesh's files",
        "verifies what the ssh_mesh role wrote earlier in the same play",
    ),
    ("roles/workload/tasks/supported.yml", "Fail when the shared data directory is missing here"): InFirstPlay(
        "workload_data_path",
        "a directory on the node (a shared mount), looked at in the first play of provision.yml and launch.yml",
    ),
    ("roles/workload/tasks/requirements.yml", "Check a named requirements file exists"): Refused(
        "workload_requirements",
        {"workload_requirements": "{tmp}/missing-requirements.txt"},
        r"^workload_requirements: \S*/missing-requirements\.txt is not a file on the controller",
        playbook="launch.yml",
    ),
}

# The gaps: (task file, task, input) -> why the check is not judged first yet. Each is a case of TABLE that states the
# rule it should meet, xfail(strict=True) until the gap is closed. None is left: a new check that cannot be judged
# first yet goes here, with why, rather than in TABLE as a reason.
NOT_YET_JUDGED_FIRST: dict[tuple[str, str, str], str] = {}


def walk(tasks: Any) -> Iterator[dict[str, Any]]:
    """Every task of a task list, those of blocks, rescue and always included."""
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        yield task
        for section in ("block", "rescue", "always"):
            yield from walk(task.get(section))


def role_checks() -> list[Key]:
    """(task file relative to the repository, task name) of every assert and fail task of the roles."""
    checks = []
    for path in sorted(glob.glob(str(REPO / "roles" / "*" / "tasks" / "*.yml"))):
        tasks = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        relative = str(Path(path).relative_to(REPO))
        checks += [(relative, task.get("name")) for task in walk(tasks) if any(name in task for name in CHECKS)]
    return checks


def facets() -> list[tuple[Key, Verdict]]:
    return [
        (key, verdict)
        for key, value in TABLE.items()
        for verdict in (value if isinstance(value, tuple) else (value,))
    ]


def gap(key: Key, verdict: Verdict) -> str | None:
    return NOT_YET_JUDGED_FIRST.get((*key, verdict.input))


def cases(kind: type) -> list[Any]:
    """One pytest case per verdict of ``kind``, a gap's marked xfail(strict): its rule does not hold yet."""
    params = []
    for key, verdict in facets():
        if not isinstance(verdict, kind):
            continue
        why = gap(key, verdict)
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=why)] if why else []
        short = key[0].removeprefix("roles/").replace("/tasks/", "/")
        params.append(pytest.param(key, verdict, id=f"{short}:{verdict.input}", marks=marks))
    return params


def with_tmp(values: Mapping[str, Any], tmp: Path) -> dict[str, Any]:
    return {name: value.format(tmp=tmp) if isinstance(value, str) else value for name, value in values.items()}


class FirstPlay:
    """A playbook's first play loaded as ansible-playbook loads it, on the two NODES; its preflight task run for real
    (the action plugin's ``run``, its arguments templated as the task executor does) with a run's values set for
    group all. No connection is opened: the preflight needs none (_requires_connection is False)."""

    def __init__(self, playbook: str, action: ModuleType) -> None:
        self.loader = DataLoader()
        self.inventory = InventoryManager(loader=self.loader)
        for group, host, address in NODES:
            self.inventory.add_group(group)
            self.inventory.add_host(host, group=group)
            self.inventory.get_host(host).set_variable("ansible_host", address)
        self.inventory.reconcile_inventory()
        self.variables = VariableManager(loader=self.loader, inventory=self.inventory)
        HostVars(inventory=self.inventory, variable_manager=self.variables, loader=self.loader)
        loaded = Playbook.load(str(PLAYBOOKS / playbook), variable_manager=self.variables, loader=self.loader)
        self.play = loaded.get_plays()[0]
        tasks = [task for block in self.play.compile() for task in block.block
                 if getattr(task, "action", "") == PREFLIGHT]
        assert tasks, f"the first play of {playbook} runs no {PREFLIGHT} task"
        self.task = tasks[0]
        self.action = action

    def judge(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The preflight's result for ``values`` (what -e or group_vars/all would set), run once as run_once does."""
        self.inventory.groups["all"].vars = dict(values)
        launcher = self.inventory.get_host(NODES[0][1])
        task_vars = self.variables.get_vars(play=self.play, host=launcher, task=self.task)
        templar = Templar(loader=self.loader, variables=task_vars)
        task = self.task.copy()
        task.args = templar.template(self.task.args)
        connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir=None))
        module = self.action.ActionModule(task, connection, PlayContext(play=self.play), self.loader, templar, None)
        return module.run(task_vars=task_vars)


@pytest.fixture(scope="module")
def collection() -> Iterator[dict[str, ModuleType]]:
    """Ansible's collection loader owning ``ansible_collections`` while this module runs, as in ansible-playbook (the
    roles' defaults use ansible.builtin lookups); tests/unit/conftest.py's plain package is set aside and restored.
    The collection's modules are imported under it: the preflight action and the filters the roles call."""
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "ansible_collections"}
    for name in saved:
        del sys.modules[name]
    init_plugin_loader([str(REPO / "collections")])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(C, "INVENTORY_UNPARSED_WARNING", False)
        yield {
            "action": importlib.import_module(f"{COLLECTION}.plugins.action.preflight"),
            "filters": importlib.import_module(f"{COLLECTION}.plugins.filter.cluster"),
        }
    _AnsibleCollectionFinder._remove()
    for name in [name for name in sys.modules if name.split(".")[0] == "ansible_collections"]:
        del sys.modules[name]
    sys.modules.update(saved)


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The controller's side of a valid run: the code with its script, an image tarball, runs/, an empty build
    context (no Dockerfile), a wheelhouse and an empty one."""
    root = tmp_path_factory.mktemp("controller")
    for directory in ("code", "runs", "context", "wheels", "empty-wheels"):
        (root / directory).mkdir()
    (root / "wheels" / "torch-2.13.0-cp311-none-any.whl").write_bytes(b"a wheel\n")
    (root / "code" / "train.py").write_text("print('train')\n", encoding="utf-8")
    (root / "image.tar").write_bytes(b"a docker save tarball\n")
    return root


class FirstPlays:
    """Each playbook's first play, loaded once."""

    def __init__(self, action: ModuleType) -> None:
        self.action = action
        self.plays: dict[str, FirstPlay] = {}

    def load(self, playbook: str) -> FirstPlay:
        if playbook not in self.plays:
            self.plays[playbook] = FirstPlay(playbook, self.action)
        return self.plays[playbook]


@pytest.fixture(scope="module")
def first_plays(collection: dict[str, ModuleType]) -> FirstPlays:
    return FirstPlays(collection["action"])


def refusals(
    verdict: Refused, first_plays: FirstPlays, collection: dict[str, ModuleType], controller: Path
) -> list[str]:
    """What the first play says of ``verdict.inputs`` over a valid run: the preflight's problems (changed=0), or the
    rule's problems on the nodes' facts."""
    values = with_tmp({**VALID_RUN, **verdict.inputs}, controller)
    if verdict.dri_devices is not None:
        return collection["filters"].device_problems(dict(verdict.dri_devices), values["launcher_backend"])
    result = first_plays.load(verdict.playbook).judge(values)
    if result["changed"] is not False:
        pytest.fail(f"the preflight reported a change for {verdict.inputs}", pytrace=False)
    return list(result["problems"])


def first_play_files(playbook: str) -> set[str]:
    """The task files (relative to the repository) the first play of ``playbook`` runs: its roles' main.yml, the
    task files its tasks import or include, and theirs in turn (literal file names only)."""
    play = yaml.safe_load((PLAYBOOKS / playbook).read_text(encoding="utf-8"))[0]
    files: set[str] = set()
    for role in play.get("roles") or []:
        reach(role_tasks(role["role"] if isinstance(role, dict) else role, "main"), files)
    for task in walk((play.get("pre_tasks") or []) + (play.get("tasks") or [])):
        for path in included(task, PLAYBOOKS):
            reach(path, files)
    return files


def role_tasks(role: str, tasks_from: str) -> Path:
    name = role.split(".")[-1]
    return REPO / "roles" / name / "tasks" / (tasks_from if tasks_from.endswith(".yml") else f"{tasks_from}.yml")


def included(task: Mapping[str, Any], here: Path) -> list[Path]:
    """The task files a task imports or includes (a templated name is left out)."""
    paths = []
    for module in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks", "import_tasks", "include_tasks"):
        if module in task:
            name = task[module]["file"] if isinstance(task[module], dict) else task[module]
            if "{{" not in name:
                paths.append(here / name)
    for module in ("ansible.builtin.import_role", "ansible.builtin.include_role", "import_role", "include_role"):
        if module in task:
            paths.append(role_tasks(task[module]["name"], task[module].get("tasks_from", "main")))
    return paths


def reach(path: Path, files: set[str]) -> None:
    if not path.is_file():
        return
    relative = str(path.resolve().relative_to(REPO))
    if relative in files:
        return
    files.add(relative)
    for task in walk(yaml.safe_load(path.read_text(encoding="utf-8"))):
        for child in included(task, path.parent):
            reach(child, files)


def task_names(relative: str) -> set[str]:
    return {task.get("name") for task in walk(yaml.safe_load((REPO / relative).read_text(encoding="utf-8")))}


def test_the_table_lists_exactly_the_roles_assert_and_fail_tasks() -> None:
    found = role_checks()
    duplicates = sorted({check for check in found if found.count(check) > 1})
    assert not duplicates, f"assert/fail tasks sharing a file and a name (give each its own name): {duplicates}"
    missing = [check for check in found if check not in TABLE]
    stale = [key for key in TABLE if key not in found]
    assert not missing, "assert/fail tasks without an entry in TABLE (a preflight rule or a reason):\n" + "\n".join(
        f"  {path}: {name}" for path, name in missing
    )
    assert not stale, "TABLE entries whose task is gone or renamed:\n" + "\n".join(
        f"  {path}: {name}" for path, name in stale
    )


def test_every_gap_is_a_rule_of_the_table_not_a_reason() -> None:
    rules = {(*key, verdict.input): verdict for key, verdict in facets()}
    unknown = [gap_key for gap_key in NOT_YET_JUDGED_FIRST if gap_key not in rules]
    assert not unknown, f"NOT_YET_JUDGED_FIRST entries naming no (file, task, input) of TABLE: {unknown}"
    reasons = [gap_key for gap_key in NOT_YET_JUDGED_FIRST if isinstance(rules[gap_key], Later)]
    assert not reasons, f"a gap states the rule it should meet (Refused or InFirstPlay), not a reason: {reasons}"
    assert all(why.strip() for why in NOT_YET_JUDGED_FIRST.values())


def test_every_reason_says_why() -> None:
    vague = [(key, verdict) for key, verdict in facets() if isinstance(verdict, (Later, InFirstPlay))
             and len(verdict.reason.split()) < 4]
    assert not vague, f"a reason is a sentence saying why the check cannot be judged first: {vague}"


@pytest.mark.parametrize("playbook", sorted({v.playbook for _key, v in facets() if isinstance(v, Refused)}))
def test_a_valid_run_passes_the_preflight(playbook: str, first_plays: FirstPlays, controller: Path) -> None:
    """The run every bad input is laid over is valid: a refusal below comes from the bad input."""
    result = first_plays.load(playbook).judge(with_tmp(VALID_RUN, controller))
    assert result["changed"] is False
    assert result["problems"] == [], result["problems"]


@pytest.mark.parametrize(("key", "verdict"), cases(Refused))
def test_the_preflight_refuses_the_bad_input_with_nothing_changed(
    key: Key, verdict: Refused, first_plays: FirstPlays, collection: dict[str, ModuleType], controller: Path
) -> None:
    problems = refusals(verdict, first_plays, collection, controller)
    unrelated = [problem for problem in problems if not re.search(verdict.refusal, problem)]
    if unrelated:
        # Not an AssertionError: a broken case must fail even where its gap is expected to.
        pytest.fail(f"{key}: the valid run was refused for something else: {unrelated}", pytrace=False)
    assert problems, f"{key}: the preflight lets {dict(verdict.inputs)} through; the role refuses it only later"


@pytest.mark.parametrize(("key", "verdict"), cases(InFirstPlay))
def test_the_node_fact_is_checked_in_the_play_that_changes_nothing(key: Key, verdict: InFirstPlay) -> None:
    checker = verdict.by or key
    if checker[1] not in task_names(checker[0]):
        pytest.fail(f"{key}: the check {checker} is gone", pytrace=False)
    for playbook in verdict.playbooks:
        play = yaml.safe_load((PLAYBOOKS / playbook).read_text(encoding="utf-8"))[0]
        files = first_play_files(playbook)
        if not (play.get("any_errors_fatal") and CLUSTER in files):
            pytest.fail(f"the first play of {playbook} is not the preflight's (cluster role, any_errors_fatal)")
        assert checker[0] in files, f"{key}: {checker[0]} does not run in the first play of {playbook}"
