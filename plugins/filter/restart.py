# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart policy's budget, for the launcher role's tasks (documented in restart_left.yml)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.multinode.training.plugins.module_utils import restart
from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain


def restart_left(restarts: Sequence[Mapping[str, Any]], max_restarts: int, kind: str) -> bool:
    """Whether a failure of ``kind`` has a restart left after ``restarts`` (the job's restart records)."""
    return restart.restart_left(plain(list(restarts or [])), int(max_restarts), str(kind))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"restart_left": restart_left}
