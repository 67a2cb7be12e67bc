# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.write_summary: a summary the run schema accepts written to the run's
summary.json on the controller (module_utils/summary_file.py), in Ansible's own process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_FILE
from ansible_collections.multinode.training.plugins.module_utils.summary_file import SummaryError, summary_text, write_summary

ARGUMENT_SPEC: dict[str, Any] = {
    "run_dir": {"type": "path", "required": True},
    "summary": {"type": "dict", "required": True},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        path = Path(args["run_dir"]) / SUMMARY_FILE
        try:
            text = summary_text(args["summary"])
        except SummaryError as error:
            return {**result, "failed": True, "msg": f"{path}: {error}", "path": str(path), "problems": error.problems}
        before = path.read_text() if path.is_file() else ""
        changed = text != before
        if changed and not self._task.check_mode:
            write_summary(path, args["summary"])
        result.update(changed=changed, path=str(path))
        if changed and self._task.diff:
            result["diff"] = {"before": before, "after": text, "before_header": str(path), "after_header": str(path)}
        return result
