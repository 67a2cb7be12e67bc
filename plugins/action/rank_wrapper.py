# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.rank_wrapper: the job's set-up on a node, with its code sync (O(sync)) in the
same module run. The controller lists the directories to mirror; the node compares them before it sets up the job,
and only when files differ are they sent (plugin_utils/mirror_sync.py) and the set-up run once more."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.plugin_utils import mirror_sync

MODULE = "multinode.training.rank_wrapper"


class ActionModule(ActionBase):
    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        module_args = dict(self._task.args)
        sync = module_args.pop("sync", None)
        if not sync:
            return {**result, **self._set_up(module_args, task_vars)}
        sources, node_sync = mirror_sync.node_arguments(_validated_sync(sync))
        first = self._set_up({**module_args, "sync": node_sync}, task_vars)
        if first.get("failed"):
            return {**result, **first}
        if first.get("sync_pending"):
            return {**result, **self._send_and_set_up(first, sources, module_args, node_sync, task_vars)}
        # Nothing to send (in check mode the node only compared: what it would be sent, a retimed file of other content too).
        would_send = mirror_sync.files_to_send(sources, first["sync"]["trees"]) if self._task.check_mode else {}
        return {**result, **first, "changed": bool(first["changed"] or would_send), "sync": {**first["sync"], "sent": would_send}}

    def _send_and_set_up(
        self, first: dict[str, Any], sources: dict[str, str], module_args: dict[str, Any], node_sync: dict[str, Any], task_vars: dict[str, Any]
    ) -> dict[str, Any]:
        """The files the node's comparison left sent, then the set-up run again, which unpacks them and compares once
        more: the files of another time but equal content get the controller's time there (retime), so the next job's
        set-up has nothing to compare."""
        sending, retime = mirror_sync.compared(sources, first["sync"]["trees"])
        with mirror_sync.sent_archives(self, sources, sending) as archives:
            again = self._set_up({**module_args, "sync": {**node_sync, "archives": archives, "retime": retime}}, task_vars)
        if again.get("sync_pending"):
            raise AnsibleActionFail(f"files still differ on the node after sending them (changed while copied?): {again['sync']['trees']}")
        if again.get("failed"):
            return again
        return {**again, "changed": bool(sending or again["changed"] or first["changed"]), "sync": {**again["sync"], "sent": sending}}

    def _set_up(self, module_args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        return self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)


def _validated_sync(sync: Any) -> dict[str, Any]:
    """O(sync) as a task gives it (each tree's controller and node directory), checked; AnsibleActionFail naming what
    is wrong."""
    if not isinstance(sync, dict):
        raise AnsibleActionFail(f"sync: a dict of trees, directories, owner and group is expected, not {type(sync).__name__}")
    validated = ArgumentSpecValidator(mirror_sync.ARGUMENT_SPEC).validate(sync)
    if validated.error_messages:
        raise AnsibleActionFail(f"sync: {'; '.join(validated.error_messages)}")
    return validated.validated_parameters
