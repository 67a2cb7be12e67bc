# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn inventory and node facts into launcher inputs (documented in <filter>.yml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.module_utils import launch


def hostfile_entries(
    hosts: list[str], hostvars: Mapping[str, Any], slots: int = 1, slots_var: str = "cluster_slots"
) -> list[dict[str, Any]]:
    entries = []
    for name in hosts:
        host = hostvars[name]
        address = host.get("cluster_address") or host.get("ansible_host") or name
        entries.append({"name": name, "address": str(address), "slots": int(host.get(slots_var, slots))})
    return entries


def rank_tuning(
    cpu: Mapping[str, Any],
    backend: str,
    nproc_per_node: int | str = "auto",
    omp_num_threads: int | str = "auto",
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The node's ranks, threads and rank environment (module_utils.launch.rank_tuning) for templates."""
    try:
        return launch.rank_tuning(cpu, backend, nproc_per_node, omp_num_threads, env)
    except launch.LaunchError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def interface_env(iface: str) -> dict[str, str]:
    """The socket-interface variable of every layer set to ``iface`` (module_utils.launch.interface_env)."""
    return launch.interface_env(iface)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"hostfile_entries": hostfile_entries, "rank_tuning": rank_tuning, "interface_env": interface_env}
