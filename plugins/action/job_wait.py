# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.job_wait: follow a running job until its launcher ends."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.module_utils.secret_env import secret_values
from ansible_collections.multinode.training.plugins.module_utils.run_report import STALL_FILE, write_json
from ansible_collections.multinode.training.plugins.module_utils.stragglers import StragglerWatch
from ansible_collections.multinode.training.plugins.module_utils.watchdog import Stall, Watchdog
from ansible_collections.multinode.training.plugins.plugin_utils.actions import execute
from ansible_collections.multinode.training.plugins.plugin_utils.follow import (
    CANCEL_FILE, FOLLOWING_FILE, Follower, append_record, following_of, keep_handover, keep_offsets, private_dir,
    read_json_object, recorded_follow_state, show, write_following,
)

display = Display()

ARGUMENT_SPEC: dict[str, Any] = {
    "job_dir": {"type": "path", "required": True},
    "run_dir": {"type": "path", "required": True},
    "world_size": {"type": "int", "required": True},
    "timeout": {"type": "int", "required": True},
    "poll": {"type": "float", "default": 5.0},
    "heartbeat": {"type": "int", "default": 30},
    "cancel_file": {"type": "path"},
    "container": {"type": "str"},
    "check_pid": {"type": "bool", "default": False},
    "liveness_every": {"type": "int", "default": 30},
    "until": {"type": "str", "default": "launcher_exit", "choices": ["launcher_exit", "ranks_succeeded"]},
    "stall_timeout": {"type": "int", "default": 0},
    "straggler_margin": {"type": "float", "default": 0.0},
    "straggler_after": {"type": "int", "default": 30},
    "handover": {"type": "dict", "default": {}},
    "secret_env_names": {"type": "list", "elements": "str", "default": []},
    "resume": {"type": "bool", "default": False},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        if self._task.check_mode:
            return {**result, "changed": False, "skipped": True, "msg": "check mode: no job to follow"}
        run_dir = private_dir(Path(args["run_dir"]))
        follower = Follower(
            run_dir=run_dir, world_size=args["world_size"], heartbeat_seconds=args["heartbeat"],
            # A job taken over (resume) has only its masked handover: what it logs is shown as it is.
            secret_values=tuple(secret_values(args["handover"], args["secret_env_names"])),
            watchdog=Watchdog(timeout=args["stall_timeout"]),
            straggler_watch=StragglerWatch(margin=args["straggler_margin"], after=args["straggler_after"]),
        )
        cancel_file = Path(args["cancel_file"] or run_dir / CANCEL_FILE)
        offsets = self._starting_offsets(args, run_dir, task_vars or {})
        ended_by, cancelled, offsets, stall = self._follow(args, follower, cancel_file, offsets, task_vars or {})
        result.update(
            changed=False,
            ended_by=ended_by,
            cancelled=cancelled,
            stalled=stall.describe() if stall else None,
            stragglers=[straggler.describe() for straggler in follower.straggler_watch.named.values()],
            launcher_exit_code=follower.launcher_exit_code,
            ranks_started=len(follower.started),
            offsets=offsets,
            epochs=follower.epochs,
            seconds=round(time.monotonic() - follower.began, 2),
        )
        return result

    def _starting_offsets(self, args: dict[str, Any], run_dir: Path, task_vars: dict[str, Any]) -> dict[str, int]:
        """Where the job's logs are read from: a new attempt keeps its handover and starts at their beginning; a
        take-over (resume) reads on from where the last follower stopped."""
        if args["resume"]:
            return self._taken_over(args, run_dir, task_vars)
        keep_handover(run_dir, args["handover"], args["secret_env_names"])
        return {}

    def _taken_over(self, args: dict[str, Any], run_dir: Path, task_vars: dict[str, Any]) -> dict[str, int]:
        """resume: the offsets the job's last follower left (its handover stays as it is); this process becomes its
        follower."""
        try:
            state = recorded_follow_state(run_dir)
        except ValueError as error:
            raise AnsibleActionFail(str(error)) from error
        launcher_host = str(task_vars.get("inventory_hostname", ""))
        # The job's own extra variables, as its first follower recorded them.
        recorded = read_json_object(run_dir / FOLLOWING_FILE).get("extra_vars") or {}
        following = following_of(launcher_host, args["job_dir"], task_vars, self._play_context.become, recorded)
        write_following(run_dir, following)
        return dict(state["offsets"])

    def _follow(  # pylint: disable=too-many-arguments,too-many-positional-arguments
        self, args: dict[str, Any], follower: Follower, cancel_file: Path, offsets: dict[str, int],
        task_vars: dict[str, Any],
    ) -> tuple[str, bool, dict[str, int], Stall | None]:
        """Poll from ``offsets`` until the launch script logged its exit (or, with until=ranks_succeeded, every rank
        ended with 0), its process or container is gone, or time is up; the offsets read so far are kept after each
        read that found new text. How it ended, whether it was cancelled, the logs' offsets, the stall that stopped
        it."""
        deadline = time.monotonic() + args["timeout"]
        # Ansible's worker runs this in a session of its own: it outlives an ansible-playbook that was killed, and
        # would go on following (reading the job's logs, acting on a cancel) beside whoever takes the job over.
        playbook = os.getppid()
        cancelled = False
        stall: Stall | None = None
        next_liveness = time.monotonic() + args["liveness_every"]
        while True:
            self._stop_when_orphaned(playbook)
            polled = time.monotonic()
            stop = not cancelled and cancel_file.exists()
            # The module reads for a poll period on the node and returns early when the launcher ends or a rank
            # starts, ends or reports an epoch.
            status = execute(self, "multinode.training.job_status", task_vars,
                             {"job_dir": args["job_dir"], "offsets": offsets, "stop": stop, "check_pid": args["check_pid"],
                              "wait": 0 if stop else args["poll"], "ranks_to_end": self._ranks_to_end(args, follower),
                              "until_milestone": True})
            if stop:
                cancelled = True
                display.display(f"[{follower.run_dir.name}] cancel asked for ({cancel_file}): stopping the job on every node")
            self._stop_when_orphaned(playbook)
            show(follower, status["chunks"])
            if status["offsets"] != offsets:
                offsets = dict(status["offsets"])
                keep_offsets(follower.run_dir, offsets)
            if not cancelled and stall is None:
                stall = follower.watchdog.stalled(time.monotonic())
                if stall is not None:
                    self._stop_stalled(args, follower, stall, task_vars)
            if follower.ended:
                return "launcher_exit", cancelled, offsets, stall
            if args["until"] == "ranks_succeeded" and follower.ranks_succeeded and not cancelled:
                return "ranks_succeeded", cancelled, offsets, stall
            gone = status.get("launcher_running") is False
            if args["container"] and polled >= next_liveness:
                next_liveness = polled + args["liveness_every"]
                gone = not self._container_running(args["container"], task_vars)
            if gone or polled >= deadline:
                # What the launcher wrote in its last moments.
                last = execute(self, "multinode.training.job_status", task_vars, {"job_dir": args["job_dir"], "offsets": offsets})
                show(follower, last["chunks"])
                return ("not_running" if gone else "timeout"), cancelled, dict(last["offsets"]), stall

    def _stop_stalled(self, args: dict[str, Any], follower: Follower, stall: Stall, task_vars: dict[str, Any]) -> None:
        """Say which rank stalled, keep it for the summary (stall.json) and stop the job on every node."""
        record = {**stall.as_record(), "detected_at": round(time.time(), 3)}
        write_json(follower.run_dir / STALL_FILE, record)
        append_record(follower.run_dir, record)
        display.display(f"[{follower.run_dir.name}] {record['text']}: stopping the job on every node")
        execute(self, "multinode.training.job_status", task_vars,
                {"job_dir": args["job_dir"], "stop": True, "stop_reason": events.STOP_STALLED})

    @staticmethod
    def _stop_when_orphaned(playbook: int) -> None:
        """Stop, writing nothing more, once the ansible-playbook ``playbook`` this worker ran for has gone."""
        if os.getppid() != playbook:
            raise AnsibleActionFail(f"the ansible-playbook following this job (pid {playbook}) has gone: stopped following")

    @staticmethod
    def _ranks_to_end(args: dict[str, Any], follower: Follower) -> int:
        """The ranks whose end lets the node's read return early: those not ended yet, while none failed."""
        if args["until"] != "ranks_succeeded" or any(follower.exit_codes.values()):
            return 0
        return max(args["world_size"] - len(follower.exit_codes), 0)

    def _container_running(self, name: str, task_vars: dict[str, Any]) -> bool:
        info = execute(self, "community.docker.docker_container_info", task_vars, {"name": name})
        return bool(info.get("exists") and info["container"]["State"]["Running"])
