# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stall watchdog: no alarm while any rank makes progress, a stall named after the rank to blame."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils import events, progress
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import BUSY_CPU_SECONDS
from ansible_collections.multinode.training.plugins.module_utils.watchdog import (
    Stall,
    Watchdog,
    in_collective,
    main_thread_frames,
    narrowed_by_stacks,
)

TIMEOUT = 60.0
NODES = {0: "node1", 1: "node2", 2: "node3"}


def started(rank: int) -> dict[str, Any]:
    return {"kind": "started", "rank": rank, "node": NODES[rank]}


def ended(rank: int, code: int = 0) -> dict[str, Any]:
    return {"kind": "ended", "rank": rank, "node": NODES[rank], "code": code}


def output(rank: int, text: str = "step done") -> dict[str, Any]:
    return {"kind": "output", "rank": rank, "node": NODES[rank], "text": text}


def epoch(rank: int, number: int = 1) -> dict[str, Any]:
    return {"kind": "epoch", "rank": rank, "node": NODES[rank], "epoch": number, "loss": 0.5, "samples_per_s": None}


def beat(rank: int, state: str, cpu_seconds: float) -> dict[str, Any]:
    """A beat record as progress.py makes it from the rank wrapper's beat line."""
    return {"kind": "beat", "rank": rank, "node": NODES[rank], "state": state, "cpu_seconds": cpu_seconds}


def job(*ranks: int, timeout: float = TIMEOUT, at: float = 0.0) -> Watchdog:
    """A watchdog that saw ``ranks`` start at ``at``."""
    dog = Watchdog(timeout=timeout)
    dog.observe([started(rank) for rank in ranks], at)
    return dog


def beats_every_5_s(dog: Watchdog, start: float, end: float, cpu: dict[int, tuple[str, float, float]]) -> None:
    """Beats of every rank in ``cpu`` (rank: (state, CPU seconds at ``start``, CPU seconds used per second)) every
    events.BEAT_SECONDS from ``start`` up to ``end``, as the wrapper's watcher sends them."""
    now = start
    while now <= end:
        dog.observe(
            [beat(rank, state, first + rate * (now - start)) for rank, (state, first, rate) in cpu.items()], now
        )
        now += events.BEAT_SECONDS


# --- no stall while something progresses ---


def test_a_job_that_just_started_is_not_stalled() -> None:
    dog = job(0, 1, 2)
    assert dog.stalled(0.0) is None
    assert dog.stalled(TIMEOUT - 0.1) is None


def test_a_job_without_any_output_or_beat_stalls_after_the_timeout() -> None:
    dog = job(0, 1, 2)
    stall = dog.stalled(TIMEOUT)
    assert stall == Stall(ranks=((0, "node1", "?"), (1, "node2", "?"), (2, "node3", "?")), seconds=TIMEOUT)


@pytest.mark.parametrize("record", [output(2), epoch(2)], ids=["output", "epoch"])
def test_output_or_an_epoch_of_any_rank_is_progress(record: dict[str, Any]) -> None:
    dog = job(0, 1, 2)
    dog.observe([record], 50.0)
    assert dog.stalled(100.0) is None
    assert dog.stalled(109.9) is None
    stall = dog.stalled(110.0)
    assert stall is not None
    assert stall.seconds == TIMEOUT
    # Ranks 0 and 1 stopped progressing at 0, rank 2 only at 50: the first ones are blamed.
    assert stall.ranks == ((0, "node1", "?"), (1, "node2", "?"))


def test_a_beat_whose_cpu_grew_by_the_busy_threshold_is_progress() -> None:
    dog = job(1)
    dog.observe([beat(1, "R", 10.0)], 5.0)
    dog.observe([beat(1, "R", 10.0 + BUSY_CPU_SECONDS + 0.05)], 50.0)
    assert dog.stalled(109.0) is None
    assert dog.stalled(110.0) == Stall(ranks=((1, "node2", "R"),), seconds=TIMEOUT)


def test_a_beat_whose_cpu_grew_by_less_than_the_busy_threshold_is_no_progress() -> None:
    dog = job(1)
    dog.observe([beat(1, "S", 10.0)], 5.0)  # the first beat: the baseline
    dog.observe([beat(1, "S", 10.05)], 30.0)
    dog.observe([beat(1, "S", 10.09)], 60.0)
    stall = dog.stalled(65.0)
    assert stall == Stall(ranks=((1, "node2", "S"),), seconds=TIMEOUT)


def test_rank_0_evaluating_while_the_others_wait_is_no_stall() -> None:
    """Rank 0 prints nothing for minutes but burns CPU; ranks 1 and 2 sleep at a barrier: no false alarm."""
    dog = job(0, 1, 2)
    beats_every_5_s(dog, 5.0, 600.0, {0: ("R", 1.0, 1.0), 1: ("S", 3.0, 0.0), 2: ("S", 3.0, 0.0)})
    for now in (60.0, 300.0, 600.0, 604.9):
        assert dog.stalled(now) is None, now


def test_one_rank_progressing_is_enough_even_when_another_is_stopped() -> None:
    dog = job(0, 1)
    beats_every_5_s(dog, 5.0, 200.0, {0: ("T", 2.0, 0.0), 1: ("R", 2.0, 1.0)})
    assert dog.stalled(200.0) is None


# --- the stall and the rank to blame ---


def test_every_rank_idle_for_the_timeout_is_a_stall() -> None:
    dog = job(0, 1, 2)
    dog.observe([output(0), output(1), output(2)], 10.0)
    beats_every_5_s(dog, 15.0, 100.0, {0: ("S", 4.0, 0.0), 1: ("S", 4.0, 0.0), 2: ("S", 4.0, 0.0)})
    # The first beat of each rank (at 15) sets its CPU baseline and counts as progress: idle since then.
    assert dog.stalled(74.9) is None
    stall = dog.stalled(75.0)
    assert stall is not None
    assert stall.seconds == TIMEOUT
    assert stall.ranks == ((0, "node1", "S"), (1, "node2", "S"), (2, "node3", "S"))


def test_the_rank_that_stopped_progressing_first_is_blamed() -> None:
    # Rank 1 hangs at 10 (a deadlock of its own); ranks 0 and 2 print until 20, then wait for it in a collective.
    dog = job(0, 1, 2)
    dog.observe([output(1)], 10.0)
    dog.observe([output(0), output(2)], 20.0)
    stall = dog.stalled(80.0)
    assert stall == Stall(ranks=((1, "node2", "?"),), seconds=TIMEOUT)
    assert stall.describe() == "rank 1 on node2 stalled: no progress for 60 s"


def test_ranks_that_stopped_within_one_beat_of_the_first_are_blamed_together() -> None:
    dog = job(0, 1, 2)
    dog.observe([output(1)], 10.0)
    dog.observe([output(2)], 10.0 + events.BEAT_SECONDS)  # exactly one beat later: as early as the beats can tell
    dog.observe([output(0)], 10.0 + events.BEAT_SECONDS + 0.5)  # later than that: waited for them
    stall = dog.stalled(200.0)
    assert stall is not None
    assert [rank for rank, _, _ in stall.ranks] == [1, 2]
    assert stall.describe() == "rank 1 on node2, rank 2 on node3 stalled: no progress for 184 s"


@pytest.mark.parametrize(("frozen", "words"), [("T", "stopped"), ("D", "in uninterruptible sleep")])
def test_a_stopped_rank_is_blamed_even_when_another_stopped_progressing_first(frozen: str, words: str) -> None:
    dog = job(0, 1, 2)
    beats_every_5_s(dog, 5.0, 5.0, {0: ("S", 1.0, 0.0), 1: ("S", 1.0, 0.0), 2: ("S", 1.0, 0.0)})  # the baselines
    dog.observe([output(0), output(1)], 30.0)  # rank 2 went quiet first (it waits on the others)
    # Then rank 1 was frozen (SIGSTOP, a wedged device) and rank 0 waits for it.
    beats_every_5_s(dog, 35.0, 85.0, {0: ("S", 1.0, 0.0), 1: (frozen, 1.0, 0.0), 2: ("S", 1.0, 0.0)})
    assert dog.stalled(89.9) is None
    stall = dog.stalled(90.0)
    assert stall is not None
    assert stall.ranks == ((1, "node2", frozen),)
    assert stall.describe() == f"rank 1 on node2 stalled: no progress for 60 s ({words}, state {frozen})"


def test_without_a_stopped_rank_the_same_job_blames_the_one_that_went_quiet_first() -> None:
    dog = job(0, 1, 2)
    beats_every_5_s(dog, 5.0, 5.0, {0: ("S", 1.0, 0.0), 1: ("S", 1.0, 0.0), 2: ("S", 1.0, 0.0)})
    dog.observe([output(0), output(1)], 30.0)
    beats_every_5_s(dog, 35.0, 85.0, {0: ("S", 1.0, 0.0), 1: ("S", 1.0, 0.0), 2: ("S", 1.0, 0.0)})
    assert dog.stalled(90.0) == Stall(ranks=((2, "node3", "S"),), seconds=TIMEOUT)


def test_a_stopped_rank_s_beats_are_no_progress_even_when_its_cpu_numbers_change() -> None:
    dog = job(1)
    beats_every_5_s(dog, 5.0, 60.0, {1: ("T", 20.0, 1.0)})  # the CPU seconds climb: they must not count
    stall = dog.stalled(60.0)
    assert stall == Stall(ranks=((1, "node2", "T"),), seconds=TIMEOUT)
    assert stall.describe() == "rank 1 on node2 stalled: no progress for 60 s (stopped, state T)"


def test_a_rank_continued_after_a_stop_progresses_again() -> None:
    dog = job(1)
    beats_every_5_s(dog, 5.0, 50.0, {1: ("T", 20.0, 0.0)})
    dog.observe([beat(1, "R", 22.0)], 55.0)  # SIGCONT: it runs and burns CPU again
    assert dog.stalled(114.9) is None
    assert dog.stalled(115.0) == Stall(ranks=((1, "node2", "R"),), seconds=TIMEOUT)


def test_ended_ranks_are_forgotten() -> None:
    # Rank 2 ended early (it is never blamed); ranks 0 and 1 go on printing until 40.
    dog = job(0, 1, 2)
    dog.observe([ended(2)], 5.0)
    dog.observe([output(0), output(1)], 40.0)
    dog.observe([beat(2, "S", 1.0), output(2)], 41.0)  # stray lines of an ended rank: ignored
    stall = dog.stalled(100.0)
    assert stall is not None
    assert [rank for rank, _, _ in stall.ranks] == [0, 1]
    assert stall.seconds == TIMEOUT


def test_a_job_whose_ranks_all_ended_never_stalls() -> None:
    dog = job(0, 1)
    dog.observe([ended(0, code=0), ended(1, code=3)], 10.0)
    assert dog.pulses == {}
    assert dog.stalled(10_000.0) is None


def test_timeout_0_never_stalls() -> None:
    dog = job(0, 1, timeout=0)
    beats_every_5_s(dog, 5.0, 100.0, {0: ("T", 1.0, 0.0), 1: ("S", 1.0, 0.0)})
    assert dog.stalled(100.0) is None
    assert dog.stalled(1_000_000.0) is None


def test_records_of_ranks_that_never_started_and_launcher_records_are_ignored() -> None:
    dog = Watchdog(timeout=TIMEOUT)
    dog.observe(
        [output(0), beat(1, "T", 3.0), epoch(2), {"kind": "abort", "reason": "x"}, {"kind": "node_exit", "node": "node1"}],
        1.0,
    )
    assert dog.pulses == {}
    assert dog.stalled(1_000.0) is None


def test_a_rank_started_again_starts_with_a_fresh_pulse() -> None:
    dog = job(1)
    beats_every_5_s(dog, 5.0, 50.0, {1: ("T", 20.0, 0.0)})
    dog.observe([started(1)], 100.0)  # the next attempt's rank 1
    assert dog.stalled(159.9) is None
    assert dog.stalled(160.0) == Stall(ranks=((1, "node2", "?"),), seconds=TIMEOUT)


def test_the_watchdog_reads_the_records_progress_py_makes_of_the_wrapper_lines() -> None:
    def lines(*texts: str) -> dict[str, str]:
        return {"node1.log": "".join(f"[rank {rank} {NODES[rank]}] {text}\n" for rank, text in texts)}

    dog = Watchdog(timeout=TIMEOUT)
    dog.observe(progress.progress_records(lines((0, events.RANK_STARTED), (1, events.RANK_STARTED))), 0.0)
    dog.observe(progress.progress_records(lines((0, "epoch 1 loss 0.5"), (1, f"{events.RANK_BEAT} S 4.00"))), 5.0)
    dog.observe(progress.progress_records(lines((0, f"{events.RANK_BEAT} S 9.00"), (1, f"{events.RANK_BEAT} T 4.00"))), 10.0)
    stall = dog.stalled(70.0)
    assert stall is not None
    assert stall.ranks == ((1, "node2", "T"),)
    assert stall.describe() == "rank 1 on node2 stalled: no progress for 60 s (stopped, state T)"


# --- Stall ---


def test_stall_as_record_is_the_json_kept_in_the_run_directory() -> None:
    stall = Stall(ranks=((1, "node2", "T"), (2, "node3", "T")), seconds=61.26)
    assert stall.as_record() == {
        "kind": "stall",
        "ranks": [{"rank": 1, "node": "node2", "state": "T"}, {"rank": 2, "node": "node3", "state": "T"}],
        "seconds": 61.3,
        "text": "rank 1 on node2, rank 2 on node3 stalled: no progress for 61 s (stopped, state T)",
    }


def test_describe_names_every_frozen_state_once() -> None:
    stall = Stall(ranks=((0, "node1", "D"), (1, "node2", "T"), (2, "node3", "T")), seconds=90.0)
    assert stall.describe() == (
        "rank 0 on node1, rank 1 on node2, rank 2 on node3 stalled: no progress for 90 s (stopped or blocked, state D/T)"
    )


def test_describe_says_nothing_of_a_state_when_not_every_blamed_rank_is_frozen() -> None:
    stall = Stall(ranks=((0, "node1", "S"), (1, "node2", "T")), seconds=75.9)
    assert stall.describe() == "rank 0 on node1, rank 1 on node2 stalled: no progress for 75 s"


def test_a_beat_whose_cpu_grew_by_exactly_the_busy_threshold_is_progress() -> None:
    dog = job(1)
    dog.observe([beat(1, "S", 12.34)], 5.0)
    dog.observe([beat(1, "S", 12.44)], 50.0)  # grew by 0.10 CPU seconds, as the wrapper prints it
    assert dog.stalled(65.0) is None


# The stacks' narrowing of a stall (watchdog.narrowed_by_stacks), from the rank wrappers' py-spy dumps.
IN_ALL_REDUCE = (
    'Thread 21 (idle): "MainThread"\n'
    "    all_reduce (torch/distributed/distributed_c10d.py:3252)\n"
    "    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)\n"
    "    <module> (train.py:12)\n"
)
IN_DDP_BACKWARD = (
    'Thread 9 (idle): "MainThread"\n'
    "    _engine_run_backward (/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py:768)\n"
    "    backward (torch/_tensor.py:521)\n"
    "    train (train.py:40)\n"
)
ASLEEP = 'Thread 27 (idle): "MainThread"\n    <module> (train.py:11)\n'
PY_SPY_FAILED = "Wed Dec  2 15:30:08 UTC 2026\nno stack dump: py-spy failed or is not installed\n"


def stall_of(*ranks: int, state: str = "S") -> dict[str, Any]:
    return {
        "kind": "stall",
        "ranks": [{"rank": rank, "node": NODES[rank], "state": state} for rank in ranks],
        "seconds": 61.2,
        "text": "the watchdog's own words",
        "detected_at": 100.0,
    }


def test_the_main_thread_s_frames_are_read_innermost_first_past_other_threads() -> None:
    dump = 'Process 7: python3 train.py\n\nThread 8 (idle): "pt_autograd_0"\n    run (x.py:1)\n\n' + IN_ALL_REDUCE
    frames = main_thread_frames(dump)
    assert frames[0] == ("all_reduce", "torch/distributed/distributed_c10d.py:3252")
    assert frames[-1] == ("<module>", "train.py:12")
    assert main_thread_frames(PY_SPY_FAILED) == []


def test_an_unnamed_first_thread_stands_for_the_main_thread() -> None:
    assert main_thread_frames("Thread 0x7F3A (active)\n    step (train.py:5)\n") == [("step", "train.py:5")]


def test_a_main_thread_holding_the_gil_is_read_too() -> None:
    dump = 'Thread 4 (idle): "pt_autograd_0"\n    run (x.py:1)\nThread 3 (active+gil): "MainThread"\n    spin (train.py:9)\n'
    assert main_thread_frames(dump) == [("spin", "train.py:9")]


@pytest.mark.parametrize(
    ("dump", "waits"),
    [(IN_ALL_REDUCE, True), (IN_DDP_BACKWARD, True), (ASLEEP, False)],
)
def test_a_frame_in_a_collective_s_files_is_a_wait_for_the_others(dump: str, waits: bool) -> None:
    assert in_collective(main_thread_frames(dump)) is waits


def test_the_rank_outside_the_collective_the_others_wait_in_is_blamed() -> None:
    narrowed = narrowed_by_stacks(stall_of(0, 1, 2), {0: IN_ALL_REDUCE, 1: ASLEEP, 2: IN_DDP_BACKWARD})
    assert narrowed["ranks"] == [{"rank": 1, "node": "node2", "state": "S"}]
    assert [entry["rank"] for entry in narrowed["waiting"]] == [0, 2]
    assert narrowed["text"] == (
        "rank 1 on node2 (at train.py:11, in <module>) stalled: no progress for 61 s outside any collective;"
        " rank 0 on node1, rank 2 on node3 waited for it in one"
    )
    assert narrowed["detected_at"] == 100.0


def test_two_ranks_outside_are_both_blamed() -> None:
    narrowed = narrowed_by_stacks(stall_of(0, 1, 2), {0: ASLEEP, 1: IN_ALL_REDUCE, 2: ASLEEP})
    assert [entry["rank"] for entry in narrowed["ranks"]] == [0, 2]
    assert narrowed["text"].endswith("rank 1 on node2 waited for them in one")


@pytest.mark.parametrize(
    ("stall", "stacks"),
    [
        pytest.param(stall_of(0, 1, 2), {0: IN_ALL_REDUCE, 1: IN_ALL_REDUCE, 2: IN_ALL_REDUCE}, id="all-in-one"),
        pytest.param(stall_of(0, 1, 2), {0: ASLEEP, 1: ASLEEP, 2: ASLEEP}, id="none-in-one"),
        pytest.param(stall_of(0, 1, 2), {0: IN_ALL_REDUCE, 1: PY_SPY_FAILED, 2: IN_ALL_REDUCE}, id="no-dump"),
        pytest.param(stall_of(0, 1, 2), {0: IN_ALL_REDUCE, 2: IN_ALL_REDUCE}, id="dump-missing"),
        pytest.param(stall_of(1, state="T"), {1: ASLEEP}, id="one-frozen"),
        pytest.param(stall_of(0, 1, state="T"), {0: IN_ALL_REDUCE, 1: ASLEEP}, id="frozen"),
    ],
)
def test_the_watchdog_s_blame_stands_when_the_stacks_cannot_narrow_it(
    stall: dict[str, Any], stacks: dict[int, str]
) -> None:
    assert narrowed_by_stacks(stall, stacks) == stall
