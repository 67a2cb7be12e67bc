# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn inventory and node facts into launcher inputs (documented in <filter>.yml)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.module_utils import cluster, launch
from ansible_collections.multinode.training.plugins.module_utils.job_id import job_id
from ansible_collections.multinode.training.plugins.module_utils.node_facts import running_job_problems
from ansible_collections.multinode.training.plugins.plugin_utils import preflight


def hostfile_entries(
    hosts: list[str], hostvars: Mapping[str, Any], slots: int = 1, slots_var: str = "launcher_nproc_per_node"
) -> list[dict[str, Any]]:
    entries = []
    for name in hosts:
        host = hostvars[name]
        address = (host.get("cluster_node") or {}).get("address") or host.get("ansible_host") or name
        entries.append({"name": name, "address": str(address), "slots": _host_slots(host, slots_var, slots)})
    return entries


def _host_slots(host: Mapping[str, Any], slots_var: str, fallback: int) -> int:
    """The whole number at ``slots_var`` (a dotted path into the host's variables), else ``fallback``."""
    value: Any = host
    for key in slots_var.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    try:
        return int(value)
    except (TypeError, ValueError):
        return fallback


def cluster_contract(inputs: Mapping[str, Any]) -> dict[str, Any]:
    return cluster.build(inputs).as_fact()


def device_problems(dri_devices: Mapping[str, Any], backend: str) -> list[str]:
    """The preflight's problems with the nodes' devices for the job's backend, as the messages it prints."""
    return [str(problem) for problem in preflight.device_problems(str(backend), dri_devices)]


def _filter_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with its LaunchError or ContractError turned into the AnsibleFilterError a template reports."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (launch.LaunchError, cluster.ContractError) as exc:
            raise AnsibleFilterError(str(exc)) from exc

    return wrapper


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "hostfile_entries": hostfile_entries,
            "cluster_contract": _filter_errors(cluster_contract),
            "cluster_node": cluster.node,
            "rank_tuning": _filter_errors(launch.rank_tuning),
            "interface_env": launch.interface_env,
            "device_problems": device_problems,
            "job_id": job_id,
            "running_job_problems": running_job_problems,
            "address_problems": cluster.address_problems,
        }
