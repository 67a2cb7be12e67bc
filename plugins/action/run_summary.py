# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.run_summary: the summary is computed and written in Ansible's own process
(the run is on the controller already; a module run would only add a Python start)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.multinode.training.plugins.module_utils import events, progress, restart, world
from ansible_collections.multinode.training.plugins.module_utils.launch_script import REPLICAS_LOG
from ansible_collections.multinode.training.plugins.module_utils.run_report import (
    STALL_FILE, every_rank_exited_0, run_summary,
)
from ansible_collections.multinode.training.plugins.module_utils.summary_file import SummaryError, write_summary
from ansible_collections.multinode.training.plugins.plugin_utils.follow import (
    ATTEMPTS_DIR, COLLECTED_DIR, PROGRESS_FILE, SUMMARY_FILE, append_record,
)

display = Display()
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
    "secret_env_names": {"type": "list", "elements": "str", "default": []},
    "scheduler": {"type": "dict", "default": {}},
    "attempt": {"type": "int", "default": 1},
    "restarts": {"type": "list", "elements": "dict", "default": []},
    "max_restarts": {"type": "int", "default": 0},
    "restart_on": {"type": "list", "elements": "str", "default": list(restart.INFRASTRUCTURE_KINDS),
                   "choices": list(restart.RESTART_ON_CHOICES)},
    "world_check": {"type": "str", "default": "fail", "choices": list(world.WORLD_CHECKS)},
    "lost_nodes": {"type": "list", "elements": "str", "default": []},
    "min_nodes": {"type": "int", "default": 1},
    "spares": {"type": "list", "elements": "str", "default": []},
    "checkpoints": {"type": "dict", "default": {}},
    "replicas": {"type": "int", "default": 0},
    "launcher_stays": {"type": "str", "default": ""},
    "mlflow_tracking_uri": {"type": "str", "default": ""},
    "mlflow_experiment": {"type": "str", "default": "multinode-training"},
}


def recorded(run_dir: Path, mlflow_tracking_uri: str, mlflow_experiment: str) -> dict[str, str]:
    """report.html, TensorBoard's event files and the MLflow run of a run that ended, when the multinode-training
    Python package is on the controller (multinode_training.trackers.record_run): what each is, or why it is not
    there. Nothing here ever fails the run."""
    try:
        # Optional: the Python package, not part of this collection.
        # pylint: disable-next=import-outside-toplevel
        from multinode_training.trackers import record_run
    except ImportError:
        hint = "not written: pip install 'multinode-training[report]' on the controller, then multinode-training report RUN"
        return {"report": hint}
    try:
        return record_run(run_dir, mlflow_tracking_uri=mlflow_tracking_uri, mlflow_experiment=mlflow_experiment)
    except Exception as error:  # pylint: disable=broad-exception-caught
        return {"report": f"not written: {error}"}


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, none when it is missing; a line that is not one (cut short when its
    node stopped mid-write) is passed over."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        run_dir = Path(args["run_dir"])
        summary, decision = self._judged(args, run_dir)
        path = run_dir / ATTEMPTS_DIR / str(args["attempt"]) / SUMMARY_FILE if decision.restart else run_dir / SUMMARY_FILE
        if not self._task.check_mode:
            if decision.restart:
                self._set_attempt_aside(run_dir, path.parent, decision, summary["root_cause_kind"])
            try:
                write_summary(path, summary)
            except SummaryError as error:
                raise AnsibleActionFail(f"{path}: {error}", result={"summary": summary, "problems": error.problems}) from error
            if not decision.restart:
                result["recorded"] = recorded(run_dir, args["mlflow_tracking_uri"], args["mlflow_experiment"])
        result.update(
            changed=True, path=str(path), summary=summary, restart=decision.restart, restarts=summary["restarts"],
            next_hosts=list(decision.hosts),
        )
        if summary["status"] == "succeeded" and (summary.get("world") or {}).get("formed") is False:
            result["warnings"] = [f"{summary['job_id']}: {summary['world']['text']}"]
        return result

    def _judged(self, args: dict[str, Any], run_dir: Path) -> tuple[dict[str, Any], restart.Decision]:
        """This attempt's summary with the restart bookkeeping, and the restart policy's verdict on it."""
        followed = _json_lines(run_dir / PROGRESS_FILE)
        # How each rank ended as the controller followed it: the ranks of a node lost before the collection left no
        # collected record, and exited 0 when the training had finished.
        exit_codes = progress.followed_exit_codes(followed)
        summary = run_summary({**args, "followed_exit_codes": exit_codes})
        if not summary["epochs"]:
            # No epoch event in rank 0's collected log (a script that prints its epochs as text, or rank 0's node
            # lost with its logs): the epochs as the controller followed them live.
            summary["epochs"] = progress.followed_epochs(followed)
        # Where each checkpoint is now: the launcher node's and its replicas (each node's listing, from collect.yml).
        summary["checkpoints"] = restart.checkpoint_holders(args["checkpoints"], self._replica_copies(run_dir, args))
        restarts = restart.completed(args["restarts"], summary)
        recorded = {int(rank): code for rank, code in summary["rank_exit_codes"].items()}
        decision = restart.decide(
            summary, restarts=restarts, max_restarts=args["max_restarts"], restart_on=args["restart_on"],
            lost_nodes=args["lost_nodes"], min_nodes=args["min_nodes"], spares=args["spares"],
            replicas=args["replicas"], launcher_stays=args["launcher_stays"],
            finished=every_rank_exited_0(args["world_size"], recorded, exit_codes),
        )
        if decision.restart:
            restarts.append(restart.new_entry(summary, args["attempt"]))
        summary.update(attempt=args["attempt"], restarts=restarts)
        if args["attempt"] > 1:
            # The whole curve: what the earlier attempts trained up to where this one resumed, then this one's.
            summary["epochs"] = restart.merged_epochs([*self._earlier_epochs(run_dir), summary["epochs"]])
        if summary["status"] != "succeeded":
            summary["restart_verdict"] = decision.why
        return summary, decision

    @staticmethod
    def _replica_copies(run_dir: Path, args: dict[str, Any]) -> list[dict[str, Any]]:
        """The checkpoint replicator's records from the launcher node's collected logs (none when it was lost)."""
        if not args["node_names"]:
            return []
        return _json_lines(run_dir / COLLECTED_DIR / args["node_names"][0] / "logs" / REPLICAS_LOG)

    @staticmethod
    def _earlier_epochs(run_dir: Path) -> list[list[dict[str, Any]]]:
        """The epochs of every earlier attempt's summary (attempts/<n>/summary.json), first attempt first."""
        found = []
        for path in sorted((run_dir / ATTEMPTS_DIR).glob(f"*/{SUMMARY_FILE}"), key=lambda path: int(path.parent.name)):
            found.append(json.loads(path.read_text()).get("epochs") or [])
        return found

    @staticmethod
    def _set_attempt_aside(run_dir: Path, attempt_dir: Path, decision: restart.Decision, cause_kind: str) -> None:
        """Move the failed attempt's collected files and stall out of the way of the next one; say it restarts."""
        attempt_dir.mkdir(parents=True, exist_ok=True)
        for name in (COLLECTED_DIR, STALL_FILE):
            if (run_dir / name).exists():
                shutil.move(str(run_dir / name), str(attempt_dir / name))
        record = {"kind": events.RESTART, "attempt": int(attempt_dir.name), "cause_kind": cause_kind, "text": decision.why}
        append_record(run_dir, record)
        display.display(f"[{run_dir.name}] {decision.why} (its logs: {attempt_dir})")
