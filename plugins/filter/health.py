# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health check's rule for a complete fleet line, for the health role's tasks (documented in
health_fleet_complete.yml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.multinode.training.plugins.module_utils import health
from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain


def health_fleet_complete(result: Mapping[str, Any], size: int) -> bool:
    """Whether rank 0's probe result holds every one of ``size`` ranks' figures."""
    return health.fleet_complete(plain(dict(result or {})), int(size))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"health_fleet_complete": health_fleet_complete}
