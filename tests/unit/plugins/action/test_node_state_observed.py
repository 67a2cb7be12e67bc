"""node_state's check answered from what node_facts observed: only when the observation is of this check."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.action.node_state import _observes
from ansible_collections.multinode.training.plugins.module_utils import node_state

RECORD = "/opt/multinode/state/provisioned.json"
WATCHED = {"trees": ["/opt/multinode/ssh"], "containers": ["sim-worker"], "images": ["img:latest"], "pid_files": []}


def observation(**changes: Any) -> dict[str, Any]:
    parts = {name: "state" for name in node_state.part_names(*WATCHED.values())}
    return {"path": RECORD, "record": node_state.new_record("inputs-1", parts), "parts": parts} | changes


def check_args(**changes: Any) -> dict[str, Any]:
    return {"path": RECORD, **WATCHED} | changes


def test_an_observation_of_the_same_record_and_things_answers_the_check() -> None:
    assert _observes(observation(), check_args())
    assert _observes(observation(), check_args(state="check"))


@pytest.mark.parametrize(
    "args",
    [
        check_args(state="record"),
        check_args(path="/elsewhere/provisioned.json"),
        check_args(containers=[]),
        check_args(pid_files=["/opt/multinode/run/sshd.pid"]),
    ],
    ids=["record", "other record", "fewer things", "more things"],
)
def test_an_observation_of_something_else_does_not(args: dict[str, Any]) -> None:
    assert not _observes(observation(), args)


def test_the_observed_parts_are_compared_with_the_record() -> None:
    observed = observation()
    assert node_state.differences(observed["record"], "inputs-1", observed["parts"]) == []
    drifted = {**observed["parts"], "container sim-worker": "stopped"}
    assert node_state.differences(observed["record"], "inputs-1", drifted) == ["container sim-worker: state -> stopped"]
    assert node_state.differences(observed["record"], "inputs-2", observed["parts"]) == [
        "the run's inputs changed (variables, image, or the collection)"
    ]
