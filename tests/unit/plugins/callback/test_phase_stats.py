# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from ansible_collections.multinode.training.plugins.callback.phase_stats import ENV_VAR, CallbackModule


class Play:
    def __init__(self, phase: str | None) -> None:
        self._vars = {} if phase is None else {"multinode_phase": phase}

    def get_vars(self) -> dict:
        return self._vars


def result(changed: bool) -> SimpleNamespace:
    return SimpleNamespace(_result={"changed": changed})


def published() -> dict:
    return json.loads(os.environ[ENV_VAR])


@pytest.fixture
def callback(monkeypatch: pytest.MonkeyPatch) -> CallbackModule:
    monkeypatch.delenv(ENV_VAR, raising=False)
    return CallbackModule()


def run_play(callback: CallbackModule, phase: str | None, changes: list[bool]) -> None:
    callback.v2_playbook_on_play_start(Play(phase))
    for changed in changes:
        callback.v2_runner_on_ok(result(changed))


def test_counts_changed_results_per_phase(callback: CallbackModule) -> None:
    run_play(callback, "provision", [True, False, True])
    run_play(callback, "provision", [True])
    run_play(callback, "launch", [True, True])
    callback.v2_playbook_on_stats(None)
    stats = published()
    assert stats["provision"]["changed"] == 3
    assert stats["launch"]["changed"] == 2
    assert stats["provision"]["seconds"] >= 0


def test_totals_are_published_when_the_next_play_starts(callback: CallbackModule) -> None:
    run_play(callback, "provision", [True])
    run_play(callback, "launch", [])
    assert published()["provision"]["changed"] == 1


def test_plays_without_a_phase_are_not_counted(callback: CallbackModule) -> None:
    run_play(callback, None, [True, True])
    run_play(callback, "launch", [])
    assert published() == {}


def test_entering_a_phase_again_starts_it_afresh(callback: CallbackModule) -> None:
    run_play(callback, "provision", [True, True])
    run_play(callback, "launch", [True])
    run_play(callback, "provision", [])
    run_play(callback, "launch", [])
    assert published()["provision"]["changed"] == 0
