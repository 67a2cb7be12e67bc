# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.run_summary: the summary is computed and written in Ansible's own process
(the run is on the controller already; a module run would only add a Python start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils.run_report import run_summary, write_json

SUMMARY_FILE = "summary.json"
ARGUMENT_SPEC: dict[str, Any] = {
    "run_dir": {"type": "path", "required": True},
    "job_id": {"type": "str", "required": True},
    "job_name": {"type": "str", "default": ""},
    "resumed_from": {"type": "str", "default": ""},
    "launcher": {"type": "str", "required": True},
    "nodes": {"type": "list", "elements": "str", "required": True},
    "node_names": {"type": "list", "elements": "str", "required": True},
    "world_size": {"type": "int", "required": True},
    "launcher_exit_code": {"type": "int", "required": True},
    "timed_out": {"type": "bool", "default": False},
    "worker_states": {"type": "dict", "default": {}},
    "phase_stats": {"type": "dict", "default": {}},
    "settings": {"type": "dict", "default": {}},
    "scheduler": {"type": "dict", "default": {}},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        summary = run_summary(args)
        path = Path(args["run_dir"]) / SUMMARY_FILE
        if not self._task.check_mode:
            write_json(path, summary)
        result.update(changed=True, path=str(path), summary=summary)
        return result
