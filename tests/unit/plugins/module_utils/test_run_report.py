# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run summary: success from exit codes, failures root cause first, and the collected run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils.rank_exit_guard import EXIT_STATUS, LOST_PEER, SCRIPT_ENDED
from ansible_collections.multinode.training.plugins.module_utils.run_report import (
    RunRecords,
    describe_signal,
    explain_ssh_failure,
    failure_causes,
    last_error,
    parse_events,
    read_run_dir,
    summarize,
)

T0 = 1_000.0  # the launch script started
NAMES = ["node1", "node2", "node3"]
NODES = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
LAUNCH = {"event": "launch", "launcher": "torchrun", "time": T0}
NO_END = "left no exit status (it was killed with its wrapper or node)"
HOST_KEY_CHANGED = """\
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Host key for [10.0.0.2]:2222 has changed and you have requested strict checking.
Host key verification failed.
"""


def rank_status(
    rank: int,
    *,
    code: int | None = 0,
    ended: float | None = None,
    signal: int | None = None,
    stopped: bool = False,
    started: float | None = None,
) -> dict[str, Any]:
    """What rank.sh records for ``rank`` (on NAMES[rank]): started at T0+5+rank and, unless ``code`` is None,
    ended at T0+30+rank."""
    node = NAMES[rank % len(NAMES)]
    status: dict[str, Any] = {"rank": rank, "node": node, "host": node, "started": started or T0 + 5 + rank}
    if code is not None:
        status.update(ended=ended or T0 + 30 + rank, code=code, signal=signal, stopped=stopped)
    return status


def make_records(
    *changed: dict[str, Any],
    absent: tuple[int, ...] = (),
    world_size: int = 3,
    launcher_events: list[dict[str, Any]] | None = None,
    rank_events: dict[int, list[dict[str, Any]]] | None = None,
    ssh_logs: dict[str, str] | None = None,
    agent_logs: dict[str, str] | None = None,
) -> RunRecords:
    """A run where every rank exited 0, but for the ``changed`` statuses and the ``absent`` ranks."""
    statuses = {rank: rank_status(rank) for rank in range(world_size) if rank not in absent}
    statuses.update({status["rank"]: status for status in changed})
    return RunRecords(
        launcher_events=launcher_events or [],
        rank_status=statuses,
        rank_events=rank_events or {},
        ssh_logs=ssh_logs or {},
        agent_logs=agent_logs or {},
    )


def summary_of(records: RunRecords, **overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "job_id": "job-1",
        "launcher": "torchrun",
        "nodes": NODES,
        "node_names": NAMES,
        "world_size": 3,
        "timed_out": False,
        "launcher_exit_code": 0,
        "provision_seconds": 12.345,
        "provision_changed": 0,
    }
    kwargs.update(overrides)
    return summarize(records, **kwargs)


def reasons_of(records: RunRecords, **overrides: Any) -> list[str]:
    summary = summary_of(records, **overrides)
    assert summary["status"] == ("failed" if summary["failure_reasons"] else "succeeded")
    return summary["failure_reasons"]


def node_exit(node: str, code: int, at: float, *, after_abort: bool = False) -> dict[str, Any]:
    return {"event": "node_exit", "node": node, "code": code, "after_abort": after_abort, "time": at}


# --- parse_events ---


def test_parse_events_skips_noise_and_strips_prefixes() -> None:
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
            '{"event": "epoch", "epoch": 2} trailing words',
            "",
        ]
    )
    assert parse_events(text) == [
        {"event": "joined", "rank": 0, "time": 1.5},
        {"event": "done", "rank": 1, "time": 2.0},
        {"event": "epoch", "epoch": 1, "loss": 0.5},
        {"event": "result", "test_accuracy": 0.95},
        {"event": "epoch", "epoch": 2},
    ]


def test_parse_events_of_empty_log() -> None:
    assert parse_events("") == []


# --- success ---

CLEAN_LAUNCHER_EVENTS = [
    LAUNCH,
    *({"event": "ssh_check", "node": name, "code": 0, "time": T0 + 1} for name in NAMES),
    {"event": "staged", "node": "node2", "code": 0, "time": T0 + 2},
    *(node_exit(name, 0, T0 + 33) for name in NAMES),
    {"event": "launcher_exit", "code": 0, "time": T0 + 34},
]


@pytest.mark.parametrize(
    ("launcher_events", "launcher_exit_code", "node_exit_codes", "launch_seconds"),
    [
        pytest.param([], 0, {}, None, id="exit-codes-alone"),
        pytest.param(CLEAN_LAUNCHER_EVENTS, None, dict.fromkeys(NAMES, 0), 7.0, id="clean-launcher-events"),
    ],
)
def test_success_needs_only_exit_codes(
    launcher_events: list[dict[str, Any]],
    launcher_exit_code: int | None,
    node_exit_codes: dict[str, int],
    launch_seconds: float | None,
) -> None:
    summary = summary_of(make_records(launcher_events=launcher_events), launcher_exit_code=launcher_exit_code)
    assert summary == {
        "job_id": "job-1",
        "status": "succeeded",
        "failure_reasons": [],
        "root_cause_error": None,
        "launcher": "torchrun",
        "world_size": 3,
        "nodes": NODES,
        "node_names": NAMES,
        "test_accuracy": None,
        "metrics": {},
        "epochs": [],
        "ranks_started": [0, 1, 2],
        "rank_exit_codes": {"0": 0, "1": 0, "2": 0},
        "rank_nodes": {"0": "node1", "1": "node2", "2": "node3"},
        "node_exit_codes": node_exit_codes,
        "launcher_exit_code": 0,
        "timed_out": False,
        "provision_changed": 0,
        "phases": {"provision": 12.35, "launch": launch_seconds, "train": 25.0},
        "root_cause_kind": None,
        "started_at": 1005.0,
        "failure_detected_at": None,
    }
    json.dumps(summary)


@pytest.mark.parametrize("extra", [{"omp_num_threads": 4}, {}])
def test_settings_are_recorded_when_given(extra: dict[str, Any]) -> None:
    assert summary_of(make_records(), extra=extra)["settings"] == extra
    assert "settings" not in summary_of(make_records())


def test_running_workers_are_no_failure() -> None:
    states = {name: {"running": True, "exit_code": 0, "present": True, "what": "worker container"} for name in NAMES}
    assert reasons_of(make_records(), worker_states=states) == []


# --- optional script events ---

EPOCHS = [
    {"event": "epoch", "epoch": 2, "loss": 0.4, "samples_per_s": 900.0, "time": T0 + 20},
    {"event": "epoch", "epoch": 1, "loss": 1.2, "samples_per_s": 800.0, "time": T0 + 10},
]
SORTED_EPOCHS = [
    {"epoch": 1, "loss": 1.2, "samples_per_s": 800.0},
    {"epoch": 2, "loss": 0.4, "samples_per_s": 900.0},
]


@pytest.mark.parametrize(
    ("rank0_events", "accuracy", "metrics", "epochs"),
    [
        pytest.param(
            [
                {"event": "joined", "rank": 0},
                *EPOCHS,
                {"event": "result", "test_accuracy": 0.5, "time": T0 + 28},
                {"event": "result", "test_accuracy": 0.97, "test_loss": 0.1, "epochs": 2, "time": T0 + 29},
                {"event": "done", "rank": 0},
            ],
            0.97,
            {"test_accuracy": 0.97, "test_loss": 0.1, "epochs": 2},
            SORTED_EPOCHS,
            id="epochs-and-last-result",
        ),
        pytest.param(EPOCHS, None, {}, SORTED_EPOCHS, id="no-result"),
        pytest.param([{"event": "result", "f1": 0.8}], None, {"f1": 0.8}, [], id="result-without-accuracy"),
        pytest.param([{"event": "epoch", "epoch": 1}], None, {}, [{"epoch": 1, "loss": None, "samples_per_s": None}]),
    ],
)
def test_metrics_come_from_rank_0_events(
    rank0_events: list[dict[str, Any]], accuracy: float | None, metrics: dict[str, Any], epochs: list[dict[str, Any]]
) -> None:
    other_ranks = [{"event": "result", "test_accuracy": 0.1}, {"event": "epoch", "epoch": 9, "loss": 9.0}]
    summary = summary_of(make_records(rank_events={0: rank0_events, 1: other_ranks}))
    assert summary["status"] == "succeeded"
    assert (summary["test_accuracy"], summary["metrics"], summary["epochs"]) == (accuracy, metrics, epochs)


def test_odd_epoch_events_do_not_break_the_summary() -> None:
    events = [{"event": "epoch", "epoch": None}, {"event": "epoch", "epoch": "1/10"}, {"event": "epoch", "epoch": 2}]
    assert summary_of(make_records(rank_events={0: events}))["status"] == "succeeded"


# --- phases ---


@pytest.mark.parametrize(
    ("changed", "absent", "provision", "expected"),
    [
        pytest.param((), (), 12.345, {"provision": 12.35, "launch": 7.0, "train": 25.0}, id="complete"),
        pytest.param(
            (rank_status(2, started=T0 + 7.123456),),
            (),
            None,
            {"provision": None, "launch": 7.12, "train": 24.88},
            id="rounding",
        ),
        pytest.param(
            (rank_status(1, code=None),), (), 1.0, {"provision": 1.0, "launch": 7.0, "train": None}, id="no-end"
        ),
        pytest.param((), (1,), 1.0, {"provision": 1.0, "launch": None, "train": None}, id="never-started"),
    ],
)
def test_phases(
    changed: tuple[dict[str, Any], ...], absent: tuple[int, ...], provision: float | None, expected: dict
) -> None:
    # The earliest launch event counts: the launch script logs one, a retry might log another.
    events = [LAUNCH, {**LAUNCH, "time": T0 + 3}]
    records = make_records(*changed, absent=absent, launcher_events=events)
    assert summary_of(records, provision_seconds=provision)["phases"] == expected


# --- failures, root cause first ---


def test_first_rank_to_fail_comes_first() -> None:
    records = make_records(
        rank_status(2, code=1, ended=T0 + 11),
        rank_status(0, code=1, ended=T0 + 11),
        rank_status(1, code=3, ended=T0 + 10),
    )
    summary = summary_of(records, launcher_exit_code=1)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == [
        "rank 1 on node2 exited 3",
        "rank 0 on node1 exited 1",
        "rank 2 on node3 exited 1",
        "launcher exited 1",
    ]
    assert summary["rank_exit_codes"] == {"0": 1, "1": 3, "2": 1}


def script_ended(records: RunRecords, times: dict[int, float]) -> RunRecords:
    """``records`` with a world record for each rank of ``times``: when its own code ended."""
    records.world = {rank: {"rank": rank, "groups": [], "ended": True, SCRIPT_ENDED: time} for rank, time in times.items()}
    return records


def test_the_rank_whose_code_ended_first_comes_first_whatever_its_process_did() -> None:
    # Slurm: rank 1 exits 3; its sockets close only as its interpreter is torn down, and ranks 0 and 2, whose barrier
    # that breaks, end their processes before rank 1's ends (nothing stops them).
    records = make_records(
        rank_status(0, code=1, ended=T0 + 10.2),
        rank_status(1, code=3, ended=T0 + 10.5),
        rank_status(2, code=1, ended=T0 + 10.3),
    )
    records = script_ended(records, {0: T0 + 10.15, 1: T0 + 10.0, 2: T0 + 10.25})
    assert reasons_of(records, launcher_exit_code=143) == [
        "rank 1 on node2 exited 3",
        "rank 0 on node1 exited 1",
        "rank 2 on node3 exited 1",
        "launcher exited 143",
    ]


def test_a_failed_rank_without_the_end_of_its_code_orders_every_rank_by_its_process() -> None:
    # Rank 1 is killed (no code end recorded); ranks 0 and 2 record theirs, which may come before the wrapper of
    # rank 1 saw it end: the processes' ends are compared, as they are for ranks that are not Python.
    records = make_records(
        rank_status(0, code=1, ended=T0 + 10.4),
        rank_status(1, code=137, signal=9, ended=T0 + 10.1),
        rank_status(2, code=1, ended=T0 + 10.3),
    )
    records = script_ended(records, {0: T0 + 10.05, 2: T0 + 10.06})
    assert reasons_of(records, launcher_exit_code=1)[:3] == [
        "rank 1 on node2 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)",
        "rank 2 on node3 exited 1",
        "rank 0 on node1 exited 1",
    ]


def mpiexec_stopped_the_rank_that_exited(exit_status: Any) -> RunRecords:
    """The CI's run under mpiexec: rank 1's code exits (its world record holds ``exit_status``); rank 0's barrier
    breaks and it exits 1; mpiexec then kills every rank, rank 1 still in its teardown and rank 2 in its barrier, their
    wrappers with them (no end recorded)."""
    records = make_records(rank_status(0, code=1, ended=T0 + 10.4), rank_status(1, code=None), rank_status(2, code=None))
    records = script_ended(records, {0: T0 + 10.3, 1: T0 + 10.0})
    records.world[1][EXIT_STATUS] = exit_status
    records.world[0][EXIT_STATUS] = 1
    return records


def test_a_rank_whose_code_exited_failing_comes_first_when_its_wrapper_was_killed_before_recording_it() -> None:
    summary = summary_of(mpiexec_stopped_the_rank_that_exited(3), launcher_exit_code=255)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == [
        "rank 1 on node2 exited 3 (its process was killed before its wrapper recorded the end)",
        "rank 0 on node1 exited 1",
        "launcher exited 255",
        "rank 2 on node3 left no exit status (it was killed with its wrapper or node)",
    ]
    assert summary["root_cause_kind"] == "exit"
    assert summary["rank_exit_codes"] == {"0": 1}, "what the wrappers recorded, nothing made up"


def rank_2_killed_under_mpiexec(evidence: str) -> RunRecords:
    """The suite's killed-rank drill under mpiexec (2026-12-02): rank 2 is killed (SIGKILL from outside), its wrapper
    records the end at 10.2 s; ranks 0 and 1 raise on the connection it broke, their code ends at 10.1 and 10.15 s
    (exit status 1), and mpiexec kills them before their wrappers record anything. They lost a peer by ``evidence``:
    their world records ("world"), their logs' ends ("log"), or not known ("none")."""
    records = make_records(
        rank_status(0, code=None), rank_status(1, code=None), rank_status(2, code=137, signal=9, ended=T0 + 10.2)
    )
    records = script_ended(records, {0: T0 + 10.1, 1: T0 + 10.15})
    for rank in (0, 1):
        records.world[rank][EXIT_STATUS] = 1
        records.world[rank][LOST_PEER] = evidence == "world"
        records.rank_log_tails[rank] = PEER_GONE if evidence == "log" else "epoch 3 step 20"
    return records


@pytest.mark.parametrize("evidence", ["world", "log"])
def test_ranks_that_lost_their_peer_come_after_the_killed_rank_whatever_order_their_ends_were_recorded_in(
    evidence: str,
) -> None:
    summary = summary_of(rank_2_killed_under_mpiexec(evidence), launcher_exit_code=255)
    after = "it lost its connection to a rank that had failed; its process was killed before its wrapper recorded the end"
    assert summary["failure_reasons"] == [
        "rank 2 on node3 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)",
        f"rank 0 on node1 exited 1 ({after})",
        f"rank 1 on node2 exited 1 ({after})",
        "launcher exited 255",
    ]
    assert summary["root_cause_kind"] == "signal", "the restart policy restarts a rank killed from outside"


def test_without_a_sign_of_a_lost_peer_the_ends_decide_the_order() -> None:
    reasons = reasons_of(rank_2_killed_under_mpiexec("none"), launcher_exit_code=255)
    assert reasons[:3] == [
        "rank 0 on node1 exited 1 (its process was killed before its wrapper recorded the end)",
        "rank 1 on node2 exited 1 (its process was killed before its wrapper recorded the end)",
        "rank 2 on node3 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)",
    ]


def test_when_every_failing_rank_lost_a_peer_none_is_set_back() -> None:
    # A link cut between the nodes: every rank fails on a peer; the first to end is the first reason, as before.
    records = make_records(
        rank_status(0, code=1, ended=T0 + 10.4), rank_status(1, code=1, ended=T0 + 10.1), rank_status(2, code=1, ended=T0 + 10.3)
    )
    records.rank_log_tails = {rank: PEER_GONE for rank in range(3)}
    assert reasons_of(records, launcher_exit_code=1)[:3] == [
        "rank 1 on node2 exited 1",
        "rank 2 on node3 exited 1",
        "rank 0 on node1 exited 1",
    ]


GLOO_ABORT = (
    "terminate called after throwing an instance of 'gloo::IoException'\n"
    "  what():  [pair.cc:589] Read error [172.30.77.13]:41002: Connection reset by peer"
)


@pytest.mark.parametrize("abort_log", [GLOO_ABORT, "epoch 3 step 20"])
def test_a_rank_that_aborted_on_a_lost_peer_comes_after_the_killed_rank(abort_log: str) -> None:
    # Rank 2 is killed from outside; gloo's I/O thread on rank 0 aborts the process on the broken connection
    # (SIGABRT, a signal its own code raised), and its wrapper records that end before rank 2's wrapper records
    # rank 2's. By its log's words it lost a peer: it comes after rank 2, and the restart policy sees the kill.
    records = make_records(
        rank_status(0, code=134, signal=6, ended=T0 + 10.1),
        rank_status(1),
        rank_status(2, code=137, signal=9, ended=T0 + 10.2),
    )
    records.rank_log_tails[0] = abort_log
    summary = summary_of(records, launcher_exit_code=1)
    killed = "rank 2 on node3 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)"
    aborted = "rank 0 on node1 killed by signal 6 (SIGABRT)"
    if abort_log == GLOO_ABORT:
        assert summary["failure_reasons"][:2] == [killed, f"{aborted} (it lost its connection to a rank that had failed)"]
        assert summary["root_cause_kind"] == "signal"
    else:
        assert summary["failure_reasons"][:2] == [aborted, killed], "without a sign of a lost peer the ends decide"
        assert summary["root_cause_kind"] == "exit"


@pytest.mark.parametrize("exit_status", [0, None, True, "3"])
def test_a_world_record_without_a_failing_exit_status_changes_nothing(exit_status: Any) -> None:
    # A rank whose code ended 0 (or in a way the guard cannot tell) and whose wrapper was then killed did not fail by
    # its code, and never counts as having succeeded either: it left no exit status.
    reasons = reasons_of(mpiexec_stopped_the_rank_that_exited(exit_status), launcher_exit_code=255)
    assert reasons[0] == "rank 0 on node1 exited 1"
    assert "rank 1 on node2 left no exit status (it was killed with its wrapper or node)" in reasons


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        (
            {"running": False, "exit_code": 137, "present": True, "what": "worker container"},
            "node3: the worker container is not running, it died (exit code 137)",
        ),
        (
            {"running": False, "exit_code": 137, "present": True, "oom_killed": True, "what": "worker container"},
            "node3: the worker container is not running, it died (killed by the out-of-memory killer)",
        ),
        (
            {"running": False, "present": False, "what": "worker container"},
            "node3: there is no worker container (removed; run the provisioning again)",
        ),
        ({"running": False, "exit_code": 1}, "node3: the worker is not running, it died (exit code 1)"),
    ],
)
def test_dead_worker_comes_first(state: dict[str, Any], reason: str) -> None:
    records = make_records(rank_status(0, code=1, ended=T0 + 2), rank_status(2, code=None))
    states = {"node1": {"running": True, "what": "worker container"}, "node3": state}
    assert reasons_of(records, worker_states=states, launcher_exit_code=1) == [
        reason,
        "rank 0 on node1 exited 1",
        "launcher exited 1",
        f"rank 2 on node3 {NO_END}",
    ]


@pytest.mark.parametrize(
    ("ssh_logs", "reason"),
    [
        ({"node2": HOST_KEY_CHANGED}, "node2: SSH host key changed (possible man-in-the-middle), connection refused"),
        ({}, "node2: SSH connection failed or was lost (ssh exited 255)"),
    ],
)
def test_failed_ssh_check_comes_first(ssh_logs: dict[str, str], reason: str) -> None:
    events = [
        LAUNCH,
        *(
            {"event": "ssh_check", "node": name, "code": 255 if name == "node2" else 0, "time": T0 + 1}
            for name in NAMES
        ),
        {"event": "abort", "reason": "ssh check failed", "time": T0 + 2},
        {"event": "launcher_exit", "code": 1, "time": T0 + 2},
    ]
    records = RunRecords(launcher_events=events, ssh_logs={"node1": "Permission denied", **ssh_logs})
    summary = summary_of(records, launcher_exit_code=None)
    assert summary["failure_reasons"] == [reason, "launcher exited 1", "no rank started"]
    assert summary["launcher_exit_code"] == 1
    assert summary["ranks_started"] == []
    assert summary["phases"] == {"provision": 12.35, "launch": None, "train": None}


# The end of a real mpiexec.log (Hydra forced into a tree with I_MPI_HYDRA_BRANCH_COUNT=1 on the sim cluster).
BSTRAP_FAILED = """\
[bstrap:0:1@node2] Error: Unable to run bstrap_proxy on 10.0.0.3 (pid 71, exit code 65280)
[bstrap:0:1@node2] poll_for_event (../../../../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:157): check exit codes error
[bstrap:0:1@node2] Error setting up the bootstrap proxies
"""


def test_intel_mpi_bootstrap_failure_names_the_node_first(tmp_path: Path) -> None:
    logs = tmp_path / "nodes" / "node1" / "logs"
    logs.mkdir(parents=True)
    (logs / "mpiexec.log").write_text("noise\n" + BSTRAP_FAILED)
    records = read_run_dir(tmp_path, NAMES)
    causes = failure_causes(
        records, launcher="mpiexec", world_size=3, timed_out=False, launcher_exit_code=141, worker_states={}
    )
    assert [text for _, text in causes[:2]] == ["10.0.0.3: Intel MPI could not start its bootstrap proxy there (over SSH from node2)", "launcher exited 141"]


def test_consequences_come_after_the_failure_they_followed() -> None:
    # torchrun: rank 1 fails, its agent exits 1 and the launch script stops the rest; node1's clock is behind.
    records = make_records(
        rank_status(1, code=3, ended=T0 + 10),
        rank_status(0, code=143, signal=15, stopped=True, ended=T0 + 9),
        rank_status(2, code=143, signal=15, stopped=True, ended=T0 + 11),
        launcher_events=[
            LAUNCH,
            node_exit("node2", 1, T0 + 10.5),
            node_exit("node1", 1, T0 + 12, after_abort=True),
            node_exit("node3", 1, T0 + 12, after_abort=True),
            {"event": "abort", "reason": "node2 failed", "time": T0 + 10.6},
            {"event": "launcher_exit", "code": 1, "time": T0 + 13},
        ],
    )
    summary = summary_of(records, launcher_exit_code=None)
    assert summary["failure_reasons"] == [
        "rank 1 on node2 exited 3",
        "rank 0 on node1 was stopped after the failure (exit 143)",  # before rank 1 by the clock, still after it
        "node2: torchrun agent exited 1",
        "rank 2 on node3 was stopped after the failure (exit 143)",
        "node1: torchrun agent stopped after the failure",
        "node3: torchrun agent stopped after the failure",
        "launcher exited 1",
    ]
    assert summary["node_exit_codes"] == {"node1": 1, "node2": 1, "node3": 1}


def test_every_kind_of_reason_in_order() -> None:
    """Node down (by time), then own failures (by time), the timeout, then consequences (by time)."""
    records = make_records(
        rank_status(1, code=3, ended=T0 + 10),
        rank_status(0, code=143, signal=15, stopped=True, ended=T0 + 12),
        rank_status(2, code=None),
        launcher_events=[
            LAUNCH,
            {"event": "staged", "node": "node1", "code": 1, "time": T0 + 2},
            {"event": "ssh_check", "node": "node2", "code": 255, "time": T0 + 1},
            node_exit("node2", 255, T0 + 9),
            node_exit("node1", 1, T0 + 13, after_abort=True),
        ],
        ssh_logs={"node2": "ssh: connect to host 10.0.0.2 port 2222: No route to host"},
        agent_logs={"node2": "Read from remote host 10.0.0.2: Connection reset by peer"},
    )
    states = {"node3": {"running": False, "exit_code": 137, "what": "worker container"}}
    assert reasons_of(records, timed_out=True, launcher_exit_code=-1, worker_states=states) == [
        "node3: the worker container is not running, it died (exit code 137)",
        "node2: no route to host (node down or network unreachable)",
        "node1: the checkpoint to resume from could not be copied there",
        "node2: connection lost (reset)",
        "rank 1 on node2 exited 3",
        "timed out",
        "rank 0 on node1 was stopped after the failure (exit 143)",
        "node1: torchrun agent stopped after the failure",
        "launcher did not end",
        f"rank 2 on node3 {NO_END}",
    ]


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (
            rank_status(1, code=137, signal=9),
            "rank 1 on node2 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)",
        ),
        (rank_status(1, code=139, signal=11), "rank 1 on node2 killed by signal 11 (SIGSEGV)"),
        (rank_status(1, code=None), f"rank 1 on node2 {NO_END}"),
        (rank_status(1, code=2), "rank 1 on node2 exited 2"),
        (rank_status(1, code=0, stopped=True), "rank 1 on node2 was stopped after the failure (exit 0)"),
        ({"rank": 1, "started": T0, "ended": T0 + 1, "code": 2}, "rank 1 on ? exited 2"),
    ],
)
def test_rank_failures(status: dict[str, Any], reason: str) -> None:
    assert reasons_of(make_records(status)) == [reason]


def test_rank_that_never_started() -> None:
    summary = summary_of(make_records(absent=(1,)))
    assert summary["failure_reasons"] == ["rank 1 never started"]
    assert summary["ranks_started"] == [0, 2]


def test_ranks_beyond_world_size_are_not_judged() -> None:
    assert reasons_of(make_records(rank_status(3, code=1)), world_size=3) == []


@pytest.mark.parametrize(
    ("changed", "launcher_exit_code", "expected"),
    [
        pytest.param((), 0, ["timed out"], id="complete-run"),
        pytest.param(
            tuple(rank_status(rank, code=143, signal=15, stopped=True) for rank in range(3)),
            124,
            [
                "timed out",
                "rank 0 on node1 was stopped after the failure (exit 143)",
                "rank 1 on node2 was stopped after the failure (exit 143)",
                "rank 2 on node3 was stopped after the failure (exit 143)",
                "launcher exited 124",
            ],
            id="ranks-stopped",
        ),
    ],
)
def test_timeout(changed: tuple[dict[str, Any], ...], launcher_exit_code: int, expected: list[str]) -> None:
    summary = summary_of(make_records(*changed), timed_out=True, launcher_exit_code=launcher_exit_code)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"] == expected


@pytest.mark.parametrize(
    ("given", "codes", "expected_code", "expected_reasons"),
    [
        pytest.param(-1, [], -1, ["launcher did not end"], id="did-not-end"),
        pytest.param(2, [], 2, ["launcher exited 2"], id="given"),
        pytest.param(None, [0, 2], 2, ["launcher exited 2"], id="last-event"),
        pytest.param(None, [2, 0], 0, [], id="last-event-0"),
        pytest.param(0, [5], 0, [], id="given-wins"),
        pytest.param(None, [], None, [], id="unknown"),
    ],
)
def test_launcher_exit_code(
    given: int | None, codes: list[int], expected_code: int | None, expected_reasons: list[str]
) -> None:
    events = [{"event": "launcher_exit", "code": code, "time": T0 + 40 + index} for index, code in enumerate(codes)]
    events.append({"event": "launcher_exit", "time": T0 + 50})  # without a code: ignored
    summary = summary_of(make_records(launcher_events=events), launcher_exit_code=given)
    assert summary["launcher_exit_code"] == expected_code
    assert summary["failure_reasons"] == expected_reasons


@pytest.mark.parametrize(
    ("agent_log", "reason"),
    [
        ("Connection to 10.0.0.2 closed by remote host.\n", "node2: connection lost (closed by the node)"),
        ("Timeout, server 10.0.0.2 not responding.\n", "node2: connection lost (the node stopped answering)"),
        ("", "node2: SSH connection failed or was lost (ssh exited 255)"),
    ],
)
def test_lost_agent_connection_is_explained_from_its_log(agent_log: str, reason: str) -> None:
    records = make_records(
        rank_status(1, code=None),
        rank_status(0, code=143, signal=15, stopped=True, ended=T0 + 21),
        launcher_events=[node_exit("node2", 255, T0 + 20), node_exit("node1", 1, T0 + 21, after_abort=True)],
        agent_logs={"node1": "Connection to 10.0.0.1 closed by remote host.", "node2": agent_log},
    )
    assert reasons_of(records, launcher_exit_code=1) == [
        reason,
        "node1: torchrun agent stopped after the failure",
        "rank 0 on node1 was stopped after the failure (exit 143)",
        "launcher exited 1",
        f"rank 1 on node2 {NO_END}",
    ]


def test_repeated_reasons_are_listed_once() -> None:
    events = [node_exit("node2", 1, T0 + 10), node_exit("node2", 1, T0 + 11)]
    assert reasons_of(make_records(launcher_events=events), launcher="mpirun") == ["node2: mpirun agent exited 1"]


def test_failure_causes_directly() -> None:
    kwargs: dict[str, Any] = {"launcher": "torchrun", "world_size": 1, "worker_states": {}}
    assert failure_causes(make_records(world_size=1), timed_out=False, launcher_exit_code=0, **kwargs) == []
    assert failure_causes(RunRecords(), timed_out=False, launcher_exit_code=None, **kwargs) == [
        ("consequence", "no rank started")
    ]


# --- explaining ssh and signals ---


@pytest.mark.parametrize(
    ("text", "code", "meaning"),
    [
        (HOST_KEY_CHANGED, 255, "SSH host key changed (possible man-in-the-middle), connection refused"),
        ("Host key verification failed.", 255, "SSH host key not in the pinned known_hosts, connection refused"),
        (
            "root@10.0.0.2: Permission denied (publickey).",
            255,
            "SSH login refused (the cluster's identity key is not authorized there)",
        ),
        (
            "ssh: connect to host 10.0.0.2 port 2222: Connection refused",
            255,
            "SSH connection refused (no sshd on the cluster port: is the worker running?)",
        ),
        (
            "ssh: connect to host 10.0.0.2 port 2222: No route to host",
            255,
            "no route to host (node down or network unreachable)",
        ),
        (
            "ssh: connect to host 10.0.0.2 port 2222: Connection timed out",
            255,
            "SSH connection timed out (node down, unreachable or port filtered)",
        ),
        ("ssh: Could not resolve hostname node9: Name or service not known", 255, "host name does not resolve"),
        ("Timeout, server 10.0.0.2 not responding.", 255, "connection lost (the node stopped answering)"),
        ("Connection to 10.0.0.2 closed by remote host.", 255, "connection lost (closed by the node)"),
        ("Read from remote host 10.0.0.2: Connection reset by peer", 255, "connection lost (reset)"),
        ("client_loop: send disconnect: Broken pipe", 255, "connection lost (broken pipe)"),
        ("Permission denied (publickey).", 1, "SSH login refused (the cluster's identity key is not authorized there)"),
        ("", 255, "SSH connection failed or was lost (ssh exited 255)"),
        (
            "kex_exchange_identification: read: Connection aborted",
            255,
            "SSH connection failed or was lost (ssh exited 255)",
        ),
        ("bash: python3: command not found", 127, "exited 127"),
        ("", 1, "exited 1"),
    ],
)
def test_explain_ssh_failure(text: str, code: int, meaning: str) -> None:
    assert explain_ssh_failure(text, code) == meaning


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (9, "signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)"),
        (15, "signal 15 (SIGTERM)"),
        (11, "signal 11 (SIGSEGV)"),
        (6, "signal 6 (SIGABRT)"),
        (0, "signal 0"),
        (200, "signal 200"),
    ],
)
def test_describe_signal(number: int, text: str) -> None:
    assert describe_signal(number) == text


# --- the collected run directory ---


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def json_lines(*objects: dict[str, Any], noise: str = "") -> str:
    return "".join(f"{noise}{json.dumps(obj)}\n" for obj in objects)


def test_read_run_dir(tmp_path: Path) -> None:
    launcher_events = [
        LAUNCH,
        {"event": "ssh_check", "node": "node1", "code": 0, "time": T0 + 1},
        {"event": "ssh_check", "node": "node2", "code": 0, "time": T0 + 1},
        node_exit("node2", 255, T0 + 20),
        node_exit("node1", 1, T0 + 21, after_abort=True),
        {"event": "launcher_exit", "code": 1, "time": T0 + 22},
    ]
    statuses = {
        0: rank_status(0, code=143, signal=15, stopped=True, ended=T0 + 21),
        1: {**rank_status(1, code=143, signal=15, stopped=True, ended=T0 + 21), "node": "node1"},
        2: {**rank_status(2, code=None), "node": "node2"},
    }
    rank0_events = [EPOCHS[1], {"event": "result", "test_accuracy": 0.9, "time": T0 + 19}]
    node1, node2 = tmp_path / "nodes" / "node1", tmp_path / "nodes" / "node2"
    long_ssh_log = "x" * 5000 + "\nPermission denied (publickey).\n"
    files = {
        node1 / "logs" / "launcher.log": "+ starting torchrun\n" + json_lines(*launcher_events) + "{not json}\n",
        node1 / "logs" / "ssh-node1.log": "",
        node1 / "logs" / "ssh-node2.log": long_ssh_log,
        node1 / "logs" / "node1.log": "W1122 torchrun: Sending process 41 closing signal SIGTERM\n",
        node1 / "logs" / "node2.log": "Connection to 10.0.0.2 closed by remote host.\n",
        node1 / "logs" / "rank-0.log": "Traceback (most recent call last):\n" + json_lines(*rank0_events, noise="[0] "),
        node1 / "logs" / "rank-1.log": "loading data {rank 1}\n",
        node1 / "logs" / "rank-x.log": json_lines({"event": "result", "test_accuracy": 0.0}),
        node1 / "status" / "rank-0.json": json.dumps(statuses[0]),
        node1 / "status" / "rank-1.json": json.dumps(statuses[1]) + "\n",
        node2 / "logs" / "rank-2.log": json_lines({"event": "epoch", "epoch": 1}),
        node2 / "status" / "rank-2.json": json.dumps(statuses[2]),
        node2 / "status" / "rank-2.json.tmp": json.dumps(rank_status(2)),  # an interrupted write: not read
        node2 / "status" / "rank-3.json": '{"rank": 3, "node": "no',  # corrupt: ignored
        node2 / "status" / "rank-4.json": "[4]",
        node2 / "status" / "rank-5.json": '{"rank": "5"}',
    }
    for path, text in files.items():
        write(path, text)

    records = read_run_dir(tmp_path, NAMES)  # node3 collected nothing

    assert records.launcher_events == launcher_events
    assert records.rank_status == statuses
    assert records.rank_events == {0: rank0_events, 1: [], 2: [{"event": "epoch", "epoch": 1}]}
    assert records.ssh_logs == {"node1": "", "node2": long_ssh_log[-4000:]}
    assert records.agent_logs == {
        "node1": "W1122 torchrun: Sending process 41 closing signal SIGTERM\n",
        "node2": "Connection to 10.0.0.2 closed by remote host.\n",
    }
    summary = summary_of(records, launcher_exit_code=None)
    assert summary["failure_reasons"] == [
        "node2: connection lost (closed by the node)",
        "node1: torchrun agent stopped after the failure",
        "rank 0 on node1 was stopped after the failure (exit 143)",
        "rank 1 on node1 was stopped after the failure (exit 143)",
        "launcher exited 1",
        f"rank 2 on node2 {NO_END}",
    ]
    assert (summary["launcher_exit_code"], summary["test_accuracy"]) == (1, 0.9)
    assert summary["rank_nodes"] == {"0": "node1", "1": "node1", "2": "node2"}
    assert summary["rank_exit_codes"] == {"0": 143, "1": 143}


def test_read_run_dir_of_nothing(tmp_path: Path) -> None:
    assert read_run_dir(tmp_path / "absent", NAMES) == RunRecords()


@pytest.mark.parametrize(
    ("log_tail", "explained"),
    [("saved model.pt\nterminate called without an active exception\n", True), ("Traceback ...\n", False)],
)
def test_an_abort_at_interpreter_exit_is_explained_but_still_fails(log_tail: str, explained: bool) -> None:
    records = make_records(
        rank_status(0, code=0),
        rank_status(1, code=0),
        rank_status(2, code=134, signal=6),
    )
    records.rank_log_tails = {2: log_tail}
    summary = summary_of(records)
    assert summary["status"] == "failed"
    assert summary["failure_reasons"][0].startswith("rank 2 on node3 killed by signal 6 (SIGABRT)")
    assert ("pytorch/pytorch#117762" in summary["failure_reasons"][0]) is explained


def test_a_launcher_missing_from_the_image_is_named() -> None:
    """The shell's 127 before any rank: the launcher program is not in the image the launch script ran in."""
    summary = summary_of(make_records(absent=(0, 1, 2)), launcher="deepspeed", launcher_exit_code=127)
    assert summary["failure_reasons"] == ["launcher exited 127: is deepspeed installed in cluster_image?", "no rank started"]


def test_127_after_ranks_started_is_only_the_launcher_s_exit() -> None:
    summary = summary_of(make_records(absent=(2,)), launcher="deepspeed", launcher_exit_code=127)
    assert "launcher exited 127" in summary["failure_reasons"]


# --- the kind of the root cause, and when the failure was seen ---

STALL_TEXT = "rank 1 on node2 stalled: no progress for 60 s (stopped, state T)"
STALL_AT = T0 + 70.5  # the watchdog found the stall
STALLED_ABORT = {"event": "abort", "reason": "a rank stalled (the watchdog)", "time": T0 + 71}


@pytest.mark.parametrize(
    ("status", "log_tail", "kind", "reason"),
    [
        pytest.param(rank_status(1, code=3), "", "exit", "rank 1 on node2 exited 3", id="exit-3"),
        pytest.param(
            rank_status(1, code=137, signal=9),
            "",
            "signal",
            "rank 1 on node2 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)",
            id="sigkill-from-outside",
        ),
        pytest.param(
            rank_status(1, code=143, signal=15), "", "signal", "rank 1 on node2 killed by signal 15 (SIGTERM)", id="sigterm"
        ),
        pytest.param(
            rank_status(1, code=139, signal=11), "", "exit", "rank 1 on node2 killed by signal 11 (SIGSEGV)", id="sigsegv"
        ),
        pytest.param(
            rank_status(1, code=134, signal=6),
            "Traceback (most recent call last):\nAssertionError\n",
            "exit",
            "rank 1 on node2 killed by signal 6 (SIGABRT)",
            id="sigabrt-of-its-own",
        ),
        pytest.param(
            rank_status(1, code=134, signal=6),
            "epoch 3 done\nterminate called without an active exception\n",
            "teardown_race",
            "rank 1 on node2 killed by signal 6 (SIGABRT) at interpreter exit, after its work"
            " (the gloo teardown race of pytorch/pytorch#117762)",
            id="gloo-teardown-race",
        ),
    ],
)
def test_the_kind_of_a_rank_s_failure(status: dict[str, Any], log_tail: str, kind: str, reason: str) -> None:
    records = make_records(status)
    records.rank_log_tails = {1: log_tail}
    summary = summary_of(records, launcher_exit_code=1)
    assert summary["status"] == "failed"
    assert summary["root_cause_kind"] == kind
    assert summary["failure_reasons"] == [reason, "launcher exited 1"]


def test_a_dead_worker_container_is_the_root_cause_worker_lost() -> None:
    records = make_records(
        rank_status(0, code=1, ended=T0 + 2),
        rank_status(1, code=137, signal=9, ended=T0 + 1),
        rank_status(2, code=None),
    )
    states = {
        "node1": {"running": True, "what": "worker container"},
        "node3": {"running": False, "exit_code": 137, "what": "worker container"},
    }
    summary = summary_of(records, worker_states=states, launcher_exit_code=1)
    assert summary["root_cause_kind"] == "worker_lost"
    assert summary["failure_reasons"][:3] == [
        "node3: the worker container is not running, it died (exit code 137)",
        "rank 1 on node2 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)",
        "rank 0 on node1 exited 1",
    ]


def test_a_removed_worker_container_is_worker_lost() -> None:
    states = {"node3": {"running": False, "present": False, "what": "worker container"}}
    summary = summary_of(make_records(rank_status(2, code=None)), worker_states=states, launcher_exit_code=1)
    assert summary["root_cause_kind"] == "worker_lost"
    assert summary["failure_reasons"][0] == "node3: there is no worker container (removed; run the provisioning again)"


def test_a_worker_whose_engine_does_not_answer_is_worker_lost_with_what_to_run() -> None:
    """A node restarted without its Docker engine: the worker is not removed, it cannot run; train.yml starts it."""
    states = {"node3": {"running": False, "present": False, "error": "no daemon", "what": "worker container"}}
    summary = summary_of(make_records(rank_status(2, code=None)), worker_states=states, launcher_exit_code=1)
    assert summary["root_cause_kind"] == "worker_lost"
    assert summary["failure_reasons"][0] == (
        "node3: its container engine does not answer (the node restarted without it, or Docker was stopped), so its"
        " worker container cannot run; run playbooks/train.yml (or provision.yml)"
    )


def test_an_unreachable_node_is_the_root_cause_node_lost() -> None:
    records = make_records(rank_status(1, code=1, ended=T0 + 3), rank_status(2, code=None))
    states = {"node3": {"running": False, "unreachable": True, "what": "worker container"}}
    summary = summary_of(records, worker_states=states, launcher_exit_code=1)
    assert summary["root_cause_kind"] == "node_lost"
    assert summary["failure_reasons"][:2] == [
        "node3: the node does not answer (down or cut off)",
        "rank 1 on node2 exited 1",
    ]


def test_an_unreachable_node_without_a_running_field_is_still_node_lost() -> None:
    records = make_records(rank_status(2, code=None))
    summary = summary_of(records, worker_states={"node3": {"unreachable": True}}, launcher_exit_code=1)
    assert summary["root_cause_kind"] == "node_lost"


def test_a_failed_ssh_check_is_connection() -> None:
    events = [LAUNCH, {"event": "ssh_check", "node": "node2", "code": 255, "time": T0 + 1}]
    summary = summary_of(RunRecords(launcher_events=events), launcher_exit_code=1)
    assert summary["root_cause_kind"] == "connection"
    assert summary["failure_reasons"][0] == "node2: SSH connection failed or was lost (ssh exited 255)"


@pytest.mark.parametrize(
    ("records", "overrides", "kind"),
    [
        pytest.param(make_records(rank_status(2, code=None)), {"timed_out": True, "launcher_exit_code": -1}, "timeout"),
        pytest.param(make_records(absent=(0, 1, 2)), {"launcher_exit_code": 127}, "launcher"),
        pytest.param(make_records(), {"launcher_exit_code": 1}, "consequence"),
        pytest.param(make_records(), {"launcher_exit_code": 0}, None),
    ],
)
def test_the_other_kinds(records: RunRecords, overrides: dict[str, Any], kind: str | None) -> None:
    assert summary_of(records, **overrides)["root_cause_kind"] == kind


def stalled_run(*, stall: dict[str, Any] | None = None) -> RunRecords:
    """Rank 1 froze; the watchdog stopped the job: every rank was then stopped (rank 2 only by SIGKILL)."""
    records = make_records(
        rank_status(0, code=143, signal=15, stopped=True, ended=T0 + 71.5),
        rank_status(1, code=143, signal=15, stopped=True, ended=T0 + 71.2),
        rank_status(2, code=137, signal=9, ended=T0 + 71.4),
        launcher_events=[
            LAUNCH,
            STALLED_ABORT,
            node_exit("node1", 1, T0 + 72, after_abort=True),
            node_exit("node2", 1, T0 + 72, after_abort=True),
            {"event": "launcher_exit", "code": 143, "time": T0 + 73},
        ],
    )
    records.stall = stall if stall is not None else {"kind": "stall", "text": STALL_TEXT, "detected_at": STALL_AT}
    return records


def test_a_stall_is_the_root_cause_whatever_the_stop_did_to_the_ranks() -> None:
    summary = summary_of(stalled_run(), launcher_exit_code=None)
    assert summary["status"] == "failed"
    assert summary["root_cause_kind"] == "stall"
    assert summary["failure_reasons"][0] == STALL_TEXT
    assert "rank 1 on node2 was stopped after the failure (exit 143)" in summary["failure_reasons"]
    assert summary["failure_detected_at"] == STALL_AT
    assert summary["launcher_exit_code"] == 143


def test_a_stall_without_text_is_no_failure_reason() -> None:
    summary = summary_of(stalled_run(stall={"detected_at": STALL_AT}), launcher_exit_code=None)
    assert summary["root_cause_kind"] == "signal"  # rank 2's SIGKILL is all that is left
    assert STALL_TEXT not in summary["failure_reasons"]


def test_a_stall_json_in_the_run_dir_is_read_and_names_the_root_cause(tmp_path: Path) -> None:
    stall = {
        "kind": "stall",
        "ranks": [{"rank": 1, "node": "node2", "state": "T"}],
        "seconds": 60.0,
        "text": STALL_TEXT,
        "detected_at": STALL_AT,
    }
    write(tmp_path / "stall.json", json.dumps(stall))
    node1, node2 = tmp_path / "nodes" / "node1", tmp_path / "nodes" / "node2"
    write(node1 / "logs" / "launcher.log", json_lines(LAUNCH, STALLED_ABORT, {"event": "launcher_exit", "code": 143, "time": T0 + 73}))
    write(node1 / "status" / "rank-0.json", json.dumps(rank_status(0, code=143, signal=15, stopped=True, ended=T0 + 71.5)))
    write(node2 / "status" / "rank-1.json", json.dumps(rank_status(1, code=143, signal=15, stopped=True, ended=T0 + 71.2)))

    records = read_run_dir(tmp_path, NAMES)

    assert records.stall == stall
    summary = summary_of(records, world_size=2, launcher_exit_code=None)
    assert (summary["root_cause_kind"], summary["failure_reasons"][0]) == ("stall", STALL_TEXT)
    assert summary["failure_detected_at"] == STALL_AT


def py_spy_dump(*frames: str) -> str:
    """A py-spy dump of a rank whose main thread holds ``frames`` (innermost first)."""
    return "\n".join(["Process 27: python3 train.py", "", 'Thread 27 (idle): "MainThread"', *(f"    {f}" for f in frames)])


def test_the_stalled_ranks_stack_dumps_are_read_and_name_the_rank_the_others_waited_for(tmp_path: Path) -> None:
    """One rank asleep, the others waiting for it in an all_reduce: the watchdog names all three (they stopped within
    a beat of each other); the dumps the rank wrappers wrote name the sleeper."""
    stall = {
        "kind": "stall",
        "ranks": [{"rank": rank, "node": NAMES[rank], "state": "S"} for rank in range(3)],
        "seconds": 21.4,
        "text": "rank 0 on node1, rank 1 on node2, rank 2 on node3 stalled: no progress for 21 s",
        "detected_at": STALL_AT,
    }
    write(tmp_path / "stall.json", json.dumps(stall))
    waiting = py_spy_dump("all_reduce (torch/distributed/distributed_c10d.py:3252)", "<module> (train.py:12)")
    for rank in (0, 2):
        write(tmp_path / "nodes" / NAMES[rank] / "logs" / f"stack-rank-{rank}.txt", waiting)
    write(tmp_path / "nodes" / "node2" / "logs" / "stack-rank-1.txt", py_spy_dump("<module> (train.py:11)"))

    records = read_run_dir(tmp_path, NAMES)

    assert records.rank_stacks[1].endswith("<module> (train.py:11)")
    summary = summary_of(records, launcher_exit_code=None)
    assert summary["root_cause_kind"] == "stall"
    assert summary["failure_reasons"][0] == (
        "rank 1 on node2 (at train.py:11, in <module>) stalled: no progress for 21 s outside any collective;"
        " rank 0 on node1, rank 2 on node3 waited for it in one"
    )


@pytest.mark.parametrize("text", ["", "{not json", "[1, 2]"])
def test_a_missing_or_broken_stall_json_is_no_stall(tmp_path: Path, text: str) -> None:
    if text:
        write(tmp_path / "stall.json", text)
    assert read_run_dir(tmp_path, NAMES).stall == {}


def test_a_cancelled_run_is_cancelled_first() -> None:
    records = make_records(
        rank_status(0, code=143, signal=15, stopped=True),
        rank_status(1, code=143, signal=15, stopped=True),
        rank_status(2, code=143, signal=15, stopped=True),
        launcher_events=[LAUNCH, {"event": "cancel", "time": T0 + 20}, {"event": "launcher_exit", "code": 143, "time": T0 + 22}],
    )
    summary = summary_of(records, launcher_exit_code=None)
    assert summary["status"] == "cancelled"
    assert summary["root_cause_kind"] == "cancelled"
    assert summary["failure_reasons"][0] == "cancelled on request (a stop was asked for while the job ran)"
    assert summary["failure_detected_at"] == T0 + 22


def test_failure_detected_at_is_the_stall_before_any_abort() -> None:
    records = stalled_run()
    records.launcher_events.insert(1, {"event": "abort", "reason": "node node3 exited 1", "time": T0 + 40})
    assert summary_of(records, launcher_exit_code=None)["failure_detected_at"] == STALL_AT


def test_failure_detected_at_is_the_first_abort_without_a_stall() -> None:
    records = make_records(
        rank_status(1, code=3, ended=T0 + 10),
        launcher_events=[
            LAUNCH,
            {"event": "abort", "reason": "node node2 exited 1", "time": T0 + 10.6},
            {"event": "abort", "reason": "signal", "time": T0 + 10.2},
            {"event": "launcher_exit", "code": 1, "time": T0 + 13},
        ],
    )
    assert summary_of(records, launcher_exit_code=None)["failure_detected_at"] == T0 + 10.2


def test_failure_detected_at_is_the_launcher_exit_without_an_abort() -> None:
    records = make_records(rank_status(1, code=3), launcher_events=[LAUNCH, {"event": "launcher_exit", "code": 1, "time": T0 + 13.25}])
    assert summary_of(records, launcher_exit_code=None)["failure_detected_at"] == T0 + 13.25


def test_failure_detected_at_is_unknown_without_any_event() -> None:
    assert summary_of(make_records(rank_status(1, code=3)), launcher_exit_code=1)["failure_detected_at"] is None


def test_a_succeeded_run_has_no_failure_detected_at() -> None:
    summary = summary_of(make_records(launcher_events=CLEAN_LAUNCHER_EVENTS), launcher_exit_code=None)
    assert (summary["status"], summary["failure_detected_at"]) == ("succeeded", None)


def test_started_at_is_the_earliest_rank_start() -> None:
    records = make_records(rank_status(2, started=T0 + 2.5), rank_status(1, code=None, started=T0 + 9))
    assert summary_of(records)["started_at"] == T0 + 2.5


def test_started_at_is_unknown_when_no_rank_started() -> None:
    assert summary_of(make_records(absent=(0, 1, 2)), launcher_exit_code=1)["started_at"] is None


@pytest.mark.parametrize(
    ("ssh_log", "kind"),
    [
        (HOST_KEY_CHANGED, "ssh_trust"),
        ("Host key verification failed.\n", "ssh_trust"),
        ("root@10.0.0.2: Permission denied (publickey).\n", "ssh_trust"),
        ("ssh: connect to host 10.0.0.2 port 2222: Connection refused\n", "connection"),
        ("ssh: connect to host 10.0.0.2 port 2222: Connection timed out\n", "connection"),
    ],
)
def test_an_ssh_check_failure_is_ssh_trust_or_connection(ssh_log: str, kind: str) -> None:
    events = [LAUNCH, {"event": "ssh_check", "node": "node2", "code": 255, "time": T0 + 1}]
    records = RunRecords(launcher_events=events, ssh_logs={"node2": ssh_log})
    assert summary_of(records, launcher_exit_code=1)["root_cause_kind"] == kind


def test_a_node_whose_set_up_did_not_finish_is_named_as_such() -> None:
    events = [LAUNCH, {"event": "ssh_check", "node": "node2", "code": 3, "time": T0 + 60}]
    records = RunRecords(launcher_events=events, ssh_logs={"node2": "the job's set-up on this node did not finish within 60 s\n"})
    summary = summary_of(records, launcher_exit_code=255)
    assert summary["failure_reasons"][0].startswith("node2: the job's set-up there failed or did not finish in time")
    assert summary["root_cause_kind"] == "launcher"


@pytest.mark.parametrize(("agent_log", "kind"), [("Host key verification failed.\n", "ssh_trust"), ("Broken pipe\n", "connection")])
def test_a_lost_agent_connection_is_ssh_trust_or_connection(agent_log: str, kind: str) -> None:
    records = make_records(rank_status(1, code=None), launcher_events=[LAUNCH, node_exit("node2", 255, T0 + 9)], agent_logs={"node2": agent_log})
    assert summary_of(records, launcher_exit_code=1)["root_cause_kind"] == kind



def test_a_rank_without_a_record_beside_a_lost_node_may_have_been_lost_with_it() -> None:
    # The launcher node lost mid-training: rank 0 trained there, but its status file was never collected.
    records = make_records(absent=(0,))
    summary = summary_of(records, worker_states={"node1": {"unreachable": True}}, launcher_exit_code=-1)
    assert summary["failure_reasons"][0] == "node1: the node does not answer (down or cut off)"
    assert "rank 0 left no record: lost with node1, or never started" in summary["failure_reasons"]
    assert "rank 0 never started" not in summary["failure_reasons"]


def test_no_record_at_all_beside_lost_nodes_names_them() -> None:
    states = {"node1": {"unreachable": True}, "node3": {"unreachable": True}}
    summary = summary_of(RunRecords(launcher_events=[LAUNCH]), worker_states=states, launcher_exit_code=1)
    assert "no rank left a record: lost with node1, node3, or none started" in summary["failure_reasons"]
    assert "no rank started" not in summary["failure_reasons"]


# --- a node lost after the training, at the collection ---

FINISHED = "every rank had exited 0 before node3 was lost: the training finished, but the job's files on node3 were not collected"


def test_a_node_lost_at_the_collection_after_every_rank_exited_0_is_named_first() -> None:
    # Rank 2's record stayed on node3, which stopped as the files were collected; the controller had followed its end.
    events = [LAUNCH, node_exit("node3", 255, T0 + 40), node_exit("node1", 255, T0 + 40, after_abort=True)]
    records = make_records(absent=(2,), launcher_events=events)
    summary = summary_of(
        records, worker_states={"node3": {"unreachable": True}}, launcher_exit_code=255, followed_exit_codes={0: 0, 1: 0, 2: 0}
    )
    assert summary["status"] == "failed"
    assert summary["root_cause_kind"] == "node_lost"
    assert summary["failure_reasons"][0] == "node3: the node does not answer (down or cut off)"
    assert FINISHED in summary["failure_reasons"]
    assert not [reason for reason in summary["failure_reasons"] if "left no record" in reason]
    # Its exit code stays what was collected: the followed one is no record.
    assert summary["rank_exit_codes"] == {"0": 0, "1": 0}


@pytest.mark.parametrize("followed", [{}, {0: 0, 1: 0}, {0: 0, 1: 0, 2: 137}])
def test_a_rank_the_follow_did_not_see_exit_0_beside_a_lost_node_left_no_record(followed: dict[int, int]) -> None:
    records = make_records(absent=(2,))
    summary = summary_of(records, worker_states={"node3": {"unreachable": True}}, launcher_exit_code=-1, followed_exit_codes=followed)
    assert "rank 2 left no record: lost with node3, or never started" in summary["failure_reasons"]
    assert FINISHED not in summary["failure_reasons"]


def test_a_collected_record_outweighs_the_followed_exit_code() -> None:
    records = make_records(rank_status(1, code=3, ended=T0 + 9))
    summary = summary_of(records, launcher_exit_code=1, followed_exit_codes={0: 0, 1: 0, 2: 0})
    assert summary["failure_reasons"][0] == "rank 1 on node2 exited 3"


def test_followed_exit_codes_without_any_record_name_only_the_ranks_not_seen_to_exit_0() -> None:
    states = {"node1": {"unreachable": True}}
    summary = summary_of(RunRecords(launcher_events=[LAUNCH]), worker_states=states, launcher_exit_code=-1, followed_exit_codes={1: 0})
    reasons = summary["failure_reasons"]
    assert "rank 0 left no record: lost with node1, or never started" in reasons
    assert "rank 2 left no record: lost with node1, or never started" in reasons
    assert not [reason for reason in reasons if reason.startswith(("rank 1 ", "no rank"))]


def left_without_ending(records: RunRecords, rank: int) -> RunRecords:
    """``records`` where ``rank``'s world record holds its group but not the interpreter's end (``os._exit``)."""
    records.world[rank] = {"rank": rank, "groups": [{"backend": "gloo", "world_size": 3, "rank": rank}]}
    return records


# Ranks 0 and 2 as gloo fails them once rank 1 has gone.
PEER_GONE = "RuntimeError: [pair.cc:537] Read error [172.30.77.12]:34441: Connection reset by peer."


def rank_1_left(rank_1_ended: float = T0 + 10, tails: dict[int, str] | None = None) -> RunRecords:
    """Rank 1 exited 0 at ``rank_1_ended``; ranks 0 and 2 failed after 10 s with ``tails`` (gloo's reset connection)."""
    records = make_records(
        rank_status(0, code=1, ended=T0 + 12),
        rank_status(1, code=0, ended=rank_1_ended),
        rank_status(2, code=1, ended=T0 + 11),
    )
    records.rank_log_tails = {0: PEER_GONE, 2: PEER_GONE} if tails is None else tails
    return script_ended(records, {0: T0 + 10.05, 2: T0 + 10.06})


@pytest.mark.parametrize(
    ("rank_1_ended", "world_record", "how"),
    [
        # os._exit(0): no atexit, so no end in its world record; its process ended first.
        (T0 + 10, {"groups": [{"world_size": 3}]}, " without Python's normal exit (os._exit?)"),
        # sys.exit(0): its code ended first (its world record); its interpreter's teardown ended after the others.
        (T0 + 12.5, {"groups": [{"world_size": 3}], "ended": True, SCRIPT_ENDED: T0 + 10.0}, ""),
    ],
    ids=["os._exit(0)", "sys.exit(0)"],
)
def test_a_rank_that_left_before_the_others_lost_their_connection_to_it_comes_first(
    rank_1_ended: float, world_record: dict[str, Any], how: str
) -> None:
    # Rank 1 leaves before the last barrier: ranks 0 and 2 fail reading from it (connection reset).
    records = rank_1_left(rank_1_ended)
    records.world[1] = {"rank": 1, **world_record}
    summary = summary_of(records, launcher_exit_code=1)
    assert summary["status"] == "failed"
    assert summary["root_cause_kind"] == "exit"
    assert summary["failure_reasons"][:3] == [
        f"rank 1 on node2 left early: it exited 0{how} while the other ranks still needed it, and they lost their"
        " connection to it",
        "rank 0 on node1 exited 1",
        "rank 2 on node3 exited 1",
    ]


def test_a_rank_that_left_early_is_named_when_mpiexec_killed_it_in_its_teardown() -> None:
    # Seen under mpiexec (2026-12-02): rank 2 calls sys.exit(0) mid-training; ranks 0 and 1 fail on the connection it
    # closed (exit 1, gloo's "Connection closed by peer"), and mpiexec kills rank 2, still in its interpreter's
    # teardown, and rank 1 with their wrappers: only their world records say how their code ended.
    records = make_records(rank_status(0, code=1, ended=T0 + 10.6), rank_status(1, code=None), rank_status(2, code=None))
    records.world = {
        0: {"rank": 0, "groups": [{"world_size": 3}], "ended": True, SCRIPT_ENDED: T0 + 10.03, EXIT_STATUS: 1, LOST_PEER: True},
        1: {"rank": 1, "groups": [{"world_size": 3}], "ended": True, SCRIPT_ENDED: T0 + 10.05, EXIT_STATUS: 1, LOST_PEER: True},
        2: {"rank": 2, "groups": [{"world_size": 3}], "ended": True, SCRIPT_ENDED: T0 + 10.0, EXIT_STATUS: 0, LOST_PEER: False},
    }
    summary = summary_of(records, launcher_exit_code=255)
    assert summary["root_cause_kind"] == "exit"
    assert summary["failure_reasons"] == [
        "rank 2 on node3 left early: it exited 0 while the other ranks still needed it, and they lost their connection"
        " to it",
        "rank 0 on node1 exited 1",
        "rank 1 on node2 exited 1 (its process was killed before its wrapper recorded the end)",
        "launcher exited 255",
    ]
    assert summary["rank_exit_codes"] == {"0": 1}, "what the wrappers recorded, nothing made up"


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(rank_1_left(rank_1_ended=T0 + 10.5), id="it-left-after-the-first-failure"),
        pytest.param(rank_1_left(tails={0: "OSError: [Errno 28] No space left on device"}), id="no-rank-lost-a-peer"),
    ],
)
def test_a_rank_that_exited_0_is_not_named_unless_it_left_before_the_others_lost_it(records: RunRecords) -> None:
    assert summary_of(records, launcher_exit_code=1)["failure_reasons"][:2] == ["rank 0 on node1 exited 1", "rank 2 on node3 exited 1"]


def test_every_rank_leaving_with_os_exit_0_is_a_success() -> None:
    # Some scripts end every rank with os._exit(0) to skip a slow teardown: nothing failed.
    records = make_records(*(rank_status(rank, code=0, ended=T0 + 10) for rank in range(3)))
    for rank in range(3):
        left_without_ending(records, rank)
    summary = summary_of(records, launcher_exit_code=0)
    assert summary["status"] == "succeeded"
    assert summary["failure_reasons"] == []


# --- the first failing rank's own words ---

TORCH_TRACEBACK = """[rank0]: Traceback (most recent call last):
[rank0]:   File "/work/multinode.py", line 117, in <module>
[rank0]:     main(args.save_every, args.total_epochs, args.batch_size)
[rank0]:     device, dtype, non_blocking, convert_to_format = torch._C._nn._parse_to(
[rank0]:                                                      ^^^^^^^^^^^^^^^^^^^^^^^
[rank0]: RuntimeError: Cannot access accelerator device when none is available.
"""
# gloo's abort as a rank's log ends with it: faulthandler's dump after the C++ runtime's words.
GLOO_ABORT_DUMP = f"""epoch 2 step 20
{GLOO_ABORT}
Fatal Python error: Aborted

Thread 0x00007f52 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 331 in wait

Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)
"""


@pytest.mark.parametrize(
    ("tail", "error"),
    [
        (TORCH_TRACEBACK, "RuntimeError: Cannot access accelerator device when none is available."),
        ('Traceback (most recent call last):\n  File "t.py", line 3\n    f()\nValueError: diverged\n', "ValueError: diverged"),
        ("Traceback (most recent call last):\nKeyboardInterrupt\n", "KeyboardInterrupt"),
        (GLOO_ABORT_DUMP, "what():  [pair.cc:589] Read error [172.30.77.13]:41002: Connection reset by peer"),
        ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call first):\n  File \"t.py\"\n",
         "Fatal Python error: Segmentation fault"),
        # An error the script logged and went on from is not how it ended.
        ("ConnectionError: retrying\nepoch 3 done\n", None),
        ("rank 0: configuration missing\n", None),
        ("", None),
    ],
    ids=["torch-prefixed", "traceback", "bare-exception", "c++-abort", "segfault", "logged-earlier", "sys.exit-text", "empty"],
)
def test_the_error_a_rank_s_log_ends_with_is_found(tail: str, error: str | None) -> None:
    assert last_error(tail) == error


def test_a_long_error_is_cut() -> None:
    said = last_error("ValueError: " + "x" * 1000)
    assert said is not None and len(said) == 300 and said.endswith("...")


def test_the_summary_quotes_the_first_failing_rank_s_error_with_its_secrets_masked() -> None:
    records = make_records(rank_status(1, code=1, ended=T0 + 10.0), rank_status(2, code=1, ended=T0 + 10.5))
    records.rank_log_tails = {
        1: "Traceback (most recent call last):\nPermissionError: 403 for https://hub.example/?token=hf-s3cr3t-value\n",
        2: PEER_GONE,
    }
    summary = summarize(records, job_id="job-1", launcher="torchrun", nodes=NODES, node_names=NAMES, world_size=3,
                        timed_out=False, launcher_exit_code=1, hidden=("hf-s3cr3t-value",))
    assert summary["failure_reasons"][0] == "rank 1 on node2 exited 1"
    assert summary["root_cause_error"] == "PermissionError: 403 for https://hub.example/?token=***"


def test_no_error_is_quoted_when_the_first_reason_is_not_a_rank_s() -> None:
    # node2's worker died: its rank's error (the connection it lost) is a consequence, not the cause.
    records = make_records(rank_status(1, code=1, ended=T0 + 10.0))
    records.rank_log_tails = {1: "RuntimeError: Connection reset by peer\n"}
    dead = {"node2": {"what": "worker container", "present": True, "running": False, "exit_code": 137, "oom_killed": False}}
    summary = summary_of(records, launcher_exit_code=1, worker_states=dead)
    assert summary["failure_reasons"][0] == "node2: the worker container is not running, it died (exit code 137)"
    assert summary["root_cause_error"] is None
