# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of progress.launcher_ended and progress.read_for: reading logs over a while, ending early."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ansible_collections.multinode.training.plugins.module_utils import events, progress
from ansible_collections.multinode.training.plugins.module_utils.progress import Chunk

MAX_BYTES = 1 << 16


def launcher_line(event: str, **fields: object) -> str:
    """One launcher.log line as the launch script's ``event`` function writes it."""
    return json.dumps({"event": event, "time": 1.0, **fields}) + "\n"


def timed_read(
    logs: Path, seconds: float, *, offsets: dict[str, int] | None = None, pid_file: str | None = None, ranks_to_end: int = 0,
    until_milestone: bool = False,
) -> tuple[dict[str, Chunk], float]:
    """What ``read_for`` returned and the seconds it took."""
    start = time.monotonic()
    found = progress.read_for(
        str(logs), offsets or {}, MAX_BYTES, seconds, pid_file=pid_file, ranks_to_end=ranks_to_end, until_milestone=until_milestone
    )
    return found, time.monotonic() - start


@contextlib.contextmanager
def appended_later(log: Path, lines: list[str], every: float) -> Iterator[None]:
    """While the block runs, a thread appends ``lines`` to ``log``, one each ``every`` seconds."""

    def append() -> None:
        for line in lines:
            time.sleep(every)
            with log.open("a") as handle:
                handle.write(line)

    writer = threading.Thread(target=append)
    writer.start()
    try:
        yield
    finally:
        writer.join()


# --------------------------------------------------------------------------- launcher_ended


def test_launcher_exit_event_is_named_as_the_launch_script_writes_it() -> None:
    assert events.LAUNCHER_EXIT == "launcher_exit"
    assert launcher_line(events.LAUNCHER_EXIT, code=0) == '{"event": "launcher_exit", "time": 1.0, "code": 0}\n'


def test_launcher_ended_on_its_exit_event() -> None:
    text = launcher_line("launch", launcher="torchrun") + launcher_line("launcher_exit", code=0)
    assert progress.launcher_ended({"launcher.log": Chunk(text, len(text))}) is True


def test_launcher_not_ended_by_other_events() -> None:
    text = launcher_line("launch", launcher="torchrun") + launcher_line("node_exit", node="node1", code=0)
    assert progress.launcher_ended({"launcher.log": Chunk(text, len(text))}) is False


def test_launcher_not_ended_by_an_exit_event_in_another_log() -> None:
    text = launcher_line("launcher_exit", code=0)
    assert progress.launcher_ended({"node1.log": Chunk(text, len(text))}) is False
    assert progress.launcher_ended({}) is False


# --------------------------------------------------------------------------- read_for


def test_read_for_returns_at_once_when_launcher_log_holds_the_exit_event(tmp_path: Path) -> None:
    text = launcher_line("launch", launcher="torchrun") + launcher_line("launcher_exit", code=0)
    (tmp_path / "launcher.log").write_text(text)
    (tmp_path / "node1.log").write_text("[rank 0 node1] epoch 1 loss 0.5\n")

    found, elapsed = timed_read(tmp_path, 60)

    assert elapsed < 20
    assert found == {
        "launcher.log": Chunk(text, len(text.encode())),
        "node1.log": Chunk("[rank 0 node1] epoch 1 loss 0.5\n", 32),
    }


def test_read_for_returns_once_the_ranks_asked_for_have_ended(tmp_path: Path) -> None:
    log = tmp_path / "node1.log"
    log.write_text(f"[rank 0 node1] {events.RANK_ENDED} 0\n")

    with appended_later(log, [f"[rank 1 node2] {events.RANK_ENDED} 0\n"], every=0.3):
        found, elapsed = timed_read(tmp_path, 60, ranks_to_end=2)

    # Both ends read: it waited for the one appended while it read (its time is measured from after the writer
    # started, so no lower bound on it holds).
    assert found["node1.log"].text.count(events.RANK_ENDED) == 2
    assert elapsed < 20


def test_read_for_without_ranks_to_end_does_not_stop_at_rank_ends(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_text(f"[rank 0 node1] {events.RANK_ENDED} 0\n")

    _, elapsed = timed_read(tmp_path, 0.3)

    assert elapsed >= 0.3


def test_read_for_waits_the_seconds_given_when_nothing_ends_it(tmp_path: Path) -> None:
    text = launcher_line("launch", launcher="torchrun")
    (tmp_path / "launcher.log").write_text(text)

    found, elapsed = timed_read(tmp_path, 0.3)

    assert 0.3 <= elapsed < 10
    assert found == {"launcher.log": Chunk(text, len(text))}


def test_read_for_of_no_new_text_waits_and_returns_nothing(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_text("old\n")

    found, elapsed = timed_read(tmp_path, 0.2, offsets={"node1.log": 4})

    assert 0.2 <= elapsed < 10
    assert found == {}


def test_read_for_returns_text_appended_while_it_waits_with_the_offset_after_it(tmp_path: Path) -> None:
    log = tmp_path / "node1.log"
    log.write_text("before\n")

    with appended_later(log, ["first\n", "second\n"], every=0.1):
        found, _ = timed_read(tmp_path, 0.6, offsets={"node1.log": len("before\n")})

    assert found == {"node1.log": Chunk("first\nsecond\n", len("before\nfirst\nsecond\n"))}


def test_read_for_returns_as_soon_as_an_exit_event_is_appended(tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    log.write_text("")
    exit_line = launcher_line("launcher_exit", code=3)

    with appended_later(log, [exit_line], every=0.2):
        found, elapsed = timed_read(tmp_path, 60)

    assert elapsed < 20
    assert found == {"launcher.log": Chunk(exit_line, len(exit_line))}


def test_read_for_returns_early_when_the_pid_file_names_a_process_that_is_gone(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "node1.log").write_text("line\n")
    process = subprocess.Popen(["true"])
    process.wait()
    pid_file = tmp_path / "launch.pid"
    pid_file.write_text(f"{process.pid}\n")

    found, elapsed = timed_read(logs, 60, pid_file=str(pid_file))

    assert elapsed < 20
    assert found == {"node1.log": Chunk("line\n", 5)}


def test_read_for_keeps_waiting_while_the_pid_file_names_a_live_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "launch.pid"
    pid_file.write_text(str(os.getpid()))
    logs = tmp_path / "logs"
    logs.mkdir()

    _, elapsed = timed_read(logs, 0.3, pid_file=str(pid_file))

    assert 0.3 <= elapsed < 10


def test_read_for_keeps_waiting_while_the_pid_file_is_missing(tmp_path: Path) -> None:
    _, elapsed = timed_read(tmp_path, 0.3, pid_file=str(tmp_path / "not-yet.pid"))

    assert 0.3 <= elapsed < 10


def test_read_for_returns_at_once_when_a_file_has_max_bytes_waiting(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_text("x" * 9 + "\n" + "y" * 9 + "\n")
    start = time.monotonic()

    found = progress.read_for(str(tmp_path), {}, 10, 60)

    assert time.monotonic() - start < 20
    assert found == {"node1.log": Chunk("x" * 9 + "\n", 10)}


# --------------------------------------------------------------------------- read_for until a milestone


def test_until_milestone_returns_as_soon_as_a_rank_reports_an_epoch(tmp_path: Path) -> None:
    log = tmp_path / "node1.log"
    log.write_text("[rank 0 node1] loading data\n")

    with appended_later(log, ["[rank 0 node1] epoch 1 loss 0.5\n"], every=0.2):
        found, elapsed = timed_read(tmp_path, 60, until_milestone=True)

    assert elapsed < 20
    assert found == {"node1.log": Chunk("[rank 0 node1] loading data\n[rank 0 node1] epoch 1 loss 0.5\n", 60)}


def test_until_milestone_returns_at_once_on_a_rank_s_start_and_end_and_a_node_s_exit(tmp_path: Path) -> None:
    for text, name in (
        (f"[rank 1 node2] {events.RANK_STARTED}\n", "node2.log"),
        (f"[rank 1 node2] {events.RANK_ENDED} 3\n", "node2.log"),
        (launcher_line(events.NODE_EXIT, node="node2", code=1), "launcher.log"),
    ):
        logs = tmp_path / str(len(list(tmp_path.iterdir())))
        logs.mkdir()
        (logs / name).write_text(text)

        found, elapsed = timed_read(logs, 60, until_milestone=True)

        assert elapsed < 20, text
        assert found[name].text == text


def test_until_milestone_reads_beats_steps_and_other_lines_to_the_end_of_its_seconds(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_text(
        f"[rank 0 node1] {events.RANK_BEAT} R 12.5 97\n[rank 0 node1] epoch 1 step 20 loss 0.7\n[rank 0 node1] hello\n"
    )

    found, elapsed = timed_read(tmp_path, 0.3, until_milestone=True)

    assert elapsed >= 0.3
    assert found["node1.log"].text.count("\n") == 3


def test_a_milestone_does_not_end_a_read_that_did_not_ask_for_it(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_text("[rank 0 node1] epoch 1 loss 0.5\n")

    _, elapsed = timed_read(tmp_path, 0.3)

    assert elapsed >= 0.3
