# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.node_state: hashes the provisioning run's inputs on the controller."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.action.preflight import image_tarball, play_variables, role_options, set_values
from ansible_collections.multinode.training.plugins.module_utils import node_state
from ansible_collections.multinode.training.plugins.plugin_utils.provision_inputs import (
    PROVISIONING_ROLES,
    inputs_hash,
    without_defaults,
)
from ansible_collections.multinode.training.plugins.plugin_utils.preflight import IMAGE_TARBALL, RECORDED


def _observes(observed: dict[str, Any], args: dict[str, Any]) -> bool:
    """Whether ``observed`` (node_facts' RV(provisioning)) answers this check: the same record and watched things."""
    if args.get("state", "check") != "check" or observed.get("path") != args.get("path"):
        return False
    watched = [args.get(name) or [] for name in node_state.WATCHED]
    return sorted(node_state.part_names(*watched)) == sorted(observed.get("parts") or {})


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        observed = args.pop("observed", None)
        if not args.get("inputs"):
            roles = args.get("roles") or list(PROVISIONING_ROLES)
            host_vars = play_variables(self._task, self._loader, task_vars["inventory_hostname"])
            args["inputs"] = inputs_hash(self._values(self._loader, roles, host_vars), self._tarball(task_vars))
        if observed and _observes(observed, args):
            found = node_state.differences(observed["record"], args["inputs"], observed["parts"])
            return {
                "changed": False,
                "unchanged": not found,
                "differences": found,
                "engine_down": node_state.engine_down(observed["parts"]),
                "inputs": args["inputs"],
                "observed": True,
            }
        return self._execute_module(module_name="multinode.training.node_state", module_args=args, task_vars=task_vars)

    @staticmethod
    def _values(loader: Any, roles: list[str], host_vars: Any) -> dict[str, Any]:
        """The provisioning roles' variables and the cluster facts this host has (play_variables), templated; one
        that only restates its default is left out (the roles get the same either way)."""
        # The cluster role's options are all cluster_* names: set ones are inputs anyway, and their defaults count.
        options = role_options(loader, [*roles, "cluster"])
        names = set(options) | set(RECORDED) | {name for name in host_vars if str(name).startswith("cluster_")}
        values, problems = set_values(host_vars, names)
        if problems:
            raise AnsibleActionFail("; ".join(map(str, problems)))
        return without_defaults(options, values)

    def _tarball(self, task_vars: dict[str, Any]) -> str | None:
        """The image tarball the run loads (the host's own, else the role's default for its image), or None: its size
        and time stand for its content."""
        own = {name: self._templar.template(task_vars[name]) for name in (IMAGE_TARBALL, "cluster_image") if task_vars.get(name)}
        return image_tarball(self._loader, self._templar, own, task_vars) or None
