# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.health_verdict: the health probe's results judged on the controller
(module_utils/health.py), written to health.json; the figures cached, and a recent check reused."""

from __future__ import annotations

import datetime
import json
import time
import uuid
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils import health
from ansible_collections.multinode.training.plugins.module_utils.run_report import write_json

ARGUMENT_SPEC: dict[str, Any] = {
    "results": {"type": "dict"},
    "interfaces": {"type": "dict", "default": {}},
    "path": {"type": "path", "required": True},
    "fraction": {"type": "float", "default": health.DEFAULT_FRACTION},
    "floors": {"type": "dict", "default": {}},
    "clock_skew": {"type": "float", "default": health.DEFAULT_CLOCK_SKEW_S},
    "cache": {"type": "path"},
    "cache_key": {"type": "str", "default": ""},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "max_age": {"type": "int", "default": 0},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        now = time.time()
        if args["results"] is None:
            cached = self._cached(args, now)
            if cached is None:
                # The nodes are measured: the id the probes' output is told apart by (health_probe_outputs).
                return {**result, "changed": False, "reused": False, "age_seconds": None, "check_id": uuid.uuid4().hex}
            figures, age = cached
            failures: list[health.Finding] = []
            nodes = list(args["hosts"])
            reused: dict[str, Any] | None = {"age_seconds": round(age, 1), "cache": args["cache"]}
        else:
            figures, failures = health.probe_figures(args["results"])
            nodes, reused = list(args["results"]), None
        found = failures + health.judge(
            figures,
            fraction=args["fraction"],
            floors={name: float(value) for name, value in args["floors"].items()},
            clock_skew_s=args["clock_skew"],
            interfaces=args["interfaces"],
            nodes_by_rank=nodes,
        )
        findings = [finding.text for finding in found]
        report = {
            "checked_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "status": "failed" if findings else "passed",
            "findings": findings,
            "nodes": figures,
            "reused": reused,
            "settings": {key: args[key] for key in ("fraction", "floors", "clock_skew", "interfaces")},
        }
        path = Path(args["path"]).expanduser().resolve()
        page = path.with_suffix(".html")
        if not self._task.check_mode:
            write_json(path, report)
            page.write_text(health.html_page(report, found, nodes), encoding="utf-8")
            if reused is None:
                self._keep(args, figures if not findings else None, now)
        result.update(
            changed=False,
            reused=reused is not None,
            age_seconds=reused["age_seconds"] if reused else None,
            path=str(path),
            page=str(page),
            status=report["status"],
            findings=findings,
            figures=figures,
            table=health.table(figures),
            warnings=[f"health: {text}" for text in findings],
        )
        return result

    @staticmethod
    def _keep(args: dict[str, Any], figures: dict[str, dict[str, Any]] | None, now: float) -> None:
        """Cache a check that passed; a check that failed removes the cache, so an older pass cannot stand for it."""
        if not args["cache"] or not args["cache_key"]:
            return
        cache = Path(args["cache"]).expanduser()
        if figures is None:
            cache.unlink(missing_ok=True)
        else:
            write_json(cache, health.cache_entry(args["cache_key"], figures, now))

    @staticmethod
    def _cached(args: dict[str, Any], now: float) -> tuple[dict[str, dict[str, Any]], float] | None:
        """Every host's figures from the cache and their age, when a check young enough stands for a new one."""
        if not args["cache"] or not args["cache_key"]:
            return None
        try:
            cache = json.loads(Path(args["cache"]).expanduser().read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(cache, dict):
            return None
        return health.cached_figures(cache, args["cache_key"], args["hosts"], now, args["max_age"])
