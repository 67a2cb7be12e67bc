# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A running job's progress, read from the launcher node's logs while it trains.

The launcher node's ``logs/`` holds every rank's output (the rank wrapper prefixes each line
with ``[rank N node]``, events.py; torchrun's agents and the MPI launchers carry it there) and
the launch script's events (``launcher.log``). :func:`read_new_text` returns what was appended
since the last look (on the node, by the job_status module); :func:`progress_records` turns it
into records (on the controller, by the job_wait action): a rank started or ended, an epoch of a rank
(from the JSON ``epoch`` event of the optional script protocol, or from a printed line that
names an epoch and a loss), a training step (the ``step`` event, or a printed line naming a step inside an
epoch), a node's agent exited, the job aborted, cancelled or ended.

Pure Python (no Ansible imports) so it runs on managed nodes and in plain unit tests.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY
from ansible_collections.multinode.training.plugins.module_utils.run_report import parse_events

# The rank wrapper's line prefix (events.RANK_LINE_PREFIX), parsed back.
RANK_LINE = re.compile(r"\[rank (\d+) ([A-Za-z0-9_.:@+-]+)\] (.*)")
# The label a launcher puts in front of every line it relays, before the rank wrapper's prefix (each launcher's
# registry entry, launch.REGISTRY: horovodrun's "[<index>]<stdout>:", Open MPI's --tag-output "[<job>,<rank>]<stdout>:",
# Intel MPI's -l "[<rank>] " that ipexrun always passes to mpiexec.hydra).
_RELAY_LABEL = re.compile("|".join(f"(?:{launcher.output_label})" for launcher in REGISTRY.values() if launcher.output_label))
# A printed epoch: "epoch 3", "Epoch: 3/10", "epoch=3"; its loss and throughput when the line gives them.
_EPOCH_TEXT = re.compile(r"\bepoch\b['\"]?\s*[:=#]?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
# A position inside the epoch a line names, which makes it a training step rather than the epoch's end: a word
# ("step 50", "batch: 12", "iter=300") or the bracket right after the epoch's number ("Train Epoch: 1 [640/60000
# (1%)]", as PyTorch's MNIST example prints every few batches).
_STEP_WORD = re.compile(r"\b(?:step|batch|iter|iteration)\b['\"]?\s*[:=#]?\s*(\d+)", re.IGNORECASE)
_STEP_BRACKET = re.compile(r"\s*\[\s*(\d+)\s*/\s*\d+")
_LOSS_TEXT = re.compile(r"\bloss\b['\"]?\s*[:=]?\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", re.IGNORECASE)
_RATE_TEXT = re.compile(r"(\d+(?:\.\d*)?)\s*(?:samples|images|img|it)\s*/\s*s(?:ec)?\b", re.IGNORECASE)
# The rank wrapper's last line: events.RANK_ENDED and the rank's exit code.
_RANK_ENDED = re.compile(re.escape(events.RANK_ENDED) + r" (-?\d+)")
# The rank wrapper's beat: events.RANK_BEAT, the rank's process state, the CPU seconds it used so far and, from
# the second beat on, the percent of the time since the last one its training loop was busy.
_RANK_BEAT = re.compile(re.escape(events.RANK_BEAT) + r" (\S+) (\d+(?:\.\d+)?)(?: (\d+))?")
# Log files the job_status module leaves out: each rank's own log repeats its lines without the prefix.
_RANK_LOG = re.compile(r"rank-\d+\.log")
LAUNCHER_LOG = "launcher.log"


@dataclass(frozen=True)
class Chunk:
    """New complete lines of one log file, and where the next read starts."""

    text: str
    offset: int


def read_new_text(logs_dir: str, offsets: Mapping[str, int], max_bytes: int) -> dict[str, Chunk]:
    """For every ``*.log`` in ``logs_dir`` but the ranks' own logs: the complete lines after its offset.

    At most ``max_bytes`` per file and call; a line still being written waits for the next call.
    Files that shrank (rewritten) are read again from the start. The launch script's log is read first: a node's
    exit it logs comes after that node's output, so what the nodes' logs hold then is complete up to that exit.
    """
    chunks: dict[str, Chunk] = {}
    for name in sorted(os.listdir(logs_dir), key=lambda name: (name != LAUNCHER_LOG, name)):
        if not name.endswith(".log") or _RANK_LOG.fullmatch(name):
            continue
        start = int(offsets.get(name, 0))
        path = os.path.join(logs_dir, name)
        if os.path.getsize(path) < start:
            start = 0
        with open(path, "rb") as log:
            log.seek(start)
            data = log.read(max_bytes)
        # A line longer than max_bytes (a progress bar redrawn with \r) comes in pieces rather than never.
        complete = data if len(data) == max_bytes and b"\n" not in data else data[: data.rfind(b"\n") + 1]
        if complete:
            chunks[name] = Chunk(text=complete.decode("utf-8", errors="replace"), offset=start + len(complete))
    return chunks


def launcher_ended(chunks: Mapping[str, Chunk]) -> bool:
    """Whether the launch script's log text among ``chunks`` holds its exit event."""
    chunk = chunks.get(LAUNCHER_LOG)
    return chunk is not None and any(event.get("event") == events.LAUNCHER_EXIT for event in parse_events(chunk.text))


def ranks_ended_in(chunks: Mapping[str, Chunk]) -> int:
    """How many rank-ended lines (the rank wrapper's last) the rank log text among ``chunks`` holds."""
    marker = "] " + events.RANK_ENDED + " "
    return sum(chunk.text.count(marker) for name, chunk in chunks.items() if name != LAUNCHER_LOG)


def read_for(
    logs_dir: str, offsets: Mapping[str, int], max_bytes: int, seconds: float, pid_file: str | None = None,
    interval: float = 0.05, ranks_to_end: int = 0, until_milestone: bool = False,
) -> dict[str, Chunk]:
    """``read_new_text`` over ``seconds``: what was appended in that time, returned at once when the launcher logged
    its exit, its process (by ``pid_file``) is gone, a file has ``max_bytes`` waiting, (``ranks_to_end`` > 0) that
    many ranks logged their end or (``until_milestone``) the new text holds a milestone (:func:`holds_milestone`).
    So a follower that asks every ``seconds`` sees the end of a job, and with ``until_milestone`` a rank's start, end
    or epoch, within ``interval``, not within its polling period; a rank's other lines and beats wait for it."""
    deadline = time.monotonic() + seconds
    found: dict[str, Chunk] = {}
    current = dict(offsets)
    while True:
        chunks = read_new_text(logs_dir, current, max_bytes)
        for name, chunk in chunks.items():
            found[name] = Chunk(found[name].text + chunk.text if name in found else chunk.text, chunk.offset)
            current[name] = chunk.offset
        full = any(len(chunk.text) >= max_bytes for chunk in found.values())
        gone = pid_file is not None and process_running(pid_file) is False
        ranks_done = 0 < ranks_to_end <= ranks_ended_in(found)
        milestone = until_milestone and holds_milestone(chunks)
        if launcher_ended(chunks) or full or gone or ranks_done or milestone or time.monotonic() >= deadline:
            return found
        time.sleep(interval)


# What a follower shows as it happens: a rank's start, end and epochs, and the launch script's events it shows. Not a
# training step: a script may print one every moment, and returning for each would read as often as polling every
# moment does.
_MILESTONES = frozenset(("started", "ended", "epoch", events.NODE_EXIT, events.ABORT, events.CANCEL, events.LAUNCHER_EXIT))


def holds_milestone(chunks: Mapping[str, Chunk]) -> bool:
    """Whether new log text holds a record a follower shows as it happens (:data:`_MILESTONES`)."""
    records = progress_records({name: chunk.text for name, chunk in chunks.items()})
    return any(record["kind"] in _MILESTONES for record in records)


def process_running(pid_file: str) -> bool | None:
    """Whether the process whose id ``pid_file`` holds still runs; None while the file is missing or empty."""
    try:
        with open(pid_file, encoding="utf-8") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    if not text.isdigit():
        return None
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# What an epoch is reported with (the script protocol's epoch event, and summary.json's epochs); what a step is.
EPOCH_FIELDS = ("epoch", "loss", "samples_per_s")
STEP_FIELDS = ("epoch", "step", "loss")


def epoch_of(text: str) -> dict[str, Any] | None:
    """``{"epoch", "loss", "samples_per_s"}`` when the line reports an epoch, else None.

    The script protocol's JSON ``epoch`` event is taken as it is; otherwise a line that names an
    epoch number and a loss (``epoch 3 loss 0.41``, ``Epoch: 3/10 ... Loss=0.41``, ``{'loss': 0.41, 'epoch': 0.5}``) counts, with
    its samples/s (or images/s, it/s) when it gives one, unless it names a step inside the epoch (:func:`step_of`).
    """
    event = _protocol_event(text)
    if event is not None:
        return {key: event.get(key) for key in EPOCH_FIELDS} if event.get("event") == events.EPOCH else None
    epoch, loss = _EPOCH_TEXT.search(text), _LOSS_TEXT.search(text)
    if epoch is None or loss is None or _step_in(text, epoch) is not None:
        return None
    rate = _RATE_TEXT.search(text)
    return {"epoch": _number(epoch.group(1)), "loss": float(loss.group(1)), "samples_per_s": float(rate.group(1)) if rate else None}


def step_of(text: str) -> dict[str, Any] | None:
    """``{"epoch", "step", "loss"}`` when the line reports a training step, else None: the script protocol's JSON
    ``step`` event, or a printed line that names an epoch and a position inside it (``epoch 3 step 50 loss 0.4``,
    ``Train Epoch: 1 [640/60000 (1%)] Loss: 0.30``), or a step and a loss (``step 50 loss 0.4``); its loss when it
    gives one."""
    event = _protocol_event(text)
    if event is not None:
        return {key: event.get(key) for key in STEP_FIELDS} if event.get("event") == events.STEP else None
    epoch, loss = _EPOCH_TEXT.search(text), _LOSS_TEXT.search(text)
    if epoch is not None:
        step = _step_in(text, epoch)
    else:  # a loop without epochs: a step and its loss
        word = _STEP_WORD.search(text)
        step = int(word.group(1)) if word is not None and loss is not None else None
    if step is None:
        return None
    return {"epoch": None if epoch is None else _number(epoch.group(1)), "step": step, "loss": float(loss.group(1)) if loss else None}


def _protocol_event(text: str) -> dict[str, Any] | None:
    """The line's JSON ``epoch`` or ``step`` event of the script protocol, if it holds one (a JSON line of another
    event is read as text)."""
    found = parse_events(text)
    return found[0] if found and found[0].get("event") in (events.EPOCH, events.STEP) else None


def _step_in(text: str, epoch: re.Match[str]) -> int | None:
    """The step a line whose epoch ``epoch`` matched names inside that epoch, if any."""
    found = _STEP_BRACKET.match(text, epoch.end()) or _STEP_WORD.search(text)
    return None if found is None else int(found.group(1))


def _number(text: str) -> int | float:
    number = float(text)
    return int(number) if number.is_integer() else number


def current_attempt(records: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """The records of the run's current attempt (``records``: the run's progress.jsonl, in order): those after the
    last restart record."""
    restarts = [index for index, record in enumerate(records) if record.get("kind") == events.RESTART]
    return records[restarts[-1] + 1 :] if restarts else records


def followed_epochs(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The epochs of the run's current attempt as the controller followed them live (rank 0's epoch records): for a
    script that prints its epochs as text, or an attempt whose rank 0 logs were lost with the launcher node."""
    return [
        {key: record[key] for key in EPOCH_FIELDS if key in record}
        for record in current_attempt(records)
        if record.get("kind") == "epoch" and record.get("rank", 0) == 0 and isinstance(record.get("epoch"), (int, float))
    ]


def followed_exit_codes(records: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """Each rank's exit code in the run's current attempt as the controller followed it live (its ``ended``
    records): how the ranks of a node lost before the collection ended, their status records gone with it."""
    return {
        record["rank"]: record["code"]
        for record in current_attempt(records)
        if record.get("kind") == "ended" and isinstance(record.get("rank"), int) and isinstance(record.get("code"), int)
    }


def progress_records(chunks: Mapping[str, str]) -> list[dict[str, Any]]:
    """The records in new log text: ``started``, ``ended``, ``beat``, ``epoch``, ``output`` (every other rank line)
    file by file, then the launch script's ``node_exit``, ``abort``, ``cancel`` and ``launcher_exit`` events.

    The launch script logs a node's exit after that node's output ended, and read_new_text reads its log before
    the nodes' logs: the ranks' lines of the same read come first, whatever the files are called."""
    rank_records: list[dict[str, Any]] = []
    launcher_records: list[dict[str, Any]] = []
    for name, text in chunks.items():
        if name == LAUNCHER_LOG:
            launcher_records += [_launcher_record(event) for event in parse_events(text) if event.get("event") in _SHOWN_EVENTS]
            continue
        for line in text.splitlines():
            rank_records += _rank_records(line)
    return rank_records + launcher_records


_SHOWN_EVENTS = (events.NODE_EXIT, events.ABORT, events.CANCEL, events.LAUNCHER_EXIT)


def _launcher_record(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": event["event"], **{key: value for key, value in event.items() if key not in ("event", "time")}}


def _rank_records(line: str) -> list[dict[str, Any]]:
    label = _RELAY_LABEL.match(line)
    match = RANK_LINE.fullmatch(line[label.end() if label else 0 :].rstrip("\r"))
    if match is None:
        return []
    rank, node, text = int(match.group(1)), match.group(2), match.group(3)
    if text == events.RANK_STARTED:
        return [{"kind": "started", "rank": rank, "node": node}]
    ended = _RANK_ENDED.fullmatch(text)
    if ended is not None:
        return [{"kind": "ended", "rank": rank, "node": node, "code": int(ended.group(1))}]
    beat = _RANK_BEAT.fullmatch(text)
    if beat is not None:
        busy = None if beat.group(3) is None else int(beat.group(3))
        return [
            {"kind": "beat", "rank": rank, "node": node, "state": beat.group(1), "cpu_seconds": float(beat.group(2)),
             "busy_percent": busy}
        ]
    output = {"kind": "output", "rank": rank, "node": node, "text": text}
    step = step_of(text)
    if step is not None:
        return [output, {"kind": "step", "rank": rank, "node": node, **step}]
    epoch = epoch_of(text)
    return [output] if epoch is None else [output, {"kind": "epoch", "rank": rank, "node": node, **epoch}]


def describe(record: Mapping[str, Any]) -> str | None:
    """The progress line a person reads for a record; None for a rank's plain output."""
    kind = record["kind"]
    if kind == "epoch":
        parts = [f"loss {record['loss']:.4g}" if isinstance(record.get("loss"), (int, float)) else None]
        if isinstance(record.get("samples_per_s"), (int, float)):
            parts.append(f"{record['samples_per_s']:.1f} samples/s")
        details = ", ".join(part for part in parts if part)
        return f"rank {record['rank']} ({record['node']}) epoch {record['epoch']}" + (f": {details}" if details else "")
    if kind == "step":
        loss = f", loss {record['loss']:.4g}" if isinstance(record.get("loss"), (int, float)) else ""
        return f"rank {record['rank']} ({record['node']}) training: epoch {record.get('epoch')} step {record.get('step')}{loss}"
    if kind == "ended":
        return f"rank {record['rank']} ({record['node']}) exited {record['code']}"
    if kind == events.NODE_EXIT:
        return f"node {record.get('node')}: {record.get('agent') or 'torchrun agent'} exited {record.get('code')}"
    if kind == events.ABORT:
        return f"stopping every rank: {record.get('reason')}"
    if kind == events.CANCEL:
        return "cancel asked for: stopping every rank"
    if kind == events.LAUNCHER_EXIT:
        return f"launcher exited {record.get('code')}"
    return None


def record_line(record: Mapping[str, Any]) -> str:
    """One JSON line of ``progress.jsonl``."""
    return json.dumps(dict(record), sort_keys=True) + "\n"
