# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of plugin_utils/preflight.py, the checks the preflight action runs on the controller.

Every rejection is asserted to name the variable and to say what is allowed; the real argument specs and
defaults of the run's roles are loaded so that a new port, a renamed variable or a bad default shows up here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY
from ansible_collections.multinode.training.plugins.module_utils.launch_script import ADDRESS_TEXT, NUL_TEXT
from ansible_collections.multinode.training.plugins.plugin_utils import preflight
from ansible_collections.multinode.training.plugins.plugin_utils.preflight import HostEntry, Problem

REPO = Path(preflight.__file__).resolve().parents[2]
ROLES = REPO / "roles"
GROUPS = ("launcher", "workers")

PORTS = ("cluster_ssh_port", "launcher_master_port", "launcher_rdzv_port")
TIMEOUTS = ("launcher_timeout", "workers_ready_timeout")
COUNTS = ("launcher_nproc_per_node", "launcher_omp_num_threads")

# What each rule says is allowed.
PORT_RANGE = "use a port from 1 to 65535"
SECONDS = "use a whole number of seconds > 0"
COUNT = "use a whole number >= 1 or 'auto'"
ID_RANGE = "use a numeric id from 0 to 4294967294"
NAME = "use 1-63 letters, digits and _ . - starting with a letter or digit"
OPTIONAL_NAME = "use empty, or 1-63 letters, digits and _ . - starting with a letter or digit"
USER = "use a Linux user name: lower-case letters, digits, _ and -, at most 32"
ABSOLUTE_PATH = "use an absolute path of letters, digits and _ . / + - without '..'"
RELATIVE_PATH = "use a path relative to the code directory of letters, digits and _ . / + - without '..'"
ENV_NAMES = "a name is letters, digits and _, not starting with a digit"
ENV_VALUES = "are lists or mappings; use a string or number"
RUNTIME = "must be one of: container, host, got: "
RENAMED_HINT = "is no longer read; set {} instead (per host, per group or -e)"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def run_role_options() -> dict[str, dict[str, Any]]:
    """The merged options of every role a run uses, from the real argument specs."""
    return preflight.merge_options(load_yaml(ROLES / role / "meta" / "argument_specs.yml") for role in preflight.RUN_ROLES)


OPTIONS = run_role_options()


def is_templated(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(is_templated(item) for item in value.values())
    if isinstance(value, list):
        return any(is_templated(item) for item in value)
    return False


def literal_defaults(role: str) -> dict[str, Any]:
    """A role's defaults that are plain values, not templates of other variables (nor set by the playbooks)."""
    defaults = load_yaml(ROLES / role / "defaults" / "main.yml") or {}
    return {name: value for name, value in defaults.items() if not is_templated(value) and name not in preflight.WIRED}


def problems_of(**values: Any) -> list[Problem]:
    return preflight.value_problems(OPTIONS, values)


def case(variable: str, value: Any, expected: str, **marks: Any) -> Any:
    return pytest.param(variable, value, expected, id=f"{variable}={value!r}"[:60], **marks)


def assert_single(problems: list[Problem], variable: str, *fragments: str, hosts: tuple[str, ...] = ()) -> Problem:
    """Exactly one problem, on ``variable``, whose message holds every fragment; returns it."""
    assert [(problem.variable, problem.hosts) for problem in problems] == [(variable, hosts)], problems
    for fragment in fragments:
        assert fragment in problems[0].message
    return problems[0]


# ----------------------------------------------------------------------------------------------- value_problems

BAD_VALUES = [
    # type errors from the argument specs
    case("cluster_ssh_port", "abc", "of type str and we were unable to convert to int"),
    case("launcher_timeout", 2.5, "of type float and we were unable to convert to int"),
    case("launcher_env", ["OMP_PROC_BIND=close"], "of type list and we were unable to convert to dict"),
    # choices from the argument specs, or a rule for a playbook-level variable
    case("launcher_type", "srun", "must be one of: torchrun, mpiexec, mpirun, ipexrun, horovodrun, deepspeed, tensorflow, slurm, got: srun"),
    case("launcher_backend", "nccl", "must be one of: gloo, ccl, mpi, xccl, got: nccl"),
    case("cluster_runtime", "vm", f"{RUNTIME}vm"),
    # ranges
    *[case(port, value, f"{value!r} is not allowed; {PORT_RANGE}") for port in PORTS for value in (0, 70000, -1)],
    *[case(timeout, value, f"{value!r} is not allowed; {SECONDS}") for timeout in TIMEOUTS for value in (0, -5)],
    *[case(count, value, f"{value!r} is not allowed; {COUNT}") for count in COUNTS for value in (0, -1, "many", "")],
    case("launcher_checkpoint_replicas", -1, "-1 is not allowed; use 0 (no copies) or how many other nodes get each checkpoint"),
    # a variable the roles no longer read, whatever its value
    *[case("cluster_slots", value, RENAMED_HINT.format("launcher_nproc_per_node")) for value in (0, 2)],
    # one name per concept: the roles' aliases of the cluster contract name the input that replaced them
    *[case(old, "host", RENAMED_HINT.format("cluster_runtime")) for old in ("training_runtime", "launcher_runtime", "workers_runtime")],
    case("launcher_workdir", "/srv/work", RENAMED_HINT.format("cluster_root")),
    case("workers_user", "1000:1000", RENAMED_HINT.format("cluster_uid and cluster_gid")),
    case("container_runtime_image", "x:1", "is set from cluster_image by playbooks/provision.yml; set cluster_image instead"),
    case("launcher_devices", ["/dev/dri/card0"], "is no longer read; every /dev/dri device of the node"),
    case("cluster_uid", -1, f"-1 is not allowed; {ID_RANGE}"),
    case("cluster_gid", 2**32 - 1, f"4294967295 is not allowed; {ID_RANGE}"),
    # names used in paths, container names and shell lines
    *[case("cluster_name", name, f"{name!r} is not allowed; {NAME}") for name in ("a;b", "a b", "../x", "-x", "x" * 64)],
    case("launcher_job_id", "x/y", f"'x/y' is not allowed; {OPTIONAL_NAME}"),
    case("launcher_job_name", "my job", f"'my job' is not allowed; {OPTIONAL_NAME}"),
    *[case("cluster_user", user, f"{user!r} is not allowed; {USER}") for user in ("Root", "a b")],
    # paths on the nodes
    case("cluster_root", "opt/multinode", f"'opt/multinode' is not allowed; {ABSOLUTE_PATH}"),
    case("cluster_root", "/opt/../etc", f"'/opt/../etc' is not allowed; {ABSOLUTE_PATH}"),
    case("cluster_root", "/opt/$(reboot)", f"'/opt/$(reboot)' is not allowed; {ABSOLUTE_PATH}"),
    case("launcher_script", "/srv/code/train.py", f"'/srv/code/train.py' is not allowed; {RELATIVE_PATH}"),
    case("launcher_script", "../train.py", f"'../train.py' is not allowed; {RELATIVE_PATH}"),
    case("launcher_script", "src/../../train.py", f"'src/../../train.py' is not allowed; {RELATIVE_PATH}"),
    # environments
    *[case("launcher_env", {name: "1"}, f"invalid variable names [{name!r}]; {ENV_NAMES}") for name in ("1BAD", "A-B", "A B")],
    case("launcher_env", {"A": ["x"]}, f"values of ['A'] {ENV_VALUES}"),
    case("launcher_env", {"A": {"b": "c"}}, f"values of ['A'] {ENV_VALUES}"),
    case("oneapi_verify_env", {"I-MPI": "shm"}, f"invalid variable names ['I-MPI']; {ENV_NAMES}"),
]


@pytest.mark.parametrize(("variable", "value", "expected"), BAD_VALUES)
def test_bad_value_names_the_variable_and_what_is_allowed(variable: str, value: Any, expected: str) -> None:
    assert_single(problems_of(**{variable: value}), variable, expected)


GOOD_VALUES = [
    *[(count, value) for count in COUNTS for value in ("auto", 1, "4")],
    *[(port, value) for port in PORTS for value in (1, 65535, "8080")],  # "8080": INI inventories give strings
    *[(timeout, value) for timeout in TIMEOUTS for value in (1, "600")],
    ("cluster_uid", 0),
    ("cluster_gid", 2**32 - 2),
    ("cluster_name", "node-1.a_b"),
    ("cluster_name", "x" * 63),
    ("launcher_job_id", ""),
    ("launcher_job_name", ""),
    ("cluster_user", "dev"),
    ("cluster_user", "_svc-1"),
    ("cluster_root", "/opt/multinode+1"),
    ("launcher_script", "train.py"),
    ("launcher_script", "src/train.py"),
    ("launcher_env", {"OMP_PROC_BIND": "close", "_X1": 3}),
    ("cluster_runtime", "container"),
    ("cluster_runtime", "host"),
    ("launcher_type", "mpiexec"),
    ("launcher_type", "ipexrun"),
    ("launcher_backend", "xccl"),
]


@pytest.mark.parametrize(("variable", "value"), GOOD_VALUES, ids=[f"{name}={value!r}"[:60] for name, value in GOOD_VALUES])
def test_valid_value_gives_no_problem(variable: str, value: Any) -> None:
    assert problems_of(**{variable: value}) == []


@pytest.mark.parametrize("variable", PORTS + TIMEOUTS + ("cluster_uid", "cluster_gid"))
@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_not_numbers(variable: str, value: bool) -> None:
    assert_single(problems_of(**{variable: value}), variable, f"{value!r} is not allowed; use ")


def test_every_bad_value_of_a_host_is_reported() -> None:
    values = {"cluster_ssh_port": 0, "launcher_type": "srun", "cluster_name": "a;b", "launcher_timeout": -5, "cluster_user": "Root"}
    assert [problem.variable for problem in problems_of(**values)] == sorted(values)


def test_a_type_error_is_not_judged_again_by_the_rule() -> None:
    assert_single(problems_of(launcher_rdzv_port="abc"), "launcher_rdzv_port", "unable to convert to int")


def test_variables_without_spec_or_rule_are_not_judged() -> None:
    assert problems_of(ansible_user="Not A Valid;Name", some_custom_flag=[1, 2]) == []


def test_an_unset_environment_variable_in_cluster_root_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MULTINODE_PREFLIGHT_UNSET", raising=False)
    assert_single(problems_of(cluster_root="/opt/$MULTINODE_PREFLIGHT_UNSET"), "cluster_root", ABSOLUTE_PATH)


@pytest.mark.parametrize("value", ["/opt/$HOME", "~/multinode"])
def test_node_paths_are_judged_as_written_not_expanded_on_the_controller(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("HOME", "/home/dev")
    assert_single(problems_of(cluster_root=value), "cluster_root", ABSOLUTE_PATH)


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        case("cluster_name", "multinode\n", NAME),
        case("cluster_user", "dev\n", USER),
        case("cluster_root", "/opt/multinode\n", ABSOLUTE_PATH),
        case("launcher_script", "train.py\n", RELATIVE_PATH),
        case("cluster_runtime", "host\n", RUNTIME),
        case("launcher_env", {"A\n": "1"}, ENV_NAMES),
    ],
)
def test_a_trailing_newline_is_rejected(variable: str, value: Any, expected: str) -> None:
    assert_single(problems_of(**{variable: value}), variable, expected)


# ------------------------------------------------------------------------------- the real specs and defaults

NUMERIC_SUFFIXES = ("_port", "_timeout", "_uid", "_gid")
NUMERIC_OPTIONS = sorted(name for name in OPTIONS if name.endswith(NUMERIC_SUFFIXES))


def test_the_numeric_options_are_found() -> None:
    assert {"cluster_ssh_port", "launcher_rdzv_port", "workers_ready_timeout", "cluster_uid", "cluster_gid"} <= set(NUMERIC_OPTIONS)


@pytest.mark.parametrize("variable", NUMERIC_OPTIONS)
def test_every_port_timeout_and_id_has_a_rule(variable: str) -> None:
    rule = preflight.rule_for(variable)
    assert rule is not None
    assert rule(-1) is not None
    # The rules take numbers only: an int type converts the strings INI inventories give before the rule runs.
    assert OPTIONS[variable].get("type") == "int"


@pytest.mark.parametrize("role", preflight.RUN_ROLES)
def test_literal_defaults_are_valid(role: str) -> None:
    defaults = literal_defaults(role)
    assert defaults, f"{role} has no literal default: is defaults/main.yml read?"
    assert [str(problem) for problem in preflight.value_problems(OPTIONS, defaults)] == []


@pytest.mark.parametrize("variable", sorted(set(preflight.NAMED_RULES) - set(preflight.RENAMED) - set(preflight.REMOVED)))
def test_every_named_rule_names_a_real_variable(variable: str) -> None:
    assert variable in OPTIONS


@pytest.mark.parametrize(("old", "new"), sorted(preflight.RENAMED.items()))
def test_a_renamed_variable_is_gone_and_its_replacement_is_real(old: str, new: str) -> None:
    assert old not in OPTIONS
    assert set(new.split(" and ")) <= set(OPTIONS)


@pytest.mark.parametrize(("name", "source"), sorted(preflight.WIRED.items()))
def test_a_wired_option_is_set_by_provision_yml_from_its_source(name: str, source: str) -> None:
    assert name in OPTIONS and source in OPTIONS
    assert f"{name}: \"{{{{ cluster.{source.removeprefix('cluster_')} }}}}\"" in (REPO / "playbooks" / "provision.yml").read_text(encoding="utf-8")


@pytest.mark.parametrize("old", sorted(preflight.REMOVED))
def test_a_removed_variable_is_gone(old: str) -> None:
    assert old not in OPTIONS


@pytest.mark.parametrize("name", preflight.RECORDED)
def test_the_recorded_facts_are_documented_in_the_specs_of_the_roles_that_read_them(name: str) -> None:
    assert OPTIONS[name]["type"] == "dict"
    assert "not an input" in OPTIONS[name]["description"]


# ---------------------------------------------------------------------------------------- inventory_problems


def entry(name: str, address: str, port: int = 22, mesh_port: int = 12345) -> HostEntry:
    """A host whose workers' sshd listens on its connect address (no cluster_address)."""
    return HostEntry(name=name, connect_address=address, connect_port=port, mesh_address=address, mesh_port=mesh_port)


VALID_HOSTS = [entry("node0", "10.0.0.1"), entry("node1", "10.0.0.2"), entry("node2", "10.0.0.3")]


def inventory(hosts: list[HostEntry], launchers: Iterable[str] = ("node0",), workers: Iterable[str] | None = None) -> list[Problem]:
    names = [host.name for host in hosts]
    launcher_list = list(launchers)
    worker_list = list(workers) if workers is not None else [name for name in names if name not in launcher_list]
    return preflight.inventory_problems(launcher_list, worker_list, hosts, GROUPS)


def test_a_valid_inventory_gives_no_problem() -> None:
    assert inventory(VALID_HOSTS) == []


@pytest.mark.parametrize(("launchers", "holds"), [([], "it holds 0: none"), (["node0", "node1"], "it holds 2: node0, node1")])
def test_exactly_one_launcher(launchers: list[str], holds: str) -> None:
    problems = inventory(VALID_HOSTS, launchers, workers=["node2"])
    assert_single(problems, "group launcher", f"must hold exactly one host, {holds}")


def test_the_launcher_is_not_also_a_worker() -> None:
    problems = inventory(VALID_HOSTS, workers=["node0", "node1", "node2"])
    assert_single(problems, "group workers", "node0 also in group launcher", "list it once")


@pytest.mark.parametrize("name", ["node;1", "node 1", "-oProxyCommand=x", ".hidden", "node1\n"])
def test_host_names_are_usable_in_paths(name: str) -> None:
    hosts = [*VALID_HOSTS, entry(name, "10.0.0.9")]
    assert_single(inventory(hosts), "inventory name", "not allowed", preflight.HOST_NAME_TEXT, hosts=(name,))


@pytest.mark.parametrize("name", ["node-4.example.com", "10.0.0.9", "fe80::9", "admin@node4"])
def test_host_names_the_launch_script_accepts_pass(name: str) -> None:
    assert inventory([*VALID_HOSTS, entry(name, "10.0.0.9")]) == []


def test_host_names_differing_only_in_case() -> None:
    hosts = [*VALID_HOSTS, entry("Node1", "10.0.0.9")]
    assert_single(inventory(hosts), "inventory name", "differ only in case", hosts=("node1", "Node1"))


def test_two_hosts_on_one_machine_are_reported_once() -> None:
    hosts = [entry("node0", "10.0.0.1"), entry("node1", "10.0.0.2"), entry("node2", "10.0.0.2")]
    problem = assert_single(inventory(hosts), "ansible_host/ansible_port", hosts=("node1", "node2"))
    assert problem.message == "are the same machine: 10.0.0.2:22; give each node its own"


def test_two_hosts_sharing_an_sshd_endpoint() -> None:
    hosts = [entry("node0", "10.0.0.1"), entry("node1", "10.0.0.2", port=2201), entry("node2", "10.0.0.2", port=2202)]
    problem = assert_single(inventory(hosts), "cluster_address/cluster_ssh_port", hosts=("node1", "node2"))
    assert problem.message == "would run their workers' sshd on the same endpoint 10.0.0.2:12345; give each node its own"


def test_hosts_of_one_machine_with_their_own_ssh_ports_are_valid() -> None:
    hosts = [entry("node0", "10.0.0.1"), entry("node1", "10.0.0.2", 2201, 12346), entry("node2", "10.0.0.2", 2202, 12347)]
    assert inventory(hosts) == []


# An address is what ssh, the hostfiles and the launchers take as a node: an IP literal or a host name (underscores
# allowed: Docker's DNS and /etc/hosts resolve them, ssh takes them).
ADDRESSES = ["10.0.0.9", "fe80::1", "fe80::1%eth0", "2001:db8::9", "node-1.example.com", "node_1", "NODE9", "a"]
NOT_ADDRESSES = [
    "-oProxyCommand=x",
    "-p",
    "a b",
    "a;b",
    "",
    "admin@node9",
    "node9\n",
    "$(reboot)",
    "node-.example.com",
    "node..example.com",
    "node.example.com.",
    "10.0.0.256",
    "10.0.0.1%eth0",
    "fe80::1%eth0;reboot",
    "[fe80::1]",
    "x" * 64,
]


@pytest.mark.parametrize("address", ADDRESSES)
def test_an_ansible_host_that_is_an_address_passes(address: str) -> None:
    assert inventory([*VALID_HOSTS, entry("node9", address)]) == []


@pytest.mark.parametrize("address", NOT_ADDRESSES)
def test_an_ansible_host_that_is_no_address_is_refused_naming_the_host(address: str) -> None:
    problem = assert_single(inventory([*VALID_HOSTS, entry("node9", address)]), "ansible_host", hosts=("node9",))
    assert problem.message == f"{address!r} is not allowed; use {ADDRESS_TEXT}"


@pytest.mark.parametrize("name", ["node_1", "node-1.example.com", "10.0.0.9"])
def test_an_inventory_name_without_ansible_host_is_the_address(name: str) -> None:
    assert inventory([*VALID_HOSTS, entry(name, name)]) == []


def test_an_inventory_name_that_is_no_address_needs_an_ansible_host() -> None:
    problem = assert_single(inventory([*VALID_HOSTS, entry("admin@node9", "admin@node9")]), "ansible_host", hosts=("admin@node9",))
    assert problem.message.startswith("'admin@node9' is the address when ansible_host is not set, and it is not one; set ansible_host")


def test_a_bad_inventory_name_used_as_the_address_is_reported_once() -> None:
    assert_single(inventory([*VALID_HOSTS, entry("-oProxyCommand=x", "-oProxyCommand=x")]), "inventory name", hosts=("-oProxyCommand=x",))


@pytest.mark.parametrize("address", [*ADDRESSES, ""])
def test_a_cluster_address_that_is_an_address_or_empty_passes(address: str) -> None:
    assert problems_of(cluster_address=address) == []


@pytest.mark.parametrize("address", [address for address in NOT_ADDRESSES if address])
def test_a_cluster_address_that_is_no_address_is_refused(address: str) -> None:
    assert_single(problems_of(cluster_address=address), "cluster_address", f"{address!r} is not allowed; use {ADDRESS_TEXT}")


# ----------------------------------------------------------------------------------------- left_out_problems

NODE_GROUPS = {"launcher": ["node1"], "workers": ["node2", "node3"]}


def test_a_run_on_every_node_of_its_groups_leaves_none_out() -> None:
    assert preflight.left_out_problems(NODE_GROUPS, ["node1", "node2", "node3"]) == []


def test_a_limit_leaving_out_a_worker_is_refused_naming_it_and_its_group() -> None:
    problem = assert_single(preflight.left_out_problems(NODE_GROUPS, ["node1", "node2"]), "--limit")
    assert problem.message.startswith("leaves out node3 (group workers): a run takes every node")
    assert "give an inventory of those nodes" in problem.message


def test_a_limit_leaving_out_the_launcher_and_a_worker_names_both_once() -> None:
    problem = assert_single(preflight.left_out_problems(NODE_GROUPS, ["node2"]), "--limit")
    assert "leaves out node1 (group launcher), node3 (group workers):" in problem.message


def test_hosts_of_other_groups_in_the_play_are_no_concern_of_this_check() -> None:
    assert preflight.left_out_problems(NODE_GROUPS, ["node1", "node2", "node3", "spare1"]) == []


# --------------------------------------------------------------------------------------- controller_problems


def code_dir(root: Path, script: str = "train.py") -> Path:
    """A code directory holding ``script``."""
    (root / script).parent.mkdir(parents=True, exist_ok=True)
    (root / script).write_text("print('train')\n", encoding="utf-8")
    return root


def controller(workload_src: str | Path, script: str = "train.py", data_src: str | Path = "", runs_dir: str | Path = "runs") -> list[Problem]:
    return preflight.controller_problems(str(workload_src), script, str(data_src), str(runs_dir))


def test_a_valid_controller_gives_no_problem(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "runs").mkdir()
    assert controller(code_dir(tmp_path / "code"), data_src=tmp_path / "data", runs_dir=tmp_path / "runs") == []


def test_a_missing_code_directory(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert controller(missing, runs_dir=tmp_path / "runs") == [Problem("workload_src", f"{missing} is not a directory on the controller")]


@pytest.mark.parametrize("script", ["train.py", "src"])
def test_a_script_that_is_not_a_file_of_the_code_directory(tmp_path: Path, script: str) -> None:
    code = code_dir(tmp_path / "code", "src/train.py")
    problem = assert_single(controller(code, script, runs_dir=tmp_path / "runs"), "launcher_script")
    assert problem.message == f"{script!r} is not a file in {code} (workload_src); name it relative to that directory"


def test_a_script_in_a_subdirectory(tmp_path: Path) -> None:
    assert controller(code_dir(tmp_path / "code", "src/train.py"), "src/train.py", runs_dir=tmp_path / "runs") == []


def test_a_home_relative_code_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    code_dir(tmp_path / "code")
    assert controller("~/code", runs_dir=tmp_path / "runs") == []
    assert controller("~/missing", runs_dir=tmp_path / "runs") == [
        Problem("workload_src", f"{tmp_path / 'missing'} is not a directory on the controller")
    ]


def test_relative_paths_are_resolved_against_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code_dir(tmp_path / "code")
    assert controller("code", runs_dir="runs") == []
    assert controller("code", data_src="data", runs_dir="runs") == [
        Problem("workload_data_src", f"{tmp_path / 'data'} is not a directory on the controller")
    ]


def test_controller_paths_are_resolved_as_the_workload_role_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # The workload role applies expanduser | realpath, no $VARS: '$MULTINODE_CODE' is a directory of that name.
    monkeypatch.setenv("MULTINODE_CODE", str(code_dir(tmp_path / "code")))
    assert_single(controller("$MULTINODE_CODE", runs_dir="runs"), "workload_src", "is not a directory on the controller")


@pytest.mark.parametrize(("data", "reported"), [("", False), ("data", False), ("missing", True)])
def test_the_data_directory_is_checked_only_when_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: str, reported: bool) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    expected = [Problem("workload_data_src", f"{tmp_path / data} is not a directory on the controller")] if reported else []
    assert controller(code_dir(tmp_path / "code"), data_src=data) == expected


def test_a_runs_path_that_is_a_regular_file(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.write_text("", encoding="utf-8")
    assert controller(code_dir(tmp_path / "code"), runs_dir=runs) == [Problem("launcher_runs_dir", f"{runs} exists and is not a directory")]


def test_a_missing_runs_directory_is_created_later(tmp_path: Path) -> None:
    assert controller(code_dir(tmp_path / "code"), runs_dir=tmp_path / "not-yet") == []


# ------------------------------------------------------------------------------------------------ runtime_problems

MPI_NEEDS_IMAGE = Problem(
    "launcher_type", "'mpirun' needs the training image (its launcher is installed there); on the hosts (cluster_runtime=host) use torchrun or mpiexec or slurm"
)


@pytest.mark.parametrize(
    ("values", "problems"),
    [
        ({}, []),
        ({"launcher_type": "mpirun"}, []),
        ({"cluster_runtime": "host"}, []),
        ({"cluster_runtime": "host", "launcher_type": "mpiexec"}, []),
        ({"cluster_runtime": "host", "launcher_type": "mpirun"}, [MPI_NEEDS_IMAGE]),
        ({"cluster_runtime": "container", "launcher_type": "mpirun"}, []),
        # The old names are not read (the preflight names them); only cluster_runtime decides.
        ({"training_runtime": "host", "launcher_type": "mpirun"}, []),
    ],
)
def test_only_torchrun_and_mpiexec_run_on_the_hosts(values: dict[str, str], problems: list[Problem]) -> None:
    assert preflight.runtime_problems(values) == problems


# ------------------------------------------------------------------------------------------------ shell_word_problems

SHELL_SPLITS = "launcher_type={} joins the program's words with spaces and runs them through a shell, which would split or expand: {}"


@pytest.mark.parametrize("launcher", ["ipexrun", "deepspeed"])
@pytest.mark.parametrize(
    ("values", "problems"),
    [
        ({}, []),
        ({"launcher_script_args": ["--epochs", 3, "--out", "{output_dir}/model.pt", "--lr=0.1"]}, []),
        ({"launcher_script_args": ["--name", "my run"]}, [("launcher_script_args", "'my run'")]),
        ({"launcher_script_args": ["--glob", "*.csv", "$HOME"]}, [("launcher_script_args", "'*.csv', '$HOME'")]),
        ({"launcher_script": "my train.py"}, [("launcher_script", "'my train.py'")]),
        ({"launcher_env": {"OMP_PROC_BIND": "close", "NOTE": "a;b"}}, [("launcher_env", "'NOTE=a;b'")]),
        (
            {"launcher_script": "x y.py", "launcher_script_args": ["a b"]},
            [("launcher_script", "'x y.py'"), ("launcher_script_args", "'a b'")],
        ),
    ],
)
def test_shell_joined_launchers_refuse_words_a_shell_would_change(
    launcher: str, values: dict[str, Any], problems: list[tuple[str, str]]
) -> None:
    found = preflight.shell_word_problems({**values, "launcher_type": launcher})
    assert found == [Problem(name, SHELL_SPLITS.format(launcher, words)) for name, words in problems]


PASSING_WORDS_AS_THEY_ARE = [name for name, launcher in REGISTRY.items() if not launcher.shell_joined]
# Values no generated script may end early on or split (issue 39): every launcher that passes words as they are takes
# them; the shell-joined ones refuse them, each variable named.
HOSTILE = ["a\nMULTINODE_EOF\ntouch pwned", "$(touch pwned)", "`touch pwned`", "it's", 'a "b"', "\n", "a\\"]


@pytest.mark.parametrize("launcher", [None, *PASSING_WORDS_AS_THEY_ARE])
def test_launchers_that_pass_words_as_they_are_take_any_argument(launcher: str | None) -> None:
    values = {
        "launcher_script": "my train.py",
        "launcher_script_args": ["my run", "$HOME", *HOSTILE],
        "launcher_env": {"A": "b c", **{f"HOSTILE_{index}": value for index, value in enumerate(HOSTILE)}},
    }
    assert preflight.shell_word_problems({**values, "launcher_type": launcher}) == []


@pytest.mark.parametrize("launcher", [name for name, launcher in REGISTRY.items() if launcher.shell_joined])
def test_shell_joined_launchers_refuse_every_hostile_value_naming_the_variable(launcher: str) -> None:
    values = {"launcher_script_args": ["--ok", *HOSTILE], "launcher_env": {"OK": "1", "NOTE": HOSTILE[0]}}
    found = preflight.shell_word_problems({**values, "launcher_type": launcher})
    assert found == [
        Problem("launcher_script_args", SHELL_SPLITS.format(launcher, ", ".join(map(repr, HOSTILE)))),
        Problem("launcher_env", SHELL_SPLITS.format(launcher, repr(f"NOTE={HOSTILE[0]}"))),
    ]


@pytest.mark.parametrize("launcher", PASSING_WORDS_AS_THEY_ARE)
def test_no_launcher_takes_a_nul_character(launcher: str) -> None:
    values = {"launcher_script_args": ["--ok", "a\0b"], "launcher_env": {"OK": "1", "NOTE": "\0"}}
    found = preflight.shell_word_problems({**values, "launcher_type": launcher})
    assert found == [Problem("launcher_script_args", f"{NUL_TEXT}: 'a\\x00b'"), Problem("launcher_env", f"{NUL_TEXT}: 'NOTE=\\x00'")]


# ------------------------------------------------------------------------------------------------ ranks_per_node_problems

ONE_WORKER = Problem(
    "launcher_nproc_per_node",
    "2 is not allowed with launcher_type=tensorflow, which runs one worker per node (it uses the node's cores itself); use 1 or auto",
)


@pytest.mark.parametrize(
    ("values", "problems"),
    [
        ({"launcher_type": "tensorflow"}, []),
        ({"launcher_type": "tensorflow", "launcher_nproc_per_node": "auto"}, []),
        ({"launcher_type": "tensorflow", "launcher_nproc_per_node": 1}, []),
        ({"launcher_type": "tensorflow", "launcher_nproc_per_node": "1"}, []),
        ({"launcher_type": "tensorflow", "launcher_nproc_per_node": 2}, [ONE_WORKER]),
        ({"launcher_type": "torchrun", "launcher_nproc_per_node": 2}, []),
        ({"launcher_nproc_per_node": 4}, []),
    ],
)
def test_a_one_worker_per_node_launcher_refuses_more(values: dict[str, object], problems: list[Problem]) -> None:
    assert preflight.ranks_per_node_problems(values) == problems


# ------------------------------------------------------------------------------------------------ device_problems

RENDER = ["/dev/dri/card0", "/dev/dri/renderD128"]
NO_RENDER_NODE = (
    "'xccl' runs every rank on an Intel GPU, and no render node (/dev/dri/renderD*) was found on the node;"
    " use gloo, ccl or mpi on CPU nodes, or load the GPU's kernel driver (i915 or xe)"
)


def test_xccl_refuses_the_nodes_without_a_render_node_naming_them_and_the_variable() -> None:
    devices = {"node1": RENDER, "node2": [], "node3": ["/dev/dri/card1"], "node4": ["/dev/dri/renderD129x"]}
    problems = preflight.device_problems("xccl", devices)
    assert problems == [Problem("launcher_backend", NO_RENDER_NODE, ("node2", "node3", "node4"))]
    assert str(problems[0]) == f"host node2, node3, node4: launcher_backend: {NO_RENDER_NODE}"


@pytest.mark.parametrize(
    ("backend", "devices"),
    [
        ("xccl", {"node1": RENDER, "node2": ["/dev/dri/renderD129"]}),
        ("xccl", {"node1": RENDER, "node2": None}),  # facts not gathered yet: not judged
        *[(backend, {"node1": [], "node2": None}) for backend in ("gloo", "ccl", "mpi")],
    ],
)
def test_nodes_that_have_what_the_backend_needs_give_no_problem(backend: str, devices: dict[str, Any]) -> None:
    assert preflight.device_problems(backend, devices) == []


# ------------------------------------------------------------------------------------------------ merge_hosts

HOSTS = ["node0", "node1", "node2"]
BAD_TYPE = Problem("launcher_type", "value of launcher_type must be one of: torchrun, mpiexec, mpirun, ipexrun, horovodrun, deepspeed, tensorflow, slurm, got: srun")
BAD_PORT = Problem("cluster_ssh_port", f"0 is not allowed; {PORT_RANGE}")


def on(hosts: Iterable[str], problem: Problem) -> list[tuple[str, Problem]]:
    return [(host, problem) for host in hosts]


def test_a_problem_of_every_host_names_no_host() -> None:
    merged = preflight.merge_hosts(on(HOSTS, BAD_TYPE), HOSTS)
    assert merged == [BAD_TYPE]
    assert str(merged[0]) == f"launcher_type: {BAD_TYPE.message}"


@pytest.mark.parametrize(
    ("reported_by", "named"),
    [(["node1"], ("node1",)), (["node0", "node2"], ("node0", "node2")), (["node2", "node0", "node2"], ("node2", "node0"))],
)
def test_a_problem_of_some_hosts_names_them_in_order_once(reported_by: list[str], named: tuple[str, ...]) -> None:
    assert preflight.merge_hosts(on(reported_by, BAD_TYPE), HOSTS) == [Problem(BAD_TYPE.variable, BAD_TYPE.message, named)]


def test_different_problems_stay_apart() -> None:
    merged = preflight.merge_hosts(on(HOSTS, BAD_TYPE) + on(["node1"], BAD_PORT), HOSTS)
    assert merged == [BAD_TYPE, Problem(BAD_PORT.variable, BAD_PORT.message, ("node1",))]


def test_a_single_host_run_names_its_host() -> None:
    merged = preflight.merge_hosts(on(["node0"], BAD_TYPE), ["node0"])
    assert [str(problem) for problem in merged] == [f"host node0: launcher_type: {BAD_TYPE.message}"]


# ---------------------------------------------------------------------------------------------------- Problem


@pytest.mark.parametrize(
    ("hosts", "text"),
    [((), "cluster_name: bad"), (("node0",), "host node0: cluster_name: bad"), (("node0", "node2"), "host node0, node2: cluster_name: bad")],
)
def test_problem_str(hosts: tuple[str, ...], text: str) -> None:
    assert str(Problem("cluster_name", "bad", hosts)) == text


# scheduler_problems: Slurm where the job needs it, on the hosts, with node names Slurm takes.

SLURM_HOSTS = ["node1", "node2"]


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"cluster_runtime": "host"},
        {"cluster_scheduler": "slurm", "cluster_runtime": "host"},
        {"cluster_scheduler": "slurm", "cluster_runtime": "host", "launcher_type": "slurm"},
        # Slurm on the nodes does not force the job onto it: torchrun over SSH still runs.
        {"cluster_scheduler": "slurm", "cluster_runtime": "host", "launcher_type": "torchrun"},
    ],
)
def test_slurm_settings_that_fit_together(values: dict[str, str]) -> None:
    assert preflight.scheduler_problems(values, SLURM_HOSTS) == []


def test_the_slurm_launcher_needs_slurm_on_the_nodes() -> None:
    problems = preflight.scheduler_problems({"cluster_runtime": "host", "launcher_type": "slurm"}, SLURM_HOSTS)
    assert_single(problems, "launcher_type", "set cluster_scheduler=slurm")


def test_slurm_runs_the_ranks_on_the_hosts() -> None:
    problems = preflight.scheduler_problems({"cluster_scheduler": "slurm"}, SLURM_HOSTS)
    assert_single(problems, "cluster_scheduler", "set cluster_runtime=host")


def test_slurm_node_names_are_plain_host_names() -> None:
    values = {"cluster_scheduler": "slurm", "cluster_runtime": "host"}
    problems = preflight.scheduler_problems(values, ["node1", "10.0.0.2", "gpu.example.org"])
    assert_single(problems, "inventory_hostname", "give an address as ansible_host", hosts=("10.0.0.2", "gpu.example.org"))


def test_every_slurm_problem_is_reported_together() -> None:
    problems = preflight.scheduler_problems({"cluster_scheduler": "slurm", "launcher_type": "slurm"}, ["10.0.0.1"])
    assert [problem.variable for problem in problems] == ["cluster_scheduler", "inventory_hostname"]


def test_a_role_s_main_entry_point_has_the_last_word_on_a_shared_option() -> None:
    """The launcher's kubernetes entry point takes three launcher types; train.yml runs main, which takes more."""
    spec = {
        "argument_specs": {
            "main": {"options": {"launcher_type": {"choices": ["torchrun", "slurm"]}}},
            "kubernetes": {"options": {"launcher_type": {"choices": ["torchrun"]}, "launcher_kubernetes_nodes": {}}},
        }
    }
    options = preflight.merge_options([spec])
    assert options["launcher_type"]["choices"] == ["torchrun", "slurm"]
    assert "launcher_kubernetes_nodes" in options


# One value for the whole cluster: the contract, the workload and the job; only a node's own place and ranks vary.
DIFFERS = "is one value for the whole cluster, but the hosts differ ({}); set it once (for group all, or with -e)"


def agree(values: dict[str, dict[str, Any]]) -> list[Problem]:
    return preflight.disagreement_problems(OPTIONS, values)


def test_a_cluster_wide_input_one_host_sets_otherwise_is_refused_naming_hosts_and_values() -> None:
    values = {"node1": {}, "node2": {"cluster_ssh_port": 2222}, "node3": {}}
    assert agree(values) == [Problem("cluster_ssh_port", DIFFERS.format("node1, node3: 12345 (the default); node2: 2222"))]


def test_values_that_differ_only_in_how_they_were_written_agree() -> None:
    values = {"node1": {"cluster_ssh_port": "2222"}, "node2": {"cluster_ssh_port": 2222}, "node3": {"cluster_ssh_port": 2222}}
    assert agree(values) == []


def test_setting_the_default_on_one_host_is_no_disagreement() -> None:
    assert agree({"node1": {"cluster_runtime": "container"}, "node2": {}}) == []


@pytest.mark.parametrize("variable", ["cluster_root", "launcher_mlflow_tracking_uri"])
def test_a_computed_default_is_shown_as_the_default(variable: str) -> None:
    (problem,) = agree({"node1": {variable: "/srv/multinode"}, "node2": {}})
    assert problem == Problem(variable, DIFFERS.format("node1: /srv/multinode; node2: the role's default"))


@pytest.mark.parametrize("variable", ["cluster_runtime", "launcher_type", "launcher_script_args", "workload_src", "cluster_uid"])
def test_every_cluster_wide_kind_is_held_to_one_value(variable: str) -> None:
    first, second = {"cluster_runtime": ("host", "container"), "launcher_type": ("mpiexec", "torchrun")}.get(
        variable, (["--epochs", "1"], ["--epochs", "2"]) if variable == "launcher_script_args" else ("/a", "/b") if variable == "workload_src" else (2000, 3000)
    )
    (problem,) = agree({"node1": {variable: first}, "node2": {variable: second}})
    assert problem.variable == variable and "node1: " in problem.message and "node2: " in problem.message


@pytest.mark.parametrize("variable", sorted(preflight.PER_HOST))
def test_a_nodes_own_inputs_may_differ(variable: str) -> None:
    assert agree({"node1": {variable: "a"}, "node2": {variable: "b"}}) == []


def test_the_per_host_inputs_are_real_options() -> None:
    assert preflight.PER_HOST <= set(OPTIONS)


def test_provisioning_inputs_may_differ_per_host() -> None:
    assert agree({"node1": {"container_runtime_http_proxy": "http://a:3128"}, "node2": {}}) == []


@pytest.mark.parametrize("launcher", ["ipexrun", "torchrun"])
def test_a_refused_secret_value_is_shown_masked(launcher: str) -> None:
    hostile = "tok en\0" if launcher == "torchrun" else "tok en"
    values = {"launcher_env": {"HF_TOKEN": hostile, "TEAM": hostile}, "launcher_secret_env_names": ["TEAM"]}
    found = preflight.shell_word_problems({**values, "launcher_type": launcher})
    assert len(found) == 1 and found[0].variable == "launcher_env"
    assert "HF_TOKEN=***" in str(found[0]) and "TEAM=***" in str(found[0])
    assert "tok en" not in str(found[0])


COLLECTION_TARBALL = "/cache/images/multinode_training_latest.tar"


def image(values: dict[str, Any], tarball: str, provisioning: bool = True) -> list[Problem]:
    return preflight.image_problems(values, tarball, COLLECTION_TARBALL, provisioning)


def test_a_container_run_without_its_image_tarball_is_refused_naming_where_make_images_writes_it(tmp_path: Path) -> None:
    (problem,) = image({}, str(tmp_path / "missing.tar"))

    assert problem.variable == "container_runtime_image_tarball"
    assert problem.message.startswith(f"{tmp_path / 'missing.tar'} is not a file on the controller; ")
    assert f"`make images` writes the collection's own training image to {COLLECTION_TARBALL}" in problem.message
    assert "container_runtime_image_source: pull" in problem.message


def test_an_image_of_ones_own_without_a_tarball_says_which_image() -> None:
    (problem,) = image({"cluster_image": "team/train:1"}, "")

    assert problem.message.startswith("is not set (cluster_image team/train:1); the nodes load team/train:1 from")


@pytest.mark.parametrize(
    ("values", "provisioning"),
    [
        ({}, False),  # launch.yml: the nodes have their image
        ({"cluster_runtime": "host"}, True),
        ({"container_runtime_image_source": "pull"}, True),
        ({"container_runtime_image_source": "build"}, True),
    ],
)
def test_no_tarball_is_needed_outside_a_provisioning_run_that_loads_one(values: dict[str, Any], provisioning: bool) -> None:
    assert image(values, "", provisioning) == []


def test_a_tarball_that_is_a_file_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "image.tar").write_bytes(b"")
    assert image({}, "image.tar") == []


def test_a_tarball_is_held_to_its_expected_sha256_when_one_is_given(tmp_path: Path) -> None:
    tarball = tmp_path / "image.tar"
    tarball.write_bytes(b"layers")
    digest = hashlib.sha256(b"layers").hexdigest()
    assert image({"container_runtime_image_sha256": digest}, str(tarball)) == []
    assert image({"container_runtime_image_sha256": digest.upper()}, str(tarball)) == []
    (problem,) = image({"container_runtime_image_sha256": "0" * 64}, str(tarball))
    assert problem.variable == "container_runtime_image_sha256"
    assert problem.message == f"{'0' * 64} is not the sha256 of {tarball} ({digest})"
    assert image({}, str(tmp_path / "image.tar")) == []


BUILD = {"container_runtime_image_source": "build"}


@pytest.mark.parametrize(
    ("context", "variable", "message"),
    [
        ("", "container_runtime_build_context", "is not set; the nodes build the image from a directory on the controller"),
        ("missing", "container_runtime_build_context", "{tmp}/missing is not a directory on the controller"),
        ("context", "container_runtime_build_dockerfile", "'Dockerfile' is not a file in {tmp}/context (container_runtime_build_context)"),
    ],
)
def test_an_image_built_on_the_nodes_needs_its_context_with_the_dockerfile(
    tmp_path: Path, context: str, variable: str, message: str
) -> None:
    (tmp_path / "context").mkdir()
    values = {**BUILD, "container_runtime_build_context": str(tmp_path / context) if context else ""}
    assert preflight.build_problems(values, provisioning=True) == [
        preflight.Problem(variable, message.format(tmp=tmp_path))
    ]


def test_a_build_context_with_its_dockerfile_passes_and_no_other_run_looks(tmp_path: Path) -> None:
    (tmp_path / "Containerfile").write_text("FROM scratch\n")
    given = {**BUILD, "container_runtime_build_context": str(tmp_path), "container_runtime_build_dockerfile": "Containerfile"}
    assert preflight.build_problems(given, provisioning=True) == []
    assert preflight.build_problems({**BUILD}, provisioning=False) == []
    assert preflight.build_problems({**BUILD, "cluster_runtime": "host"}, provisioning=True) == []
    assert preflight.build_problems({}, provisioning=True) == []


def wheelhouses(tmp_path: Path, values: dict[str, Any], provisioning: bool = True) -> list[str]:
    return [problem.variable for problem in preflight.wheelhouse_problems(
        {"cluster_runtime": "host", **values}, str(tmp_path / "wheels"), str(tmp_path / "oneapi"), provisioning
    )]


def test_a_host_mode_run_needs_wheels_in_the_controllers_wheelhouse(tmp_path: Path) -> None:
    assert wheelhouses(tmp_path, {}) == ["host_runtime_wheelhouse"]
    (tmp_path / "wheels").mkdir()
    assert wheelhouses(tmp_path, {}) == ["host_runtime_wheelhouse"], "a directory without wheels is refused too"
    (tmp_path / "wheels" / "torch-2.13.0-cp311-none-any.whl").write_bytes(b"")
    assert wheelhouses(tmp_path, {}) == []
    (problem,) = preflight.wheelhouse_problems({"cluster_runtime": "host"}, str(tmp_path / "none"), "", True)
    assert problem.message.startswith(f"no wheels in {tmp_path / 'none'} on the controller; `make wheels` fills it")


def test_oneapi_from_pip_needs_its_wheelhouse_and_no_other_run_looks(tmp_path: Path) -> None:
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "torch-2.13.0-cp311-none-any.whl").write_bytes(b"")
    assert wheelhouses(tmp_path, {"oneapi_install_method": "pip"}) == ["oneapi_pip_wheelhouse"]
    (tmp_path / "oneapi").mkdir()
    assert wheelhouses(tmp_path, {"oneapi_install_method": "pip"}) == []
    assert wheelhouses(tmp_path / "elsewhere", {"oneapi_install_method": "pip"}, provisioning=False) == []
    assert wheelhouses(tmp_path / "elsewhere", {"cluster_runtime": "container"}) == []


def test_a_host_mode_provisioning_run_returns_its_wheels_and_no_other_run(tmp_path: Path) -> None:
    (tmp_path / "wheels").mkdir()
    for name in ("torch-2.13.0-cp311-cp311-linux_x86_64.whl", "numpy-2.3.5-cp311-cp311-linux_x86_64.whl", "notes.txt"):
        (tmp_path / "wheels" / name).write_bytes(b"")
    host = {"cluster_runtime": "host"}
    assert preflight.host_wheels(host, str(tmp_path / "wheels"), provisioning=True) == [
        "numpy-2.3.5-cp311-cp311-linux_x86_64.whl",
        "torch-2.13.0-cp311-cp311-linux_x86_64.whl",
    ]
    assert preflight.host_wheels(host, str(tmp_path / "none"), provisioning=True) == []
    assert preflight.host_wheels(host, str(tmp_path / "wheels"), provisioning=False) is None
    assert preflight.host_wheels({"cluster_runtime": "container"}, str(tmp_path / "wheels"), provisioning=True) is None
    assert preflight.host_wheels({}, str(tmp_path / "wheels"), provisioning=True) is None


def oneapi(values: dict[str, Any], provisioning: bool = True) -> list[str]:
    defaults = preflight.spec_defaults(OPTIONS)
    return [str(problem) for problem in preflight.oneapi_problems({**defaults, "cluster_runtime": "host", **values}, provisioning)]


def test_the_oneapi_defaults_pass_for_apt_and_pip() -> None:
    assert oneapi({}) == []
    assert oneapi({"oneapi_install_method": "pip"}) == []


def test_oneapi_apt_needs_its_repository_settings() -> None:
    assert oneapi({"oneapi_apt_url": "", "oneapi_apt_packages": []}) == [
        "oneapi_apt_url: is empty; oneapi_install_method apt needs it",
        "oneapi_apt_packages: is empty; oneapi_install_method apt needs it",
    ]
    assert oneapi({"oneapi_apt_url": "file:///srv/mirror"}) == [
        "oneapi_apt_pin_origin: is empty and oneapi_apt_url names no host to pin to; set it, or oneapi_apt_pin: false"
    ]
    assert oneapi({"oneapi_apt_url": "file:///srv/mirror", "oneapi_apt_pin": False}) == []
    assert oneapi({"oneapi_apt_url": "file:///srv/mirror", "oneapi_apt_pin_origin": "mirror"}) == []


def test_oneapi_pip_needs_packages_a_wheelhouse_and_an_absolute_prefix() -> None:
    assert oneapi({"oneapi_install_method": "pip", "oneapi_pip_packages": [], "oneapi_pip_prefix": "opt/oneapi"}) == [
        "oneapi_pip_packages: is empty; oneapi_install_method pip needs it",
        "oneapi_pip_prefix: 'opt/oneapi' is not an absolute path (where every node gets the runtime)",
    ]
    assert oneapi({"oneapi_install_method": "pip", "oneapi_pip_wheelhouse": ""}) == [
        "oneapi_pip_wheelhouse: is empty; oneapi_install_method pip needs it"
    ]


def test_oneapi_is_judged_only_in_a_host_mode_provisioning_run() -> None:
    assert oneapi({"oneapi_apt_url": ""}, provisioning=False) == []
    assert oneapi({"oneapi_apt_url": "", "cluster_runtime": "container"}) == []
    assert oneapi({"oneapi_install_method": "none", "oneapi_apt_url": ""}) == []


@pytest.mark.parametrize("beside", [True, "yes", "true"])
def test_a_job_slurm_places_cannot_run_beside_others(beside: Any) -> None:
    values = {"launcher_type": "slurm", "cluster_scheduler": "slurm", "cluster_runtime": "host", "launcher_beside": beside}
    assert [str(problem) for problem in preflight.scheduler_problems(values, ["node1"])] == [
        "launcher_beside: with launcher_type=slurm: Slurm places jobs itself; submit it without launcher_beside"
    ]
    assert preflight.scheduler_problems({**values, "launcher_beside": False}, ["node1"]) == []
    assert preflight.scheduler_problems({**values, "launcher_type": "torchrun", "cluster_scheduler": "none"}, ["node1"]) == []
