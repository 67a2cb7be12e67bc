# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart_left filter: the restart policy's own budget, for the task that waits for a node."""

from __future__ import annotations

from ansible_collections.multinode.training.plugins.filter.restart import FilterModule

RESTART_LEFT = FilterModule().filters()["restart_left"]


def test_teardown_races_spend_their_own_budget_not_a_lost_node_s() -> None:
    races = [{"kind": "teardown_race"}] * 3
    assert RESTART_LEFT(races, "3", "node_lost") is True
    assert RESTART_LEFT(races, 3, "teardown_race") is False


def test_every_other_kind_counts_against_the_others() -> None:
    assert RESTART_LEFT([{"kind": "stall"}, {"kind": "worker_lost"}], 2, "node_lost") is False
    assert RESTART_LEFT([{"kind": "stall"}], 2, "node_lost") is True
    assert RESTART_LEFT([], 0, "node_lost") is False
