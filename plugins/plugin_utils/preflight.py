# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's checks: every input of a run, judged on the controller before any node changes.

Pure functions over plain data (the role argument specs, each host's variables, the controller's file system),
used by the action plugin multinode.training.preflight. Each returns Problems; nothing stops at the first one, so
a user sees every mistake of a run at once.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.multinode.training.plugins.module_utils import kubernetes_job, kubernetes_run, launch, slurm
from ansible_collections.multinode.training.plugins.module_utils.job_id import job_id
from ansible_collections.multinode.training.plugins.module_utils.launch_script import (
    ADDRESS_TEXT,
    NUL_TEXT,
    holding_nul,
    is_address,
)
from ansible_collections.multinode.training.plugins.module_utils.secret_env import MASK, secret_entries
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import (
    ENV_NAME,
    NODE_NAME,
    PLACEHOLDERS,
    expand_placeholders,
)
from ansible_collections.multinode.training.plugins.module_utils.requirements_layer import LayerError
from ansible_collections.multinode.training.plugins.plugin_utils import requirement_hashes
from ansible_collections.multinode.training.plugins.plugin_utils.layer_build import file_options

# The roles a training run uses (provision.yml + launch.yml): their inputs are all checked up front, so a
# mistake in a launch variable cannot surface after the nodes were provisioned.
RUN_ROLES = (
    "cluster",
    "oneapi",
    "host_runtime",
    "container_runtime",
    "gpu_drivers",
    "ssh_mesh",
    "workload",
    "workers",
    "slurm",
    "launcher",
)

# Whole-string patterns (used with fullmatch, so a trailing newline does not slip through).
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
SAFE_PATH_CHARS = re.compile(r"[A-Za-z0-9_./+-]+")
MAX_ID = 2**32 - 2  # the largest uid/gid Linux accepts (2**32 - 1 is "no id")


@dataclass(frozen=True)
class Problem:
    """One bad input: the variable (or inventory item), what is wrong and what is allowed, and where."""

    variable: str
    message: str
    hosts: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = f"host {', '.join(self.hosts)}: " if self.hosts else ""
        return f"{where}{self.variable}: {self.message}"


Rule = Callable[[Any], "str | None"]


def _int_in(low: int, high: int | None, allowed: str) -> Rule:
    def rule(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
            return f"{value!r} is not allowed; use {allowed}"
        return None

    return rule


def _count_or_auto(value: Any) -> str | None:
    if value == "auto":
        return None
    try:
        count = int(str(value))
    except ValueError:
        count = 0
    return None if count >= 1 else f"{value!r} is not allowed; use a whole number >= 1 or 'auto'"


def _matching(pattern: re.Pattern[str], allowed: str, empty_ok: bool = False) -> Rule:
    def rule(value: Any) -> str | None:
        text = str(value)
        if (empty_ok and text == "") or pattern.fullmatch(text):
            return None
        return f"{text!r} is not allowed; use {allowed}"

    return rule


def _address(value: Any) -> str | None:
    """An address the nodes are reached at (empty: found by the cluster role)."""
    text = str(value)
    return None if text == "" or is_address(text) else f"{text!r} is not allowed; use {ADDRESS_TEXT}"


def _safe_path(absolute: bool) -> Rule:
    kind = "an absolute path" if absolute else "a path relative to the code directory"
    allowed = f"{kind} of letters, digits and _ . / + - without '..'"

    def rule(value: Any) -> str | None:
        text = str(value)
        bad = not SAFE_PATH_CHARS.fullmatch(text) or ".." in text.split("/") or text.startswith("/") != absolute
        return f"{text!r} is not allowed; use {allowed}" if bad else None

    return rule


def _environment(value: Any) -> str | None:
    if not isinstance(value, Mapping):
        return None  # the argument spec reports the type
    bad_names = sorted(str(name) for name in value if not ENV_NAME.fullmatch(str(name)))
    nested = sorted(str(name) for name, item in value.items() if isinstance(item, (Mapping, list)))
    messages = []
    if bad_names:
        messages.append(f"invalid variable names {bad_names}; a name is letters, digits and _, not starting with a digit")
    if nested:
        messages.append(f"values of {nested} are lists or mappings; use a string or number")
    return "; ".join(messages) or None


def _unless_empty(rule: Rule) -> Rule:
    """``rule`` for an input whose empty value means none (or, for a namespace, the default one)."""

    def judged(value: Any) -> str | None:
        return None if value in ("", None) else rule(value)

    return judged


def _no_longer_read(hint: str) -> Rule:
    """A variable the roles no longer read: any value set for it would be ignored silently."""

    def rule(value: Any) -> str:
        return f"is no longer read; {hint}"

    return rule


def _set_by_the_playbook(source: str) -> Rule:
    def rule(value: Any) -> str:
        return f"is set from {source} by playbooks/provision.yml; set {source} instead"

    return rule


def _aliases(names: str, replacement: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), replacement)


# Variables the roles no longer read, and the input that replaced each: one name per concept (the cluster
# contract derives the rest, plugins/module_utils/cluster.py).
RENAMED: dict[str, str] = {
    "cluster_slots": "launcher_nproc_per_node",
    **_aliases("training_runtime launcher_runtime workers_runtime", "cluster_runtime"),
    **_aliases("launcher_image workers_image", "cluster_image"),
    **_aliases("launcher_container_name launcher_worker_container_name workers_container_name", "cluster_name"),
    **_aliases("ssh_mesh_user host_runtime_user", "cluster_user"),
    **_aliases("launcher_uid ssh_mesh_uid host_runtime_uid workload_uid", "cluster_uid"),
    **_aliases("launcher_gid ssh_mesh_gid host_runtime_gid workload_gid", "cluster_gid"),
    **_aliases("launcher_user workers_user", "cluster_uid and cluster_gid"),
    **_aliases("launcher_ssh_port workers_ssh_port ssh_mesh_port", "cluster_ssh_port"),
    **_aliases("launcher_host workers_launcher_host ssh_mesh_launcher_host", "cluster_launcher_group"),
    **_aliases("launcher_hosts workers_hosts ssh_mesh_hosts", "cluster_launcher_group and cluster_workers_group"),
    **_aliases(
        "launcher_workdir workers_workdir workload_dir launcher_ssh_client_dir ssh_mesh_client_dir ssh_mesh_dir "
        "workers_ssh_dir launcher_worker_pidfile workers_run_dir launcher_env_script host_runtime_env_script "
        "host_runtime_home host_runtime_root",
        "cluster_root",
    ),
}
# Variables the roles no longer read that nothing replaces, and why.
REMOVED: dict[str, str] = _aliases(
    "launcher_devices workers_devices launcher_group_add workers_group_add",
    "every /dev/dri device of the node and its render and video groups are passed in (the fact cluster_node)",
)
# Options of a role that playbooks/provision.yml sets from a cluster input (a role parameter, which beats the
# inventory): the role is also used on its own, where the option is its input.
WIRED: dict[str, str] = {"container_runtime_image": "cluster_image"}
# Facts the cluster role records (the cluster contract): a value the inventory gives them is overridden, not an input.
RECORDED = ("cluster", "cluster_node")

PORT = _int_in(1, 65535, "a port from 1 to 65535")
POSITIVE = _int_in(1, None, "a whole number of seconds > 0")
ID = _int_in(0, MAX_ID, f"a numeric id from 0 to {MAX_ID}")
NAME_TEXT = "1-63 letters, digits and _ . - starting with a letter or digit"
NAME = _matching(SAFE_NAME, NAME_TEXT)
HOST_NAME_TEXT = "letters, digits and _ . : @ + - starting with a letter or digit"
OPTIONAL_NAME = _matching(SAFE_NAME, f"empty, or {NAME_TEXT}", empty_ok=True)

# Rules by variable name, beyond what an argument spec can say (ranges, character sets).
NAMED_RULES: dict[str, Rule] = {
    "cluster_name": NAME,
    "cluster_user": _matching(USER_NAME, "a Linux user name: lower-case letters, digits, _ and -, at most 32"),
    "cluster_address": _address,
    "cluster_root": _safe_path(absolute=True),
    "launcher_script": _safe_path(absolute=False),
    "launcher_job_id": OPTIONAL_NAME,
    "launcher_job_name": OPTIONAL_NAME,
    "launcher_nproc_per_node": _count_or_auto,
    "launcher_keep_jobs": _int_in(0, None, "0 (keep all) or how many of the newest to keep"),
    "launcher_keep_runs": _int_in(0, None, "0 (keep all) or how many of the newest to keep"),
    "launcher_omp_num_threads": _count_or_auto,
    "launcher_max_restarts": _int_in(0, None, "0 (never restart) or how many restarts one job may use"),
    "launcher_stall_timeout": _int_in(0, None, "0 (no stall watchdog) or seconds without progress"),
    "launcher_min_nodes": _int_in(1, None, "at least 1 node"),
    "launcher_checkpoint_replicas": _int_in(0, None, "0 (no copies) or how many other nodes get each checkpoint"),
    "launcher_env": _environment,
    "oneapi_verify_env": _environment,
    # The Kubernetes entry point's inputs, by the rules of module_utils/kubernetes_job.py (the renderers trust them).
    "launcher_kubernetes_image": kubernetes_job.image_problem,
    "launcher_kubernetes_nodes": _int_in(1, None, "a whole number of pods >= 1"),
    "launcher_kubernetes_namespace": _unless_empty(kubernetes_job.namespace_problem),
    "launcher_kubernetes_data_claim": _unless_empty(kubernetes_job.object_name_problem),
    "launcher_kubernetes_output_claim": _unless_empty(kubernetes_job.object_name_problem),
    "launcher_kubernetes_proxy_config_map": _unless_empty(kubernetes_job.object_name_problem),
    "launcher_kubernetes_data_mount": kubernetes_job.mount_problem,
    "launcher_kubernetes_output_mount": kubernetes_job.mount_problem,
    "launcher_kubernetes_resources": kubernetes_job.resources_problem,
    **{old: _no_longer_read(f"set {new} instead (per host, per group or -e)") for old, new in RENAMED.items()},
    **{old: _no_longer_read(why) for old, why in REMOVED.items()},
    **{name: _set_by_the_playbook(source) for name, source in WIRED.items()},
}
# Rules by name ending: every port, timeout and numeric id of every role, present and future.
SUFFIX_RULES: dict[str, Rule] = {"_port": PORT, "_timeout": POSITIVE, "_uid": ID, "_gid": ID}


def rule_for(variable: str) -> Rule | None:
    if variable in NAMED_RULES:
        return NAMED_RULES[variable]
    return next((rule for suffix, rule in SUFFIX_RULES.items() if variable.endswith(suffix)), None)


def merge_options(specs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The options of several roles' argument specs (every entry point) as one name -> spec mapping.

    A role's ``main`` entry point has the last word on an option it shares with another entry point (the
    launcher's ``kubernetes`` takes fewer launcher types than the playbooks that run ``main``).
    """
    options: dict[str, dict[str, Any]] = {}
    for document in specs:
        entry_points = document.get("argument_specs") or {}
        for name in sorted(entry_points, key=lambda entry: entry == "main"):
            options.update(entry_points[name].get("options") or {})
    return options


def _validated(option: Mapping[str, Any], name: str, value: Any) -> tuple[Any, list[str]]:
    """``value`` as the roles get it (the argument spec's type applied) and the spec's errors. A path stays as
    written: the nodes get it so, not expanded on the controller as the spec does."""
    result = ArgumentSpecValidator({name: dict(option)}).validate({name: value})
    if result.error_messages or option.get("type") == "path":
        return value, list(result.error_messages)
    return result.validated_parameters[name], []


def value_problems(options: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any]) -> list[Problem]:
    """Type and choice errors from the argument specs, then the range and character-set rules, of the values a
    host sets. Only what is set is judged: the roles' own defaults are valid (a unit test holds them to it)."""
    problems = []
    for name in sorted(values):
        value = values[name]
        if name in options:
            value, errors = _validated(options[name], name, value)
            if errors:
                problems += [Problem(name, message) for message in errors]
                continue
        rule = rule_for(name)
        message = rule(value) if rule else None
        if message:
            problems.append(Problem(name, message))
    return problems


# Inputs a host may set apart from the others: where it is on the cluster network, its own ranks and their
# environment, and what its own state is recorded and watched by. Every other input of the cluster contract, the
# workload and the job is one value for the whole cluster (the contract is one fact, the same on every node).
PER_HOST = frozenset(
    {
        "cluster_address",
        "cluster_iface",
        "cluster_node_record",
        "cluster_watched_trees",
        "cluster_watched_containers",
        "cluster_watched_images",
        "cluster_watched_pid_files",
        "launcher_nproc_per_node",
        "launcher_omp_num_threads",
        "launcher_env",
    }
)
CLUSTER_WIDE_PREFIXES = ("cluster_", "workload_", "launcher_")


def _cluster_wide(name: str) -> bool:
    return name.startswith(CLUSTER_WIDE_PREFIXES) and name not in PER_HOST


def _shown(option: Mapping[str, Any], name: str, value: Any) -> str:
    """A value as the roles get it (the argument spec's type applied), written one way: '2222' and 2222 agree."""
    if option:
        value = _validated(option, name, value)[0]
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (list, dict)) else str(value)


def _plain_default(option: Mapping[str, Any]) -> Any:
    """The spec's default when it is a plain value; None when there is none or it is computed (a template)."""
    default = option.get("default")
    return None if default is None or "{{" in json.dumps(default, default=str) else default


def _default_shown(option: Mapping[str, Any], name: str) -> str | None:
    """What a host that does not set the input gets, when the spec's default is a plain value (not computed)."""
    default = _plain_default(option)
    return None if default is None else _shown(option, name, default)


def disagreement_problems(options: Mapping[str, Mapping[str, Any]], values: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    """A cluster-wide input the hosts set to different values (a host or group variable on some of them): the run
    would take one host's value for all, or build one node apart from the others. ``values`` are each host's own
    (a host that does not set the input gets the role's default)."""
    problems = []
    for name in sorted({name for own in values.values() for name in own if _cluster_wide(name)}):
        option = options.get(name, {})
        default = _default_shown(option, name)
        hosts_by_value: dict[str, list[str]] = {}
        for host, own in values.items():
            shown = _shown(option, name, own[name]) if name in own else default
            hosts_by_value.setdefault("the role's default" if shown is None else shown, []).append(host)
        if len(hosts_by_value) > 1:
            where = "; ".join(
                f"{', '.join(hosts)}: {shown}{' (the default)' if shown == default else ''}" for shown, hosts in hosts_by_value.items()
            )
            message = f"is one value for the whole cluster, but the hosts differ ({where}); set it once (for group all, or with -e)"
            problems.append(Problem(name, message))
    return problems


@dataclass(frozen=True)
class HostEntry:
    """What the inventory says about one host, before any fact is gathered."""

    name: str
    connect_address: str
    connect_port: int
    mesh_address: str
    mesh_port: int


def inventory_problems(launchers: list[str], workers: list[str], hosts: list[HostEntry], groups: tuple[str, str]) -> list[Problem]:
    """Exactly one launcher, not also a worker; host names usable in paths, addresses that are addresses; no two hosts
    on one endpoint."""
    launcher_group, workers_group = groups
    problems = []
    if len(launchers) != 1:
        problems.append(
            Problem(f"group {launcher_group}", f"must hold exactly one host, it holds {len(launchers)}: {', '.join(launchers) or 'none'}")
        )
    both = sorted(set(launchers) & set(workers))
    if both:
        problems.append(
            Problem(f"group {workers_group}", f"{', '.join(both)} also in group {launcher_group}; the launcher runs a rank already, list it once")
        )
    for host in hosts:
        named = bool(NODE_NAME.fullmatch(host.name)) and host.name[0].isalnum()
        if not named:
            problems.append(Problem("inventory name", f"not allowed (it names files and SSH entries); use {HOST_NAME_TEXT}", (host.name,)))
        problems += _connect_address_problems(host, named)
    problems += _duplicates("inventory name", {host.name: host.name.lower() for host in hosts}, "differ only in case")
    same_machine = _duplicates(
        "ansible_host/ansible_port",
        {host.name: f"{host.connect_address}:{host.connect_port}" for host in hosts},
        "are the same machine: {key}",
    )
    same_sshd = _duplicates(
        "cluster_address/cluster_ssh_port",
        {host.name: f"{host.mesh_address}:{host.mesh_port}" for host in hosts},
        "would run their workers' sshd on the same endpoint {key}",
    )
    reported = {problem.hosts for problem in same_machine}
    return problems + same_machine + [problem for problem in same_sshd if problem.hosts not in reported]


def left_out_problems(group_hosts: Mapping[str, list[str]], play_hosts: list[str]) -> list[Problem]:
    """Every node of the launcher and workers groups is in the run: a ``--limit`` that leaves one out went on to change
    the others and then failed on what the missing node should have told them (its facts, its key), with no summary."""
    reached = set(play_hosts)
    left_out = [f"{host} (group {group})" for group, hosts in group_hosts.items() for host in hosts if host not in reached]
    if not left_out:
        return []
    message = (
        f"leaves out {', '.join(left_out)}: a run takes every node of its inventory's groups; to run on fewer nodes,"
        " give an inventory of those nodes"
    )
    return [Problem("--limit", message)]


def _connect_address_problems(host: HostEntry, named: bool) -> list[Problem]:
    """The address SSH reaches ``host`` at (ansible_host, else the inventory name), which the launch script's SSH may
    also use: never an ssh option (``-oProxyCommand=...``), a ``user@host`` or shell text. A bad inventory name used as
    the address is reported once, as the name."""
    if is_address(host.connect_address):
        return []
    if host.connect_address != host.name:
        return [Problem("ansible_host", f"{host.connect_address!r} is not allowed; use {ADDRESS_TEXT}", (host.name,))]
    if not named:
        return []
    message = f"{host.name!r} is the address when ansible_host is not set, and it is not one; set ansible_host to"
    return [Problem("ansible_host", f"{message} {ADDRESS_TEXT}", (host.name,))]


def _duplicates(variable: str, keys: Mapping[str, str], message: str) -> list[Problem]:
    by_key: dict[str, list[str]] = {}
    for host, key in keys.items():
        by_key.setdefault(key, []).append(host)
    return [
        Problem(variable, message.format(key=key) + "; give each node its own", tuple(names))
        for key, names in by_key.items()
        if len(names) > 1
    ]


def spec_defaults(options: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The argument specs' plain defaults (a computed default, a template, is left out): a host's values laid over
    them are what the roles will be given. The checks below read a run's settings so, and restate no default."""
    defaults = {name: _plain_default(option) for name, option in options.items()}
    return {name: value for name, value in defaults.items() if value is not None}


def _launcher(values: Mapping[str, Any]) -> launch.Launcher | None:
    """The registry's entry of the launcher ``values`` name (None for an unknown one: the spec's choices say so)."""
    return launch.REGISTRY.get(str(values.get("launcher_type")))


def runtime_problems(values: Mapping[str, Any]) -> list[Problem]:
    """The launcher can run where the run puts it: on the hosts only a launcher whose registry entry says so (the
    others are installed in the training image). ``values`` are the launcher host's own, over the defaults."""
    launcher = _launcher(values)
    if values.get("cluster_runtime") != "host" or launcher is None or "host" in launcher.runtimes:
        return []
    allowed = " or ".join(name for name, entry in launch.REGISTRY.items() if "host" in entry.runtimes)
    message = f"{launcher.name!r} needs the training image (its launcher is installed there); on the hosts (cluster_runtime=host) use"
    return [Problem("launcher_type", f"{message} {allowed}")]


def ranks_per_node_problems(values: Mapping[str, Any]) -> list[Problem]:
    """A launcher that runs one worker per node (its registry entry's one_rank_per_node) asked for more on a host.
    ``values`` are that host's own, over the defaults."""
    launcher = _launcher(values)
    ranks = values.get("launcher_nproc_per_node", "auto")
    if launcher is None or not launcher.one_rank_per_node or str(ranks).strip() in ("auto", "1"):
        return []
    message = f"{ranks!r} is not allowed with launcher_type={launcher.name}, which runs one worker per node (it uses the node's cores itself); use 1 or auto"
    return [Problem("launcher_nproc_per_node", message)]


def kubernetes_problems(values: Mapping[str, Any]) -> list[Problem]:
    """What the Kubeflow operators would refuse in a job on Kubernetes (the launcher role's kubernetes entry point,
    scope job) that no one variable shows alone: a launcher or kind that cannot run it, rank variables the operator
    or a claim sets, both claims on one path, a placeholder without its claim, the job's resource and pod names.
    Each variable's own rule (value_problems) judges it alone. ``values`` are the job's own, over the defaults."""
    launcher = str(values.get("launcher_type"))
    claims = {name: str(values.get(f"launcher_kubernetes_{name}_claim") or "") for name in ("data", "output")}
    claimed_env = [env for env, claim in (("DATA_DIR", "data"), ("OUTPUT_DIR", "output")) if claims[claim]]
    found = {
        # A launcher the argument spec does not know is the spec's to report.
        "launcher_type": kubernetes_job.launcher_problem(launcher) if launcher in launch.REGISTRY else None,
        "launcher_kubernetes_kind": kubernetes_job.kind_problem(str(values.get("launcher_kubernetes_kind") or ""), launcher),
        "launcher_env": kubernetes_job.env_problem([str(name) for name in _mapped(values.get("launcher_env"))], launcher, claimed_env),
        "launcher_kubernetes_output_mount": _shared_mount_problem(values, claims),
        "launcher_script_args": kubernetes_run.placeholder_problem(_listed(values.get("launcher_script_args")), claims["data"], claims["output"]),
    }
    return [Problem(name, message) for name, message in found.items() if message] + _job_name_problems(values)


def _shared_mount_problem(values: Mapping[str, Any], claims: Mapping[str, str]) -> str | None:
    if not (claims["data"] and claims["output"]):
        return None
    mounts = (str(values.get(f"launcher_kubernetes_{name}_mount")) for name in ("data", "output"))
    return kubernetes_job.shared_mount_problem(*mounts)


# The job id's time (module_utils/job_id.py) is only known when the job starts, after the preflight; its digits have
# one width, so this stand-in gives the custom resource's name in its final length and characters.
_STAND_IN_START = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
_STAND_IN_TEXT = f"{_STAND_IN_START:%Y%m%d-%H%M%S}"


def _job_name_problems(values: Mapping[str, Any]) -> list[Problem]:
    """The custom resource's name (kubernetes_run.resource_name of the job id) and its pods' host names are RFC 1035
    labels; the variable named is the one that names the job (launcher_job_id, else launcher_job_name)."""
    given, named = (str(values.get(name) or "") for name in ("launcher_job_id", "launcher_job_name"))
    if OPTIONAL_NAME(given) or OPTIONAL_NAME(named):
        return []  # their own rule says what is wrong
    name = kubernetes_run.resource_name(job_id(given, named, str(values.get("launcher_type")), _STAND_IN_START))
    problem = kubernetes_job.job_name_problem(name) or _host_name_problem(values, name)
    if problem is None:
        return []
    variable = "launcher_job_id" if given else "launcher_job_name"
    return [Problem(variable, f"names the job's custom resource: {problem.replace(_STAND_IN_TEXT, '<date>-<time>')}")]


def _host_name_problem(values: Mapping[str, Any], name: str) -> str | None:
    """The longest pod host name of the job's kind and nodes; a bad launcher, kind or count is reported on its own."""
    launcher = str(values.get("launcher_type"))
    kind = str(values.get("launcher_kubernetes_kind") or "")
    nodes = str(values.get("launcher_kubernetes_nodes"))
    fits = launcher in kubernetes_job.LAUNCHERS and kind in ("", *kubernetes_job.KINDS) and not kubernetes_job.kind_problem(kind, launcher)
    if not fits or not re.fullmatch(r"[0-9]+", nodes) or int(nodes) < 1:
        return None
    return kubernetes_job.host_name_problem(name, kubernetes_run.kind_for(launcher, kind), int(nodes))


def shell_word_problems(values: Mapping[str, Any]) -> list[Problem]:
    """A script, argument or launcher_env value the launcher cannot carry verbatim, which the launch script would
    refuse only after provisioning: for a launcher that hands the program's words to a shell joined by spaces (its
    registry entry's shell_joined), any a shell would split or expand (a space, a quote, a newline, ``$``); for every
    other launcher, which carries any text (the launch script quotes every word), one holding a NUL character, which
    no argument or environment can hold. A placeholder stands for a path of the job, which the cluster's names keep
    shell-safe. ``values`` are the launcher host's own, over the defaults."""
    launcher = _launcher(values)
    if launcher is None:
        return []
    stand_ins = dict.fromkeys(PLACEHOLDERS, "path")
    words = {
        "launcher_script": [str(values.get("launcher_script") or "")],
        "launcher_script_args": expand_placeholders([str(word) for word in _listed(values.get("launcher_script_args"))], stand_ins),
        "launcher_env": [f"{name}={value}" for name, value in _mapped(values.get("launcher_env")).items()],
    }
    if launcher.shell_joined:
        message = f"launcher_type={launcher.name} joins the program's words with spaces and runs them through a shell, which would split or expand"
        refused = launch.shell_unsafe
    else:
        message, refused = NUL_TEXT, holding_nul
    secret = secret_entries(_mapped(values.get("launcher_env")), _listed(values.get("launcher_secret_env_names")))
    return [
        Problem(name, f"{message}: {', '.join(repr(_masked_word(word, secret)) for word in unsafe)}")
        for name, given in words.items()
        if (unsafe := refused([word for word in given if word]))
    ]


def _masked_word(word: str, secret: Mapping[str, str]) -> str:
    """``word`` as a refusal may show it: a secret variable's ``NAME=value`` as ``NAME=***``."""
    name = word.split("=", 1)[0]
    return f"{name}={MASK}" if name in secret and word == f"{name}={secret[name]}" else word


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapped(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# The backends whose ranks run on Intel GPUs through Level Zero, which opens the GPU's render node.
GPU_BACKENDS = ("xccl",)
RENDER_NODE = re.compile(r"/dev/dri/renderD[0-9]+")


def device_problems(backend: str, dri_devices: Mapping[str, Iterable[str] | None]) -> list[Problem]:
    """A GPU backend on nodes without a render node. ``dri_devices`` maps each host to the /dev/dri paths its node
    facts found (the fact cluster_node's ``dri_devices``), or None where they are not gathered yet."""
    if backend not in GPU_BACKENDS:
        return []
    missing = tuple(
        host
        for host, devices in dri_devices.items()
        if devices is not None and not any(RENDER_NODE.fullmatch(path) for path in devices)
    )
    if not missing:
        return []
    message = (
        f"{backend!r} runs every rank on an Intel GPU, and no render node (/dev/dri/renderD*) was found on the node;"
        " use gloo, ccl or mpi on CPU nodes, or load the GPU's kernel driver (i915 or xe)"
    )
    return [Problem("launcher_backend", message, missing)]


def scheduler_problems(values: Mapping[str, Any], hosts: Iterable[str]) -> list[Problem]:
    """Slurm where the job needs it: launcher_type=slurm needs the nodes to run Slurm (cluster_scheduler=slurm),
    which runs the ranks on the hosts (cluster_runtime=host) and names its nodes after the inventory's hosts.
    ``values`` are the launcher host's own."""
    scheduler = values.get("cluster_scheduler")
    launcher = _launcher(values)
    problems = []
    if launcher is not None and launcher.scheduler != "none" and scheduler != launcher.scheduler:
        message = f"{launcher.name!r} submits the job to {launcher.scheduler.capitalize()} on the nodes: set cluster_scheduler={launcher.scheduler} too"
        problems.append(Problem("launcher_type", message))
    if launcher is not None and launcher.scheduler != "none" and boolean(values.get("launcher_beside", False), strict=False):
        message = f"with launcher_type={launcher.name}: {launcher.scheduler.capitalize()} places jobs itself; submit it without launcher_beside"
        problems.append(Problem("launcher_beside", message))
    if scheduler != "slurm":
        return problems
    if values.get("cluster_runtime") != "host":
        problems.append(Problem("cluster_scheduler", "'slurm' runs the ranks on the nodes under slurmd: set cluster_runtime=host"))
    named = [host for host in hosts if not slurm.NODE_NAME.fullmatch(host)]
    if named:
        problems.append(
            Problem(
                "inventory_hostname",
                "Slurm names its nodes after the inventory's hosts: a letter, then letters, digits, - or _"
                " (give an address as ansible_host)",
                tuple(named),
            )
        )
    return problems


def controller_problems(workload_src: str, script: str, data_src: str, runs_dir: str) -> list[Problem]:
    """The code directory and the training script exist on the controller, so do the data set and runs/."""
    problems = []
    code = resolve(workload_src)
    if not os.path.isdir(code):
        problems.append(Problem("workload_src", f"{code} is not a directory on the controller"))
    elif script and not os.path.isfile(os.path.join(code, script)):
        problems.append(
            Problem("launcher_script", f"{script!r} is not a file in {code} (workload_src); name it relative to that directory")
        )
    if data_src and not os.path.isdir(resolve(data_src)):
        problems.append(Problem("workload_data_src", f"{resolve(data_src)} is not a directory on the controller"))
    runs = resolve(runs_dir)
    if os.path.exists(runs) and not os.path.isdir(runs):
        problems.append(Problem("launcher_runs_dir", f"{runs} exists and is not a directory"))
    return problems


REQUIREMENTS = "workload_requirements"


def requirements_problems(requirements: str, workload_src: str, python: str = sys.executable) -> list[Problem]:
    """The job's requirements file (workload_requirements; empty: requirements.txt in workload_src when there is one;
    'none': none, as the workload role takes it) is a file, the files it includes can be read, and each ``name==version``
    it gives ``--hash`` lines has a file of that release with one of them where pip looks (requirement_hashes): the
    layer build would stop on it only after the nodes were provisioned. What cannot be judged is left to the build."""
    if requirements == "none":
        return []
    path = resolve(requirements or os.path.join(workload_src, "requirements.txt"))
    if not os.path.isfile(path):
        return [Problem(REQUIREMENTS, f"{path} is not a file on the controller")] if requirements else []
    try:
        wrong = requirement_hashes.wrong_hashes(file_options(Path(path)), python)
    except LayerError as exc:
        return [Problem(REQUIREMENTS, str(exc))]
    return [
        Problem(
            REQUIREMENTS,
            f"{path}: {pinned.requirement}: no file of that release on {', '.join(map(str, places))} has "
            f"{_hashes_given(pinned.hashes)} given (a --hash line that is wrong)",
        )
        for pinned, places in wrong
    ]


def _hashes_given(hashes: frozenset[str]) -> str:
    return f"the {next(iter(hashes)).partition(':')[0]}" if len(hashes) == 1 else f"any of the {len(hashes)} hashes"


IMAGE_TARBALL = "container_runtime_image_tarball"


def image_problems(values: Mapping[str, Any], tarball: str, collection_tarball: str, provisioning: bool) -> list[Problem]:
    """A provisioning run in containers that loads the image from a ``docker save`` tarball (the default source)
    needs that tarball on the controller: the container_runtime role would stop on it only after the engine was
    installed on every node. ``collection_tarball`` is where ``make images`` writes the collection's own image."""
    if _provisioned_image_source(values, provisioning) != "load":
        return []
    if tarball and os.path.isfile(resolve(tarball)):
        return _checksum_problems(resolve(tarball), str(values.get("container_runtime_image_sha256") or ""))
    image = values.get("cluster_image", "the training image")
    missing = f"{resolve(tarball)} is not a file on the controller" if tarball else f"is not set (cluster_image {image})"
    return [
        Problem(
            IMAGE_TARBALL,
            f"{missing}; the nodes load {image} from a 'docker save' tarball: `make images` writes the collection's own"
            f" training image to {collection_tarball}; for an image of your own, name its tarball, or set"
            " container_runtime_image_source: pull (cluster_image from a registry) or build",
        )
    ]


def _checksum_problems(tarball: str, expected: str) -> list[Problem]:
    """A tarball whose sha256 is not the expected one (when one is given): the role would refuse it only after the
    engine was installed on every node."""
    if not expected:
        return []
    digest = hashlib.sha256()
    with open(tarball, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() == expected.lower():
        return []
    return [Problem("container_runtime_image_sha256", f"{expected} is not the sha256 of {tarball} ({digest.hexdigest()})")]


def build_problems(values: Mapping[str, Any], provisioning: bool) -> list[Problem]:
    """A provisioning run in containers that builds the image on the nodes (container_runtime_image_source: build)
    needs the build context on the controller, holding the Dockerfile: the container_runtime role would stop on it
    only after the engine was installed on every node."""
    if _provisioned_image_source(values, provisioning) != "build":
        return []
    given = str(values.get("container_runtime_build_context") or "")
    if not given:
        return [Problem("container_runtime_build_context", "is not set; the nodes build the image from a directory on the controller")]
    context = resolve(given)
    if not os.path.isdir(context):
        return [Problem("container_runtime_build_context", f"{context} is not a directory on the controller")]
    dockerfile = str(values.get("container_runtime_build_dockerfile") or "Dockerfile")
    if not os.path.isfile(os.path.join(context, dockerfile)):
        return [Problem("container_runtime_build_dockerfile", f"{dockerfile!r} is not a file in {context} (container_runtime_build_context)")]
    return []


def _provisioned_image_source(values: Mapping[str, Any], provisioning: bool) -> str | None:
    """Where the nodes get the training image in a provisioning run in containers (load, pull or build); None in
    any other run, which needs no image."""
    if not provisioning or values.get("cluster_runtime", "container") != "container":
        return None
    return str(values.get("container_runtime_image_source", "load"))


def wheelhouse_problems(values: Mapping[str, Any], host_wheelhouse: str, oneapi_wheelhouse: str, provisioning: bool) -> list[Problem]:
    """A provisioning run in host mode installs the training environment offline from the controller's wheelhouse
    (host_runtime_wheelhouse: wheels in the directory itself) and, with oneapi_install_method pip, Intel's runtimes
    from another (oneapi_pip_wheelhouse): the roles would stop on a missing one only after the nodes' packages and
    training user were installed. ``make wheels`` fills both."""
    if not provisioning or values.get("cluster_runtime", "container") != "host":
        return []
    problems = []
    host = resolve(host_wheelhouse)
    if not (os.path.isdir(host) and any(name.endswith(".whl") for name in os.listdir(host))):
        problems.append(
            Problem(
                "host_runtime_wheelhouse",
                f"no wheels in {host} on the controller; `make wheels` fills it (or pip download the training"
                " requirements for the nodes' Python and platform into it), or name another",
            )
        )
    if values.get("oneapi_install_method", "apt") == "pip" and not os.path.isdir(resolve(oneapi_wheelhouse)):
        problems.append(
            Problem(
                "oneapi_pip_wheelhouse",
                f"{resolve(oneapi_wheelhouse)} is not a directory on the controller; `make wheels` fills it with"
                " oneapi_pip_packages' wheels, or name another",
            )
        )
    return problems


def oneapi_problems(values: Mapping[str, Any], provisioning: bool) -> list[Problem]:
    """A provisioning run in host mode installs Intel's oneAPI runtime the way oneapi_install_method says; the
    settings that way needs, which the argument spec lets through empty or relative: the oneapi role refused them only
    after the nodes' first packages were installed."""
    if not provisioning or values.get("cluster_runtime", "container") != "host":
        return []
    method = values.get("oneapi_install_method", "apt")
    needed = {
        "apt": ("oneapi_apt_url", "oneapi_apt_key", "oneapi_apt_suites", "oneapi_apt_packages"),
        "pip": ("oneapi_pip_packages", "oneapi_pip_wheelhouse"),
    }.get(str(method), ())
    # A name not in values has a templated default (the wheelhouse's), which is not empty.
    problems = [
        Problem(name, f"is empty; oneapi_install_method {method} needs it") for name in needed if name in values and not values[name]
    ]
    if method == "apt" and values.get("oneapi_apt_pin", True) and not values.get("oneapi_apt_pin_origin"):
        if values.get("oneapi_apt_url") and not urlsplit(str(values["oneapi_apt_url"])).hostname:
            problems.append(
                Problem("oneapi_apt_pin_origin", "is empty and oneapi_apt_url names no host to pin to; set it, or oneapi_apt_pin: false")
            )
    prefix = str(values.get("oneapi_pip_prefix", "/"))
    if method == "pip" and not prefix.startswith("/"):
        problems.append(Problem("oneapi_pip_prefix", f"{prefix!r} is not an absolute path (where every node gets the runtime)"))
    return problems


def host_wheels(values: Mapping[str, Any], host_wheelhouse: str, provisioning: bool) -> list[str] | None:
    """The names of the wheels in ``host_wheelhouse`` that a provisioning run in host mode installs on the nodes,
    sorted (empty when there are none); None for any other run."""
    if not provisioning or values.get("cluster_runtime", "container") != "host":
        return None
    wheelhouse = resolve(host_wheelhouse)
    if not os.path.isdir(wheelhouse):
        return []
    return sorted(name for name in os.listdir(wheelhouse) if name.endswith(".whl"))


def resolve(path: str) -> str:
    """A controller path as the roles use it: ~ expanded, relative to the current directory."""
    return os.path.realpath(os.path.expanduser(path))


def merge_hosts(found: Iterable[tuple[str, Problem]], all_hosts: Iterable[str]) -> list[Problem]:
    """Problems of the hosts' variables: the same one on many hosts (a group variable) reported once, naming the
    hosts unless it is all of them."""
    hosts_of: dict[tuple[str, str], list[str]] = {}
    for host, problem in found:
        names = hosts_of.setdefault((problem.variable, problem.message), [])
        if host not in names:
            names.append(host)
    everyone = set(all_hosts)
    return [
        Problem(variable, message, () if len(everyone) > 1 and set(hosts) == everyone else tuple(hosts))
        for (variable, message), hosts in hosts_of.items()
    ]
