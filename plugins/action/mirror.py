# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.mirror: node directories made mirrors of controller directories, one module
run when nothing changed, and the changed files in one archive when something did."""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.plugin_utils import mirror_sync
from ansible_collections.multinode.training.plugins.plugin_utils.actions import execute


ARGUMENT_SPEC = mirror_sync.ARGUMENT_SPEC


class ActionModule(ActionBase):
    # Not TRANSFERS_FILES: a temporary directory on the node (two more SSH round trips, and one to remove it) only when
    # files are sent (mirror_sync.send).
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        sources, node_args = mirror_sync.node_arguments(args)
        compared = execute(self, mirror_sync.NODE_MODULE, task_vars, node_args)
        sending = mirror_sync.files_to_send(sources, compared["trees"])
        trees = compared["trees"]
        changed = bool(compared["changed"]) or bool(sending)  # in check mode: would send
        if sending and not self._task.check_mode:
            trees = mirror_sync.send(self, sources, sending, node_args, task_vars)
            changed = True
        result.update(changed=changed, trees=trees, created=compared["created"])
        return result
