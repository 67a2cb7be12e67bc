# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of plugin_utils/follow.py: what the job_wait action shows and keeps while a job runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.plugin_utils.follow import (
    LIVE_LOG,
    PROGRESS_FILE,
    STALE_FILES,
    Follower,
    collected_rest,
    start_run_dir,
)


def started(rank: int, node: str) -> str:
    return f"[rank {rank} {node}] {events.RANK_STARTED}\n"


def ended(rank: int, node: str, code: int) -> str:
    return f"[rank {rank} {node}] {events.RANK_ENDED} {code}\n"


def launcher(event: str, **fields: object) -> str:
    return json.dumps({"event": event, "time": 1712.5, **fields}) + "\n"


@pytest.fixture
def follower(tmp_path: Path) -> Follower:
    # A fixed clock: every feed passes ``now`` explicitly.
    return Follower(run_dir=tmp_path, world_size=4, heartbeat_seconds=30.0, shown_at=0.0, began=0.0)


def test_starts_are_counted_once_per_feed(follower: Follower) -> None:
    first = follower.feed({"node1.log": started(0, "node1") + started(1, "node1")}, now=1.0)
    second = follower.feed({"node2.log": started(2, "node2")}, now=2.0)

    assert first == ["ranks started: 2 of 4"]
    assert second == ["ranks started: 3 of 4"]
    assert follower.started == {0, 1, 2}


def test_a_rank_started_twice_counts_once(follower: Follower) -> None:
    follower.feed({"node1.log": started(0, "node1")}, now=1.0)

    assert follower.feed({"node1.log": started(0, "node1")}, now=2.0) == ["ranks started: 1 of 4"]


def test_a_feed_without_starts_shows_no_start_count(follower: Follower) -> None:
    follower.feed({"node1.log": started(0, "node1")}, now=1.0)

    assert follower.feed({"node1.log": "[rank 0 node1] loading data\n"}, now=2.0) == []


def test_epoch_lines_are_shown_and_counted(follower: Follower) -> None:
    shown = follower.feed(
        {"node1.log": "[rank 0 node1] epoch 1 loss 0.35 1200 samples/s\n[rank 0 node1] epoch 2 loss 0.2\n"}, now=1.0
    )

    assert shown == ["rank 0 (node1) epoch 1: loss 0.35, 1200.0 samples/s", "rank 0 (node1) epoch 2: loss 0.2"]
    assert follower.epochs == 2


def test_the_first_step_of_the_attempt_is_shown_and_kept_later_steps_are_output(follower: Follower, tmp_path: Path) -> None:
    first = follower.feed({"node1.log": "[rank 0 node1] epoch 3 step 1/40 loss 2.3012\n"}, now=1.0)
    later = follower.feed(
        {"node1.log": "[rank 0 node1] epoch 3 step 20/40 loss 1.9\n" + json.dumps({"event": "step", "step": 21}) + "\n"},
        now=2.0,
    )

    assert first == ["rank 0 (node1) training: epoch 3 step 1, loss 2.301"]
    assert later == []
    kept = [json.loads(line) for line in (tmp_path / PROGRESS_FILE).read_text().splitlines()]
    assert [(record["kind"], record["step"]) for record in kept] == [("step", 1)]


def test_launcher_events_are_shown_in_words(follower: Follower) -> None:
    text = launcher("node_exit", node="node2", code=1, after_abort=False) + launcher("abort", reason="node node2 exited 1")

    assert follower.feed({"launcher.log": text}, now=1.0) == [
        "node node2: torchrun agent exited 1",
        "stopping every rank: node node2 exited 1",
    ]
    assert not follower.ended


def test_launcher_exit_ends_the_job_with_its_code(follower: Follower) -> None:
    assert not follower.ended

    shown = follower.feed({"launcher.log": launcher("launcher_exit", code=3)}, now=1.0)

    assert shown == ["launcher exited 3"]
    assert follower.ended
    assert follower.launcher_exit_code == 3


def test_launcher_exit_zero_also_ends_the_job(follower: Follower) -> None:
    follower.feed({"launcher.log": launcher("launcher_exit", code=0)}, now=1.0)

    assert follower.ended
    assert follower.launcher_exit_code == 0


def test_rank_ends_are_counted_and_every_rank_ending_with_0_is_success(follower: Follower) -> None:
    first = follower.feed({"node1.log": ended(0, "node1", 0) + ended(1, "node1", 0)}, now=1.0)
    assert first == ["ranks ended: 2 of 4"]
    assert not follower.ranks_succeeded
    follower.feed({"node2.log": ended(2, "node2", 0) + ended(3, "node2", 0)}, now=2.0)
    assert follower.ranks_succeeded
    assert not follower.ended


def test_a_failed_rank_is_named_and_no_success(follower: Follower) -> None:
    shown = follower.feed({"node1.log": "".join(ended(rank, "node1", 0) for rank in (0, 1, 2)) + ended(3, "node2", 1)}, now=1.0)
    assert shown == ["rank 3 (node2) exited 1", "ranks ended: 4 of 4"]
    assert not follower.ranks_succeeded


def test_no_success_before_every_rank_ended(tmp_path: Path) -> None:
    assert not Follower(run_dir=tmp_path, world_size=0).ranks_succeeded
    one_of_two = Follower(run_dir=tmp_path, world_size=2)
    one_of_two.feed({"node1.log": ended(0, "node1", 0)})
    assert not one_of_two.ranks_succeeded


def test_follow_rest_reads_the_collected_logs_after_the_offsets(tmp_path: Path) -> None:
    logs = tmp_path / "nodes" / "node1" / "logs"
    logs.mkdir(parents=True)
    followed = ended(0, "node1", 0)
    (logs / "node1.log").write_text(followed + "[rank 0 node1] late line\n")
    (logs / "launcher.log").write_text(launcher("node_exit", node="node1", code=0, after_abort=False) + launcher("launcher_exit", code=0))
    (logs / "rank-0.log").write_text("late line\n")
    follower = Follower(run_dir=tmp_path, world_size=1)

    shown = follower.feed(collected_rest(logs, {"node1.log": len(followed)}))

    assert shown == ["node node1: torchrun agent exited 0", "launcher exited 0"]
    assert follower.ended and follower.launcher_exit_code == 0
    # The node's own lines first: its agent exited after them.
    assert (tmp_path / LIVE_LOG).read_text().splitlines() == [
        "[rank 0 node1] late line",
        "[job] node node1: torchrun agent exited 0",
        "[job] launcher exited 0",
    ]


def test_follow_rest_of_nothing_collected_shows_nothing(tmp_path: Path) -> None:
    assert Follower(run_dir=tmp_path, world_size=1).feed(collected_rest(tmp_path / "missing", {})) == []


def test_no_heartbeat_before_heartbeat_seconds(follower: Follower) -> None:
    assert follower.feed({}, now=29.0) == []


def test_heartbeat_after_heartbeat_seconds_without_a_shown_line(follower: Follower) -> None:
    follower.feed({"node1.log": started(0, "node1")}, now=10.0)

    assert follower.feed({}, now=39.0) == []
    assert follower.feed({}, now=40.5) == ["still training (40 s, 1 of 4 ranks started)"]
    # The heartbeat counts as shown: the next one is heartbeat_seconds later.
    assert follower.feed({}, now=60.0) == []
    assert follower.feed({}, now=70.5) == ["still training (70 s, 1 of 4 ranks started)"]


def test_heartbeat_names_the_last_output_line(follower: Follower) -> None:
    follower.feed({"node1.log": "[rank 0 node1] step 10\n[rank 1 node1] step 11\n"}, now=5.0)

    # Plain output is not shown, so it does not put the heartbeat off.
    assert follower.feed({}, now=31.0) == ["still training (31 s, 0 of 4 ranks started); last output: rank 1 (node1): step 11"]


def test_heartbeat_cuts_a_long_last_output(follower: Follower) -> None:
    follower.feed({"node1.log": "[rank 0 node1] " + "x" * 500 + "\n"}, now=1.0)

    (line,) = follower.feed({}, now=30.0)

    assert line.endswith("; last output: " + ("rank 0 (node1): " + "x" * 500)[:160])


def test_live_log_has_rank_lines_and_job_events(follower: Follower, tmp_path: Path) -> None:
    follower.feed({"node1.log": started(0, "node1") + "[rank 0 node1] epoch 1 loss 0.35\n"}, now=1.0)
    follower.feed(
        {
            "node2.log": "[rank 1 node2] hello\n",
            "launcher.log": launcher("node_exit", node="node2", code=0, after_abort=False) + launcher("cancel")
            + launcher("launcher_exit", code=0),
        },
        now=2.0,
    )

    assert (tmp_path / LIVE_LOG).read_text(encoding="utf-8").splitlines() == [
        "[job] rank 0 started on node1",
        "[rank 0 node1] epoch 1 loss 0.35",
        "[rank 1 node2] hello",
        "[job] node node2: torchrun agent exited 0",
        "[job] cancel asked for: stopping every rank",
        "[job] launcher exited 0",
    ]


def test_progress_jsonl_holds_every_record_but_output(follower: Follower, tmp_path: Path) -> None:
    before = time.time()
    follower.feed(
        {
            "node1.log": started(0, "node1") + "[rank 0 node1] hello\n[rank 0 node1] epoch 1 loss 0.5\n",
            "launcher.log": launcher("abort", reason="signal") + launcher("launcher_exit", code=143),
        },
        now=1.0,
    )
    after = time.time()

    lines = (tmp_path / PROGRESS_FILE).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]

    assert all(before - 0.01 <= record.pop("time") <= after + 0.01 for record in records)
    assert records == [
        {"kind": "started", "rank": 0, "node": "node1", "text": None},
        {"kind": "epoch", "rank": 0, "node": "node1", "epoch": 1, "loss": 0.5, "samples_per_s": None,
         "text": "rank 0 (node1) epoch 1: loss 0.5"},
        {"kind": "abort", "reason": "signal", "text": "stopping every rank: signal"},
        {"kind": "launcher_exit", "code": 143, "text": "launcher exited 143"},
    ]


def test_files_are_appended_across_feeds(follower: Follower, tmp_path: Path) -> None:
    follower.feed({"node1.log": started(0, "node1")}, now=1.0)
    follower.feed({"node1.log": started(1, "node1")}, now=2.0)

    ranks = [json.loads(line)["rank"] for line in (tmp_path / PROGRESS_FILE).read_text().splitlines()]
    assert ranks == [0, 1]
    assert len((tmp_path / LIVE_LOG).read_text().splitlines()) == 2


def test_the_secret_values_of_the_job_s_environment_are_masked_in_all_it_shows_and_keeps(tmp_path: Path) -> None:
    follower = Follower(run_dir=tmp_path, world_size=2, secret_values=("s3cr3t-value",), shown_at=0.0, began=0.0)
    epoch = json.dumps({"event": "epoch", "epoch": 1, "loss": 0.5, "note": "token s3cr3t-value"})
    os.umask(old := os.umask(0))
    try:
        shown = follower.feed(
            {"node1.log": started(0, "node1") + "[rank 0 node1] HF_TOKEN=s3cr3t-value\n" + f"[rank 0 node1] {epoch}\n",
             "launcher.log": launcher("abort", reason="rank 0 said s3cr3t-value")},
            now=1.0,
        )
        shown += follower.feed({}, now=40.0)
    finally:
        os.umask(old)

    assert "s3cr3t-value" not in "\n".join(shown)
    assert shown[-1].endswith('"note": "token ***"}'), "the heartbeat names the last output, masked"
    assert b"s3cr3t-value" not in (tmp_path / PROGRESS_FILE).read_bytes() + (tmp_path / LIVE_LOG).read_bytes()
    assert "[rank 0 node1] HF_TOKEN=***" in (tmp_path / LIVE_LOG).read_text()
    assert "stopping every rank: rank 0 said ***" in (tmp_path / PROGRESS_FILE).read_text()
    # The run's live files are their owner's only, whatever the umask.
    assert {path.name: path.stat().st_mode & 0o777 for path in tmp_path.iterdir()} == {
        LIVE_LOG: 0o600, PROGRESS_FILE: 0o600,
    }


def test_a_feed_without_records_writes_no_files(follower: Follower, tmp_path: Path) -> None:
    follower.feed({"node1.log": "torchrun noise without a prefix\n"}, now=1.0)

    assert not (tmp_path / LIVE_LOG).exists()
    assert not (tmp_path / PROGRESS_FILE).exists()


# start_run_dir (the run_start action)


def test_start_run_dir_creates_it_and_points_latest_at_it(tmp_path: Path) -> None:
    changes = start_run_dir(tmp_path, "job-1", keep=0)
    assert (tmp_path / "job-1").is_dir()
    assert (tmp_path / "latest").is_symlink() and (tmp_path / "latest").readlink() == Path("job-1")
    assert len(changes) == 2
    assert start_run_dir(tmp_path, "job-1", keep=0) == [], "a second start changes nothing"


def test_start_run_dir_makes_the_run_its_owner_s_only_whatever_the_umask_or_an_earlier_mode(tmp_path: Path) -> None:
    (tmp_path / "job-old").mkdir(mode=0o755)
    os.umask(old := os.umask(0))
    try:
        start_run_dir(tmp_path, "job-new", keep=0)
        start_run_dir(tmp_path, "job-old", keep=0)
    finally:
        os.umask(old)
    assert (tmp_path / "job-new").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "job-old").stat().st_mode & 0o777 == 0o700


def test_start_run_dir_removes_what_an_earlier_run_of_the_id_left(tmp_path: Path) -> None:
    run = tmp_path / "job-1"
    (run / "nodes" / "node1").mkdir(parents=True)
    (run / "nodes" / "node1" / "rank.sh").write_text("old\n")
    for name in STALE_FILES:
        (run / name).write_text("old\n")
    changes = start_run_dir(tmp_path, "job-1", keep=0)
    # Collected files go too: an overwrite would leave the earlier run's extra files (a rank's status, an output).
    assert list(run.iterdir()) == []
    assert "removed the earlier run's nodes/" in changes


def test_start_run_dir_moves_latest_and_keeps_the_newest_runs(tmp_path: Path) -> None:
    for index, name in enumerate(["a", "b", "c"]):
        (tmp_path / name).mkdir()
        stamp = time.time() - 100 + index
        os.utime(tmp_path / name, (stamp, stamp))
    (tmp_path / "latest").symlink_to("c")
    changes = start_run_dir(tmp_path, "d", keep=2)
    assert (tmp_path / "latest").readlink() == Path("d")
    assert sorted(path.name for path in tmp_path.iterdir() if not path.is_symlink()) == ["c", "d"]
    assert "removed the old run a" in changes and "removed the old run b" in changes
