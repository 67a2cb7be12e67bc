"""The health probe (multinode.training.health): one rank of a small gloo job on every node at once.

It measures this node (a matrix multiply, memory bandwidth, free disk under HEALTH_DISK_PATH, free memory, the MTU
of GLOO_SOCKET_IFNAME, the Python, torch and Intel MPI versions, Intel GPUs and render-node access, its clock at a
barrier) and the network (an all-reduce of 1 KB, 1 MB and 16 MB; a 64 MB send to the next rank of a ring, which
times this node's link), and prints one JSON object. RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come from the
caller (env://).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import shutil
import sys
import time
from typing import Any, Callable

import torch
import torch.distributed as dist

MATRIX_SIZE = 1024
COPY_BYTES = 256 * 1024 * 1024
ALLREDUCE_ELEMENTS = (256, 262144, 4194304)
RING_ELEMENTS = 16 * 1024 * 1024


def seconds_per_call(action: Callable[[], Any], repeats: int) -> float:
    """Seconds of one call of ``action``: the best of ``repeats`` timed calls after a warm-up one (the best, not the
    mean: a call the scheduler preempted says nothing about the node)."""
    action()
    timings = []
    for repeat in range(repeats):  # noqa: B007 (only the count matters)
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return min(timings)


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def node_figures() -> dict[str, Any]:
    """What this node is: compute, memory, disk, interface, versions, devices."""
    left, right = torch.rand(MATRIX_SIZE, MATRIX_SIZE), torch.rand(MATRIX_SIZE, MATRIX_SIZE)
    source = torch.empty(COPY_BYTES, dtype=torch.uint8)
    target = torch.empty_like(source)
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        memory = dict(line.split(":", 1) for line in meminfo)
    renders = (
        sorted(name for name in os.listdir("/dev/dri") if name.startswith("renderD"))
        if os.path.isdir("/dev/dri")
        else []
    )
    return {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "torch": torch.__version__,
        "mpi": package_version("impi-rt"),
        "gflops": round(2 * MATRIX_SIZE**3 / seconds_per_call(lambda: torch.mm(left, right), 10) / 1e9, 2),
        "memory_gbps": round(2 * COPY_BYTES / seconds_per_call(lambda: target.copy_(source), 5) / 1e9, 2),
        "disk_free_gb": round(shutil.disk_usage(os.environ["HEALTH_DISK_PATH"]).free / 1e9, 2),
        "memory_free_gb": round(int(memory["MemAvailable"].split()[0]) * 1024 / 1e9, 2),
        "mtu": interface_mtu(os.environ.get("GLOO_SOCKET_IFNAME", "")),
        "render_nodes": len(renders),
        "render_access": all(os.access(f"/dev/dri/{name}", os.R_OK | os.W_OK) for name in renders),
        "gpus": torch.xpu.device_count() if hasattr(torch, "xpu") and torch.xpu.is_available() else 0,
    }


def interface_mtu(iface: str) -> int | None:
    try:
        with open(f"/sys/class/net/{iface}/mtu", encoding="ascii") as mtu:
            return int(mtu.read())
    except (OSError, ValueError):
        return None


def network_figures(rank: int, world: int) -> dict[str, Any]:
    """The clock at a barrier, an all-reduce of a few sizes, and this node's link to the next rank of a ring."""
    dist.barrier()
    figures: dict[str, Any] = {"clock": time.time(), "allreduce": {}}
    for elements in ALLREDUCE_ELEMENTS:
        tensor = torch.ones(elements)
        seconds = seconds_per_call(lambda: dist.all_reduce(tensor), 3)
        bus_bits = 2 * (world - 1) / world * elements * 4 * 8
        figures["allreduce"][str(elements * 4)] = {
            "seconds": round(seconds, 6),
            "busbw_gbps": round(bus_bits / seconds / 1e9, 3),
        }
    if world > 1:
        payload, inbox = torch.ones(RING_ELEMENTS), torch.empty(RING_ELEMENTS)

        def send_along_ring() -> float:
            """Seconds until this node's send to the next one completed (its receive goes on beside it)."""
            started = time.perf_counter()
            received = dist.irecv(inbox, (rank - 1) % world)
            dist.isend(payload, (rank + 1) % world).wait()
            sent_after = time.perf_counter() - started
            received.wait()
            dist.barrier()
            return sent_after

        send_along_ring()
        best = min(send_along_ring() for repeat in range(5))  # noqa: B007
        figures["link_gbps"] = round(RING_ELEMENTS * 4 * 8 / best / 1e9, 3)
        figures["link_to"] = (rank + 1) % world
    return figures


def main() -> None:
    timeout = datetime.timedelta(seconds=int(os.environ.get("HEALTH_TIMEOUT", "60")))
    dist.init_process_group("gloo", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    # Every node measures at the same time: nodes that share hardware (VMs, a simulated cluster) all see the same
    # contention, and the check takes as long for a thousand nodes as for one.
    dist.barrier()
    figures = node_figures()
    figures.update(network_figures(rank, world), rank=rank)
    dist.barrier()
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
