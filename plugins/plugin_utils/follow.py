# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Following a running job from the controller: what to show, what to keep, when it ended.

The job_wait action feeds each job_status result to :class:`Follower`; it returns the lines to show
and keeps the run directory's live files up to date: ``live.log`` (every rank's output, each line
behind ``[rank N node]``, and the launch script's events in words) and ``progress.jsonl`` (one JSON
record per line: started, ended, epoch, node_exit, abort, cancel, launcher_exit), which
``python -m multinode_training watch`` and ``multinode_training.train()`` read while the job runs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ansible.utils.display import Display

from ansible_collections.multinode.training.plugins.module_utils import events, progress, prune
# The stall the watchdog found in the current attempt and the stragglers named (job_wait writes them, run_summary
# reads them).
from ansible_collections.multinode.training.plugins.module_utils.run_report import (
    STALL_FILE, STRAGGLERS_FILE, read_stragglers, write_json,
)
from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_FILE
from ansible_collections.multinode.training.plugins.module_utils.secret_env import masked, masked_text
from ansible_collections.multinode.training.plugins.module_utils.stragglers import StragglerWatch
from ansible_collections.multinode.training.plugins.module_utils.watchdog import Watchdog

display = Display()

LIVE_LOG = "live.log"
PROGRESS_FILE = "progress.jsonl"
CANCEL_FILE = "cancel"
# Who follows the running job (the ansible-playbook process), where the job runs and how to reach it: a cancel asked
# for when that process has gone reaches the launcher node itself (multinode_training.api.cancel).
FOLLOWING_FILE = "following.json"
# What a process that takes over a job nobody follows any more needs (playbooks/attach.yml): the job's own settings
# as its launch resolved them (job_wait's handover, written once per attempt) and how far its follower had read the
# job's logs (rewritten after each read, so kept apart from the handover, whose size grows with the nodes).
FOLLOW_STATE = "follow.json"
FOLLOW_OFFSETS = "follow-offsets.json"
LATEST = "latest"
# Earlier attempts of a restarted job: attempts/<n>/ holds each one's collected nodes/, stall.json and summary.json.
ATTEMPTS_DIR = "attempts"
# What an earlier run of the same job id left that would mislead watch, train() or job_wait.
STALE_FILES = (
    LIVE_LOG, PROGRESS_FILE, CANCEL_FILE, SUMMARY_FILE, STALL_FILE, STRAGGLERS_FILE, FOLLOW_STATE, FOLLOW_OFFSETS
)
# What job_collect unpacked for an earlier run of the same id: the new run's collection must not merge into it.
COLLECTED_DIR = "nodes"
# At most this much of each collected log is read after following on the node stopped.
REST_MAX_BYTES = 64 * 1024 * 1024


def private_dir(path: Path) -> Path:
    """``path`` (a run directory), created when missing, readable by its owner only (0700) whatever the umask and
    whoever created it first."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def append_text(path: Path, text: str) -> None:
    """Add ``text`` to ``path`` (a live file of a run), which is created readable by its owner only (0600)."""
    with open(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8") as file:
        file.write(text)


def start_run_dir(runs_dir: Path, job_id: str, keep: int) -> list[str]:
    """Make ``runs_dir/job_id`` the running job's directory: created (its owner's only: the settings and logs of
    a job are), cleared of an earlier run's live files, ``runs_dir/latest`` pointing at it, and only the newest
    ``keep`` runs left (0 keeps all). What changed."""
    run_dir = runs_dir / job_id
    changes = [] if run_dir.is_dir() else [f"created {run_dir}"]
    private_dir(run_dir)
    for name in STALE_FILES:
        if (run_dir / name).exists():
            (run_dir / name).unlink()
            changes.append(f"removed the earlier run's {name}")
    for name in (COLLECTED_DIR, ATTEMPTS_DIR):
        if (run_dir / name).is_dir():
            shutil.rmtree(run_dir / name)
            changes.append(f"removed the earlier run's {name}/")
    latest = runs_dir / LATEST
    if not latest.is_symlink() or os.readlink(latest) != job_id:
        temporary = runs_dir / f".{LATEST}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(job_id)
        temporary.replace(latest)
        changes.append(f"{latest} -> {job_id}")
    removed = prune.prune(str(runs_dir), keep, frozenset([job_id]))[0]
    return changes + [f"removed the old run {name}" for name in removed]


@dataclass
class Follower:
    """One job's progress as seen so far; ``run_dir`` is the controller's runs/<job-id>/."""

    run_dir: Path
    world_size: int
    heartbeat_seconds: float = 30.0
    # The secret values of the job's environment (secret_env.secret_values): masked in whatever the job logged before
    # anything of it is shown or kept.
    secret_values: tuple[str, ...] = ()
    watchdog: Watchdog = field(default_factory=lambda: Watchdog(timeout=0))
    straggler_watch: StragglerWatch = field(default_factory=lambda: StragglerWatch(margin=0))
    started: set[int] = field(default_factory=set)
    exit_codes: dict[int, int] = field(default_factory=dict)  # the ranks that ended so far
    launcher_exit_code: int | None = None
    epochs: int = 0
    # The attempt's first training step was seen: progress.jsonl and the live view keep that one (when the job trains
    # again after a restart); later steps are the rank's output like any line.
    stepped: bool = False
    last_output: str = ""
    shown_at: float = field(default_factory=time.monotonic)
    began: float = field(default_factory=time.monotonic)

    def feed(self, chunks: Mapping[str, str], now: float | None = None) -> list[str]:
        """Take one job_status result's new text; the lines to show now."""
        now = time.monotonic() if now is None else now
        records = self._first_step_only(
            progress.progress_records({name: masked_text(text, self.secret_values) for name, text in chunks.items()})
        )
        self.watchdog.observe(records, now)
        self._append([record for record in records if record["kind"] != "beat"])
        shown = [line for line in map(self._line, records) if line]
        named = self.straggler_watch.observe(records, now)
        shown += [self._keep_straggler(straggler.as_record()) for straggler in named]
        if any(record["kind"] == "started" for record in records):
            shown.append(f"ranks started: {len(self.started)} of {self.world_size}")
        if any(record["kind"] == "ended" for record in records):
            shown.append(f"ranks ended: {len(self.exit_codes)} of {self.world_size}")
        if shown:
            self.shown_at = now
        elif now - self.shown_at >= self.heartbeat_seconds:
            self.shown_at = now
            shown.append(self._heartbeat(now))
        return shown

    @property
    def ended(self) -> bool:
        """The launch script logged its exit."""
        return self.launcher_exit_code is not None

    @property
    def ranks_succeeded(self) -> bool:
        """Every rank of the world ended with exit code 0 (the launcher itself may still be winding down)."""
        return 0 < self.world_size <= len(self.exit_codes) and not any(self.exit_codes.values())

    def _line(self, record: dict[str, Any]) -> str | None:
        kind = record["kind"]
        if kind == "started":
            self.started.add(int(record["rank"]))
        elif kind == "ended":
            self.exit_codes[int(record["rank"])] = int(record["code"])
            # Counted in one line per feed; a failed rank is named.
            return progress.describe(record) if record["code"] else None
        elif kind == "output":
            self.last_output = f"rank {record['rank']} ({record['node']}): {record['text']}"
        elif kind == "epoch":
            self.epochs += 1
        elif kind == events.LAUNCHER_EXIT and isinstance(record.get("code"), int):
            self.launcher_exit_code = int(record["code"])
        return progress.describe(record)

    def _first_step_only(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``records`` without the step records after the attempt's first."""
        kept = []
        for record in records:
            if record["kind"] == "step":
                if self.stepped:
                    continue
                self.stepped = True
            kept.append(record)
        return kept

    def _keep_straggler(self, record: dict[str, Any]) -> str:
        """Add a straggler to the run's records (progress.jsonl, live.log, stragglers.json); its line to show."""
        append_record(self.run_dir, record)
        named = read_stragglers(self.run_dir) + [{**record, "detected_at": round(time.time(), 3)}]
        write_json(self.run_dir / STRAGGLERS_FILE, named)
        return str(record["text"])

    def _heartbeat(self, now: float) -> str:
        running = f"{int(now - self.began)} s, {len(self.started)} of {self.world_size} ranks started"
        return f"still training ({running})" + (f"; last output: {self.last_output[:160]}" if self.last_output else "")

    def _append(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        live = []
        for record in records:
            if record["kind"] == "output":
                live.append(f"[rank {record['rank']} {record['node']}] {record['text']}\n")
            elif record["kind"] != "epoch":
                described = progress.describe(record) or f"rank {record['rank']} started on {record['node']}"
                live.append(f"[job] {described}\n")
        append_text(self.run_dir / LIVE_LOG, "".join(live))
        append_text(self.run_dir / PROGRESS_FILE, "".join(
            progress.record_line({**record, "text": progress.describe(record), "time": round(time.time(), 3)})
            for record in records
            if record["kind"] != "output"
        ))


def keep_handover(run_dir: Path, handover: Mapping[str, Any], secret_env_names: Iterable[str] = ()) -> None:
    """FOLLOW_STATE: the job's handover, as its attempt starts (no log of it read yet), with each node's secret
    environment values masked (a job taken over is not launched again: it needs only their names)."""
    write_json(run_dir / FOLLOW_STATE, {"handover": masked(dict(handover), secret_env_names)})
    keep_offsets(run_dir, {})


def keep_offsets(run_dir: Path, offsets: Mapping[str, int]) -> None:
    """FOLLOW_OFFSETS: the offsets the job's logs were read to (after what they held was shown)."""
    write_json(run_dir / FOLLOW_OFFSETS, {"offsets": dict(offsets)})


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; empty when there is none or it is not one."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def recorded_follow_state(run_dir: Path) -> dict[str, Any]:
    """The handover and offsets the job's last follower left; ValueError when there is no handover (the job was
    never followed on its nodes)."""
    handover = read_json_object(run_dir / FOLLOW_STATE).get("handover")
    if not isinstance(handover, dict):
        raise ValueError(f"{run_dir}: no {FOLLOW_STATE} with a handover: the job was never followed on its nodes")
    offsets = read_json_object(run_dir / FOLLOW_OFFSETS).get("offsets") or {}
    return {"handover": handover, "offsets": {str(name): int(offset) for name, offset in offsets.items()}}


def following_of(  # pylint: disable=too-many-arguments,too-many-positional-arguments
    launcher_host: str, job_dir: str, task_vars: dict[str, Any], become: bool, extra_vars: Mapping[str, Any],
    secret_env_names: Iterable[str] = (),
) -> dict[str, Any]:
    """What FOLLOWING_FILE records besides the follower's process: the inventory, configuration and extra variables
    the job's ansible-playbook ran with (a process that takes the job over runs with the same, less the launcher's
    own, so the secret values of an environment among them are masked), whether its play becomes another user, and
    the job's node and directory."""
    return {
        "inventory": [str(source) for source in task_vars.get("ansible_inventory_sources") or []],
        "ansible_config": str(task_vars.get("ansible_config_file") or ""),
        # As JSON keeps them (a date of a YAML -e file becomes its text).
        "extra_vars": masked(json.loads(json.dumps(dict(extra_vars), default=str)), secret_env_names),
        "become": bool(become),
        "launcher_host": launcher_host,
        "job_dir": job_dir,
    }


def write_following(run_dir: Path, following: Mapping[str, Any]) -> None:
    """FOLLOWING_FILE: who follows the job (``pid``: this ansible-playbook's process, the parent of the worker
    running the action), the inventory and configuration it runs with, whether its play becomes another user, and
    the job's launcher node and directory."""
    write_json(run_dir / FOLLOWING_FILE, {**following, "pid": os.getppid()})


def append_record(run_dir: Path, record: dict[str, Any]) -> None:
    """Add a record the controller made (with its ``text``) to the run's ``live.log`` and ``progress.jsonl``."""
    append_text(run_dir / LIVE_LOG, f"[job] {record['text']}\n")
    append_text(run_dir / PROGRESS_FILE, progress.record_line({**record, "time": round(time.time(), 3)}))


def show(follower: Follower, chunks: Mapping[str, str]) -> None:
    """Feed ``follower`` a job's new log text and show the progress lines it makes of it."""
    for line in follower.feed(chunks):
        display.display(f"[{follower.run_dir.name}] {line}")


def collected_rest(logs_dir: Path, offsets: Mapping[str, int]) -> dict[str, str]:
    """What the job wrote to ``logs_dir`` (collected to the controller) after ``offsets``, where following it on the
    node stopped, by log file name."""
    if not logs_dir.is_dir():
        return {}
    chunks = progress.read_new_text(str(logs_dir), offsets, REST_MAX_BYTES)
    return {name: chunk.text for name, chunk in chunks.items()}
