"""job_wait's early end: how many rank ends let the node's read return, and only while no rank failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.action.job_wait import ActionModule
from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.plugin_utils.follow import Follower


def ended(follower: Follower, *codes: int) -> Follower:
    follower.feed({"node1.log": "".join(f"[rank {rank} node1] {events.RANK_ENDED} {code}\n" for rank, code in enumerate(codes))})
    return follower


@pytest.fixture
def follower(tmp_path: Path) -> Follower:
    return Follower(run_dir=tmp_path, world_size=3)


def test_following_to_the_launcher_s_exit_never_asks_for_rank_ends(follower: Follower) -> None:
    assert ActionModule._ranks_to_end({"until": "launcher_exit", "world_size": 3}, follower) == 0


def test_the_ranks_not_ended_yet_are_asked_for(follower: Follower) -> None:
    args = {"until": "ranks_succeeded", "world_size": 3}
    assert ActionModule._ranks_to_end(args, follower) == 3
    assert ActionModule._ranks_to_end(args, ended(follower, 0)) == 2


def test_a_failed_rank_means_following_to_the_launcher_s_exit(follower: Follower) -> None:
    assert ActionModule._ranks_to_end({"until": "ranks_succeeded", "world_size": 3}, ended(follower, 0, 1)) == 0
    assert not follower.ranks_succeeded
