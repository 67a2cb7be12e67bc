# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stall watchdog: a job none of whose ranks made progress for a while, and the rank to blame.

It reads the progress records of progress.py as they arrive: a rank's output (any printed line, an epoch) is
progress, and so is the CPU time its beats report (the rank wrapper's watcher adds the rank's state and CPU seconds
every ``events.BEAT_SECONDS``): a rank busy with a long first step, an evaluation or data loading prints nothing
but works. A rank frozen (SIGSTOP, a wedged device) or blocked in a collective waiting for one makes none.

The job is stalled when no running rank made progress for ``timeout`` seconds: one rank still working (rank 0
evaluating while the others wait at a barrier) is no stall, so a healthy job is never stopped for it. The rank
blamed is one the kernel reports stopped (T) or in uninterruptible sleep (D); else the ranks that stopped making
progress first (the others stopped waiting for them).

When the ranks stopped within one beat of each other (one rank asleep or blocked outside the job's collectives,
the others waiting for it in one), the run report narrows the blame with the ranks' stack dumps
(:func:`narrowed_by_stacks`): the ranks whose main thread is not in a collective.

Pure Python (no Ansible imports) so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import BUSY_CPU_SECONDS

# The kernel's process states of a rank that cannot go on by itself: stopped (SIGSTOP, a debugger) and
# uninterruptible sleep (a wedged device or file system).
FROZEN_STATES = frozenset("TtD")

# A main thread with a frame in one of these files waits for the other ranks (a collective, a DDP backward's
# gradient all-reduce, Horovod's or DeepSpeed's communication): py-spy prints each frame's file.
COLLECTIVE_FILES = (
    "torch/distributed/",
    "torch/autograd/",
    "torch/nn/parallel/",
    "oneccl_bindings_for_pytorch/",
    "horovod/",
    "deepspeed/comm/",
    "tensorflow/python/distribute/",
    "mpi4py/",
)
# py-spy dump's lines: a thread's header, then its frames innermost first, e.g. "    all_reduce (torch/x.py:3252)".
_THREAD_HEADER = re.compile(r'^Thread \S+ \([^)]*\)(?:: "(?P<name>[^"]*)")?')  # (idle), (active+gil), ...
_FRAME = re.compile(r"^ {4}(?P<function>\S.*?) \((?P<place>[^()]+:\d+)\)$")


@dataclass
class _Pulse:
    """What the watchdog knows of one running rank."""

    node: str
    progressed_at: float
    state: str = "?"
    cpu_seconds: float | None = None


@dataclass(frozen=True)
class Stall:
    """The job made no progress for ``seconds``; ``ranks`` ((rank, node, state) in rank order) are to blame."""

    ranks: tuple[tuple[int, str, str], ...]
    seconds: float

    def describe(self) -> str:
        """``rank 1 on node2 stalled: no progress for 60 s (stopped, state T)``."""
        states = {state for _rank, _node, state in self.ranks}
        names = ", ".join(f"rank {rank} on {node}" for rank, node, _state in self.ranks)
        return f"{names} stalled: no progress for {int(self.seconds)} s{_state_words(states)}"

    def as_record(self) -> dict[str, Any]:
        """The JSON form kept in the run directory (stall.json) and in progress.jsonl."""
        return {
            "kind": events.STALL,
            "ranks": [{"rank": rank, "node": node, "state": state} for rank, node, state in self.ranks],
            "seconds": round(self.seconds, 1),
            "text": self.describe(),
        }


def _state_words(states: set[str]) -> str:
    """`` (stopped, state T)``, `` (in uninterruptible sleep, state D)``, or nothing for ranks merely idle."""
    if not states <= FROZEN_STATES:
        return ""
    what = (
        "stopped" if states <= {"T", "t"} else "in uninterruptible sleep" if states == {"D"} else "stopped or blocked"
    )
    return f" ({what}, state {'/'.join(sorted(states))})"


@dataclass
class Watchdog:
    """Fed every progress record with the time it was read; ``timeout`` 0 never finds a stall."""

    timeout: float
    pulses: dict[int, _Pulse] = field(default_factory=dict)

    def observe(self, records: Iterable[Mapping[str, Any]], now: float) -> None:
        """Take the records read at ``now``."""
        for record in records:
            kind, rank = record.get("kind"), record.get("rank")
            if not isinstance(rank, int):
                continue
            if kind == "started":
                self.pulses[rank] = _Pulse(node=str(record.get("node")), progressed_at=now)
            elif kind == "ended":
                self.pulses.pop(rank, None)
            elif rank not in self.pulses:
                continue
            elif kind in ("output", "epoch"):
                self.pulses[rank].progressed_at = now
            elif kind == "beat":
                self._beat(self.pulses[rank], record, now)

    @staticmethod
    def _beat(pulse: _Pulse, record: Mapping[str, Any], now: float) -> None:
        cpu = record.get("cpu_seconds")
        # In hundredths, as the beats print them (12.44 - 12.34 is 0.0999... in floats).
        busy = isinstance(cpu, (int, float)) and (
            pulse.cpu_seconds is None or round(cpu - pulse.cpu_seconds, 2) >= BUSY_CPU_SECONDS
        )
        pulse.state = str(record.get("state") or "?")
        if busy and pulse.state not in FROZEN_STATES:
            pulse.progressed_at = now
        if isinstance(cpu, (int, float)):
            pulse.cpu_seconds = float(cpu)

    def stalled(self, now: float) -> Stall | None:
        """The stall at ``now``, or None while a running rank made progress within ``timeout`` seconds."""
        if self.timeout <= 0 or not self.pulses:
            return None
        last_progress = max(pulse.progressed_at for pulse in self.pulses.values())
        if now - last_progress < self.timeout:
            return None
        blamed = [rank for rank, pulse in self.pulses.items() if pulse.state in FROZEN_STATES]
        if not blamed:
            # Within one beat of the first to stop: the resolution the beats give.
            first = min(pulse.progressed_at for pulse in self.pulses.values())
            blamed = [rank for rank, pulse in self.pulses.items() if pulse.progressed_at - first <= events.BEAT_SECONDS]
        ranks = tuple((rank, self.pulses[rank].node, self.pulses[rank].state) for rank in sorted(blamed))
        return Stall(ranks=ranks, seconds=now - last_progress)


def main_thread_frames(dump: str) -> list[tuple[str, str]]:
    """(function, file:line) of the main thread in a py-spy dump, innermost first; the first thread's when none is
    named MainThread; empty when the dump holds no thread (py-spy failed or is not installed)."""
    threads: list[tuple[str, list[tuple[str, str]]]] = []
    for line in dump.splitlines():
        header = _THREAD_HEADER.match(line)
        frame = _FRAME.match(line)
        if header:
            threads.append((header.group("name") or "", []))
        elif frame and threads:
            threads[-1][1].append((frame.group("function"), frame.group("place")))
    main = [frames for name, frames in threads if name == "MainThread"]
    return main[0] if main else threads[0][1] if threads else []


def in_collective(frames: list[tuple[str, str]]) -> bool:
    """Whether a main thread's frames wait for the other ranks (a frame in one of ``COLLECTIVE_FILES``)."""
    return any(
        place.startswith(files) or f"/{files}" in place for _function, place in frames for files in COLLECTIVE_FILES
    )


def narrowed_by_stacks(stall: Mapping[str, Any], stacks: Mapping[int, str]) -> dict[str, Any]:
    """The stall record (stall.json) with its blame narrowed by the ranks' stack dumps (rank -> py-spy dump): of the
    ranks it names, those whose main thread is not in a collective while the others wait in one. Unchanged when it
    names one rank or a frozen one, when a named rank has no readable dump, or when none or every one is in a
    collective (a deadlock of the collectives themselves, or a wait the stacks cannot show, e.g. mpi4py's)."""
    named = [entry for entry in stall.get("ranks") or [] if isinstance(entry, Mapping) and isinstance(entry.get("rank"), int)]
    frames = {entry["rank"]: main_thread_frames(stacks.get(entry["rank"], "")) for entry in named}
    if len(named) < 2 or any(entry.get("state") in FROZEN_STATES for entry in named) or not all(frames.values()):
        return dict(stall)
    waits = {rank: in_collective(rank_frames) for rank, rank_frames in frames.items()}
    outside = [entry for entry in named if not waits[entry["rank"]]]
    waiting = [entry for entry in named if waits[entry["rank"]]]
    if not outside or not waiting:
        return dict(stall)
    where = ", ".join(
        "rank {rank} on {node} (at {place}, in {function})".format(
            rank=entry["rank"], node=entry.get("node"), place=frames[entry["rank"]][0][1], function=frames[entry["rank"]][0][0]
        )
        for entry in outside
    )
    waiters = ", ".join(f"rank {entry['rank']} on {entry.get('node')}" for entry in waiting)
    text = (
        f"{where} stalled: no progress for {int(float(stall.get('seconds') or 0))} s outside any collective;"
        f" {waiters} waited for {'it' if len(outside) == 1 else 'them'} in one"
    )
    return {**stall, "ranks": outside, "waiting": waiting, "text": text}
