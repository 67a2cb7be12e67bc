# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The straggler watch: a rank the others keep waiting for is named once, after a while; no alarm otherwise."""

from __future__ import annotations

from typing import Any

from ansible_collections.multinode.training.plugins.module_utils import events, progress
from ansible_collections.multinode.training.plugins.module_utils.stragglers import Straggler, StragglerWatch

NODES = {0: "node1", 1: "node2", 2: "node3", 3: "node4"}


def beat(rank: int, busy: int | None) -> dict[str, Any]:
    """A beat record as progress.py makes it from the rank wrapper's beat line."""
    return {"kind": "beat", "rank": rank, "node": NODES[rank], "state": "R", "cpu_seconds": 1.0, "busy_percent": busy}


def feed(watch: StragglerWatch, busy: dict[int, int], beats: int, start: float = 0.0) -> list[Straggler]:
    """``beats`` rounds of beats 5 s apart with the same busy share per rank; the stragglers named on the way."""
    found = []
    for number in range(beats):
        found += watch.observe([beat(rank, share) for rank, share in busy.items()], start + 5.0 * number)
    return found


def test_a_rank_busy_all_the_time_while_the_others_wait_is_named_after_the_set_time() -> None:
    watch = StragglerWatch(margin=0.3, after=30)

    assert feed(watch, {0: 40, 1: 42, 2: 98}, beats=6) == []  # 25 s: not yet
    found = feed(watch, {0: 40, 1: 42, 2: 98}, beats=1, start=30.0)

    assert [(straggler.rank, straggler.node) for straggler in found] == [(2, "node3")]
    assert round(found[0].slower_by, 2) == round(98 / 41 - 1, 2)
    assert found[0].seconds == 30.0
    assert found[0].describe() == (
        "rank 2 on node3 is 139% slower than the median rank for 30 s "
        "(busy 98% of the time, the other ranks 41%: they wait for it)"
    )


def test_a_straggler_is_named_once_and_kept() -> None:
    watch = StragglerWatch(margin=0.3, after=10)

    first = feed(watch, {0: 20, 1: 95}, beats=3)
    again = feed(watch, {0: 20, 1: 95}, beats=10, start=15.0)

    assert [straggler.rank for straggler in first] == [1]
    assert again == []
    assert list(watch.named) == [1]


def test_one_beat_in_step_with_the_others_does_not_hide_a_straggler() -> None:
    # A busy machine: once, the others waited for a CPU as long as rank 2 did. Its other beats still name it.
    watch = StragglerWatch(margin=0.3, after=30)

    early = feed(watch, {0: 40, 1: 40, 2: 95}, beats=5)  # 20 s slow
    early += feed(watch, {0: 40, 1: 40, 2: 45}, beats=1, start=25.0)  # one beat in step
    found = feed(watch, {0: 40, 1: 40, 2: 95}, beats=1, start=30.0)

    assert early == []
    assert [(straggler.rank, straggler.busy, straggler.seconds) for straggler in found] == [(2, 95, 30.0)]


def test_a_rank_that_caught_up_for_its_window_is_no_straggler() -> None:
    watch = StragglerWatch(margin=0.3, after=30)

    found = feed(watch, {0: 40, 1: 40, 2: 95}, beats=3)  # 10 s slow
    found += feed(watch, {0: 40, 1: 40, 2: 45}, beats=10, start=15.0)  # then in step for 45 s

    assert found == []


def test_a_rank_less_busy_than_the_straggler_is_not_named_beside_it() -> None:
    # A machine whose CPUs are all busy: node3 cut to 0.1 CPUs, node2 got less CPU than node1 and waited for one.
    # Rank 1 is 30% busier than the others' median, but it waits for rank 2 too (CI, the cut-CPU drill).
    watch = StragglerWatch(margin=0.3, after=15)

    found = feed(watch, {0: 45, 1: 94, 2: 99}, beats=8)

    assert [straggler.rank for straggler in found] == [2]


def test_a_rank_is_judged_against_the_others_beats_read_in_the_same_poll() -> None:
    # CI, the cut-CPU drill: rank 1 (89%) and rank 2 (97%) were read in one poll, and rank 1 was judged before rank
    # 2's new beat was taken, against rank 2's older, lower share: both were named, rank 1 the slower.
    watch = StragglerWatch(margin=0.3, after=15)
    rank_2_shares = [80, 80, 100, 100]

    found = []
    for number, share in enumerate(rank_2_shares):
        found += watch.observe([beat(0, 40), beat(1, 92), beat(2, share)], 5.0 * number)

    assert [straggler.rank for straggler in found] == [2]


def test_two_ranks_as_busy_as_each_other_and_the_others_idle_are_both_named() -> None:
    watch = StragglerWatch(margin=0.3, after=15)

    found = feed(watch, {0: 30, 1: 100, 2: 100, 3: 30}, beats=8)

    assert sorted(straggler.rank for straggler in found) == [1, 2]


def test_every_rank_equally_slow_names_nobody() -> None:
    # Shared cores: every rank waits for a CPU as much as the others.
    assert feed(StragglerWatch(margin=0.3, after=10), {0: 96, 1: 97, 2: 95}, beats=20) == []


def test_within_the_margin_is_no_straggler() -> None:
    assert feed(StragglerWatch(margin=0.3, after=10), {0: 60, 1: 62, 2: 75}, beats=20) == []


def test_rank_0_working_alone_while_the_others_idle_at_a_barrier_is_no_straggler() -> None:
    # An evaluation or a checkpoint on rank 0: the others are not training, they wait at a barrier.
    assert feed(StragglerWatch(margin=0.3, after=10), {0: 100, 1: 1, 2: 2}, beats=20) == []


def test_a_rank_so_slow_that_the_others_sleep_waiting_for_it_is_named() -> None:
    # One thread per rank, node3 cut to 0.1 CPUs, the CNN example (a sim, quiet machine): rank 2 busy 95%, the others
    # 5%, asleep in gloo's collective the rest of the time (with two threads their spin-waits counted as busy).
    found = feed(StragglerWatch(margin=0.3, after=15), {0: 4, 1: 5, 2: 95}, beats=8)

    assert [(straggler.rank, straggler.busy, straggler.median_busy) for straggler in found] == [(2, 95, 4.5)]
    assert round(found[0].slower_by, 1) == round(95 / 4.5 - 1, 1)


def test_others_idle_the_whole_window_give_a_lower_bound_of_the_slowdown() -> None:
    found = feed(StragglerWatch(margin=0.3, after=10), {0: 0, 1: 0, 2: 90}, beats=5)

    assert [(straggler.rank, straggler.slower_by) for straggler in found] == [(2, 89.0)]


def test_a_rank_that_is_seldom_busy_is_no_straggler_however_idle_the_others_are() -> None:
    # Data loading or I/O bound: nobody computes much.
    assert feed(StragglerWatch(margin=0.3, after=10), {0: 10, 1: 30, 2: 12}, beats=20) == []


def test_margin_zero_turns_the_watch_off() -> None:
    assert feed(StragglerWatch(margin=0, after=10), {0: 20, 1: 20, 2: 99}, beats=20) == []


def test_a_single_rank_has_nobody_to_be_slower_than() -> None:
    assert feed(StragglerWatch(margin=0.3, after=0), {0: 100}, beats=5) == []


def test_an_ended_rank_leaves_the_median_and_a_beat_without_a_share_is_ignored() -> None:
    watch = StragglerWatch(margin=0.3, after=0)
    watch.observe([beat(0, 20), beat(1, 22)], 0.0)
    watch.observe([{"kind": "ended", "rank": 1, "node": "node2", "code": 0}, beat(2, None)], 1.0)

    # Rank 0 is alone now: nobody to compare it with.
    assert watch.observe([beat(0, 99)], 2.0) == []
    assert sorted(watch.busy) == [0]


def test_the_record_kept_in_progress_and_the_summary() -> None:
    straggler = Straggler(rank=2, node="node3", slower_by=0.4512, busy=97, median_busy=66.84, seconds=30.02)

    record = straggler.as_record()

    assert record == {
        "kind": events.STRAGGLER,
        "rank": 2,
        "node": "node3",
        "slower_by": 0.451,
        "busy": 97,
        "median_busy": 66.8,
        "seconds": 30.0,
        "text": straggler.describe(),
    }
    assert record["text"].startswith("rank 2 on node3 is 45% slower than the median rank for 30 s")


def test_beat_lines_from_the_rank_wrapper_feed_the_watch() -> None:
    watch = StragglerWatch(margin=0.3, after=5)
    lines = "".join(
        f"[rank {rank} {NODES[rank]}] {events.RANK_BEAT} R 10.00 {share}\n"
        for rank, share in ((0, 30), (1, 31), (2, 99))
    )

    watch.observe(progress.progress_records({"node1.log": lines}), 0.0)
    found = watch.observe(progress.progress_records({"node1.log": lines}), 5.0)

    assert [straggler.rank for straggler in found] == [2]


def test_a_rank_that_ended_and_beats_again_is_watched_for_a_whole_window_again() -> None:
    # A restarted attempt: rank 2's beats of the first attempt do not count towards the second's window.
    watch = StragglerWatch(margin=0.3, after=30)
    feed(watch, {0: 40, 1: 40, 2: 45}, beats=10)
    watch.observe([{"kind": "ended", "rank": 2, "node": "node3", "code": -9}], 50.0)

    early = feed(watch, {0: 40, 1: 40, 2: 95}, beats=6, start=55.0)  # 25 s of the new attempt
    found = feed(watch, {0: 40, 1: 40, 2: 95}, beats=1, start=85.0)

    assert early == []
    assert [straggler.rank for straggler in found] == [2]


def test_nobody_is_named_while_the_job_winds_down_after_a_rank_ended() -> None:
    # The cut-CPU drill on a loaded machine: node3's rank is named, then ends first at the job's end; rank 0 (its
    # evaluation) and rank 1 (waiting for a CPU to exit) are left, 76% and 42% busy, for longer than the window.
    watch = StragglerWatch(margin=0.3, after=15)
    named = feed(watch, {0: 40, 1: 40, 2: 99}, beats=4)
    watch.observe([{"kind": "ended", "rank": 2, "node": "node3", "code": 0}], 20.0)

    assert [straggler.rank for straggler in named] == [2]
    assert feed(watch, {0: 76, 1: 42}, beats=8, start=20.0) == []


def test_a_new_attempt_is_judged_again_once_every_ended_rank_beats() -> None:
    watch = StragglerWatch(margin=0.3, after=10)
    feed(watch, {0: 40, 1: 40, 2: 40}, beats=3)
    watch.observe([{"kind": "ended", "rank": rank, "node": NODES[rank], "code": 1} for rank in (0, 1, 2)], 15.0)

    # Ranks 0 and 1 of the next attempt beat; rank 2 has not yet: nobody is judged.
    assert feed(watch, {0: 40, 1: 95}, beats=4, start=20.0) == []
    found = feed(watch, {0: 40, 1: 95, 2: 40}, beats=4, start=40.0)
    assert [straggler.rank for straggler in found] == [1]
