# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.multinode.training.plugins.callback.phase_stats import PLAY_VARIABLE, CallbackModule


class Play:
    def __init__(self, phase: str | None) -> None:
        self.vars: dict = {} if phase is None else {"multinode_phase": phase}

    def get_vars(self) -> dict:
        return dict(self.vars)


def result(changed: bool) -> SimpleNamespace:
    return SimpleNamespace(_result={"changed": changed})


@pytest.fixture
def callback() -> CallbackModule:
    return CallbackModule()


def run_play(callback: CallbackModule, phase: str | None, changes: list[bool]) -> dict:
    """Runs a play; returns the totals the callback gave it at its start."""
    play = Play(phase)
    callback.v2_playbook_on_play_start(play)
    for changed in changes:
        callback.v2_runner_on_ok(result(changed))
    return play.vars[PLAY_VARIABLE]


def test_counts_changed_results_per_phase(callback: CallbackModule) -> None:
    run_play(callback, "provision", [True, False, True])
    run_play(callback, "provision", [True])
    run_play(callback, "launch", [True, True])
    callback.v2_playbook_on_stats(None)
    stats = callback.totals()
    assert stats["provision"]["changed"] == 3
    assert stats["launch"]["changed"] == 2
    assert stats["provision"]["seconds"] >= 0


def test_totals_are_published_when_the_next_play_starts(callback: CallbackModule) -> None:
    assert run_play(callback, "provision", [True]) == {}
    assert run_play(callback, "launch", [])["provision"]["changed"] == 1


def test_plays_without_a_phase_are_not_counted(callback: CallbackModule) -> None:
    run_play(callback, None, [True, True])
    assert run_play(callback, "launch", []) == {}


def test_entering_a_phase_again_starts_it_afresh(callback: CallbackModule) -> None:
    run_play(callback, "provision", [True, True])
    run_play(callback, "launch", [True])
    run_play(callback, "provision", [])
    assert run_play(callback, "launch", [])["provision"]["changed"] == 0
