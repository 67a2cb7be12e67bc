# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm filters: slurm.conf from the cluster's node facts, a job's accounting read back (documented in <filter>.yml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.module_utils import slurm


def slurm_conf(hosts: list[str], hostvars: Mapping[str, Any], cluster_name: str, partition: str, ports: list[int]) -> str:
    """slurm.conf for ``hosts`` (the launcher first), each node's line from its ``cluster_node`` fact."""
    try:
        nodes = [_node(name, hostvars[name].get("cluster_node") or {}) for name in hosts]
        return slurm.render_conf(cluster_name, nodes, partition, (int(ports[0]), int(ports[1])))
    except (slurm.SlurmError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"slurm_conf: {exc}") from exc


def _node(name: str, node: Mapping[str, Any]) -> slurm.SlurmNode:
    return slurm.slurm_node(name, str(node.get("hostname") or ""), str(node["address"]), node)


def slurm_sacct_argv(job_id: str) -> list[str]:
    """The sacct command that reads one job's record from the job completion log, in the fields parsed below."""
    return slurm.sacct_argv(str(job_id))


def slurm_sacct_job(stdout: str, job_id: str) -> dict[str, str]:
    """The job's record from that command's output: JobID, JobName, State, ExitCode, NodeList, Start, End, Elapsed."""
    return slurm.job_record(slurm.parse_sacct(stdout), str(job_id))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"slurm_conf": slurm_conf, "slurm_sacct_argv": slurm_sacct_argv, "slurm_sacct_job": slurm_sacct_job}
