# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Turn a collected run into its summary: success from exit codes, failures root cause first.

A collected run directory holds ``nodes/<node>/`` per node with ``status/rank-<N>.json``
(written by the rank wrapper, rank_contract.py), ``logs/rank-<N>.log`` (each rank's
output), and on the launcher node ``logs/launcher.log`` (the launch script's events,
events.py), ``logs/ssh-<node>.log`` (each node's answer to the SSH check) and, for
torchrun, ``logs/<node>.log`` (each agent's output). :func:`read_run_dir` reads them,
:func:`summarize` decides.

A run succeeded when it did not time out, the launcher and every torchrun agent exited 0
and every one of the ``world_size`` ranks recorded exit code 0. The optional events a
training script prints (epoch, result) only add metrics. A run that failed after a stop was
asked for (the launch script logged a ``cancel`` event) is ``cancelled``.

Pure Python (no Ansible imports) so it can be unit tested on its own.
"""

from __future__ import annotations

import json
import os
import re
import signal as signals
from dataclasses import dataclass, field
import tempfile
from pathlib import Path
from typing import Any, Mapping

from ansible_collections.multinode.training.plugins.module_utils import events as kinds
from ansible_collections.multinode.training.plugins.module_utils.secret_env import masked, masked_text, secret_values
from ansible_collections.multinode.training.plugins.module_utils.rank_exit_guard import (
    EXIT_STATUS,
    LOST_PEER,
    PEER_GONE_TEXTS,
    SCRIPT_ENDED,
)
from ansible_collections.multinode.training.plugins.module_utils import world
from ansible_collections.multinode.training.plugins.module_utils import watchdog
from ansible_collections.multinode.training.plugins.module_utils import docker_api

_DECODER = json.JSONDecoder()
STALL_FILE = "stall.json"  # the watchdog's finding in the run directory (job_wait)
STRAGGLERS_FILE = "stragglers.json"  # the ranks the straggler watch named, every attempt's (job_wait)
COMMAND_NOT_FOUND = 127
_DIAGNOSTIC_CHARS = 4000  # the tail of a log that explain_ssh_failure() reads

# Ordering of failure reasons: what broke a node first, then what failed on its own (by time),
# then the timeout, then what followed from an earlier failure.
_NODE_DOWN, _FAILED, _TIMEOUT, _CONSEQUENCE = range(4)

# What kind of failure a reason is (the summary's root_cause_kind; restart.py decides from it which are restarted).
WORKER_LOST = "worker_lost"  # a worker container (or host-mode sshd) died or was removed
NODE_LOST = "node_lost"  # a node did not answer the controller
CONNECTION = "connection"  # the cluster's SSH could not reach a node or lost it
SSH_TRUST = "ssh_trust"  # a node's SSH host key changed or unknown, or the cluster's key refused: provisioning repairs it
SIGNAL = "signal"  # a rank killed by a signal from outside (SIGKILL, SIGTERM, ...)
STALL = "stall"  # no rank made progress (the watchdog)
TEARDOWN_RACE = "teardown_race"  # gloo's exit race after the rank's work (pytorch/pytorch#117762)
EXIT = "exit"  # a rank's own code failed: a non-zero exit or a signal it raised (SIGSEGV, SIGABRT, ...)
TIMEOUT = "timeout"  # the job ran past launcher_timeout
LAUNCHER = "launcher"  # the launcher itself could not run
CANCELLED = "cancelled"  # a stop was asked for
CONSEQUENCE = "consequence"  # followed from an earlier failure
# Signals a process raises itself, from its own code (a fault, abort()): its exit is the code's, not the node's.
SELF_RAISED_SIGNALS = frozenset(
    {signals.SIGABRT, signals.SIGSEGV, signals.SIGFPE, signals.SIGILL, signals.SIGBUS, signals.SIGTRAP, signals.SIGSYS}
)


def parse_events(text: str) -> list[dict[str, Any]]:
    """Every JSON object with an ``event`` key, one per line, in log order.

    Anything before the first ``{`` of a line (the rank wrapper's ``[rank 0 node1] ``,
    ``node1: ``, ...) and after the object is ignored, and so
    are lines that hold no such object (launcher noise, tracebacks).
    """
    found: list[dict[str, Any]] = []
    for line in text.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            obj = _DECODER.raw_decode(line, start)[0]
        except ValueError:
            continue
        if isinstance(obj, dict) and "event" in obj:
            found.append(obj)
    return found


@dataclass
class RunRecords:
    """What a collected run directory holds, read by :func:`read_run_dir`."""

    launcher_events: list[dict[str, Any]] = field(default_factory=list)
    rank_status: dict[int, dict[str, Any]] = field(default_factory=dict)
    rank_events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    rank_log_tails: dict[int, str] = field(default_factory=dict)
    ssh_logs: dict[str, str] = field(default_factory=dict)
    agent_logs: dict[str, str] = field(default_factory=dict)
    mpi_log_tail: str = ""  # the end of the launcher node's mpiexec.log
    stall: dict[str, Any] = field(default_factory=dict)  # the watchdog's stall.json, when it stopped the job
    world: dict[int, dict[str, Any]] = field(default_factory=dict)  # each rank's world record (world.py)
    rank_stacks: dict[int, str] = field(default_factory=dict)  # the rank wrapper's py-spy dump of an idle rank
    # The world records of the processes each rank started (world.py), rank -> records.
    spawned_world: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def read_run_dir(run_dir: Path, node_names: list[str]) -> RunRecords:
    """The records of every node under ``run_dir/nodes/<node>/``; missing files are simply absent."""
    records = RunRecords(stall=_json_object(_read(run_dir / STALL_FILE)))
    for node in node_names:
        logs = run_dir / "nodes" / node / "logs"
        status_dir = run_dir / "nodes" / node / "status"
        records.launcher_events += parse_events(_read(logs / "launcher.log"))
        records.mpi_log_tail += _read(logs / "mpiexec.log")[-_DIAGNOSTIC_CHARS:]
        for path in sorted(status_dir.glob("rank-*.json")):
            status = _json_object(_read(path))
            if isinstance(status.get("rank"), int):
                records.rank_status[status["rank"]] = status
        for path in sorted(status_dir.glob(world.WORLD_RECORD_GLOB)):
            record = _json_object(_read(path))
            if isinstance(record.get("rank"), int):
                records.world[record["rank"]] = record
        for path in sorted(status_dir.glob(world.SPAWNED_WORLD_RECORD_GLOB)):
            record = _json_object(_read(path))
            if isinstance(record.get("rank"), int):
                records.spawned_world.setdefault(record["rank"], []).append(record)
        for path in sorted(logs.glob("rank-*.log")):
            rank = path.stem[len("rank-") :]
            if rank.isdigit():
                text = _read(path)
                records.rank_events[int(rank)] = parse_events(text)
                records.rank_log_tails[int(rank)] = text[-_DIAGNOSTIC_CHARS:]
        for path in sorted(logs.glob(kinds.STACK_DUMP.format(rank="*"))):
            rank = path.stem[len("stack-rank-") :]
            if rank.isdigit():
                records.rank_stacks[int(rank)] = _read(path)
        for other in node_names:
            if (logs / f"ssh-{other}.log").exists():
                records.ssh_logs[other] = _read(logs / f"ssh-{other}.log")[-_DIAGNOSTIC_CHARS:]
            if (logs / f"{other}.log").exists():
                records.agent_logs[other] = _read(logs / f"{other}.log")[-_DIAGNOSTIC_CHARS:]
    return records


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# What ssh printed when it failed: its meaning, and whether the node is not trusted or not authorized (SSH_TRUST: no
# restart repairs a changed host key or a missing key, and a changed host key is a possible attack) or did not answer
# or dropped the connection (CONNECTION).
_SSH_FAILURES = (
    ("REMOTE HOST IDENTIFICATION HAS CHANGED", "SSH host key changed (possible man-in-the-middle), connection refused", SSH_TRUST),
    ("Host key verification failed", "SSH host key not in the pinned known_hosts, connection refused", SSH_TRUST),
    ("Permission denied", "SSH login refused (the cluster's identity key is not authorized there)", SSH_TRUST),
    ("Connection refused", "SSH connection refused (no sshd on the cluster port: is the worker running?)", CONNECTION),
    ("No route to host", "no route to host (node down or network unreachable)", CONNECTION),
    ("timed out", "SSH connection timed out (node down, unreachable or port filtered)", CONNECTION),
    ("Could not resolve hostname", "host name does not resolve", CONNECTION),
    ("Timeout, server", "connection lost (the node stopped answering)", CONNECTION),
    ("closed by remote host", "connection lost (closed by the node)", CONNECTION),
    ("Connection reset", "connection lost (reset)", CONNECTION),
    ("Broken pipe", "connection lost (broken pipe)", CONNECTION),
    # The wait for the node's set-up of this launch (the launch started with the launcher node's own set-up).
    (kinds.NOT_READY_TEXT, "the job's set-up there failed or did not finish in time (the play names the error on this node)", LAUNCHER),
)


def ssh_failure(text: str, code: int) -> tuple[str, str]:
    """Why ``ssh`` failed in plain words, from what it printed and its exit code, and the kind of failure."""
    for needle, meaning, kind in _SSH_FAILURES:
        if needle in text:
            return meaning, kind
    if code == 255:
        return "SSH connection failed or was lost (ssh exited 255)", CONNECTION
    return f"exited {code}", CONNECTION


def explain_ssh_failure(text: str, code: int) -> str:
    """Plain words for why ``ssh`` failed, from what it printed and its exit code."""
    return ssh_failure(text, code)[0]


def describe_signal(number: int) -> str:
    """``SIGKILL`` for 9, with a hint where the usual sender is known."""
    try:
        name = signals.Signals(number).name
    except ValueError:
        return f"signal {number}"
    hint = ", e.g. the kernel's out-of-memory killer" if number == signals.SIGKILL else ""
    return f"signal {number} ({name}{hint})"


@dataclass(frozen=True, order=True)
class _Failure:
    tier: int
    time: float
    text: str
    kind: str = field(default=CONSEQUENCE, compare=False)


# What a rank prints when the gloo teardown race kills it at interpreter exit, after its work
# (pytorch/pytorch#117762: a gloo worker thread takes the GIL while Python finalizes).
_TEARDOWN_ABORT = "terminate called without an active exception"


def _no_record(rank: int | None, lost_nodes: list[str]) -> str:
    """Why ``rank`` (None: every rank) left no status record. Beside a lost node the record may have gone with it: a
    lost node's files are not collected, and which ranks ran there is not known without them."""
    if not lost_nodes:
        return "no rank started" if rank is None else f"rank {rank} never started"
    nodes = ", ".join(lost_nodes)
    if rank is None:
        return f"no rank left a record: lost with {nodes}, or none started"
    return f"rank {rank} left no record: lost with {nodes}, or never started"


# Said of a rank whose failing end is known from its world record only (_statuses).
_ENDED_UNRECORDED = "its process was killed before its wrapper recorded the end"
# Said of a rank that exited failing on a peer that had gone, while another rank failed on its own (_lost_a_peer).
_LOST_ITS_PEER = "it lost its connection to a rank that had failed"


def _lost_a_peer(records: RunRecords, rank: int) -> bool:
    """Whether ``rank`` ended on a peer of its collectives that had gone: its own code said so (its world record),
    or its log's end does (a rank that is not Python, or one whose guard did not record it)."""
    tail = records.rank_log_tails.get(rank, "")
    return (records.world.get(rank) or {}).get(LOST_PEER) is True or any(text in tail for text in PEER_GONE_TEXTS)


def _statuses(records: RunRecords) -> dict[int, dict[str, Any]]:
    """Each rank's status record, where its wrapper recorded no end but its own code ended failing (its world
    record's exit status, not 0) with that end: its code and when its code ended.

    mpiexec stops every rank as soon as one has exited non-zero, and the rank whose exit broke the others'
    collectives can be still in its interpreter's teardown then, its wrapper killed with it. Only a failing status
    is taken from the world record: a rank whose wrapper never saw it exit 0 never counts as having succeeded.
    """
    statuses = dict(records.rank_status)
    for rank, status in records.rank_status.items():
        world_record = records.world.get(rank) or {}
        code = _code_exit_status(world_record)
        if status.get("code") is None and code not in (None, 0):
            statuses[rank] = {**status, "code": code, "ended": world_record[SCRIPT_ENDED], "unrecorded": True}
    return statuses


def _code_exit_status(world_record: Mapping[str, Any]) -> int | None:
    """The exit status a rank's own code ended with, by its world record (an int, and when it ended); else None."""
    code = world_record.get(EXIT_STATUS)
    valid = isinstance(code, int) and not isinstance(code, bool) and isinstance(world_record.get(SCRIPT_ENDED), float)
    return code if valid else None


def _end_times(records: RunRecords, world_size: int) -> dict[int, float]:
    """When each rank that ended with a failing status ended, to put the first first.

    By when its own code ended (its world record), if every such rank recorded that: a rank that exits 3 breaks the
    others' collectives only as its process is torn down, and under a launcher that does not stop them they can end
    their processes before it ends its own. Otherwise by when its wrapper saw its process end (its status record).
    """
    ended = {
        rank: float(status.get("ended") or float("inf"))
        for rank, status in _statuses(records).items()
        if rank < world_size and status.get("code") not in (None, 0) and not status.get("stopped")
    }
    return world.script_end_times(records.world, sorted(ended)) or ended


def _rank_failures(
    records: RunRecords,
    world_size: int,
    lost_nodes: list[str],
    followed: Mapping[int, int],
) -> list[_Failure]:
    rank_status, log_tails = _statuses(records), records.rank_log_tails
    if not rank_status and not followed:
        return [_Failure(_CONSEQUENCE, float("inf"), _no_record(None, lost_nodes))]
    end_times = _end_times(records, world_size)
    left_early = _left_early(records, world_size, end_times)
    # Ranks killed or failing on their own break the others' collectives: those that then exit failing on the peer
    # that had gone come after them, whatever order the ends were recorded in (a killed rank's end is recorded by its
    # wrapper, after the others' code may have ended on it). When every failing rank lost a peer, none is set back.
    set_back = {rank for rank in end_times if _lost_a_peer(records, rank)}
    if set_back == set(end_times):
        set_back = set()
    failures = []
    for rank in range(world_size):
        status = rank_status.get(rank)
        if status is None and followed.get(rank) == 0:
            # It exited 0 as the controller followed it: only its record went, with its node (lost before collection).
            continue
        if status is None:
            failures.append(_Failure(_CONSEQUENCE, float("inf"), _no_record(rank, lost_nodes)))
            continue
        where = f"rank {rank} on {status.get('node', '?')}"
        code = status.get("code")
        ended = end_times.get(rank, float(status.get("ended") or float("inf")))
        if code is None and rank in left_early:
            continue
        if code is None:
            failures.append(
                _Failure(_CONSEQUENCE, float("inf"), f"{where} left no exit status (it was killed with its wrapper or node)")
            )
        elif status.get("stopped"):
            failures.append(_Failure(_CONSEQUENCE, ended, f"{where} was stopped after the failure (exit {code})"))
        elif status.get("signal"):
            number, hint, kind = int(status["signal"]), "", SIGNAL
            if number == signals.SIGABRT and _TEARDOWN_ABORT in log_tails.get(rank, ""):
                hint = " at interpreter exit, after its work (the gloo teardown race of pytorch/pytorch#117762)"
                kind = TEARDOWN_RACE
            elif number in SELF_RAISED_SIGNALS:
                kind = EXIT
                # gloo's I/O thread aborts the process on a peer that had gone (an uncaught gloo::IoException).
                hint = f" ({_LOST_ITS_PEER})" if rank in set_back else ""
            tier = _CONSEQUENCE if kind == EXIT and rank in set_back else _FAILED
            failures.append(_Failure(tier, ended, f"{where} killed by {describe_signal(number)}{hint}", kind))
        elif code != 0:
            notes = [_LOST_ITS_PEER] * (rank in set_back) + [_ENDED_UNRECORDED] * bool(status.get("unrecorded"))
            how = f" ({'; '.join(notes)})" if notes else ""
            tier = _CONSEQUENCE if rank in set_back else _FAILED
            failures.append(_Failure(tier, ended, f"{where} exited {code}{how}", EXIT))
    return failures + list(left_early.values())


def _code_ended_zero(status: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """Whether a rank exited 0: its wrapper recorded it, or, its wrapper having recorded no end, its own code ended
    with exit status 0 (its world record): under mpiexec a rank that left early can still be in its interpreter's
    teardown when the others fail on it, and mpiexec kills it with its wrapper then."""
    if status.get("code") is not None:
        return status.get("code") == 0
    return _code_exit_status(record) == 0


def _left_early(records: RunRecords, world_size: int, failed_end_times: Mapping[int, float]) -> dict[int, _Failure]:
    """The ranks that exited 0 before the first failing rank ended, when a failed rank lost its connection to a peer:
    a rank that leaves while the others still need it (an early ``sys.exit(0)``, ``os._exit(0)``) fails nothing of its
    own, and the others fail after it with errors of their own. It left when its own code ended (its world record),
    else when its process ended; a failure of another kind (a full disk) names nobody."""
    if not any(_lost_a_peer(records, rank) for rank in failed_end_times):
        return {}
    first_failure = min(failed_end_times.values())
    left = {}
    for rank, status in sorted(records.rank_status.items()):
        record = records.world.get(rank) or {}
        # A normal exit leaves the group at the end of its code; the interpreter's teardown can take seconds more.
        ended = float(record.get(SCRIPT_ENDED) or status.get("ended") or float("inf"))
        if rank >= world_size or not _code_ended_zero(status, record) or ended >= first_failure:
            continue
        # Its group recorded, its interpreter's end not: it ended without Python's exit (atexit never ran).
        hint = " without Python's normal exit (os._exit?)" if record.get("groups") and not record.get("ended") else ""
        where = f"rank {rank} on {status.get('node', '?')}"
        left[rank] = _Failure(_FAILED, ended, f"{where} left early: it exited 0{hint} while the other ranks still needed"
                              " it, and they lost their connection to it", EXIT)
    return left


def _launcher_failures(records: RunRecords, launcher: str) -> list[_Failure]:
    failures = []
    for event in records.launcher_events:
        kind, code, node = event.get("event"), event.get("code"), event.get("node")
        when = float(event.get("time") or 0.0)
        # What ran on the node: node_exit names it; a launch script older than that field ran torchrun agents only.
        agent = event.get("agent") or f"{launcher} agent"
        if kind == kinds.SSH_CHECK and code:
            reason, ssh_kind = ssh_failure(records.ssh_logs.get(str(node), ""), int(code))
            failures.append(_Failure(_NODE_DOWN, when, f"{node}: {reason}", ssh_kind))
        elif kind == kinds.STAGED and code:
            failures.append(
                _Failure(_NODE_DOWN, when, f"{node}: the checkpoint to resume from could not be copied there", CONNECTION)
            )
        elif kind == kinds.NODE_EXIT and code and event.get("after_abort"):
            failures.append(_Failure(_CONSEQUENCE, when, f"{node}: {agent} stopped after the failure"))
        elif kind == kinds.NODE_EXIT and code == 255:
            # ssh's own failure: the connection to the node broke (its ranks' records say no more).
            reason, ssh_kind = ssh_failure(records.agent_logs.get(str(node), ""), int(code))
            failures.append(_Failure(_FAILED, when, f"{node}: {reason}", ssh_kind))
        elif kind == kinds.NODE_EXIT and code:
            # The agent ends non-zero after a rank of its node failed; that rank is the reason.
            failures.append(_Failure(_CONSEQUENCE, when, f"{node}: {agent} exited {code}"))
    return failures


_BOOTSTRAP_FAILED = re.compile(r"\[bstrap:[^@\]]*@([^\]]+)\] Error: Unable to run bstrap_proxy on (\S+)")


def _bootstrap_failures(mpi_log: str) -> list[_Failure]:
    """Intel MPI's Hydra could not start its proxy on a node (over SSH): that node is the root cause."""
    return [
        _Failure(
            _NODE_DOWN, 0.0, f"{target}: Intel MPI could not start its bootstrap proxy there (over SSH from {source})", CONNECTION
        )
        for source, target in _BOOTSTRAP_FAILED.findall(mpi_log)
    ]


def _worker_failures(worker_states: dict[str, dict[str, Any]]) -> list[_Failure]:
    failures = []
    for node, state in worker_states.items():
        what = state.get("what", "worker")
        if state.get("unreachable"):
            failures.append(_Failure(_NODE_DOWN, 0.0, f"{node}: the node does not answer (down or cut off)", NODE_LOST))
            continue
        if state.get("running", True):
            continue
        if state.get("error") == docker_api.missing(0):  # container_details: the engine's socket did not answer
            reason = f"{node}: its container engine does not answer (the node restarted without it, or Docker was"
            reason += f" stopped), so its {what} cannot run; run playbooks/train.yml (or provision.yml)"
            failures.append(_Failure(_NODE_DOWN, 0.0, reason, WORKER_LOST))
            continue
        if not state.get("present", True):
            failures.append(
                _Failure(_NODE_DOWN, 0.0, f"{node}: there is no {what} (removed; run the provisioning again)", WORKER_LOST)
            )
            continue
        detail = "killed by the out-of-memory killer" if state.get("oom_killed") else f"exit code {state.get('exit_code')}"
        failures.append(_Failure(_NODE_DOWN, 0.0, f"{node}: the {what} is not running, it died ({detail})", WORKER_LOST))
    return failures


def _stall_failures(stall: dict[str, Any], stacks: dict[int, str]) -> list[_Failure]:
    """The watchdog stopped the job: the stalled rank is the root cause, whatever the stop did to the others; of the
    ranks that stopped together, the one outside the collectives the others wait in (their stack dumps)."""
    if not stall.get("text"):
        return []
    text = str(watchdog.narrowed_by_stacks(stall, stacks)["text"])
    return [_Failure(_NODE_DOWN, float(stall.get("detected_at") or 0.0), text, STALL)]


def failure_causes(
    records: RunRecords,
    *,
    launcher: str,
    world_size: int,
    timed_out: bool,
    launcher_exit_code: int | None,
    worker_states: dict[str, dict[str, Any]],
    followed_exit_codes: Mapping[int, int] | None = None,
) -> list[tuple[str, str]]:
    """Why the run failed, root cause first, as (kind, reason); empty when it succeeded. ``followed_exit_codes``: each
    rank's exit code as the controller followed it live, for the ranks whose records went with a lost node."""
    followed = followed_exit_codes or {}
    failures = _worker_failures(worker_states) + _stall_failures(records.stall, records.rank_stacks)
    failures += _bootstrap_failures(records.mpi_log_tail)
    failures += _launcher_failures(records, launcher)
    lost_nodes = [node for node, state in worker_states.items() if state.get("unreachable")]
    failures += _rank_failures(records, world_size, lost_nodes, followed)
    recorded = {rank: status.get("code") for rank, status in records.rank_status.items()}
    if lost_nodes and every_rank_exited_0(world_size, recorded, followed):
        # A node lost after the training (at the collection): the ranks' work is done, what the node held is not here.
        nodes = ", ".join(lost_nodes)
        failures.append(
            _Failure(
                _CONSEQUENCE,
                float("inf"),
                f"every rank had exited 0 before {nodes} was lost: the training finished, but the job's files on"
                f" {nodes} were not collected",
            )
        )
    if timed_out:
        failures.append(_Failure(_TIMEOUT, 0.0, "timed out", TIMEOUT))
    if launcher_exit_code is not None and launcher_exit_code < 0:
        failures.append(_Failure(_CONSEQUENCE, float("inf"), "launcher did not end"))
    elif launcher_exit_code == COMMAND_NOT_FOUND and not records.rank_status:
        # The shell's code for a command it cannot find: the launcher program is not where the launch script ran.
        failures.append(
            _Failure(_FAILED, float("inf"), f"launcher exited 127: is {launcher} installed in cluster_image?", LAUNCHER)
        )
    elif launcher_exit_code:
        failures.append(_Failure(_CONSEQUENCE, float("inf"), f"launcher exited {launcher_exit_code}"))
    causes: list[tuple[str, str]] = []
    for failure in sorted(failures):
        if failure.text not in (text for _kind, text in causes):
            causes.append((failure.kind, failure.text))
    return causes


def every_rank_exited_0(world_size: int, recorded: Mapping[int, Any], followed: Mapping[int, int]) -> bool:
    """Whether every rank of the world exited 0: by its collected status record's exit code (``recorded``), or where
    that record is missing (it went with a node lost before the collection) as the controller followed it live."""
    codes = {**followed, **recorded}
    return world_size > 0 and all(codes.get(rank) == 0 for rank in range(world_size))


def _last_exit_code(records: RunRecords) -> int | None:
    exits = [event for event in records.launcher_events if event.get("event") == kinds.LAUNCHER_EXIT and "code" in event]
    return int(exits[-1]["code"]) if exits else None


def _seconds(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return round(end - start, 2)


def _phases(records: RunRecords, world_size: int, provision_seconds: float | None) -> dict[str, float | None]:
    """provision; launch = launch script start until every rank started; train = until every rank ended."""
    launched = min((float(e["time"]) for e in records.launcher_events if e.get("event") == kinds.LAUNCH), default=None)
    statuses = [records.rank_status.get(rank, {}) for rank in range(world_size)]
    all_started = all(status.get("started") is not None for status in statuses)
    all_ended = all_started and all(status.get("ended") is not None for status in statuses)
    last_started = max((float(s["started"]) for s in statuses), default=None) if all_started else None
    last_ended = max((float(s["ended"]) for s in statuses), default=None) if all_ended else None
    return {
        "provision": None if provision_seconds is None else round(provision_seconds, 2),
        "launch": _seconds(launched, last_started),
        "train": _seconds(last_started, last_ended),
    }


def _failure_detected_at(records: RunRecords) -> float | None:
    """When the failure was seen: the watchdog's stall, else the launch script's first abort, else its exit."""
    if records.stall.get("detected_at"):
        return float(records.stall["detected_at"])
    for kind in (kinds.ABORT, kinds.LAUNCHER_EXIT):
        times = [float(event["time"]) for event in records.launcher_events if event.get("event") == kind and event.get("time")]
        if times:
            return round(min(times), 3)
    return None


def _started_at(records: RunRecords) -> float | None:
    """When the first rank started."""
    return min((float(status["started"]) for status in records.rank_status.values() if status.get("started")), default=None)


def _epoch_order(event: dict[str, Any]) -> tuple[int, float]:
    """Numbered epochs in order, then the events whose epoch is missing or not a number, as printed."""
    epoch = event.get("epoch")
    return (0, float(epoch)) if isinstance(epoch, (int, float)) else (1, 0.0)


def _script_metrics(records: RunRecords) -> dict[str, Any]:
    """The optional events of rank 0: epochs and the result's metrics."""
    rank0 = records.rank_events.get(0, [])
    results = [event for event in rank0 if event.get("event") == kinds.RESULT]
    metrics = {key: value for key, value in (results[-1] if results else {}).items() if key not in ("event", "time")}
    epochs = sorted((event for event in rank0 if event.get("event") == kinds.EPOCH), key=_epoch_order)
    return {
        "test_accuracy": metrics.get("test_accuracy"),
        "metrics": metrics,
        "epochs": [
            {"epoch": event.get("epoch"), "loss": event.get("loss"), "samples_per_s": event.get("samples_per_s")}
            for event in epochs
        ],
    }


# The lines a failing process ends its log with: an uncaught Python exception's last traceback line (its type, a name
# ending like one, and its message), a C++ exception that ended the process (the runtime's "terminate called after
# throwing ..." and its "what(): ..."), CPython's fatal error; in the order they say most, as a rank's own words.
_ERROR_LINES = (
    re.compile(r"^\s*what\(\):\s+\S.*$"),
    re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)(?::\s.*)?$"),
    re.compile(r"^terminate called after throwing .*$"),
    re.compile(r"^Fatal Python error:\s.*$"),
)
# Between or after those: a traceback's frames and source lines, faulthandler's thread dumps, the collection's notes.
_DUMP_LINE = re.compile(
    r"^(?:\s|Traceback \(most recent call last\):|Thread 0x|Current thread 0x|Extension modules:|\(multinode\) )"
)
_TORCH_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ?")  # torch's prefix of what a rank logs on its way out
_ERROR_CHARS = 300  # of the line quoted, at most
_FIRST_RANK = re.compile(r"^rank (\d+) on ")


def last_error(log_tail: str) -> str | None:
    """The error a rank's log tail ends with (_ERROR_LINES: the lines at its end, past traceback frames and thread
    dumps, the one that says most), stripped and cut to _ERROR_CHARS; None when the log ends otherwise."""
    ending: list[str] = []
    for line in reversed(log_tail.splitlines()):
        line = _TORCH_RANK_PREFIX.sub("", line.rstrip())
        if not line.strip() or (_DUMP_LINE.match(line) and not _ERROR_LINES[0].match(line)):
            continue
        if not any(pattern.match(line) for pattern in _ERROR_LINES):
            break
        ending.append(line.strip())
    for pattern in _ERROR_LINES:
        if said := next((line for line in ending if pattern.match(line)), None):
            return said if len(said) <= _ERROR_CHARS else said[: _ERROR_CHARS - 3] + "..."
    return None


def root_cause_error(records: RunRecords, causes: list[tuple[str, str]], hidden: tuple[str, ...]) -> str | None:
    """The last error of the log of the rank the first of ``causes`` names, with each of ``hidden`` (secret values)
    masked; None when the first cause is not a rank's."""
    found = _FIRST_RANK.match(causes[0][1]) if causes else None
    error = last_error(records.rank_log_tails.get(int(found.group(1)), "")) if found else None
    return masked_text(error, hidden) if error else None


def summarize(
    records: RunRecords,
    *,
    job_id: str,
    launcher: str,
    nodes: list[str],
    node_names: list[str],
    world_size: int,
    timed_out: bool,
    launcher_exit_code: int | None = None,
    worker_states: dict[str, dict[str, Any]] | None = None,
    provision_seconds: float | None = None,
    provision_changed: int | None = None,
    extra: dict[str, Any] | None = None,
    followed_exit_codes: Mapping[int, int] | None = None,
    hidden: tuple[str, ...] = (),
) -> dict[str, Any]:
    """JSON-serialisable summary of one run (see the module docstring for what succeeded means); a rank without a
    collected status record exited as ``followed_exit_codes`` says (the controller followed it live), if it says.
    ``hidden``: the job's secret values, masked in what the summary quotes of the ranks' logs."""
    if launcher_exit_code is None:
        launcher_exit_code = _last_exit_code(records)
    causes = failure_causes(
        records,
        launcher=launcher,
        world_size=world_size,
        timed_out=timed_out,
        launcher_exit_code=launcher_exit_code,
        worker_states=worker_states or {},
        followed_exit_codes=followed_exit_codes,
    )
    statuses = records.rank_status
    cancelled = any(event.get("event") == kinds.CANCEL for event in records.launcher_events)
    if cancelled and causes:
        causes.insert(0, (CANCELLED, "cancelled on request (a stop was asked for while the job ran)"))
    summary: dict[str, Any] = {
        "job_id": job_id,
        "status": ("cancelled" if cancelled else "failed") if causes else "succeeded",
        "failure_reasons": [text for _kind, text in causes],
        "root_cause_kind": causes[0][0] if causes else None,
        "root_cause_error": root_cause_error(records, causes, hidden),
        "launcher": launcher,
        "world_size": world_size,
        "nodes": list(nodes),
        "node_names": list(node_names),
        **_script_metrics(records),
        "ranks_started": sorted(rank for rank, status in statuses.items() if status.get("started") is not None),
        "rank_exit_codes": {str(rank): statuses[rank]["code"] for rank in sorted(statuses) if "code" in statuses[rank]},
        "rank_nodes": {str(rank): statuses[rank].get("node") for rank in sorted(statuses)},
        "node_exit_codes": {
            str(event["node"]): int(event["code"])
            for event in records.launcher_events
            if event.get("event") == kinds.NODE_EXIT and "node" in event and "code" in event
        },
        "launcher_exit_code": launcher_exit_code,
        "timed_out": bool(timed_out),
        "provision_changed": provision_changed,
        "phases": _phases(records, world_size, provision_seconds),
        "started_at": _started_at(records),
        "failure_detected_at": _failure_detected_at(records) if causes else None,
    }
    if extra is not None:
        summary["settings"] = dict(extra)
        if "script_args" in extra:
            # The words the launch command was given: strings, whatever type the inventory gave them.
            summary["settings"]["script_args"] = [str(word) for word in extra["script_args"]]
    return summary


# Collected files that are the job's outputs: what the ranks wrote to OUTPUT_DIR or in their working directory.
OUTPUT_DIRS = ("outputs", "work")


def collected_outputs(run_dir: Path, node_names: list[str]) -> list[str]:
    """Every collected output file, relative to ``run_dir``."""
    found = []
    for node in node_names:
        for name in OUTPUT_DIRS:
            base = run_dir / "nodes" / node / name
            found += [str(path.relative_to(run_dir)) for path in sorted(base.rglob("*")) if path.is_file()]
    return found


def run_summary(params: dict[str, Any]) -> dict[str, Any]:
    """The summary of the run collected under ``params["run_dir"]`` (the options of multinode.training.run_summary)."""
    run_dir = Path(params["run_dir"])
    provision = params["phase_stats"].get("provision", {})
    records = read_run_dir(run_dir, params["node_names"])
    summary = summarize(
        records,
        job_id=params["job_id"],
        launcher=params["launcher"],
        nodes=params["nodes"],
        node_names=params["node_names"],
        world_size=params["world_size"],
        launcher_exit_code=params["launcher_exit_code"],
        timed_out=params["timed_out"],
        worker_states=params["worker_states"],
        provision_seconds=provision.get("seconds"),
        provision_changed=provision.get("changed"),
        # A job's secret environment values never reach summary.json, the report or a tracker.
        extra=masked(params["settings"], params.get("secret_env_names") or ()),
        followed_exit_codes=params.get("followed_exit_codes") or {},
        hidden=tuple(secret_values(params["settings"], params.get("secret_env_names") or ())),
    )
    summary.update(
        job_name=params["job_name"] or None,
        resumed_from=params["resumed_from"] or None,
        outputs=collected_outputs(run_dir, params["node_names"]),
        stragglers=read_stragglers(run_dir),
        scheduler=params.get("scheduler") or None,
    )
    world.judge(summary, records.world, params.get("world_check", "fail"), records.spawned_world)
    _judge_scheduler(summary)
    return summary


def read_stragglers(run_dir: Path) -> list[dict[str, Any]]:
    """The ranks the straggler watch named in the run (its stragglers.json), in the order they were named."""
    try:
        found = json.loads((run_dir / STRAGGLERS_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [record for record in found if isinstance(record, dict)] if isinstance(found, list) else []


def _judge_scheduler(summary: dict[str, Any]) -> None:
    """A scheduler that did not see the job complete fails the run, whatever the ranks reported."""
    scheduler = summary["scheduler"]
    state = (scheduler or {}).get("state") or "COMPLETED"
    if state == "COMPLETED":
        return
    summary["failure_reasons"].append(
        f"{scheduler.get('type', 'the scheduler')} job {scheduler.get('job_id', '?')} ended {state}"
        f" (exit code {scheduler.get('exit_code') or '?'})"
    )
    if summary["status"] == "succeeded":
        summary["status"] = "failed"


def write_json(path: Path, data: dict[str, Any] | list[Any]) -> None:
    """Write ``data`` to ``path`` whole (a temporary file renamed over it), readable by its owner only (0600: a run's
    records name its nodes, settings and results); a missing directory is created 0700."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.")
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
