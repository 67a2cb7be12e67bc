# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health_fleet_complete filter: whether the health role reads only rank 0's probe."""

from __future__ import annotations

import base64
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


PROBE_OUTPUTS = FilterModule().filters()["health_probe_outputs"]


def slurped(text: str) -> dict[str, object]:
    return {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64", "source": "/w/health-probe.log"}


def test_each_node_is_read_from_its_output_file_or_its_failed_start() -> None:
    ended = "health-probe-start c1\n{\"gflops\": 40.0}\nhealth-probe-exit 0 c1\n"
    reads = [{"skipped": True}, slurped(ended), {"skipped": True}]
    starts = [{"skipped": True}, {"changed": False, "failed": False}, {"failed": True, "msg": "No such image"}]
    assert PROBE_OUTPUTS(reads, starts, "c1") == [
        {"failed": True, "msg": "the probe did not start on this node (its output file was not read)"},
        {"finished": True, "stdout": '{"gflops": 40.0}', "rc": 0},
        {"failed": True, "msg": "No such image"},
    ]


def test_an_output_file_slurp_could_not_read_is_named_with_its_words() -> None:
    read = {"failed": True, "msg": "file not found: /w/health-probe.log"}
    assert PROBE_OUTPUTS([read], [{"failed": False}], "c1") == [
        {"failed": True, "msg": "the probe did not start on this node (file not found: /w/health-probe.log)"}
    ]
