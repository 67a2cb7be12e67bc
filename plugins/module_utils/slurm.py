# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm for the cluster's nodes: slurm.conf from their facts, and the job's accounting read back.

slurm.conf (slurm.conf(5) of Slurm 22.05, Debian 12's slurm-wlm): one controller (the launcher node), every
node a compute node in one partition, the node lines from each node's own topology and memory (node_facts),
so slurmd's check of its hardware against its line passes. No slurmdbd: the job completion log
(``jobcomp/filetxt``) keeps each job's state and exit code, which ``sacct --completion`` reads back.
Processes are tracked through /proc (``proctrack/linuxproc``), which needs no cgroup delegation, so it runs in
containers as on hosts.

Pure Python (no Ansible imports) so it runs on the controller, on managed nodes and in plain unit tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

# Slurm node names become hostlist expressions ("node[1-3]") and file names: letters, digits, "-" and "_".
NODE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
# Where Debian's munged writes its pid file (its default, --pid-file).
MUNGED_PIDFILE = "/run/munge/munged.pid"
# The sacct fields the run summary keeps, in the order the launcher role asks for them.
SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "NodeList", "Start", "End", "Elapsed")


class SlurmError(ValueError):
    """Facts slurm.conf cannot be written from."""


@dataclass(frozen=True)
class SlurmNode:
    """One node's line of slurm.conf: its Slurm name, the host name its slurmd finds, its address and hardware."""

    name: str
    hostname: str
    address: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core

    def line(self) -> str:
        return (
            f"NodeName={self.name} NodeHostname={self.hostname} NodeAddr={self.address} CPUs={self.cpus}"
            f" Sockets={self.sockets} CoresPerSocket={self.cores_per_socket} ThreadsPerCore={self.threads_per_core}"
            f" RealMemory={self.real_memory_mib} State=UNKNOWN"
        )


def node_name(inventory_name: str) -> str:
    """The Slurm name of a node: its inventory name, which must be a plain host name (not an address)."""
    if not NODE_NAME.fullmatch(inventory_name):
        raise SlurmError(
            f"host {inventory_name}: Slurm needs node names of a letter then letters, digits, '-' or '_'"
            " (inventory names are the Slurm node names; name the host and give its address as ansible_host)"
        )
    return inventory_name


def slurm_node(inventory_name: str, hostname: str, address: str, facts: Mapping[str, Any]) -> SlurmNode:
    """The node's line from the node_facts module's facts (``cpu`` and ``memory_mib``) and its host name."""
    cpu = facts["cpu"]
    short_hostname = hostname.split(".")[0]
    if not short_hostname:
        raise SlurmError(f"host {inventory_name}: no host name to tell its slurmd which node it is")
    return SlurmNode(
        name=node_name(inventory_name),
        hostname=short_hostname,
        address=address,
        sockets=int(cpu["sockets"]),
        cores_per_socket=int(cpu["cores_per_socket"]),
        threads_per_core=int(cpu["threads_per_core"]),
        real_memory_mib=int(facts["memory_mib"]),
    )


@dataclass(frozen=True)
class SlurmPaths:
    """Where the daemons keep their state, pid files and logs on every node."""

    state_dir: str = "/var/lib/slurm"
    log_dir: str = "/var/log/slurm"
    run_dir: str = "/run/slurm"

    @property
    def jobcomp_log(self) -> str:
        return f"{self.log_dir}/jobcomp.log"

    @property
    def slurmctld_pidfile(self) -> str:
        return f"{self.run_dir}/slurmctld.pid"

    @property
    def slurmd_pidfile(self) -> str:
        return f"{self.run_dir}/slurmd.pid"


def render_conf(
    cluster_name: str,
    nodes: Sequence[SlurmNode],
    partition: str,
    ports: tuple[int, int],
    paths: SlurmPaths = SlurmPaths(),
) -> str:
    """slurm.conf: the first node runs slurmctld, every node runs slurmd, one default partition of all of them.

    The first node's line comes first, so a job's batch script runs there (Slurm's batch host is the first node
    of the allocation in slurm.conf's order). ``ports`` are slurmctld's and slurmd's.
    """
    if not nodes:
        raise SlurmError("no nodes to write slurm.conf for")
    _unique("node name", [node.name for node in nodes])
    _unique("host name", [node.hostname for node in nodes])
    _unique("address", [node.address for node in nodes])
    controller = nodes[0]
    ctld_port, d_port = ports
    lines = [
        "# Written by the multinode.training.slurm role; local changes are overwritten.",
        f"ClusterName={cluster_name.lower()}",
        f"SlurmctldHost={controller.hostname}({controller.address})",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={d_port}",
        "SlurmUser=slurm",
        "AuthType=auth/munge",
        f"StateSaveLocation={paths.state_dir}/slurmctld",
        f"SlurmdSpoolDir={paths.state_dir}/slurmd",
        f"SlurmctldPidFile={paths.slurmctld_pidfile}",
        f"SlurmdPidFile={paths.slurmd_pidfile}",
        f"SlurmctldLogFile={paths.log_dir}/slurmctld.log",
        f"SlurmdLogFile={paths.log_dir}/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={paths.jobcomp_log}",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        # A node that was down comes back by itself once its slurmd registers with a valid configuration.
        "ReturnToService=2",
        # Every step's tasks end when one of them fails (srun --kill-on-bad-exit for every step).
        "KillOnBadExit=1",
        *(node.line() for node in nodes),
        f"PartitionName={partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def _unique(what: str, values: list[str]) -> None:
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:
        raise SlurmError(f"several nodes have the same {what}: {', '.join(repeated)}; Slurm tells nodes apart by it")


def sacct_argv(job_id: str) -> list[str]:
    """``sacct`` reading job ``job_id``'s record from the job completion log, one ``|``-separated line per record."""
    return ["sacct", "--completion", "--parsable2", "--noheader", "--jobs", job_id, "--format=" + ",".join(SACCT_FIELDS)]


def parse_sacct(text: str, fields: Sequence[str] = SACCT_FIELDS) -> list[dict[str, str]]:
    """``sacct --parsable2 --noheader`` output (one job or step per line, ``|`` between fields) as records."""
    records = []
    for line in text.splitlines():
        if line.strip():
            values = line.split("|")
            records.append(dict(zip(fields, values + [""] * (len(fields) - len(values)))))
    return records


def job_record(records: Sequence[Mapping[str, str]], job_id: str) -> dict[str, str]:
    """The record of the job itself (not one of its steps) among ``records``; empty when sacct had none."""
    for record in records:
        if record.get("JobID") == job_id:
            return dict(record)
    return {}
