# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse the procfs/sysfs/devfs text that describes a training node.

Every function takes the text of a file (or a small mapping of names to
texts) and returns plain data, so the ``node_facts`` module only has to read
files and the parsers can be unit tested against fixtures.

Pure Python (no Ansible imports) so it runs on managed nodes (Python 3.9+)
and in plain unit tests.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any, Iterable, Mapping

INTEL_VENDOR = "0x8086"

# PCI device IDs from Linux include/drm/intel/pciids.h (shared by the i915 and
# xe drivers; i915_pciids.h/xe_pciids.h before Linux 6.13). Only the data
# center and discrete families this collection cares about are listed; an
# Intel display device at 00:02.0 that is not listed is the integrated GPU.
_INTEL_GPU_FAMILIES = {
    # INTEL_ATS_M150_IDS (Flex 170) and INTEL_ATS_M75_IDS (Flex 140)
    "flex": frozenset({"0x56c0", "0x56c2", "0x56c1"}),
    # INTEL_PVC_IDS (Ponte Vecchio: Data Center GPU Max 1100/1550)
    "max": frozenset(
        {
            "0x0b69", "0x0b6e", "0x0bd4", "0x0bd5", "0x0bd6", "0x0bd7", "0x0bd8",
            "0x0bd9", "0x0bda", "0x0bdb", "0x0be0", "0x0be1", "0x0be5",
        }
    ),
    # INTEL_DG2_G10_IDS, INTEL_DG2_G11_IDS, INTEL_DG2_G12_IDS (Arc A-series, Arc Pro)
    "arc": frozenset(
        {
            "0x5690", "0x5691", "0x5692", "0x56a0", "0x56a1", "0x56a2", "0x56be", "0x56bf",
            "0x5693", "0x5694", "0x5695", "0x56a5", "0x56a6", "0x56b0", "0x56b1",
            "0x56ba", "0x56bb", "0x56bc", "0x56bd",
            "0x5696", "0x5697", "0x56a3", "0x56a4", "0x56b2", "0x56b3",
        }
    ),
}

# PCI base classes: 0x03 display controller, 0x12 processing accelerator.
_GPU_CLASS_PREFIXES = ("0x03", "0x12")
_VGA_CLASS_PREFIX = "0x0300"
_INTEGRATED_GPU_SLOT = "00:02.0"

_CARD = re.compile(r"card(\d+)")
_RENDER_NODE = re.compile(r"renderD(\d+)")


def parse_cpulist(text: str) -> list[int]:
    """``0-3,8-11`` (the sysfs cpulist format) as a sorted list of CPU numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _dash, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """One ``{key: value}`` dict per ``processor`` block of /proc/cpuinfo."""
    processors: list[dict[str, str]] = []
    for block in re.split(r"\n\s*\n", text):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "processor" in fields:
            processors.append(fields)
    return processors


def _numa_node_cpus(node_cpulists: Mapping[str, str], all_cpus: list[int]) -> dict[str, list[int]]:
    """``{"node0": "0-3"}`` as ``{"0": [0, 1, 2, 3]}``; one node with every CPU if there is no NUMA info."""
    if not node_cpulists:
        return {"0": all_cpus}
    return {
        name[len("node"):]: parse_cpulist(text)
        for name, text in sorted(node_cpulists.items(), key=lambda item: int(item[0][len("node"):]))
    }


def cpu_topology(cpuinfo_text: str, node_cpulists: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Sockets, cores and threads from /proc/cpuinfo, NUMA nodes from sysfs cpulists.

    ``node_cpulists`` maps node directory names (``node0``) to the text of
    their ``cpulist`` file. A processor without ``physical id`` is on socket 0
    and one without ``core id`` is a core of its own (ARM kernels print
    neither). The per-socket and per-core numbers are maxima, as lscpu reports
    them, so offline CPUs or hybrid cores do not turn them into fractions.
    """
    processors = parse_cpuinfo(cpuinfo_text)
    if not processors:
        raise ValueError("no 'processor' entries in /proc/cpuinfo")
    threads_of_core: dict[tuple[str, str], int] = defaultdict(int)
    for fields in processors:
        core = (fields.get("physical id", "0"), fields.get("core id", "p" + fields["processor"]))
        threads_of_core[core] += 1
    cores_of_socket: dict[str, int] = defaultdict(int)
    threads_of_socket: dict[str, int] = defaultdict(int)
    for (socket, _core), threads in threads_of_core.items():
        cores_of_socket[socket] += 1
        threads_of_socket[socket] += threads
    numa_node_cpus = _numa_node_cpus(node_cpulists or {}, sorted(int(fields["processor"]) for fields in processors))
    return {
        "model_name": processors[0].get("model name"),
        "sockets": len(cores_of_socket),
        "numa_nodes": len(numa_node_cpus),
        "numa_node_cpus": numa_node_cpus,
        "cores_per_socket": max(cores_of_socket.values()),
        "logical_cpus_per_socket": max(threads_of_socket.values()),
        "threads_per_core": max(threads_of_core.values()),
        "physical_cores": len(threads_of_core),
        "logical_cpus": len(processors),
    }


def memory_mib(meminfo_text: str) -> int:
    """MemTotal of /proc/meminfo in MiB, rounded down (what slurmd reports as the node's RealMemory)."""
    for line in meminfo_text.splitlines():
        name, separator, value = line.partition(":")
        if separator and name == "MemTotal":
            return int(value.split()[0]) // 1024
    raise ValueError("no MemTotal line in /proc/meminfo")


def intel_gpu_family(device_id: str, pci_address: str, pci_class: str) -> str:
    """``flex``, ``max``, ``arc``, ``integrated`` or ``unknown`` for an Intel display/accelerator device."""
    for family, device_ids in _INTEL_GPU_FAMILIES.items():
        if device_id in device_ids:
            return family
    if pci_class.startswith(_VGA_CLASS_PREFIX) and pci_address.split(":", 1)[-1] == _INTEGRATED_GPU_SLOT:
        return "integrated"
    return "unknown"


def intel_gpus(pci_devices: Mapping[str, Mapping[str, str]]) -> list[dict[str, str]]:
    """Intel GPUs among PCI devices, sorted by address.

    ``pci_devices`` maps device directory names (``0000:4d:00.0``) to the
    texts of their ``vendor``, ``device`` and ``class`` files. Devices with a
    missing file are skipped.
    """
    gpus = []
    for address in sorted(pci_devices):
        files = {name: text.strip().lower() for name, text in pci_devices[address].items()}
        if files.get("vendor") != INTEL_VENDOR or "device" not in files:
            continue
        pci_class = files.get("class", "")
        if not pci_class.startswith(_GPU_CLASS_PREFIXES):
            continue
        gpus.append(
            {
                "pci_address": address,
                "device_id": files["device"],
                "family": intel_gpu_family(files["device"], address, pci_class),
            }
        )
    return gpus


def _numbered(names: Iterable[str], pattern: re.Pattern[str]) -> list[str]:
    matches = [match for match in map(pattern.fullmatch, names) if match]
    return [match.group(0) for match in sorted(matches, key=lambda match: int(match.group(1)))]


def dri_nodes(names: Iterable[str]) -> dict[str, list[str]]:
    """The ``cardN`` and ``renderDN`` entries of a /dev/dri listing, in numeric order."""
    names = list(names)
    return {"cards": _numbered(names, _CARD), "render_nodes": _numbered(names, _RENDER_NODE)}


def group_gids(group_text: str) -> dict[str, int | None]:
    """GIDs of the ``render`` and ``video`` groups in /etc/group text; None for a group that is not there."""
    gids: dict[str, int] = {}
    for line in group_text.splitlines():
        fields = line.split(":")
        if len(fields) >= 3 and fields[2].isdigit():
            gids.setdefault(fields[0], int(fields[2]))
    return {name: gids.get(name) for name in ("render", "video")}


def _value_after(tokens: list[str], key: str) -> str | None:
    """The token after ``key``, skipping an address family (``via inet6 fe80::1``)."""
    if key not in tokens:
        return None
    values = tokens[tokens.index(key) + 1:]
    if key == "via" and values[:1] in (["inet"], ["inet6"]):
        values = values[1:]
    return values[0] if values else None


def parse_ipv4_addresses(text: str) -> dict[str, list[str]]:
    """Each interface's IPv4 addresses (without prefix length) from ``ip -o -4 addr show`` output, whose lines read
    ``2: eth0    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth0 ...``."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        tokens = line.split()
        if len(tokens) < 4 or "inet" not in tokens:
            continue
        address = _value_after(tokens, "inet")
        if address:
            found.setdefault(tokens[1].split("@")[0], []).append(address.split("/")[0])
    return found


def parse_route_get(text: str) -> dict[str, Any]:
    """Interface, source address and gateway from ``ip -o route get ADDRESS`` output.

    ``local`` is true for an address of this node (``local 10.0.0.1 dev lo
    table local src 10.0.0.1``). ``gateway`` is None for a directly attached
    peer.
    """
    tokens = text.split()
    interface = _value_after(tokens, "dev")
    if interface is None:
        raise ValueError(f"no 'dev' in the output of ip route get: {text.strip()!r}")
    return {
        "interface": interface,
        "source_address": _value_after(tokens, "src"),
        "gateway": _value_after(tokens, "via"),
        "local": tokens[0] == "local",
    }


# The scripts a job runs on its nodes: launch.sh on the launcher node (the launcher's driver), rank.sh under every
# rank. Either running means the job holds the nodes' worker containers and ports.
JOB_SCRIPTS = ("launch.sh", "rank.sh")


def running_jobs(command_lines: Iterable[list[str]], jobs_dir: str) -> dict[str, list[str]]:
    """The jobs that have a process on this node: each job id (a directory under ``jobs_dir``) -> which of its
    scripts run, from the argument lists of the node's processes."""
    pattern = re.compile(re.escape(jobs_dir.rstrip("/")) + r"/([^/]+)/(" + "|".join(map(re.escape, JOB_SCRIPTS)) + r")")
    found: dict[str, set[str]] = defaultdict(set)
    for arguments in command_lines:
        for argument in arguments:
            match = pattern.fullmatch(argument)
            if match:
                found[match.group(1)].add(match.group(2))
    return {job: sorted(scripts) for job, scripts in sorted(found.items())}


# /proc/net/tcp's state of a listening socket.
TCP_LISTEN = "0A"


def listening_ports(tables: Iterable[str]) -> list[int]:
    """The TCP ports something listens on, from the text of /proc/net/tcp and /proc/net/tcp6."""
    ports = set()
    for table in tables:
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == TCP_LISTEN:
                ports.add(int(fields[1].rpartition(":")[2], 16))
    return sorted(ports)


def ranks_running(status_texts: Iterable[str]) -> int:
    """How many of a job's ranks on this node run: its rank status files (status/rank-N.json) without an end."""
    running = 0
    for text in status_texts:
        try:
            status = json.loads(text)
        except ValueError:
            # Half written: the wrapper writes it whole and renames it, so this is a rank being recorded.
            running += 1
            continue
        running += isinstance(status, dict) and status.get("ended") is None
    return running


def running_job_problems(running_jobs: Mapping[str, Mapping[str, Iterable[str]] | None]) -> list[str]:
    """One message per job still running on the nodes, naming the hosts it runs on and how to end it.
    ``running_jobs`` maps each host to its node facts' ``running_jobs`` (None where they were not gathered)."""
    hosts_of: dict[str, list[str]] = defaultdict(list)
    for host, jobs in running_jobs.items():
        for job, scripts in (jobs or {}).items():
            hosts_of[job].append(f"{host} ({', '.join(scripts)})")
    return [
        f"job {job} is still running on {', '.join(hosts)}: a second job on these nodes would take over its launcher"
        f" container, worker containers and ports. Wait for it to end, or stop it (multinode-training cancel"
        f" runs/{job}), then run again"
        for job, hosts in sorted(hosts_of.items())
    ]
