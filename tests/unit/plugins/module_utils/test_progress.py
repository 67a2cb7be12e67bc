# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/progress.py: reading a running job's logs and turning them into progress records."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils import events, progress


def launcher_line(event: str, **fields: object) -> str:
    """One launcher.log line as the launch script's ``event`` function writes it."""
    return json.dumps({"event": event, "time": 1712.5, **fields}) + "\n"


# read_new_text


def test_read_returns_complete_lines_and_the_offset_after_the_last_one(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_bytes(b"first\nsecond\nthi")

    chunks = progress.read_new_text(str(tmp_path), {}, 1 << 16)

    assert chunks == {"node1.log": progress.Chunk(text="first\nsecond\n", offset=len(b"first\nsecond\n"))}


def test_a_partial_line_comes_on_the_next_call_once_finished(tmp_path: Path) -> None:
    log = tmp_path / "node1.log"
    log.write_bytes(b"one\ntw")
    first = progress.read_new_text(str(tmp_path), {}, 1 << 16)["node1.log"]

    assert progress.read_new_text(str(tmp_path), {"node1.log": first.offset}, 1 << 16) == {}

    with log.open("ab") as handle:
        handle.write(b"o\nthr")
    second = progress.read_new_text(str(tmp_path), {"node1.log": first.offset}, 1 << 16)["node1.log"]

    assert second.text == "two\n"
    assert second.offset == len(b"one\ntwo\n")


def test_offsets_are_kept_per_file(tmp_path: Path) -> None:
    (tmp_path / "launcher.log").write_bytes(b"a\nb\n")
    (tmp_path / "node1.log").write_bytes(b"x\ny\n")

    chunks = progress.read_new_text(str(tmp_path), {"launcher.log": 2}, 1 << 16)

    assert {name: chunk.text for name, chunk in chunks.items()} == {"launcher.log": "b\n", "node1.log": "x\ny\n"}
    assert chunks["launcher.log"].offset == 4


def test_rank_logs_and_other_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "rank-0.log").write_bytes(b"own output\n")
    (tmp_path / "rank-12.log").write_bytes(b"own output\n")
    (tmp_path / "node1.txt").write_bytes(b"not a log\n")
    (tmp_path / "node1.log").write_bytes(b"[rank 0 node1] hello\n")

    assert list(progress.read_new_text(str(tmp_path), {}, 1 << 16)) == ["node1.log"]


def test_a_file_that_shrank_is_read_again_from_the_start(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_bytes(b"new\n")

    chunk = progress.read_new_text(str(tmp_path), {"node1.log": 100}, 1 << 16)["node1.log"]

    assert chunk == progress.Chunk(text="new\n", offset=4)


def test_max_bytes_limits_one_read_and_the_rest_comes_next(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_bytes(b"aaaa\nbbbb\ncccc\n")

    first = progress.read_new_text(str(tmp_path), {}, 12)["node1.log"]
    second = progress.read_new_text(str(tmp_path), {"node1.log": first.offset}, 12)["node1.log"]

    assert first == progress.Chunk(text="aaaa\nbbbb\n", offset=10)
    assert second == progress.Chunk(text="cccc\n", offset=15)


def test_invalid_utf8_is_replaced_not_raised(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_bytes(b"bad \xff byte\n")

    chunk = progress.read_new_text(str(tmp_path), {}, 1 << 16)["node1.log"]

    assert chunk.text == "bad \ufffd byte\n"
    assert chunk.offset == len(b"bad \xff byte\n")


def test_a_line_longer_than_max_bytes_does_not_stall_its_file(tmp_path: Path) -> None:
    (tmp_path / "node1.log").write_bytes(b"x" * 20 + b"\nnext\n")

    offsets: dict[str, int] = {}
    texts = []
    for _ in range(5):
        for name, chunk in progress.read_new_text(str(tmp_path), offsets, 8).items():
            offsets[name] = chunk.offset
            texts.append(chunk.text)

    assert "".join(texts) == "x" * 20 + "\nnext\n"
    assert offsets["node1.log"] == 26


# process_running


def test_process_running_is_true_for_a_live_pid(tmp_path: Path) -> None:
    pid_file = tmp_path / "launch.pid"
    pid_file.write_text(f"{os.getpid()}\n")

    assert progress.process_running(str(pid_file)) is True


def test_process_running_is_false_for_a_dead_pid(tmp_path: Path) -> None:
    done = subprocess.Popen(["true"])
    done.wait()
    pid_file = tmp_path / "launch.pid"
    pid_file.write_text(f"{done.pid}\n")

    assert progress.process_running(str(pid_file)) is False


def test_process_running_is_none_without_a_pid(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pid"
    empty.write_text("")

    assert progress.process_running(str(tmp_path / "missing.pid")) is None
    assert progress.process_running(str(empty)) is None


# epoch_of


def test_the_json_epoch_event_is_taken_as_it_is() -> None:
    line = json.dumps({"event": "epoch", "epoch": 2, "loss": 0.5, "samples_per_s": 100.0})

    assert progress.epoch_of(line) == {"epoch": 2, "loss": 0.5, "samples_per_s": 100.0}


def test_a_json_epoch_event_without_loss_still_counts() -> None:
    assert progress.epoch_of('{"event": "epoch", "epoch": 4}') == {"epoch": 4, "loss": None, "samples_per_s": None}


def test_a_json_event_of_another_kind_is_no_epoch() -> None:
    assert progress.epoch_of('{"event": "result", "test_accuracy": 0.9}') is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("epoch 3 loss 0.41", {"epoch": 3, "loss": 0.41, "samples_per_s": None}),
        ("Epoch: 3/10 Loss=0.41 1234.5 samples/s", {"epoch": 3, "loss": 0.41, "samples_per_s": 1234.5}),
        ("[epoch 2] train loss: 1.2e-3", {"epoch": 2, "loss": 0.0012, "samples_per_s": None}),
        ("epoch=7 loss=-0.5 812 images/s", {"epoch": 7, "loss": -0.5, "samples_per_s": 812.0}),
        ("EPOCH #1 LOSS 2 3.5 it/s", {"epoch": 1, "loss": 2.0, "samples_per_s": 3.5}),
        ("epoch 1.5 loss 0.3", {"epoch": 1.5, "loss": 0.3, "samples_per_s": None}),
        ("{'loss': 0.41, 'learning_rate': 5e-05, 'epoch': 0.5}", {"epoch": 0.5, "loss": 0.41, "samples_per_s": None}),
        # A JSON line of the script's own (not the protocol's epoch or step event) is read as text.
        ('{"event": "train", "epoch": 2, "loss": 0.5}', {"epoch": 2, "loss": 0.5, "samples_per_s": None}),
    ],
)
def test_a_printed_line_naming_epoch_and_loss_counts(line: str, expected: dict) -> None:
    assert progress.epoch_of(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "loss 0.4",
        "epoch 3",
        "epochs: 5",
        "epochs: 5 lr 0.1",
        "val_loss 0.3 at epoch 3",
        "",
        "starting training",
    ],
)
def test_lines_without_both_an_epoch_and_a_loss_do_not_count(line: str) -> None:
    assert progress.epoch_of(line) is None


# step_of


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"event": "step", "epoch": 3, "step": 1, "loss": 2.3}', {"epoch": 3, "step": 1, "loss": 2.3}),
        ('{"event": "step", "step": 7}', {"epoch": None, "step": 7, "loss": None}),
        ("epoch 3 step 1/47 loss 2.3012", {"epoch": 3, "step": 1, "loss": 2.3012}),
        ("Epoch: 3/10 step 50 Loss=0.41 1234.5 samples/s", {"epoch": 3, "step": 50, "loss": 0.41}),
        # PyTorch's MNIST example, every few batches (its position counts samples).
        ("Train Epoch: 1 [640/60000 (1%)]\tLoss: 0.301", {"epoch": 1, "step": 640, "loss": 0.301}),
        ("epoch=2 iter=300", {"epoch": 2, "step": 300, "loss": None}),
        ("[epoch 4] batch: 12 loss 1e-2", {"epoch": 4, "step": 12, "loss": 0.01}),
        # A loop without epochs.
        ("step 50 loss 0.4", {"epoch": None, "step": 50, "loss": 0.4}),
    ],
)
def test_a_line_naming_a_step_inside_an_epoch_is_a_step_not_the_epoch_s_end(line: str, expected: dict) -> None:
    assert progress.step_of(line) == expected
    assert progress.epoch_of(line) is None


@pytest.mark.parametrize(
    "line",
    [
        "epoch 3 loss 0.41",
        "Epoch: 3/10 Loss=0.41",
        "step 50",
        "epoch 3 loss 0.41 (120 steps)",
        '{"event": "epoch", "epoch": 3, "step": 4}',
        '{"event": "result", "steps": 9}',
    ],
)
def test_lines_without_an_epoch_and_a_step_inside_it_are_no_step(line: str) -> None:
    assert progress.step_of(line) is None


# progress_records


def test_launcher_events_become_records_without_event_and_time() -> None:
    text = "".join(
        [
            launcher_line("launch", launcher="torchrun"),
            launcher_line("ssh_check", node="node2", code=0),
            launcher_line("node_exit", node="node2", code=1, after_abort=False),
            launcher_line("abort", reason="node node2 exited 1"),
            launcher_line("cancel"),
            launcher_line("launcher_exit", code=1),
        ]
    )

    assert progress.progress_records({"launcher.log": text}) == [
        {"kind": "node_exit", "node": "node2", "code": 1, "after_abort": False},
        {"kind": "abort", "reason": "node node2 exited 1"},
        {"kind": "cancel"},
        {"kind": "launcher_exit", "code": 1},
    ]


def test_launcher_events_are_only_read_from_launcher_log() -> None:
    assert progress.progress_records({"node1.log": launcher_line("launcher_exit", code=0)}) == []


def test_rank_lines_become_started_output_and_epoch_records() -> None:
    text = (
        f"[rank 1 node2] {events.RANK_STARTED}\n"
        "[rank 0 node1] epoch 1 loss 0.35\n"
        "[rank 1 node2] loading data\r\n"
    )

    assert progress.progress_records({"node1.log": text}) == [
        {"kind": "started", "rank": 1, "node": "node2"},
        {"kind": "output", "rank": 0, "node": "node1", "text": "epoch 1 loss 0.35"},
        {"kind": "epoch", "rank": 0, "node": "node1", "epoch": 1, "loss": 0.35, "samples_per_s": None},
        {"kind": "output", "rank": 1, "node": "node2", "text": "loading data"},
    ]


def test_the_end_marker_becomes_an_ended_record_with_the_exit_code() -> None:
    text = f"[rank 2 node3] {events.RANK_ENDED} 0\n[rank 1 node2] {events.RANK_ENDED} 137\n"

    assert progress.progress_records({"node2.log": text}) == [
        {"kind": "ended", "rank": 2, "node": "node3", "code": 0},
        {"kind": "ended", "rank": 1, "node": "node2", "code": 137},
    ]


def test_an_end_marker_without_a_code_is_plain_output() -> None:
    records = progress.progress_records({"node1.log": f"[rank 0 node1] {events.RANK_ENDED}\n"})

    assert [record["kind"] for record in records] == ["output"]


def test_ranks_ended_in_counts_the_markers_of_the_rank_streams_only() -> None:
    ended = f"[rank 0 node1] {events.RANK_ENDED} 0\n"
    chunks = {
        "node1.log": progress.Chunk(ended + "[rank 0 node1] bye\n", 1),
        "node2.log": progress.Chunk(ended.replace("rank 0", "rank 1"), 1),
        "launcher.log": progress.Chunk(ended, 1),
    }

    assert progress.ranks_ended_in(chunks) == 2


def test_a_json_epoch_event_behind_the_rank_prefix_is_an_epoch() -> None:
    line = "[rank 0 node1] " + json.dumps({"event": "epoch", "epoch": 2, "loss": 0.5, "samples_per_s": 100.0}) + "\n"

    records = progress.progress_records({"node1.log": line})

    assert records[1] == {"kind": "epoch", "rank": 0, "node": "node1", "epoch": 2, "loss": 0.5, "samples_per_s": 100.0}


def test_a_relaying_launchers_label_in_front_of_the_rank_prefix_is_passed_over() -> None:
    # horovodrun labels every line it relays "[<index>]<stdout>:" and cannot be told not to.
    text = (
        f"[2]<stdout>:[rank 2 node3] {events.RANK_STARTED}\n"
        "[0]<stdout>:[rank 0 node1] epoch 1 loss 0.35\n"
        f"[1,1]<stderr>:[rank 1 node2] {events.RANK_ENDED} 3\n"
    )

    assert progress.progress_records({"horovodrun.log": text}) == [
        {"kind": "started", "rank": 2, "node": "node3"},
        {"kind": "output", "rank": 0, "node": "node1", "text": "epoch 1 loss 0.35"},
        {"kind": "epoch", "rank": 0, "node": "node1", "epoch": 1, "loss": 0.35, "samples_per_s": None},
        {"kind": "ended", "rank": 1, "node": "node2", "code": 3},
    ]


def test_intel_mpis_rank_label_in_front_of_the_rank_prefix_is_passed_over() -> None:
    # ipexrun runs mpiexec.hydra -l, which puts "[<rank>] " in front of every line of a rank.
    text = (
        f"[2] [rank 2 node3] {events.RANK_STARTED}\n"
        "[0] [rank 0 node1] epoch 1 loss 0.35\n"
        f"[1] [rank 1 node2] {events.RANK_ENDED} 3\n"
        "[1]  [rank 1 node2] two spaces: not the label\n"
    )

    assert progress.progress_records({"ipexrun.log": text}) == [
        {"kind": "started", "rank": 2, "node": "node3"},
        {"kind": "output", "rank": 0, "node": "node1", "text": "epoch 1 loss 0.35"},
        {"kind": "epoch", "rank": 0, "node": "node1", "epoch": 1, "loss": 0.35, "samples_per_s": None},
        {"kind": "ended", "rank": 1, "node": "node2", "code": 3},
    ]


def test_lines_without_the_rank_prefix_are_ignored() -> None:
    text = (
        "W0101 torch.distributed.run: Setting OMP_NUM_THREADS\n"
        "epoch 1 loss 0.35\n"
        "[rank x node1] not a rank\n"
        "rank 0 node1] epoch 1 loss 0.35\n"
        "[rank 0 node1]missing space\n"
        "[0]<stdout>: [rank 0 node1] epoch 1 loss 0.35\n"
        "[0]<stdin>:[rank 0 node1] epoch 1 loss 0.35\n"
    )

    assert progress.progress_records({"node1.log": text}) == []


@pytest.mark.parametrize("node", ["node1", "a", "zeta"])
def test_the_ranks_records_of_one_read_come_before_the_launch_scripts_events(node: str) -> None:
    # Read in one poll: the last ranks' end markers and the exit of their node's agent (a fast teardown). The
    # record must not say the node exited before its ranks ended, whatever the node is called.
    chunks = {
        "launcher.log": launcher_line("node_exit", node=node, code=0) + launcher_line("launcher_exit", code=0),
        f"{node}.log": f"[rank 0 {node}] hi\n[rank 0 {node}] {events.RANK_ENDED} 0\n",
    }

    kinds = [record["kind"] for record in progress.progress_records(chunks)]

    assert kinds == ["output", "ended", "node_exit", "launcher_exit"]


@pytest.mark.parametrize("node", ["a", "node1", "zeta"])
def test_the_launch_scripts_log_is_read_first(tmp_path: Path, node: str) -> None:
    for name in (f"{node}.log", "launcher.log", "ssh-x.log"):
        (tmp_path / name).write_text("line\n", encoding="utf-8")

    assert list(progress.read_new_text(str(tmp_path), {}, 1024))[0] == "launcher.log"


# describe


@pytest.mark.parametrize(
    ("record", "words"),
    [
        (
            {"kind": "epoch", "rank": 0, "node": "node1", "epoch": 2, "loss": 0.123456, "samples_per_s": 1234.56},
            "rank 0 (node1) epoch 2: loss 0.1235, 1234.6 samples/s",
        ),
        ({"kind": "epoch", "rank": 1, "node": "node2", "epoch": 3, "loss": 0.41, "samples_per_s": None}, "rank 1 (node2) epoch 3: loss 0.41"),
        ({"kind": "epoch", "rank": 0, "node": "node1", "epoch": 4, "loss": None, "samples_per_s": 50}, "rank 0 (node1) epoch 4: 50.0 samples/s"),
        ({"kind": "epoch", "rank": 0, "node": "node1", "epoch": 5, "loss": None, "samples_per_s": None}, "rank 0 (node1) epoch 5"),
        ({"kind": "node_exit", "node": "node2", "code": 0, "after_abort": False}, "node node2: torchrun agent exited 0"),
        (
            {"kind": "node_exit", "node": "node2", "agent": "TensorFlow worker", "code": 3, "after_abort": False},
            "node node2: TensorFlow worker exited 3",
        ),
        ({"kind": "abort", "reason": "node node2 exited 1"}, "stopping every rank: node node2 exited 1"),
        ({"kind": "cancel"}, "cancel asked for: stopping every rank"),
        ({"kind": "launcher_exit", "code": 143}, "launcher exited 143"),
        ({"kind": "ended", "rank": 1, "node": "node2", "code": 3}, "rank 1 (node2) exited 3"),
    ],
)
def test_describe_says_each_record_in_words(record: dict, words: str) -> None:
    assert progress.describe(record) == words


@pytest.mark.parametrize(
    "record",
    [
        {"kind": "output", "rank": 0, "node": "node1", "text": "hello"},
        {"kind": "started", "rank": 0, "node": "node1"},
    ],
)
def test_describe_has_no_words_for_output_and_started(record: dict) -> None:
    assert progress.describe(record) is None


def test_record_line_is_one_sorted_json_line() -> None:
    line = progress.record_line({"kind": "launcher_exit", "code": 0})

    assert line == '{"code": 0, "kind": "launcher_exit"}\n'
    assert json.loads(line) == {"kind": "launcher_exit", "code": 0}


# the rank wrapper's beats


def test_a_beat_line_becomes_a_beat_record_with_state_and_cpu_seconds() -> None:
    assert f"[rank 1 node2] {events.RANK_BEAT} T 12.34" == "[rank 1 node2] -- multinode: rank beat T 12.34"

    records = progress.progress_records({"node2.log": "[rank 1 node2] -- multinode: rank beat T 12.34\n"})

    assert records == [
        {"kind": "beat", "rank": 1, "node": "node2", "state": "T", "cpu_seconds": 12.34, "busy_percent": None}
    ]
    assert isinstance(records[0]["cpu_seconds"], float)


def test_a_beat_after_the_first_carries_how_busy_the_rank_was() -> None:
    records = progress.progress_records({"node2.log": "[rank 1 node2] -- multinode: rank beat R 12.34 97\n"})

    assert records == [
        {"kind": "beat", "rank": 1, "node": "node2", "state": "R", "cpu_seconds": 12.34, "busy_percent": 97}
    ]


@pytest.mark.parametrize(
    ("line", "state", "cpu_seconds"),
    [
        ("[rank 0 node1] -- multinode: rank beat R 0.00", "R", 0.0),
        ("[rank 0 node1] -- multinode: rank beat S 3605.07\r", "S", 3605.07),
        ("[rank 0 node1] -- multinode: rank beat D 7", "D", 7.0),
        ("[rank 0 node1] -- multinode: rank beat ? 1.50", "?", 1.5),  # the wrapper could not read the rank's state
        ("[0]<stdout>:[rank 0 node1] -- multinode: rank beat S 2.25", "S", 2.25),  # relayed by horovodrun
        ("[0] [rank 0 node1] -- multinode: rank beat S 2.25", "S", 2.25),  # relayed by mpiexec.hydra -l
    ],
)
def test_beats_of_every_state_and_relay(line: str, state: str, cpu_seconds: float) -> None:
    assert progress.progress_records({"node1.log": line + "\n"}) == [
        {"kind": "beat", "rank": 0, "node": "node1", "state": state, "cpu_seconds": cpu_seconds, "busy_percent": None}
    ]


@pytest.mark.parametrize(
    "text",
    [
        "-- multinode: rank beat T",
        "-- multinode: rank beat T twelve",
        "-- multinode: rank beat T -1.00",
        "-- multinode: rank beat T 1.5 extra",
        "my own -- multinode: rank beat T 1.5",
    ],
)
def test_a_line_that_only_looks_like_a_beat_is_plain_output(text: str) -> None:
    records = progress.progress_records({"node1.log": f"[rank 0 node1] {text}\n"})

    assert records == [{"kind": "output", "rank": 0, "node": "node1", "text": text}]


def test_beats_come_in_log_order_among_the_other_rank_records() -> None:
    text = (
        f"[rank 1 node2] {events.RANK_STARTED}\n"
        f"[rank 1 node2] {events.RANK_BEAT} R 4.98\n"
        "[rank 1 node2] epoch 1 loss 0.5\n"
        f"[rank 1 node2] {events.RANK_BEAT} S 5.20\n"
        f"[rank 1 node2] {events.RANK_ENDED} 0\n"
    )

    assert [record["kind"] for record in progress.progress_records({"node2.log": text})] == [
        "started", "beat", "output", "epoch", "beat", "ended",
    ]


def test_describe_has_no_words_for_a_beat() -> None:
    assert progress.describe({"kind": "beat", "rank": 1, "node": "node2", "state": "T", "cpu_seconds": 12.34}) is None


def test_followed_epochs_are_rank_0s_of_the_current_attempt() -> None:
    records = [
        {"kind": "epoch", "rank": 0, "epoch": 1, "loss": 0.9, "samples_per_s": 10.0, "node": "node1", "time": 1.0},
        {"kind": "restart", "attempt": 1, "time": 2.0},
        {"kind": "epoch", "rank": 0, "epoch": 1, "loss": 0.8, "samples_per_s": 11.0, "node": "node1", "time": 3.0},
        {"kind": "epoch", "rank": 1, "epoch": 1, "loss": 0.8, "node": "node2", "time": 3.1},
        {"kind": "straggler", "rank": 1, "time": 3.5},
        {"kind": "epoch", "rank": 0, "epoch": 2, "loss": 0.7, "samples_per_s": 12.0, "node": "node1", "time": 4.0},
    ]
    assert progress.followed_epochs(records) == [
        {"epoch": 1, "loss": 0.8, "samples_per_s": 11.0},
        {"epoch": 2, "loss": 0.7, "samples_per_s": 12.0},
    ]
    assert progress.followed_epochs([]) == []


def test_followed_exit_codes_are_the_current_attempt_s() -> None:
    records = [
        {"kind": "started", "rank": 0},
        {"kind": "ended", "rank": 0, "node": "node1", "code": 137},
        {"kind": "restart", "attempt": 1},
        {"kind": "ended", "rank": 1, "node": "node2", "code": 0},
        {"kind": "epoch", "rank": 0, "epoch": 1},
        {"kind": "ended", "rank": 0, "node": "node1", "code": 0},
        {"kind": "ended", "rank": "2", "code": 0},
        {"kind": "launcher_exit", "code": 255},
    ]
    assert progress.followed_exit_codes(records) == {1: 0, 0: 0}
    assert progress.followed_exit_codes(records[:3]) == {}
    assert not progress.followed_exit_codes([])
