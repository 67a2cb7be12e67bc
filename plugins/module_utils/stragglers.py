# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The straggler watch: a rank the others keep waiting for, named while the job trains.

In data-parallel training every rank takes a step at the pace of the slowest one, so their step times and printed
samples/s are all the same and say nothing about which rank is slow. What differs is how the time is spent: the
slowest rank computes for the whole step, the others compute for their part and then wait in the collective for it.
The rank wrapper's beats carry that share for every rank (``busy_percent``: the time its training loop was running
or waiting for a CPU since the last beat, rank_contract.py). A rank busy ``(1 + margin)`` times the median rank's,
over the last ``after`` seconds (each rank's typical share then: the median of its beats in that window, once it
has been watched that long), is a straggler: its steps take that much longer than the other ranks' median
(``slower_by`` = its busy share over theirs, minus one). Most beats of the window, not every one: on a machine whose
CPUs other work also wants, one beat in which the others waited for a CPU as long as the straggler says nothing of
the seconds around it (a rule of every beat named no straggler on such a machine). It must be busy at least ``MIN_BUSY_PERCENT`` (it is
the rank the others wait for). Rank 0 is named only while the others' median is busy at least
``MIN_MEDIAN_PERCENT`` (the others are training too: rank 0 evaluating or saving alone while the others wait at a
barrier is no straggler). Any other rank is named however idle the others are: a rank many times slower leaves them
almost nothing to do, and with one thread per rank they sleep in the collective (a node cut to 0.1 CPUs, the CNN
example: rank 2 busy 95%, the others 5%). So a rank 0 that slow is the watch's blind spot. And it must be the
busiest rank (or as busy as the busiest): a rank less busy than another also waits for that one. On a machine whose
CPUs are all busy, a rank whose node got less of them than the others (waiting for a CPU counts as busy) was named
beside the rank of a node cut to a tenth of a CPU, at 94% busy against its 99%. Nobody is named while a
rank that ended has not beaten again: the job is winding down, its ranks end one after another, and those left
(rank 0 evaluating or saving, the others waiting to exit) are no longer in step; on a loaded machine the others'
wait for a CPU counts as busy, and rank 0 was named at the end of a job whose straggler had already ended. A
symmetric slowdown (every node as slow) names nobody. Each rank is named once per job.

Pure Python (no Ansible imports) so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ansible_collections.multinode.training.plugins.module_utils import events

MIN_BUSY_PERCENT = 40
MIN_MEDIAN_PERCENT = 5
DEFAULT_MARGIN = 0.3
DEFAULT_AFTER_SECONDS = 30.0


@dataclass(frozen=True)
class Straggler:
    """Rank ``rank`` on ``node`` was ``slower_by`` (0.45: 45%) slower than the other ranks' median for ``seconds``."""

    rank: int
    node: str
    slower_by: float
    busy: int
    median_busy: float
    seconds: float

    def describe(self) -> str:
        """``rank 2 on node3 is 45% slower than the median rank for 30 s (busy 97% ...)``."""
        return (
            f"rank {self.rank} on {self.node} is {100 * self.slower_by:.0f}% slower than the median rank for "
            f"{self.seconds:.0f} s (busy {self.busy}% of the time, the other ranks {self.median_busy:.0f}%: "
            "they wait for it)"
        )

    def as_record(self) -> dict[str, Any]:
        """The JSON form kept in progress.jsonl and in summary.json's ``stragglers``."""
        return {
            "kind": events.STRAGGLER,
            "rank": self.rank,
            "node": self.node,
            "slower_by": round(self.slower_by, 3),
            "busy": self.busy,
            "median_busy": round(self.median_busy, 1),
            "seconds": round(self.seconds, 1),
            "text": self.describe(),
        }


@dataclass
class StragglerWatch:
    """Fed every progress record with the time it was read; ``margin`` 0 names nobody."""

    margin: float = DEFAULT_MARGIN
    after: float = DEFAULT_AFTER_SECONDS
    busy: dict[int, tuple[str, int]] = field(default_factory=dict)  # rank -> (node, its last busy percent)
    history: dict[int, list[tuple[float, int]]] = field(default_factory=dict)  # rank -> its beats (time, busy)
    first_seen: dict[int, float] = field(default_factory=dict)
    named: dict[int, Straggler] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)  # ranks that ended and have not beaten since

    def observe(self, records: Iterable[Mapping[str, Any]], now: float) -> list[Straggler]:
        """Take the records read at ``now``; the stragglers named for the first time. Every record is taken before
        any rank is judged: ranks judged beat by beat, a rank's new beat still unread, named a rank less busy than it
        (CI, the cut-CPU drill: rank 1 at 89% named beside rank 2 at 97%, read in the same poll)."""
        beaten: list[int] = []
        for record in records:
            kind, rank = record.get("kind"), record.get("rank")
            if not isinstance(rank, int):
                continue
            if kind == "ended":
                # A rank of the next attempt is watched afresh: its window starts with its own first beat.
                for watched in (self.busy, self.history, self.first_seen):
                    watched.pop(rank, None)
                self.ended.add(rank)
            elif kind == "beat" and isinstance(record.get("busy_percent"), int):
                self.ended.discard(rank)
                self.busy[rank] = (str(record.get("node")), int(record["busy_percent"]))
                self.first_seen.setdefault(rank, now)
                beats = self.history.setdefault(rank, [])
                beats.append((now, int(record["busy_percent"])))
                beats[:] = [(at, percent) for at, percent in beats if at > now - self.after] or beats[-1:]
                beaten.append(rank)
        found = []
        for rank in dict.fromkeys(beaten):
            straggler = self._judge(rank, now)
            if straggler is not None:
                self.named[rank] = straggler
                found.append(straggler)
        return found

    def _judge(self, rank: int, now: float) -> Straggler | None:
        """The straggler ``rank`` became at ``now``, if its beats of the last ``after`` seconds made it one."""
        if self.margin <= 0 or self.ended or len(self.busy) < 2 or rank in self.named:
            return None
        if now - self.first_seen[rank] < self.after:
            return None
        typical = self._typical(rank, now)
        others = [self._typical(other, now) for other in self.busy if other != rank]
        busy, median = round(typical), statistics.median(others)
        if busy < MIN_BUSY_PERCENT or (rank == 0 and median < MIN_MEDIAN_PERCENT) or busy < (1 + self.margin) * median:
            return None
        # The rank the others wait for is the busiest: one less busy than another waits for that one too.
        if typical < max(others):
            return None
        # Others idle the whole window (0%) compare as 1%: the slowdown is then a lower bound.
        return Straggler(rank, self.busy[rank][0], busy / max(median, 1.0) - 1, busy, median, self.after)

    def _typical(self, rank: int, now: float) -> float:
        """``rank``'s busy share over the last ``after`` seconds: the median of its beats then, else its last one."""
        window = [percent for at, percent in self.history.get(rank, []) if at > now - self.after]
        return float(statistics.median(window)) if window else float(self.busy[rank][1])
