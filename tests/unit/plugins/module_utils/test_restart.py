# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart policy: which failed attempts are relaunched, and the record of each restart."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils.restart import (
    INFRASTRUCTURE_KINDS,
    RESTART_ON_CHOICES,
    Decision,
    budget_used,
    checkpoint_holders,
    completed,
    decide,
    merged_epochs,
    new_entry,
    new_launcher,
    next_hosts,
)
from ansible_collections.multinode.training.plugins.module_utils.run_report import RunRecords, every_rank_exited_0, summarize

DEFAULT_RESTART_ON = list(INFRASTRUCTURE_KINDS)  # launcher_restart_on's default
REASON = "node3: the worker container is not running, it died (exit code 137)"


ALL = ("node1", "node2", "node3")  # the nodes of failed(): a restart without a lost node keeps them all


def failed(kind: str | None, *reasons: str, status: str = "failed") -> dict[str, Any]:
    """The parts of an attempt's summary the policy reads."""
    return {
        "status": status,
        "root_cause_kind": kind,
        "failure_reasons": list(reasons or (REASON, "launcher exited 1")),
        "started_at": 1005.0,
        "failure_detected_at": 1020.5,
        "node_names": ["node1", "node2", "node3"],
        "resumed_from": None,
    }


def verdict(summary: dict[str, Any], *, used: int = 0, most: int = 2, restart_on: list[str] | None = None) -> Decision:
    return decide(
        summary,
        restarts=[{"kind": summary["root_cause_kind"]}] * used,
        max_restarts=most,
        restart_on=DEFAULT_RESTART_ON if restart_on is None else restart_on,
    )


# --- the kinds ---


def test_the_infrastructure_kinds_and_the_choices() -> None:
    assert INFRASTRUCTURE_KINDS == ("worker_lost", "node_lost", "connection", "signal", "stall", "teardown_race")
    assert RESTART_ON_CHOICES == INFRASTRUCTURE_KINDS + ("exit",)


# --- the verdict ---


def test_a_succeeded_job_is_not_restarted() -> None:
    summary = {"status": "succeeded", "root_cause_kind": None, "failure_reasons": []}
    assert verdict(summary) == Decision(False, "the job succeeded")


@pytest.mark.parametrize("kind", ["cancelled", *RESTART_ON_CHOICES])
def test_a_cancelled_job_is_never_restarted(kind: str) -> None:
    # Whatever the kind of what went wrong before the stop, and however generous the policy.
    summary = failed(kind, "cancelled on request (a stop was asked for while the job ran)", REASON, status="cancelled")
    assert verdict(summary, most=10, restart_on=list(RESTART_ON_CHOICES)) == Decision(
        False, "a cancelled job is never restarted"
    )


@pytest.mark.parametrize("kind", ["worker_lost", "node_lost", "connection", "signal", "stall"])
def test_an_infrastructure_failure_is_restarted_while_restarts_are_left(kind: str) -> None:
    summary = failed(kind, "the root cause", "launcher exited 1")
    assert verdict(summary, used=0, most=2) == Decision(True, "restart 1 of 2: the root cause", ALL)
    assert verdict(summary, used=1, most=2) == Decision(True, "restart 2 of 2: the root cause", ALL)


@pytest.mark.parametrize("kind", ["worker_lost", "node_lost", "connection", "signal", "stall"])
def test_no_restart_is_left(kind: str) -> None:
    assert verdict(failed(kind), used=2, most=2) == Decision(False, "no restart left (launcher_max_restarts: 2)")
    assert verdict(failed(kind), used=0, most=0) == Decision(False, "no restart left (launcher_max_restarts: 0)")


def test_a_teardown_race_is_restarted_from_a_budget_of_its_own() -> None:
    race = failed("teardown_race", "rank 2 on node3 was killed by SIGABRT after its work", "launcher exited 1")
    assert verdict(race, used=1, most=2) == Decision(
        True, "teardown-race restart 2 of 2: rank 2 on node3 was killed by SIGABRT after its work", ALL
    )
    assert verdict(race, used=2, most=2) == Decision(False, "no teardown-race restart left (launcher_max_restarts: 2)")


def test_teardown_races_do_not_use_up_the_restarts_of_a_lost_node() -> None:
    races = [{"kind": "teardown_race"}, {"kind": "teardown_race"}]
    lost = decide(failed("worker_lost"), restarts=races, max_restarts=2, restart_on=DEFAULT_RESTART_ON)
    assert lost == Decision(True, f"restart 1 of 2: {REASON}", ALL)
    race = decide(
        failed("teardown_race"), restarts=[{"kind": "node_lost"}] * 2, max_restarts=2, restart_on=DEFAULT_RESTART_ON
    )
    assert race == Decision(True, f"teardown-race restart 1 of 2: {REASON}", ALL)


def test_budget_used_counts_within_a_budget() -> None:
    entries = [{"kind": "teardown_race"}, {"kind": "stall"}, {"kind": "node_lost"}]
    assert budget_used(entries, "teardown_race") == 1
    assert budget_used(entries, "worker_lost") == 2
    assert budget_used([], "stall") == 0


def test_a_rank_s_own_failure_is_not_restarted_by_default() -> None:
    summary = failed("exit", "rank 1 on node2 exited 3", "launcher exited 1")
    assert verdict(summary) == Decision(False, "its root cause (exit) is not one launcher_restart_on restarts")


def test_a_rank_s_own_failure_is_restarted_when_restart_on_names_exit() -> None:
    summary = failed("exit", "rank 1 on node2 exited 3", "launcher exited 1")
    assert verdict(summary, restart_on=[*DEFAULT_RESTART_ON, "exit"]) == Decision(
        True, "restart 1 of 2: rank 1 on node2 exited 3", ALL
    )
    assert verdict(summary, used=2, restart_on=[*DEFAULT_RESTART_ON, "exit"]) == Decision(
        False, "no restart left (launcher_max_restarts: 2)"
    )


@pytest.mark.parametrize("kind", ["timeout", "launcher", "consequence", None])
def test_a_timeout_a_launcher_that_cannot_run_and_a_mere_consequence_are_never_restarted_by_default(
    kind: str | None,
) -> None:
    assert kind not in RESTART_ON_CHOICES
    assert verdict(failed(kind), most=5) == Decision(
        False, f"its root cause ({kind}) is not one launcher_restart_on restarts"
    )


def test_restart_on_narrows_the_kinds() -> None:
    assert verdict(failed("stall"), restart_on=["worker_lost"]) == Decision(
        False, "its root cause (stall) is not one launcher_restart_on restarts"
    )
    assert verdict(failed("worker_lost"), restart_on=["worker_lost"]).restart is True
    assert verdict(failed("worker_lost"), restart_on=[]).restart is False


# --- the verdict on real summaries ---


def summary_of(records: RunRecords, **overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "job_id": "job-1",
        "launcher": "torchrun",
        "nodes": ["10.0.0.1", "10.0.0.2"],
        "node_names": ["node1", "node2"],
        "world_size": 2,
        "timed_out": False,
        "launcher_exit_code": 1,
        **overrides,
    }
    return summarize(records, **kwargs)


def status(rank: int, code: int, signal: int | None = None, stopped: bool = False) -> dict[str, Any]:
    node = f"node{rank + 1}"
    return {
        "rank": rank,
        "node": node,
        "host": node,
        "started": 1005.0 + rank,
        "ended": 1030.0 + rank,
        "code": code,
        "signal": signal,
        "stopped": stopped,
    }


def test_a_summarized_oom_kill_is_restarted_and_a_summarized_exit_is_not() -> None:
    oom = summary_of(RunRecords(rank_status={0: status(0, 0), 1: status(1, 137, signal=9)}))
    assert oom["root_cause_kind"] == "signal"
    assert verdict(oom, most=1) == Decision(
        True,
        "restart 1 of 1: rank 1 on node2 killed by signal 9 (SIGKILL, e.g. the kernel's out-of-memory killer)",
        ("node1", "node2"),
    )
    bug = summary_of(RunRecords(rank_status={0: status(0, 0), 1: status(1, 3)}))
    assert verdict(bug, most=1).restart is False


def test_a_summarized_cancel_is_not_restarted() -> None:
    records = RunRecords(
        launcher_events=[{"event": "cancel", "time": 1010.0}, {"event": "launcher_exit", "code": 143, "time": 1011.0}],
        rank_status={0: status(0, 143, signal=15, stopped=True), 1: status(1, 137, signal=9)},
    )
    assert verdict(summary_of(records), most=3).why == "a cancelled job is never restarted"


# --- a node lost after the training (at the collection) ---


def test_a_job_whose_every_rank_had_exited_0_is_not_restarted_when_a_node_is_then_lost() -> None:
    summary = failed("node_lost", "node3: the node does not answer (down or cut off)")
    assert decide(
        summary, restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, lost_nodes=["node3"], finished=True
    ) == Decision(False, "every rank had exited 0 before node3 was lost: the training is done, a restart would train again")
    # Nothing lost (the agents' connections dropped after the ranks' end): the same.
    assert decide(
        failed("connection"), restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, finished=True
    ).why == "every rank had exited 0 before it failed: the training is done, a restart would train again"


@pytest.mark.parametrize("status", ["succeeded", "cancelled"])
def test_finished_changes_no_verdict_on_a_succeeded_or_cancelled_job(status: str) -> None:
    summary = failed("node_lost", status=status)
    assert decide(summary, restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, finished=True) == verdict(summary)


def test_a_kind_restart_on_leaves_out_is_said_before_finished() -> None:
    # every rank exited 0 but formed no world: its own verdict, as before.
    assert decide(failed("world"), restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, finished=True).why == (
        "its root cause (world) is not one launcher_restart_on restarts"
    )


def test_a_summarized_collection_loss_after_every_rank_exited_0_is_not_restarted() -> None:
    # node2 stopped as the job's files were collected: its rank's record never came, the follow saw it exit 0.
    records = RunRecords(rank_status={0: status(0, 0)})
    summary = summary_of(records, worker_states={"node2": {"unreachable": True}}, followed_exit_codes={0: 0, 1: 0})
    assert summary["status"] == "failed"
    assert summary["failure_reasons"][0] == "node2: the node does not answer (down or cut off)"
    finished = every_rank_exited_0(2, {0: 0}, {0: 0, 1: 0})
    assert finished is True
    assert decide(
        summary, restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, lost_nodes=["node2"], finished=finished
    ).restart is False


# --- the record of the restarts ---


def test_new_entry_records_the_cause_and_leaves_the_resume_open() -> None:
    summary = failed("worker_lost", REASON, "rank 2 on node3 left no exit status")
    assert new_entry(summary, 2) == {
        "attempt": 2,
        "cause": REASON,
        "kind": "worker_lost",
        "detected_at": 1020.5,
        "resumed_at": None,
        "resumed_from": None,
        "nodes": None,
    }


def test_new_entry_without_a_detection_time() -> None:
    summary = {"status": "failed", "root_cause_kind": "stall", "failure_reasons": ["rank 1 on node2 stalled"]}
    entry = new_entry(summary, 1)
    assert (entry["cause"], entry["kind"], entry["detected_at"]) == ("rank 1 on node2 stalled", "stall", None)


def next_attempt(**changes: Any) -> dict[str, Any]:
    """The summary of the attempt after a restart."""
    return {
        "status": "succeeded",
        "started_at": 1100.25,
        "resumed_from": "/shared/checkpoints/digits/epoch-3.pt",
        "node_names": ["node1", "node2", "node4"],
        **changes,
    }


def test_completed_fills_the_open_entry_from_the_attempt_that_followed() -> None:
    restarts = [new_entry(failed("worker_lost"), 1)]
    before = copy.deepcopy(restarts)
    done = completed(restarts, next_attempt())
    assert done == [
        {
            "attempt": 1,
            "cause": REASON,
            "kind": "worker_lost",
            "detected_at": 1020.5,
            "resumed_at": 1100.25,
            "resumed_from": "/shared/checkpoints/digits/epoch-3.pt",
            "nodes": ["node1", "node2", "node4"],
        }
    ]
    assert restarts == before, "the input list and its entries are left as they were"
    assert done[0] is not restarts[0]


def test_completed_touches_only_the_last_entry_and_only_while_it_is_open() -> None:
    first = {
        **new_entry(failed("stall", "rank 1 on node2 stalled"), 1),
        "resumed_at": 1050.0,
        "resumed_from": "/ckpt/epoch-1.pt",
        "nodes": ["node1", "node2"],
    }
    second = new_entry(failed("signal", "rank 0 on node1 killed by signal 9 (SIGKILL)"), 2)
    done = completed([first, second], next_attempt(started_at=1200.0))
    assert done[0] == first
    assert (done[1]["resumed_at"], done[1]["resumed_from"], done[1]["nodes"]) == (
        1200.0,
        "/shared/checkpoints/digits/epoch-3.pt",
        ["node1", "node2", "node4"],
    )
    # Already complete: a later summary (e.g. of the same attempt written again) changes nothing.
    assert completed(done, next_attempt(started_at=9999.0, node_names=["other"])) == done


def test_completed_of_no_restart_is_empty() -> None:
    assert completed([], next_attempt()) == []


def test_completed_when_the_next_attempt_started_no_rank() -> None:
    done = completed([new_entry(failed("node_lost"), 1)], {"status": "failed", "started_at": None})
    assert (done[0]["resumed_at"], done[0]["resumed_from"], done[0]["nodes"]) == (None, None, [])


# --- lost nodes left out of the next attempt ---


def test_a_lost_node_is_left_out_of_the_restart() -> None:
    summary = failed("node_lost", "node3: the node does not answer (down or cut off)")
    assert verdict(summary, most=3) == Decision(
        True, "restart 1 of 3: node3: the node does not answer (down or cut off)", ALL
    )
    assert decide(
        summary, restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, lost_nodes=["node3"]
    ) == Decision(
        True,
        "restart 1 of 3: node3: the node does not answer (down or cut off); without node3, on 2 nodes",
        ("node1", "node2"),
    )


def test_a_lost_node_is_replaced_by_a_spare_in_its_place() -> None:
    summary = failed("node_lost", "node2: the node does not answer (down or cut off)")
    decision = decide(
        summary, restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, lost_nodes=["node2"], spares=["node4"]
    )
    assert decision == Decision(
        True,
        "restart 1 of 3: node2: the node does not answer (down or cut off); node4 in place of node2",
        ("node1", "node4", "node3"),
    )


def test_lost_nodes_beyond_the_spares_are_left_out() -> None:
    summary = failed("node_lost", "node2: the node does not answer (down or cut off)")
    decision = decide(
        summary,
        restarts=[],
        max_restarts=3,
        restart_on=DEFAULT_RESTART_ON,
        lost_nodes=["node2", "node3"],
        spares=["node4"],
    )
    assert decision.hosts == ("node1", "node4")
    assert decision.why.endswith("; node4 in place of node2; without node3, on 2 nodes")


def test_a_spare_already_in_the_job_is_not_free() -> None:
    # node4 replaced node2 at the first restart; node3 is lost at the second: no spare is left.
    assert next_hosts(["node1", "node4", "node3"], ["node3"], ["node4"]) == (["node1", "node4"], {})
    assert next_hosts(["node1", "node2", "node3"], ["node3"], ["node4", "node5"]) == (
        ["node1", "node2", "node4"],
        {"node3": "node4"},
    )


def test_too_few_nodes_left_end_the_job() -> None:
    summary = failed("node_lost", "node2: the node does not answer (down or cut off)")
    decision = decide(
        summary,
        restarts=[],
        max_restarts=3,
        restart_on=DEFAULT_RESTART_ON,
        lost_nodes=["node2", "node3"],
        min_nodes=2,
    )
    assert decision == Decision(False, "1 of 3 nodes left without node2, node3; launcher_min_nodes is 2")
    enough = decide(
        summary, restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, lost_nodes=["node3"], min_nodes=2
    )
    assert enough.restart is True


def test_lost_nodes_do_not_make_an_unrestartable_failure_restartable() -> None:
    decision = decide(failed("exit"), restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, lost_nodes=["node3"])
    assert decision == Decision(False, "its root cause (exit) is not one launcher_restart_on restarts")


def test_an_untrusted_node_is_never_restarted() -> None:
    assert "ssh_trust" not in RESTART_ON_CHOICES
    events = [
        {"event": "launch", "launcher": "torchrun", "time": 1000.0},
        {"event": "ssh_check", "node": "node2", "code": 255, "time": 1001.0},
    ]
    records = RunRecords(launcher_events=events, ssh_logs={"node2": "Host key verification failed.\n"})
    summary = summary_of(records)
    assert summary["root_cause_kind"] == "ssh_trust"
    assert verdict(summary, most=3) == Decision(
        False, "its root cause (ssh_trust) is not one launcher_restart_on restarts"
    )


# --- a lost launcher node: its role moves to the survivor holding the newest checkpoint ---

LAUNCHER_LOST = "node1: the node does not answer (down or cut off)"


def entry(name: str, size: int, mtime: int) -> dict[str, Any]:
    """One entry of a node's checkpoint listing (checkpoint_replica.entries)."""
    return {"name": name, "bytes": size, "mtime": mtime}


def with_checkpoints(listings: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The summary of an attempt whose launcher node (node1) was lost, with each node's checkpoints."""
    return {**failed("node_lost", LAUNCHER_LOST), "checkpoints": checkpoint_holders(listings)}


def launcher_lost(summary: dict[str, Any], **policy: Any) -> Decision:
    return decide(
        summary,
        restarts=[],
        max_restarts=3,
        restart_on=DEFAULT_RESTART_ON,
        lost_nodes=policy.pop("lost_nodes", ["node1"]),
        replicas=policy.pop("replicas", 1),
        **policy,
    )


# node1 wrote epoch-3.pt and was lost before its replica reached node2; node3 holds an older copy of epoch-1.pt.
LISTINGS = {
    "node1": [entry("epoch-3.pt", 100, 3000), entry("epoch-2.pt", 100, 2000), entry("epoch-1.pt", 100, 1000)],
    "node2": [entry("epoch-2.pt", 100, 2000), entry("epoch-1.pt", 100, 1000)],
    "node3": [entry("epoch-1.pt", 100, 1000)],
}


def test_checkpoint_holders_newest_first_with_the_nodes_that_hold_each() -> None:
    assert checkpoint_holders(LISTINGS) == [
        {"name": "epoch-3.pt", "bytes": 100, "mtime": 3000, "nodes": ["node1"]},
        {"name": "epoch-2.pt", "bytes": 100, "mtime": 2000, "nodes": ["node1", "node2"]},
        {"name": "epoch-1.pt", "bytes": 100, "mtime": 1000, "nodes": ["node1", "node2", "node3"]},
    ]


def test_the_same_name_with_other_bytes_or_another_time_is_another_checkpoint() -> None:
    holders = checkpoint_holders(
        {
            "node1": [entry("step-200", 500, 2001), entry("epoch-1.pt", 100, 1000)],
            "node2": [entry("step-200", 400, 2001), entry("epoch-1.pt", 100, 1000)],  # copied while still written
            "node3": [entry("step-200", 500, 2000)],  # an older step-200, of an earlier launch
        }
    )
    assert [(h["name"], h["mtime"], h["nodes"]) for h in holders if h["mtime"] == 2000] == [
        ("step-200", 2000, ["node3"])
    ]
    newest = sorted((h["bytes"], h["nodes"]) for h in holders if h["mtime"] == 2001)
    assert newest == [(400, ["node2"]), (500, ["node1"])]
    assert [h["mtime"] for h in holders] == [2001, 2001, 2000, 1000]
    assert holders[-1] == {"name": "epoch-1.pt", "bytes": 100, "mtime": 1000, "nodes": ["node1", "node2"]}


def test_checkpoint_holders_of_no_listing() -> None:
    assert checkpoint_holders({}) == []
    assert checkpoint_holders({"node1": [], "node2": []}) == []


def test_the_replicators_copies_and_removals_after_the_listing_count() -> None:
    # node2 was listed before the launcher node's last pass copied epoch-3.pt to it and removed epoch-1.pt there.
    copies = [
        {"entry": "epoch-3.pt", "node": "node2", "ok": True, "bytes": 100, "mtime": 3000},
        {"entry": "epoch-4.pt", "node": "node2", "ok": False, "bytes": 100, "mtime": 4000, "error": "cut"},
        {"entry": "epoch-1.pt", "node": "node2", "ok": True, "removed": True},
        {"entry": "epoch-9.pt", "node": "node2", "ok": True},  # no bytes or time: says nothing of a checkpoint
    ]
    holders = checkpoint_holders(LISTINGS, copies)
    assert holders == [
        {"name": "epoch-3.pt", "bytes": 100, "mtime": 3000, "nodes": ["node1", "node2"]},
        {"name": "epoch-2.pt", "bytes": 100, "mtime": 2000, "nodes": ["node1", "node2"]},
        {"name": "epoch-1.pt", "bytes": 100, "mtime": 1000, "nodes": ["node1", "node3"]},
    ]


def test_a_checkpoint_no_node_holds_any_more_is_not_listed() -> None:
    removed = [{"entry": "only.pt", "node": "node1", "ok": True, "removed": True}]
    assert checkpoint_holders({"node1": [entry("only.pt", 1, 5)]}, removed) == []


def test_checkpoint_holders_break_a_tie_of_times_by_name() -> None:
    holders = checkpoint_holders({"node1": [entry("a.pt", 1, 5), entry("c.pt", 1, 5)], "node2": [entry("b.pt", 1, 5)]})
    assert [h["name"] for h in holders] == ["c.pt", "b.pt", "a.pt"]


def test_new_launcher_is_the_first_survivor_holding_the_newest_checkpoint_it_can() -> None:
    checkpoints = checkpoint_holders(LISTINGS)
    assert new_launcher(["node1", "node2", "node3"], ["node1"], checkpoints) == ("node2", "epoch-2.pt")
    # Of several holders, the first in the job's order, whatever the order of the listings.
    both = [{"name": "epoch-2.pt", "nodes": ["node3", "node2"]}]
    assert new_launcher(["node1", "node2", "node3"], ["node1"], both) == ("node2", "epoch-2.pt")
    assert new_launcher(["node1", "node2", "node3"], ["node1", "node2"], checkpoints) == ("node3", "epoch-1.pt")


def test_new_launcher_without_a_checkpoint_is_the_first_survivor() -> None:
    assert new_launcher(["node1", "node2", "node3"], ["node1"], []) == ("node2", "")
    only_lost = [{"name": "epoch-3.pt", "nodes": ["node1"]}, {"name": "epoch-2.pt", "nodes": None}, {"name": "x"}]
    assert new_launcher(["node1", "node2", "node3"], ["node1"], only_lost) == ("node2", "")
    assert new_launcher(["node1", "node2"], ["node1", "node2"], only_lost) == (None, "")
    assert new_launcher([], [], []) == (None, "")


def test_a_lost_launcher_node_hands_its_role_to_the_survivor_holding_the_newest_checkpoint() -> None:
    decision = launcher_lost(with_checkpoints(LISTINGS))
    assert decision == Decision(
        True,
        f"restart 1 of 3: {LAUNCHER_LOST}; node2 is the launcher node now (it holds epoch-2.pt); without node1, on 2 nodes",
        ("node2", "node3"),
    )


def test_the_new_launcher_node_goes_first_whatever_its_place() -> None:
    listings = {"node1": LISTINGS["node1"], "node2": [], "node3": [entry("epoch-3.pt", 100, 3000)]}
    decision = launcher_lost(with_checkpoints(listings))
    assert decision.hosts == ("node3", "node2")
    assert "node3 is the launcher node now (it holds epoch-3.pt)" in decision.why


def test_a_spare_takes_the_lost_launcher_node_s_place_among_the_others() -> None:
    decision = launcher_lost(with_checkpoints(LISTINGS), spares=["node4"])
    assert decision == Decision(
        True,
        f"restart 1 of 3: {LAUNCHER_LOST}; node2 is the launcher node now (it holds epoch-2.pt); node4 in place of node1",
        ("node2", "node4", "node3"),
    )


def test_a_lost_launcher_node_without_any_checkpoint_left_starts_the_job_again_on_the_first_survivor() -> None:
    listings = {"node1": LISTINGS["node1"], "node2": [], "node3": []}
    for summary in (with_checkpoints(listings), failed("node_lost", LAUNCHER_LOST)):
        assert launcher_lost(summary, replicas=1) == Decision(
            True,
            f"restart 1 of 3: {LAUNCHER_LOST}; node2 is the launcher node now (no surviving node holds a checkpoint:"
            " the job starts again); without node1, on 2 nodes",
            ("node2", "node3"),
        )


def test_a_lost_launcher_node_without_replicas_ends_the_job() -> None:
    listings = {"node1": LISTINGS["node1"], "node2": [], "node3": []}
    expected = Decision(
        False, "the launcher node node1 is lost with the job's checkpoints (launcher_checkpoint_replicas: 0)"
    )
    assert launcher_lost(with_checkpoints(listings), replicas=0) == expected
    assert launcher_lost(failed("node_lost", LAUNCHER_LOST), replicas=0) == expected
    # decide's default: no replicas.
    summary = failed("node_lost", LAUNCHER_LOST)
    assert decide(summary, restarts=[], max_restarts=3, restart_on=DEFAULT_RESTART_ON, lost_nodes=["node1"]) == expected


def test_without_replicas_a_checkpoint_a_survivor_holds_still_moves_the_launcher_node() -> None:
    # e.g. a copy an earlier launch made, when launcher_checkpoint_replicas was 1
    decision = launcher_lost(with_checkpoints(LISTINGS), replicas=0)
    assert decision.restart is True
    assert decision.hosts == ("node2", "node3")


def test_a_launcher_node_that_cannot_move_ends_the_job() -> None:
    decision = launcher_lost(with_checkpoints(LISTINGS), launcher_stays="the Slurm controller with it")
    assert decision == Decision(False, "the launcher node node1 is lost, and the Slurm controller with it")


def test_a_lost_launcher_node_and_no_node_left() -> None:
    everyone = ["node1", "node2", "node3"]
    assert launcher_lost(failed("node_lost", LAUNCHER_LOST), lost_nodes=everyone) == Decision(
        False, "the launcher node node1 is lost and no node of the job is left"
    )


def test_a_lost_launcher_node_and_too_few_nodes_left() -> None:
    decision = launcher_lost(with_checkpoints(LISTINGS), min_nodes=3)
    assert decision == Decision(False, "2 of 3 nodes left without node1; launcher_min_nodes is 3")


def test_a_lost_launcher_node_does_not_make_an_unrestartable_failure_restartable() -> None:
    summary = {**with_checkpoints(LISTINGS), "root_cause_kind": "exit"}
    assert launcher_lost(summary) == Decision(False, "its root cause (exit) is not one launcher_restart_on restarts")


def test_a_lost_worker_node_keeps_the_launcher_node_whatever_the_checkpoints() -> None:
    summary = {**failed("node_lost", "node3: the node does not answer (down or cut off)"), "checkpoints": []}
    summary["checkpoints"] = checkpoint_holders({"node2": [entry("epoch-3.pt", 100, 3000)], "node1": []})
    for policy in ({"replicas": 0}, {"replicas": 1}, {"replicas": 1, "launcher_stays": "the Slurm controller with it"}):
        assert launcher_lost(summary, lost_nodes=["node3"], **policy) == Decision(
            True,
            "restart 1 of 3: node3: the node does not answer (down or cut off); without node3, on 2 nodes",
            ("node1", "node2"),
        )


# --- one epoch history across attempts ---


def epochs(*numbers: float) -> list[dict[str, Any]]:
    return [{"epoch": number, "loss": 1.0 / number, "samples_per_s": None} for number in numbers]


def test_a_resumed_attempt_continues_the_epoch_history() -> None:
    assert merged_epochs([epochs(1, 2, 3), epochs(3, 4, 5)]) == epochs(1, 2, 3, 4, 5)[:2] + epochs(3, 4, 5)


def test_an_attempt_that_restarted_from_scratch_replaces_the_history() -> None:
    assert merged_epochs([epochs(1, 2), epochs(1, 2, 3)]) == epochs(1, 2, 3)


def test_an_attempt_that_trained_no_epoch_keeps_the_history() -> None:
    # Gloo's teardown race after the last epoch: the restart resumes after it and trains nothing more.
    assert merged_epochs([epochs(1, 2, 3), []]) == epochs(1, 2, 3)
    assert merged_epochs([epochs(1, 2), epochs(3), epochs(4)]) == epochs(1, 2, 3, 4)

