# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import json

from ansible_collections.multinode.training.plugins.module_utils.run_report import (
    parse_events,
    summarize,
)

T0 = 1_000.0  # launcher started
NODES = ["worker1", "worker2"]


def run_events(world_size: int = 3, *, skip_join: int | None = None, skip_done: int | None = None) -> list[dict]:
    """Events of a run: launch at T0, ranks join at T0+5..7, two epochs, result, done at T0+30..32."""
    events: list[dict] = [{"event": "launch", "launcher": "torchrun", "time": T0}]
    for rank in range(world_size):
        if rank != skip_join:
            host = NODES[rank % len(NODES)]
            events.append(
                {"event": "joined", "rank": rank, "world_size": world_size, "host": host, "time": T0 + 5 + rank}
            )
    events += [
        {"event": "epoch", "epoch": 2, "loss": 0.4, "samples_per_s": 900.0, "time": T0 + 20},
        {"event": "epoch", "epoch": 1, "loss": 1.2, "samples_per_s": 800.0, "time": T0 + 10},
        {"event": "result", "test_accuracy": 0.97, "epochs": 2, "world_size": world_size, "time": T0 + 29},
    ]
    for rank in range(world_size):
        if rank not in (skip_join, skip_done):
            events.append({"event": "done", "rank": rank, "time": T0 + 30 + rank})
            events.append({"event": "exit", "rank": rank, "code": 0, "host": NODES[rank % len(NODES)], "time": T0 + 33})
    return events


def summary_of(events: list[dict], **overrides) -> dict:
    kwargs = dict(
        job_id="job-1",
        launcher="torchrun",
        nodes=NODES,
        world_size=3,
        events=events,
        provision_seconds=12.345,
        provision_changed=0,
        timed_out=False,
    )
    kwargs.update(overrides)
    return summarize(**kwargs)


def test_parse_events_skips_noise_and_strips_prefixes():
    text = "\n".join(
        [
            "W1122 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable",
            '[0] {"event": "joined", "rank": 0, "time": 1.5}',
            'node1: {"event": "done", "rank": 1, "time": 2.0}',
            '{"event": "epoch", "epoch": 1, "loss": 0.5}   ',
            '[1] {"no_event": true}',
            '{"event": "truncated", "rank":',
            "[2] [1, 2, 3]",
            "Traceback: {not json}",
            '{"event": "result", "test_accuracy": 0.95}\r',
            "",
        ]
    )
    assert parse_events(text) == [
        {"event": "joined", "rank": 0, "time": 1.5},
        {"event": "done", "rank": 1, "time": 2.0},
        {"event": "epoch", "epoch": 1, "loss": 0.5},
        {"event": "result", "test_accuracy": 0.95},
    ]


def test_parse_events_of_empty_log():
    assert parse_events("") == []


def test_success_summary():
    summary = summary_of(run_events(), extra={"omp_num_threads": 1})

    assert summary["status"] == "succeeded"
    assert summary["failure_reasons"] == []
    assert summary["job_id"] == "job-1"
    assert summary["launcher"] == "torchrun"
    assert summary["world_size"] == 3
    assert summary["nodes"] == NODES
    assert summary["test_accuracy"] == 0.97
    assert summary["epochs"] == [
        {"epoch": 1, "loss": 1.2, "samples_per_s": 800.0},
        {"epoch": 2, "loss": 0.4, "samples_per_s": 900.0},
    ]
    assert summary["ranks_joined"] == [0, 1, 2]
    assert summary["ranks_done"] == [0, 1, 2]
    assert summary["rank_exit_codes"] == {"0": 0, "1": 0, "2": 0}
    assert summary["provision_changed"] == 0
    assert summary["settings"] == {"omp_num_threads": 1}
    json.dumps(summary)  # serialisable


def test_no_settings_without_extra():
    assert "settings" not in summary_of(run_events())


def test_phase_arithmetic():
    # launch: T0 -> last joined (T0+7); train: last joined -> last done (T0+32)
    assert summary_of(run_events())["phases"] == {"provision": 12.35, "launch": 7.0, "train": 25.0}


def test_phase_rounding_and_unknown_provision():
    events = run_events()
    events[2]["time"] = T0 + 7.123456
    phases = summary_of(events, provision_seconds=None)["phases"]
    assert phases == {"provision": None, "launch": 7.12, "train": 24.88}


def test_failed_node_is_named():
    events = run_events() + [{"event": "node_exit", "node": "worker2", "code": 1, "time": T0 + 34}]
    summary = summary_of(events)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["node worker2 exited 1"]
    assert summary["node_exit_codes"] == {"worker2": 1}


def test_failed_rank_is_named_with_its_host():
    events = run_events(skip_done=2) + [{"event": "exit", "rank": 2, "code": 137, "host": "worker1", "time": T0 + 31}]
    summary = summary_of(events)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == [
        "rank 2 (host worker1) exited 137",
        "rank 2 (host worker1) never reported done",
    ]
    assert summary["rank_exit_codes"] == {"0": 0, "1": 0, "2": 137}
    assert summary["ranks_done"] == [0, 1]
    assert summary["phases"]["train"] is None


def test_rank_that_never_joined():
    summary = summary_of(run_events(skip_join=1))
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["rank 1 never joined"]
    assert summary["ranks_joined"] == [0, 2]
    assert summary["phases"]["launch"] is None
    assert summary["phases"]["train"] is None


def test_rank_that_never_finished():
    summary = summary_of(run_events(skip_done=1))
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["rank 1 (host worker2) never reported done"]
    assert summary["phases"]["launch"] == 7.0
    assert summary["phases"]["train"] is None


def test_missing_result():
    events = [event for event in run_events() if event["event"] != "result"]
    summary = summary_of(events)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["no result event from rank 0"]
    assert summary["test_accuracy"] is None


def test_timeout():
    events = [event for event in run_events() if event["event"] not in ("done", "result")]
    summary = summary_of(events, timed_out=True, launcher_exit_code=124)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == [
        "timed out",
        "launcher exited 124",
        "rank 0 (host worker1) never reported done",
        "rank 1 (host worker2) never reported done",
        "rank 2 (host worker1) never reported done",
        "no result event from rank 0",
    ]


def test_timeout_alone_fails_a_complete_run():
    summary = summary_of(run_events(), timed_out=True)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["timed out"]


def test_launcher_that_did_not_end():
    summary = summary_of(run_events(), launcher_exit_code=-1)
    assert summary["failure_reasons"] == ["launcher did not end"]


def test_codes_and_launch_time_from_launcher_events():
    """What the launcher role's scripts log: launch, per-rank exit, per-node exit, launcher exit."""
    events = (
        [{"event": "launch", "launcher": "torchrun", "time": T0 - 1}]
        + run_events()
        + [{"event": "exit", "rank": rank, "code": 0, "host": "c", "time": T0 + 33} for rank in (2, 0, 1)]
        + [
            {"event": "node_exit", "node": "worker1", "code": 0, "time": T0 + 34},
            {"event": "node_exit", "node": "worker2", "code": 1, "time": T0 + 34},
            {"event": "launcher_exit", "code": 1, "time": T0 + 35},
        ]
    )
    summary = summary_of(events, node_names=["n1", "n2"])
    assert summary["rank_exit_codes"] == {"0": 0, "1": 0, "2": 0}
    assert summary["node_exit_codes"] == {"worker1": 0, "worker2": 1}
    assert summary["launcher_exit_code"] == 1
    assert summary["node_names"] == ["n1", "n2"]
    assert summary["phases"]["launch"] == 8.0
    assert summary["failure_reasons"] == ["launcher exited 1", "node worker2 exited 1"]


def test_rank_without_exit_status_fails_the_run():
    events = [event for event in run_events() if not (event["event"] == "exit" and event["rank"] == 1)]
    summary = summary_of(events)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == ["rank 1 (host worker2) reported no exit status"]
