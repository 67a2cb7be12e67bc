# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.health_verdict: the health probe's results judged on the controller
(module_utils/health.py), written to health.json."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils import health
from ansible_collections.multinode.training.plugins.module_utils.run_report import write_json

ARGUMENT_SPEC: dict[str, Any] = {
    "results": {"type": "dict", "required": True},
    "interfaces": {"type": "dict", "default": {}},
    "path": {"type": "path", "required": True},
    "fraction": {"type": "float", "default": health.DEFAULT_FRACTION},
    "floors": {"type": "dict", "default": {}},
    "clock_skew": {"type": "float", "default": health.DEFAULT_CLOCK_SKEW_S},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        nodes = list(args["results"])
        figures, failures = health.probe_figures(args["results"])
        findings = [finding.text for finding in failures]
        findings += [
            finding.text
            for finding in health.judge(
                figures,
                fraction=args["fraction"],
                floors={name: float(value) for name, value in args["floors"].items()},
                clock_skew_s=args["clock_skew"],
                interfaces=args["interfaces"],
                nodes_by_rank=nodes,
            )
        ]
        report = {
            "checked_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "status": "failed" if findings else "passed",
            "findings": findings,
            "nodes": figures,
            "settings": {key: args[key] for key in ("fraction", "floors", "clock_skew", "interfaces")},
        }
        path = Path(args["path"]).expanduser().resolve()
        if not self._task.check_mode:
            write_json(path, report)
        result.update(
            changed=False,
            path=str(path),
            status=report["status"],
            findings=findings,
            figures=figures,
            table=health.table(figures),
            warnings=[f"health: {text}" for text in findings],
        )
        return result
