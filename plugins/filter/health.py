# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health check's rule for a complete fleet line, and a detached probe's output read back, for the health role's
tasks (documented in health_fleet_complete.yml and health_probe_outputs.yml)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.multinode.training.plugins.module_utils import health
from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain


def health_probe_outputs(
    reads: Sequence[Mapping[str, Any]], starts: Sequence[Mapping[str, Any]], check_id: str
) -> list[dict[str, Any]]:
    """Detached probes' results, node by node, as a probe run to its end gives them: from ``reads``
    (ansible.builtin.slurp's results of their output files on the nodes), or from ``starts`` (their start's results)
    where one could not be started."""
    return [
        _probe_output(plain(dict(read or {})), plain(dict(start or {})), str(check_id))
        for read, start in zip(reads, starts)
    ]


def _probe_output(read: dict[str, Any], start: dict[str, Any], check_id: str) -> dict[str, Any]:
    if start.get("failed"):
        return {"failed": True, "msg": str(start.get("msg") or start.get("stderr") or "it could not be started")}
    if "content" not in read:
        return health.detached_result(None, check_id, str(read.get("msg") or "its output file was not read"))
    return health.detached_result(base64.b64decode(read["content"]).decode("utf-8", errors="replace"), check_id)


def health_fleet_complete(result: Mapping[str, Any], size: int) -> bool:
    """Whether rank 0's probe result holds every one of ``size`` ranks' figures."""
    return health.fleet_complete(plain(dict(result or {})), int(size))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"health_fleet_complete": health_fleet_complete, "health_probe_outputs": health_probe_outputs}
