"""multinode_training's view of a running job: ProgressReader over progress.jsonl, and ``python -m multinode_training``."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.multinode.training.plugins.plugin_utils import follow

from multinode_training import api
from multinode_training.__main__ import main, run_dir_of, watch
from multinode_training.records import (
    JobEvent,
    Progress,
    ProgressReader,
    RankEnded,
    RankStarted,
    Restarted,
    Stalled,
    Straggler,
)


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def write_summary(run_dir: Path, **summary: Any) -> None:
    """As run_summary writes it: whole, by rename."""
    tmp = run_dir / ".summary.tmp"
    tmp.write_text(json.dumps(summary))
    os.replace(tmp, run_dir / "summary.json")


# ProgressReader


def test_reader_of_a_missing_file_returns_nothing(tmp_path: Path) -> None:
    reader = ProgressReader(tmp_path / "progress.jsonl")

    assert reader() == []
    assert reader.offset == 0


def test_reader_turns_each_kind_into_its_record(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    path.write_text(
        jsonl(
            {"kind": "started", "rank": 0, "node": "node1", "text": None, "time": 1.0},
            {"kind": "epoch", "rank": 0, "node": "node1", "epoch": 2, "loss": 0.5, "samples_per_s": 100.0,
             "text": "rank 0 (node1) epoch 2: loss 0.5, 100.0 samples/s", "time": 2.0},
            {"kind": "node_exit", "node": "node2", "code": 1, "after_abort": False,
             "text": "node node2: torchrun agent exited 1", "time": 3.0},
        )
    )

    assert ProgressReader(path)() == [
        RankStarted(rank=0, node="node1", started=1),
        Progress(rank=0, node="node1", epoch=2, loss=0.5, samples_per_s=100.0),
        JobEvent(kind="node_exit", text="node node2: torchrun agent exited 1",
                 details={"node": "node2", "code": 1, "after_abort": False}),
    ]


def test_reader_counts_distinct_started_ranks(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    path.write_text(
        jsonl(
            {"kind": "started", "rank": 1, "node": "node2"},
            {"kind": "started", "rank": 0, "node": "node1"},
            {"kind": "started", "rank": 1, "node": "node2"},
        )
    )

    assert [record.started for record in ProgressReader(path)()] == [1, 2, 2]


def test_reader_returns_only_what_was_appended_and_complete(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    reader = ProgressReader(path)
    first = jsonl({"kind": "started", "rank": 0, "node": "node1"})
    partial = '{"kind": "launcher_exit", "co'
    path.write_text(first + partial)

    assert reader() == [RankStarted(rank=0, node="node1", started=1)]
    assert reader.offset == len(first.encode())
    assert reader() == []

    append(path, 'de": 0, "text": "launcher exited 0"}\n')

    assert reader() == [JobEvent(kind="launcher_exit", text="launcher exited 0", details={"code": 0})]
    assert reader() == []


def test_reader_keeps_the_started_count_across_calls(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    reader = ProgressReader(path)
    path.write_text(jsonl({"kind": "started", "rank": 0, "node": "node1"}))
    reader()
    append(path, jsonl({"kind": "started", "rank": 3, "node": "node2"}))

    assert reader() == [RankStarted(rank=3, node="node2", started=2)]


def test_a_job_event_without_text_is_named_by_its_kind(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    path.write_text(jsonl({"kind": "cancel", "time": 5.0}))

    assert ProgressReader(path)() == [JobEvent(kind="cancel", text="cancel", details={})]


def test_reader_reads_what_the_follower_writes(tmp_path: Path) -> None:
    from ansible_collections.multinode.training.plugins.plugin_utils.follow import PROGRESS_FILE, Follower

    follower = Follower(run_dir=tmp_path, world_size=2, shown_at=0.0, began=0.0)
    follower.feed(
        {
            "node1.log": (
                "[rank 0 node1] -- multinode: rank started\n[rank 0 node1] epoch 1 loss 0.25 50 samples/s\n"
                "[rank 0 node1] -- multinode: rank ended 0\n"
            ),
            "launcher.log": '{"event": "launcher_exit", "time": 9.5, "code": 0}\n',
        },
        now=1.0,
    )

    assert ProgressReader(tmp_path / PROGRESS_FILE)() == [
        RankStarted(rank=0, node="node1", started=1),
        Progress(rank=0, node="node1", epoch=1, loss=0.25, samples_per_s=50.0),
        RankEnded(rank=0, node="node1", code=0, ended=1),
        JobEvent(kind="launcher_exit", text="launcher exited 0", details={"code": 0}),
    ]


def test_reader_turns_the_controller_s_stall_and_restart_records_into_typed_records(tmp_path: Path) -> None:
    from ansible_collections.multinode.training.plugins.module_utils.watchdog import Stall
    from ansible_collections.multinode.training.plugins.plugin_utils.follow import PROGRESS_FILE, Follower, append_record

    stall = Stall(ranks=((1, "node2", "T"),), seconds=61.0)
    append_record(tmp_path, stall.as_record())
    append_record(tmp_path, {"kind": "restart", "attempt": 1, "cause_kind": "stall", "text": "restart 1 of 3: ..."})
    # Beats are the watchdog's input, never a record of the job's progress.
    follower = Follower(run_dir=tmp_path, world_size=2, shown_at=0.0, began=0.0)
    follower.feed({"node2.log": "[rank 1 node2] -- multinode: rank beat T 12.00\n"}, now=1.0)

    assert ProgressReader(tmp_path / PROGRESS_FILE)() == [
        Stalled(
            ranks=[{"rank": 1, "node": "node2", "state": "T"}],
            seconds=61.0,
            text="rank 1 on node2 stalled: no progress for 61 s (stopped, state T)",
        ),
        Restarted(attempt=1, cause_kind="stall", text="restart 1 of 3: ..."),
    ]
    assert "beat" not in (tmp_path / "live.log").read_text()


def test_a_straggler_named_is_shown_kept_for_the_summary_and_read_as_a_typed_record(tmp_path: Path) -> None:
    from ansible_collections.multinode.training.plugins.module_utils.run_report import read_stragglers
    from ansible_collections.multinode.training.plugins.module_utils.stragglers import StragglerWatch
    from ansible_collections.multinode.training.plugins.plugin_utils.follow import PROGRESS_FILE, Follower

    follower = Follower(
        run_dir=tmp_path, world_size=3, shown_at=0.0, began=0.0, straggler_watch=StragglerWatch(margin=0.3, after=5)
    )
    beats = "".join(
        f"[rank {rank} node{rank + 1}] -- multinode: rank beat R 10.00 {share}\n"
        for rank, share in ((0, 30), (1, 32), (2, 96))
    )
    assert follower.feed({"node1.log": beats}, now=1.0) == []
    shown = follower.feed({"node1.log": beats}, now=6.0)

    text = (
        "rank 2 on node3 is 210% slower than the median rank for 5 s "
        "(busy 96% of the time, the other ranks 31%: they wait for it)"
    )
    assert shown == [text]
    assert ProgressReader(tmp_path / PROGRESS_FILE)() == [
        Straggler(rank=2, node="node3", slower_by=2.097, seconds=5.0, text=text)
    ]
    assert [record["text"] for record in read_stragglers(tmp_path)] == [text]
    assert f"[job] {text}" in (tmp_path / "live.log").read_text()


# run_dir_of


def test_run_dir_of_an_existing_directory_is_that_directory(tmp_path: Path) -> None:
    run = tmp_path / "job-1"
    run.mkdir()

    assert run_dir_of(str(run), str(tmp_path / "elsewhere")) == run.resolve()


def test_run_dir_of_a_name_is_in_the_runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    (runs / "job-2").mkdir(parents=True)

    assert run_dir_of("job-2", str(runs)) == (runs / "job-2").resolve()
    assert run_dir_of("job-3", str(runs)) == (runs / "job-3").resolve()


def test_run_dir_of_latest_follows_the_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    (runs / "job-4").mkdir(parents=True)
    (runs / "latest").symlink_to("job-4")

    assert run_dir_of("latest", "runs") == (runs / "job-4").resolve()


# watch


def test_watch_prints_the_live_log_in_order_then_the_status(tmp_path: Path) -> None:
    live = tmp_path / "live.log"
    lines = ["[job] rank 0 started on node1\n", "[rank 0 node1] epoch 1 loss 0.3\n", "[job] launcher exited 0\n"]

    def job() -> None:
        for line in lines:
            time.sleep(0.03)
            append(live, line)
        # A line still being written when the summary appears is not printed.
        append(live, "[rank 0 node1] half a li")
        time.sleep(0.03)
        write_summary(tmp_path, job_id="job-5", status="succeeded")

    out = io.StringIO()
    writer = threading.Thread(target=job)
    writer.start()
    try:
        status = watch(tmp_path, out=out, poll=0.01)
    finally:
        writer.join()

    assert status == "succeeded"
    assert out.getvalue() == "".join(lines) + "job job-5: succeeded\n"


def test_watch_names_the_failure_reasons(tmp_path: Path) -> None:
    (tmp_path / "live.log").write_text("[job] node node2: torchrun agent exited 1\n")
    write_summary(tmp_path, job_id="job-6", status="failed", failure_reasons=["rank 3 exited 1", "node node2 exited 1"])
    out = io.StringIO()

    assert watch(tmp_path, out=out, poll=0.01) == "failed"
    assert out.getvalue().splitlines() == [
        "[job] node node2: torchrun agent exited 1",
        "job job-6: failed (rank 3 exited 1; node node2 exited 1)",
    ]


def test_watch_without_a_live_log_prints_only_the_status(tmp_path: Path) -> None:
    write_summary(tmp_path, job_id="job-7", status="cancelled", failure_reasons=[])
    out = io.StringIO()

    assert watch(tmp_path, out=out, poll=0.01) == "cancelled"
    assert out.getvalue() == "job job-7: cancelled\n"


# main


def test_cancel_asks_a_running_job_to_stop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "live.log").write_text("[job] rank 0 started on node1\n")
    assert main(["cancel", str(tmp_path)]) == 0
    assert (tmp_path / "cancel").is_file()
    assert "asked" in capsys.readouterr().out


def test_cancel_of_an_ended_job_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_summary(tmp_path, job_id="job-8", status="succeeded")

    assert main(["cancel", str(tmp_path)]) == 1
    assert not (tmp_path / "cancel").exists()
    assert "already ended" in capsys.readouterr().out


def test_cancel_finds_a_run_by_name_in_runs_dir(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "job-9"
    run.mkdir(parents=True)
    (run / "progress.jsonl").write_text("")

    assert main(["cancel", "job-9", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert (run / "cancel").is_file()


def test_a_missing_run_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["cancel", "nope", "--runs-dir", str(tmp_path)])

    assert exc.value.code == 2
    assert "no run at" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()


@pytest.mark.parametrize("where", ["missing", "empty", "file"])
def test_cancel_of_a_path_that_is_no_run_raises_and_creates_nothing(tmp_path: Path, where: str) -> None:
    path = tmp_path / where
    if where == "empty":
        path.mkdir()
    elif where == "file":
        path.write_text("not a run")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(api.RunNotFoundError, match="no run at"):
        api.cancel(path)
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize(("status", "code"), [("succeeded", 0), ("failed", 1), ("cancelled", 1)])
def test_watch_command_exit_code_follows_the_status(tmp_path: Path, status: str, code: int) -> None:
    # watch() binds sys.stdout as its default when imported, so the printed line is not asserted here.
    write_summary(tmp_path, job_id="job-10", status=status)

    assert main(["watch", str(tmp_path)]) == code


def test_progress_reader_skips_an_earlier_runs_file_and_reads_the_new_one_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    path.write_text('{"kind": "epoch", "rank": 0, "node": "node1", "epoch": 9, "loss": 0.1}\n' * 3)
    os.utime(path, (100.0, 100.0))
    reader = ProgressReader(path, not_before=200.0)
    assert reader() == [], "an earlier run's records are not replayed"
    path.unlink()
    path.write_text('{"kind": "epoch", "rank": 0, "node": "node1", "epoch": 1, "loss": 0.5}\n')
    records = reader()
    assert [record.epoch for record in records if isinstance(record, Progress)] == [1]


def test_the_run_may_follow_the_options(tmp_path: Path) -> None:
    run = tmp_path / "job-1"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"job_id": "job-1", "status": "succeeded", "failure_reasons": []}))
    assert main(["watch", "--runs-dir", str(tmp_path), "job-1"]) == 0
    assert main(["--runs-dir", str(tmp_path), "watch", "job-1"]) == 0


def test_the_api_names_the_run_files_as_the_job_wait_action_writes_them() -> None:
    files = ("PROGRESS_FILE", "LIVE_LOG", "CANCEL_FILE", "SUMMARY_FILE", "FOLLOWING_FILE")
    assert [getattr(api, name) for name in files] == [getattr(follow, name) for name in files]
