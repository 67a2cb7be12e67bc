# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health_fleet_complete filter: whether the health role reads only rank 0's probe."""

from __future__ import annotations

import json

from ansible_collections.multinode.training.plugins.filter.health import FilterModule

FLEET_COMPLETE = FilterModule().filters()["health_fleet_complete"]


def fleet_output(ranks: int) -> str:
    return json.dumps({"fleet": [{"rank": rank, "gflops": 40.0} for rank in range(ranks)]})


def test_a_container_result_with_every_rank_is_complete() -> None:
    assert FLEET_COMPLETE({"finished": 1, "status": 0, "container": {"Output": fleet_output(3)}}, "3") is True


def test_a_fleet_line_short_of_a_rank_is_not_complete() -> None:
    assert FLEET_COMPLETE({"finished": 1, "rc": 0, "stdout": fleet_output(2)}, 3) is False


def test_no_result_is_not_complete() -> None:
    assert FLEET_COMPLETE(None, 3) is False
