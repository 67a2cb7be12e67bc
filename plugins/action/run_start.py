# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.run_start: the run's directory on the controller, before the job starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.vars import load_extra_vars

from ansible_collections.multinode.training.plugins.module_utils.prune import keep_error
from ansible_collections.multinode.training.plugins.plugin_utils.follow import following_of, start_run_dir, write_following

ARGUMENT_SPEC: dict[str, Any] = {
    "runs_dir": {"type": "path", "required": True},
    "job_id": {"type": "str", "required": True},
    "keep": {"type": "int", "default": 0},
    "launcher_host": {"type": "str", "default": ""},
    "job_dir": {"type": "str", "default": ""},
    "secret_env_names": {"type": "list", "elements": "str", "default": []},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        if error := keep_error(args["keep"]):
            raise AnsibleActionFail(error)
        if self._task.check_mode:
            return {**result, "changed": False, "skipped": True, "msg": "check mode: no run to start"}
        run_dir = Path(args["runs_dir"]) / args["job_id"]
        changes = start_run_dir(Path(args["runs_dir"]), args["job_id"], args["keep"])
        if args["launcher_host"] and args["job_dir"]:
            following = following_of(
                args["launcher_host"], args["job_dir"], task_vars or {}, self._play_context.become,
                load_extra_vars(self._loader), args["secret_env_names"],
            )
            write_following(run_dir, following)
        result.update(changed=bool(changes), changes=changes, run_dir=str(run_dir))
        return result
