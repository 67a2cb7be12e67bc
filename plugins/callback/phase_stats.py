# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: phase_stats
type: aggregate
short_description: Count changed tasks and seconds per phase of a training playbook
description:
  - Each play may set the play variable C(multinode_phase) (for example C(provision) or C(launch)).
  - This callback counts the changed task results and the wall-clock seconds of every phase.
  - At the start of every play it gives the play the totals so far as the play variable C(multinode_phase_stats)
    (phase name to C(changed) and C(seconds)); the launcher role puts them in the run summary
    (C(provision_changed), C(phases.provision)).
  - Plays without C(multinode_phase) are not counted. Entering a phase again after another phase (a second
    C(train.yml) imported in the same run) starts that phase's counts afresh.
  - The collection's playbooks load it by themselves (C(playbooks/callback_plugins/multinode_phase_stats.py) needs no
    enabling); enable it with C(callbacks_enabled = multinode.training.phase_stats) only for playbooks of your own that
    import the roles directly.
"""

import time
from typing import Any

from ansible.plugins.callback import CallbackBase

PLAY_VARIABLE = "multinode_phase_stats"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "multinode.training.phase_stats"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._phases: dict[str, dict[str, float]] = {}
        self._current: str | None = None
        self._last: str | None = None
        self._phase_started = 0.0

    def _close_phase(self) -> None:
        if self._current is not None:
            self._phases[self._current]["seconds"] += time.monotonic() - self._phase_started
            self._current = None

    def totals(self) -> dict[str, dict[str, int | float]]:
        """Changed results and seconds of every phase so far (the phase under way up to its last play start)."""
        return {
            name: {"changed": int(stats["changed"]), "seconds": round(stats["seconds"], 2)}
            for name, stats in self._phases.items()
        }

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._close_phase()
        play.vars[PLAY_VARIABLE] = self.totals()
        phase = play.get_vars().get("multinode_phase")
        if isinstance(phase, str) and phase:
            if phase != self._last:
                self._phases[phase] = {"changed": 0, "seconds": 0.0}
            self._current = self._last = phase
            self._phase_started = time.monotonic()

    def v2_runner_on_ok(self, result: Any) -> None:
        if self._current is not None and result._result.get("changed", False):
            self._phases[self._current]["changed"] += 1

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._close_phase()
