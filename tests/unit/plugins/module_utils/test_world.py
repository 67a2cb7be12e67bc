# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a run's ranks formed one world, from their world records (what the rank exit guard writes)."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils import world


def group(size: int, backend: str = "gloo") -> dict[str, Any]:
    return {"backend": backend, "world_size": size, "rank": 0}


def ended(*groups: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"groups": list(groups), "torch": True, "other_worlds": [], "ended": True, **more}


def test_ranks_that_joined_one_group_of_the_jobs_size_formed_the_world() -> None:
    found = world.verdict({rank: ended(group(3)) for rank in range(3)}, 3)
    assert found == {"formed": True, "text": None, "group_sizes": {"0": [3], "1": [3], "2": [3]}}


def test_a_group_initialized_again_still_counts() -> None:
    assert world.verdict({0: ended(group(2), group(2)), 1: ended(group(2))}, 2)["formed"] is True


def test_ranks_that_never_initialized_a_group_trained_alone() -> None:
    found = world.verdict({rank: ended() for rank in range(3)}, 3)
    assert found["formed"] is False
    assert found["text"].startswith("each rank trained alone: no rank initialized torch.distributed")
    assert "node count may default to 1" in found["text"]


def test_ranks_that_formed_one_group_per_node_did_not_form_the_world() -> None:
    # A trainer whose node count defaults to 1: each node's 2 ranks form a world of their own.
    found = world.verdict({rank: ended(group(2)) for rank in range(6)}, 6)
    assert found["formed"] is False
    assert found["text"].startswith("the ranks formed groups of 2 ranks, not one world of 6")


def spawned(size: int, *group_ranks: int) -> list[dict[str, Any]]:
    """The records of the processes one rank started, each with a group of ``size`` at one of ``group_ranks``."""
    return [
        {"rank": 0, "groups": [{"backend": "gloo", "world_size": size, "rank": rank}], "spawned": True}
        for rank in group_ranks
    ]


def test_processes_the_ranks_started_that_formed_one_world_across_the_nodes_formed_it() -> None:
    """pytorch/examples' ImageNet script with --multiprocessing-distributed: one rank per node, which spawns 2
    workers; the 6 workers of 3 nodes join one world (group ranks 0-5). The ranks' own processes initialized none."""
    found = world.verdict({rank: ended() for rank in range(3)}, 3, {0: spawned(6, 0, 1), 1: spawned(6, 2, 3), 2: spawned(6, 4, 5)})
    assert found == {
        "formed": True,
        "text": None,
        "group_sizes": {"0": [], "1": [], "2": []},
        "spawned_worlds": {"6": 6},
    }


def test_processes_of_each_node_that_met_on_their_own_did_not_form_the_world() -> None:
    """The DDP tutorial's mp.spawn on localhost, run on 3 nodes: each node's 2 workers form a world of their own."""
    found = world.verdict({rank: ended() for rank in range(3)}, 3, {rank: spawned(2, 0, 1) for rank in range(3)})
    assert found["formed"] is False
    assert found["text"].startswith(
        "the processes the ranks started formed separate groups (3 of 2 ranks), not one world spanning the job's 3 ranks"
    )
    assert found["spawned_worlds"] == {"2": 6}


def test_a_world_the_started_processes_formed_without_one_rank_s_is_not_the_job_s() -> None:
    """One world of 4, from the processes of ranks 0 and 1 only: rank 2's node took no part."""
    found = world.verdict({rank: ended() for rank in range(3)}, 3, {0: spawned(4, 0, 1), 1: spawned(4, 2, 3), 2: spawned(1, 0)})
    assert found["formed"] is False
    assert "(1 of 1 ranks, 1 of 4 ranks)" in found["text"]


def test_a_process_that_initialized_its_group_again_counts_once() -> None:
    again = [{"rank": 0, "groups": [group(2), group(2)], "spawned": True}]
    found = world.verdict({0: ended(), 1: ended()}, 2, {0: again, 1: [{"rank": 1, "groups": [{**group(2), "rank": 1}], "spawned": True}]})
    assert found["formed"] is True


@pytest.mark.parametrize("framework", ["tensorflow", "jax"])
def test_ranks_that_form_their_world_in_a_way_not_recorded_are_not_judged(framework: str) -> None:
    records = {rank: ended(other_worlds=[framework] if rank == 1 else []) for rank in range(3)}
    assert world.verdict(records, 3) == {"formed": None, "text": None, "group_sizes": {"0": [], "1": [], "2": []}}


def mpi_group(size: int, library: str = "Open MPI v4.1.4") -> dict[str, Any]:
    return {"backend": "mpi", "world_size": size, "rank": 0, "library": library}


@pytest.mark.parametrize(
    ("framework", "joined"), [("horovod", group(3, "horovod")), ("mpi4py", mpi_group(3, "Intel(R) MPI Library 2021.18"))]
)
def test_ranks_whose_horovod_or_mpi_world_spans_the_job_formed_it(framework: str, joined: dict[str, Any]) -> None:
    records = {rank: ended(joined, other_worlds=[framework]) for rank in range(3)}
    assert world.verdict(records, 3)["formed"] is True


def test_ranks_whose_mpi_world_held_each_alone_did_not_form_the_world() -> None:
    """mpi4py's wheel loading Open MPI under Intel MPI's mpiexec: every rank is rank 0 of a world of 1, exits 0."""
    records = {rank: ended(mpi_group(1), torch=False, other_worlds=["mpi4py"]) for rank in range(3)}
    found = world.verdict(records, 3)
    assert found["formed"] is False
    assert found["text"].startswith(
        "the ranks formed groups of 1 ranks, not one world of 3: each rank's MPI world held itself alone: the MPI"
        " library the script loaded (Open MPI v4.1.4) may not be the launcher's"
    )


def test_an_mpi_world_of_one_whose_library_went_unnamed_leaves_no_empty_parentheses() -> None:
    records = {rank: ended(mpi_group(1, library=""), torch=False, other_worlds=["mpi4py"]) for rank in range(2)}
    assert "the MPI library the script loaded may not be the launcher's" in world.verdict(records, 2)["text"]


def test_horovod_worlds_smaller_than_the_job_are_named_as_such() -> None:
    records = {rank: ended(group(2, "horovod"), other_worlds=["horovod"]) for rank in range(4)}
    found = world.verdict(records, 4)
    assert found["formed"] is False
    assert found["text"].endswith(
        "each rank's Horovod world held fewer ranks than the job's: Horovod was started without its launcher, or under"
        " another MPI's mpiexec than the one it was built against; run it with launcher_type horovodrun"
    )


@pytest.mark.parametrize("framework", ["horovod", "mpi4py"])
def test_ranks_that_imported_horovod_or_mpi4py_and_never_joined_a_world_trained_alone(framework: str) -> None:
    found = world.verdict({rank: ended(other_worlds=[framework]) for rank in range(3)}, 3)
    assert found["formed"] is False
    assert found["text"].startswith("each rank trained alone: no rank initialized torch.distributed (nor Horovod, nor MPI)")


def test_a_torch_world_stands_beside_each_rank_s_own_mpi_world() -> None:
    """A DDP script under torchrun that also imports mpi4py: MPI's singleton world of 1 per rank, torch's of 3."""
    records = {rank: ended(mpi_group(1), group(3), other_worlds=["mpi4py"]) for rank in range(3)}
    assert world.verdict(records, 3)["formed"] is True


@pytest.mark.parametrize(
    "records",
    [
        {},  # no Python rank under the wrapper (a compiled MPI program, a shell script)
        {0: ended(), 1: ended()},  # a rank left no record
        {0: ended(), 1: ended(), 2: {"rank": 2, "groups": []}},  # a rank did not end (killed)
        {rank: ended(torch=False) for rank in range(3)},  # Python ranks that never imported torch
    ],
)
def test_what_the_records_cannot_tell_is_not_judged(records: dict[int, dict[str, Any]]) -> None:
    assert world.verdict(records, 3)["formed"] is None


def summary(status: str = "succeeded") -> dict[str, Any]:
    return {
        "job_id": "j",
        "status": status,
        "world_size": 2,
        "failure_reasons": [] if status == "succeeded" else ["rank 1 on node2 exited 3"],
        "root_cause_kind": None if status == "succeeded" else "exit",
    }


ALONE = {0: ended(), 1: ended()}


def test_fail_fails_a_run_that_otherwise_succeeded_with_the_reason_first() -> None:
    judged = summary()
    world.judge(judged, ALONE, "fail")
    assert judged["status"] == "failed"
    assert judged["root_cause_kind"] == world.WORLD
    assert judged["failure_reasons"] == [judged["world"]["text"]]


def test_warn_keeps_the_status_and_says_it() -> None:
    judged = summary()
    world.judge(judged, ALONE, "warn")
    assert (judged["status"], judged["failure_reasons"]) == ("succeeded", [])
    assert judged["world"]["formed"] is False


def test_off_judges_nothing() -> None:
    judged = summary()
    world.judge(judged, ALONE, "off")
    assert judged == summary()


def test_a_run_that_failed_keeps_its_own_root_cause() -> None:
    judged = summary("failed")
    world.judge(judged, ALONE, "fail")
    assert judged["failure_reasons"] == ["rank 1 on node2 exited 3"]
    assert judged["root_cause_kind"] == "exit"
