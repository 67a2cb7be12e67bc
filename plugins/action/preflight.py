# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.preflight: judges every input of the run on the controller."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleError, AnsibleUndefinedVariable
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template
from ansible.vars.hostvars import HostVarsVars

from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain
from ansible_collections.multinode.training.plugins.plugin_utils import preflight
from ansible_collections.multinode.training.plugins.plugin_utils.preflight import Problem

ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"


def role_options(loader: Any, roles: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The options of the roles' argument specs (every entry point), as one name -> spec mapping."""
    paths = (ROLES_DIR / role / "meta" / "argument_specs.yml" for role in roles)
    # Read without the loader's deep copy of its cached file (unsafe: the same object; plain() copies it): the play
    # loaded these files already, and that copy of Ansible's tagged data took most of the preflight's and of each
    # node's drift check's time.
    return preflight.merge_options(
        plain(loader.load_from_file(str(path), unsafe=True)) if path.is_file() else {} for path in paths
    )


def play_variables(task: Any, loader: Any, host: str) -> HostVarsVars:
    """The variables ``host`` has in ``task``'s play as the user sets them, templated on access: extra vars, the
    play's vars and vars_files, inventory, facts. Not the play's roles' defaults and vars: they are the collection's
    code (hashed as such), and some depend on facts set later in the run.

    ``hostvars[host]`` is not enough: it leaves the play's vars out, so a job given in the ``vars`` of a playbook
    that imports train.yml would go unvalidated and unrecorded.
    """
    manager = task.get_variable_manager()
    play = task.get_play().copy()
    play.roles = []
    # The inventory's Host (its groups decide its group vars); the variable manager holds the one inventory.
    inventory_host = manager._inventory.get_host(host)  # pylint: disable=protected-access
    return HostVarsVars(manager.get_vars(play=play, host=inventory_host), loader=loader, host=host)


def role_default(loader: Any, templar: Any, variables: dict[str, Any], role: str, name: str) -> str:
    """``name``'s default in ``role``'s defaults/main.yml, templated with ``variables`` (and the role's role_path)."""
    # Only read (see role_options).
    defaults = loader.load_from_file(str(ROLES_DIR / role / "defaults" / "main.yml"), unsafe=True) or {}
    templar = templar.copy_with_new_env(available_variables={**variables, "role_path": str(ROLES_DIR / role)})
    return str(templar.template(trust_as_template(defaults.get(name, ""))))


def image_tarball(loader: Any, templar: Any, own: dict[str, Any], variables: dict[str, Any]) -> str:
    """The tarball the container_runtime role loads in a run: the host's own container_runtime_image_tarball, else
    the role's default for the run's image (provision.yml gives the role cluster_image)."""
    if own.get(preflight.IMAGE_TARBALL):
        return str(own[preflight.IMAGE_TARBALL])
    image = own.get("cluster_image") or role_default(loader, templar, variables, "cluster", "cluster_image")
    return role_default(loader, templar, {**variables, "container_runtime_image": image}, "container_runtime", preflight.IMAGE_TARBALL)


def set_values(host_vars: Any, names: set[str]) -> tuple[dict[str, Any], list[preflight.Problem]]:
    """The variables of ``names`` this host sets (extra, play, inventory or group vars), templated. A template that
    needs a fact gathered later is left to the role; any other template error is a problem."""
    values: dict[str, Any] = {}
    problems = []
    for name in sorted(names):
        if name not in host_vars:
            continue
        try:
            values[name] = plain(host_vars[name])
        except AnsibleUndefinedVariable:
            continue
        except AnsibleError as error:
            problems.append(preflight.Problem(name, f"cannot be templated: {error.message}"))
    return values, problems


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(("roles", "launcher_group", "workers_group", "scope"))

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        scope = self._task.args.get("scope", "run")
        if scope not in ("run", "job"):
            return {**result, "failed": True, "changed": False, "msg": f"scope: {scope!r} is not one of run, job"}
        roles = self._task.args.get("roles") or list(preflight.RUN_ROLES)
        groups = (self._task.args.get("launcher_group", "launcher"), self._task.args.get("workers_group", "workers"))
        options = role_options(self._loader, roles)
        hosts = list(task_vars.get("ansible_play_hosts_all") or [])
        names = (set(options) | set(preflight.NAMED_RULES)) - set(preflight.RECORDED)
        values = {host: set_values(play_variables(self._task, self._loader, host), names) for host in hosts}

        defaults = preflight.spec_defaults(options)
        found: list[tuple[str, preflight.Problem]] = []
        for host, (host_values, template_problems) in values.items():
            effective = {**defaults, **host_values}
            own = template_problems + preflight.value_problems(options, host_values) + preflight.ranks_per_node_problems(effective)
            if scope == "job":
                # The Kubernetes entry point: what the operators would refuse, judged here so its rendering need not.
                own += preflight.kubernetes_problems(effective)
            found += [(host, problem) for problem in own]
        if scope == "run":
            # A job and its provisioning need every node (teardown.yml and check.yml, with no phase, may take fewer).
            node_groups = {group: list(task_vars["groups"].get(group, [])) for group in groups}
            left_out = preflight.left_out_problems(node_groups, hosts) if task_vars.get("multinode_phase") else []
            problems = (
                left_out
                + preflight.merge_hosts(found, hosts)
                + self._cluster_problems(task_vars, groups, options, defaults, values)
            )
            result["host_wheels"] = self._host_wheels(task_vars, groups, defaults, values)
        else:
            # The job's values only (the Kubernetes entry point), judged by the same rules and said in the same words
            # as for a run given them with -e; its one host is the controller, not a node to name.
            problems = list(dict.fromkeys(Problem(problem.variable, problem.message) for _host, problem in found))
        result.update(changed=False, problems=[str(problem) for problem in problems], checked_hosts=len(hosts))
        if problems:
            result["failed"] = True
            result["msg"] = f"{len(problems)} problem(s) with the run's inputs, nothing was changed:\n" + "\n".join(
                f"- {problem}" for problem in problems
            )
        else:
            result["msg"] = f"{len(hosts)} hosts, every input valid"
        return result

    def _cluster_problems(
        self,
        task_vars: dict[str, Any],
        groups: tuple[str, str],
        options: dict[str, Any],
        defaults: dict[str, Any],
        values: dict[str, Any],
    ) -> list[preflight.Problem]:
        """The run's cluster: the hosts agree, the inventory's shape, what the launcher host sets, the controller."""
        hosts = list(values)
        launchers = list(task_vars["groups"].get(groups[0], []))
        workers = list(task_vars["groups"].get(groups[1], []))
        entries = self._entries(task_vars["hostvars"], hosts, values, _as_int(task_vars.get("cluster_ssh_port"), 0))
        first, settings = _run_settings(task_vars, groups, defaults, values)
        paths = self._controller_paths(values[first][0], task_vars)
        # Only the runs whose workload role builds the requirements layer (provision.yml, launch.yml) judge its file.
        builds_layer = task_vars.get("multinode_phase") in ("provision", "launch")
        requirements = self._value(values[first][0], task_vars, "workload_requirements", "workload") if builds_layer else "none"
        # What only provision.yml's roles use: the image source, the host-mode wheelhouses.
        provisioning = task_vars.get("multinode_phase") == "provision"
        return (
            preflight.disagreement_problems(options, {host: own for host, (own, _problems) in values.items()})
            + preflight.inventory_problems(launchers, workers, entries, groups)
            + preflight.runtime_problems(settings)
            + preflight.shell_word_problems(settings)
            + preflight.scheduler_problems(settings, hosts)
            + preflight.controller_problems(**paths)
            + preflight.requirements_problems(requirements, paths["workload_src"])
            + preflight.image_problems(
                settings,
                image_tarball(self._loader, self._templar, values[first][0], task_vars),
                image_tarball(self._loader, self._templar, {}, task_vars),
                provisioning=provisioning,
            )
            + preflight.build_problems(settings, provisioning=provisioning)
            + preflight.oneapi_problems(settings, provisioning=provisioning)
            + preflight.wheelhouse_problems(
                settings,
                self._value(values[first][0], task_vars, "host_runtime_wheelhouse", "host_runtime"),
                self._value(values[first][0], task_vars, "oneapi_pip_wheelhouse", "oneapi"),
                provisioning=provisioning,
            )
        )

    def _host_wheels(
        self, task_vars: dict[str, Any], groups: tuple[str, str], defaults: dict[str, Any], values: dict[str, Any]
    ) -> list[str] | None:
        """The wheel files a provisioning run in host mode installs on the nodes (host_runtime_wheelhouse), for the
        first play's check of each node's Python (cluster role); None for any other run."""
        first, settings = _run_settings(task_vars, groups, defaults, values)
        provisioning = task_vars.get("multinode_phase") == "provision"
        wheelhouse = self._value(values[first][0], task_vars, "host_runtime_wheelhouse", "host_runtime")
        return preflight.host_wheels(settings, wheelhouse, provisioning=provisioning)

    @staticmethod
    def _entries(hostvars: Any, hosts: list[str], values: dict[str, Any], ssh_port: int) -> list[preflight.HostEntry]:
        entries = []
        for host in hosts:
            own = values[host][0]
            connect = str(hostvars[host].get("ansible_host") or host)
            entries.append(
                preflight.HostEntry(
                    name=host,
                    connect_address=connect,
                    connect_port=_as_int(hostvars[host].get("ansible_port"), 22),
                    mesh_address=str(own.get("cluster_address") or connect),
                    mesh_port=_as_int(own.get("cluster_ssh_port"), ssh_port),
                )
            )
        return entries

    def _controller_paths(self, own: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, str]:
        """The code, script, data and runs paths the run will use: the host's own values, else the roles'."""
        return {
            "workload_src": self._value(own, task_vars, "workload_src", "workload"),
            "script": self._value(own, task_vars, "launcher_script", "launcher"),
            "data_src": "" if own.get("workload_data_path") else self._value(own, task_vars, "workload_data_src", "workload"),
            "runs_dir": self._value(own, task_vars, "launcher_runs_dir", "launcher"),
        }

    def _value(self, own: dict[str, Any], task_vars: dict[str, Any], name: str, role: str) -> str:
        """``name`` as the run will use it: the host's own value, else ``role``'s default."""
        return str(own[name]) if name in own else role_default(self._loader, self._templar, task_vars, role, name)


def _run_settings(
    task_vars: dict[str, Any], groups: tuple[str, str], defaults: dict[str, Any], values: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The host whose values are the run's (the first launcher, else the first host) and those values over the
    roles' defaults."""
    launchers = list(task_vars["groups"].get(groups[0], []))
    first = launchers[0] if launchers else list(values)[0]
    return first, {**defaults, **values[first][0]}


def _as_int(value: Any, fallback: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return fallback
