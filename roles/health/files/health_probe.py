"""The health probe (multinode.training.health): one rank of a small gloo job on every node at once.

It measures this node (a matrix multiply, memory bandwidth, free disk under HEALTH_DISK_PATH, free memory, the MTU
of GLOO_SOCKET_IFNAME, the Python, torch and Intel MPI versions, Intel GPUs and render-node access, its clock at a
barrier) and the network (an all-reduce of 1 KB, 1 MB and 16 MB; a 64 MB send to the next rank of a ring, which
times this node's link), and prints one JSON object. RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come from the
caller (env://).

Nodes measure their compute and memory at the same time, so the check takes as long for a thousand nodes as for
three; but nodes that share one kernel (containers on one server, a simulated cluster: the same boot id) take turns,
so that none measures the others' load instead of itself. Each node measures in up to six rounds and keeps its
best (on a shared server the other nodes' turns come between its own, and the order rotates each round), and a node
on a shared server takes a window again when work from outside the fleet kept the server busy in it: that load does
not make one node look slow, while a node whose own CPU or memory is cut is slow in a quiet window too. A node of a
shared server whose best is still below the gate (HEALTH_FRACTION of its server's median) takes one more turn
before it is named: one spoiled window is not a slow node. A ring's sends go in rounds in which a node either sends
or receives, never both, so a slow sender cannot slow its neighbour's send through the acknowledgements it owes it;
nodes that share a kernel send one at a time. A shared server's turns fit a budget of about nine seconds: past 18
nodes on one kernel each takes a single, shorter window per measure (never under the kernel's CPU quota period).

Rank 0 gathers every rank's figures and prints them as one line, ``{"fleet": [...]}`` in rank order, after its own:
the controller reads one node's output instead of every node's, and reads the others only when that line is missing
(a rank that failed before the end).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import shutil
import socket
import statistics
import sys
import time
from typing import Any, Callable


def wait_for_rank_0() -> None:
    """On every rank but 0: wait until rank 0's rendezvous (MASTER_ADDR:MASTER_PORT) accepts a connection, at most
    HEALTH_TIMEOUT seconds, before importing torch; past that, end saying so. Rank 0 is started last, once every
    other rank runs: on nodes that share a server, importing torch (about a CPU-second each) while the others were
    still being started slowed the starts."""
    if os.environ.get("RANK", "0") == "0":
        return
    address = (os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500")))
    timeout = int(os.environ.get("HEALTH_TIMEOUT", "60"))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(address, timeout=1).close()
            return
        except OSError:
            time.sleep(0.25)
    sys.exit(
        f"rank 0's rendezvous at {address[0]}:{address[1]} did not open within {timeout} s: the launcher node's probe"
        " did not start or failed (its own finding says why)"
    )


if __name__ == "__main__":
    wait_for_rank_0()

# After the wait above, on purpose.
import torch  # noqa: E402  # pylint: disable=wrong-import-position
import torch.distributed as dist  # noqa: E402  # pylint: disable=wrong-import-position

MATRIX_SIZE = 1024
COPY_BYTES = 64 * 1024 * 1024
ALLREDUCE_ELEMENTS = (256, 262144, 4194304)
RING_ELEMENTS = 16 * 1024 * 1024
TURNS_PER_CHECK = 18  # the rounds of compute and memory times the turns in a round, at most (about 9 s)
WINDOW_SECONDS = 0.25  # one measure's window: longer than the kernel's CPU quota period (100 ms)
SHORTEST_WINDOW_SECONDS = 0.12  # the shortest window a turn takes when more turns than TURNS_PER_CHECK share a kernel
OTHER_WORK_SHARE = 0.25  # of a shared server's CPUs, the most other work may take in a window that stands alone


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


def sustained_rate(action: Callable[[], Any], work: float, window_seconds: float) -> float:
    """Work per second of ``action`` (``work`` per call) called back to back for ``window_seconds`` after a warm-up
    call: longer than the kernel's CPU quota period (100 ms), so a node whose CPU share is cut cannot show a call it
    ran at full speed before its quota ran out."""
    action()
    calls, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < window_seconds:
        action()
        calls += 1
    return calls * work / elapsed


def server_busy_seconds() -> float:
    """CPU seconds the whole server has been busy since it booted: /proc/stat counts every process of every
    container on the kernel."""
    with open("/proc/stat", encoding="ascii") as stat:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, stat.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def turn_rate(action: Callable[[], Any], work: float, retries: int, window_seconds: float) -> tuple[float, int]:
    """The sustained rate of one window, the best kept of it and up to ``retries`` more while work from outside the
    fleet took more than OTHER_WORK_SHARE of the server's CPUs (on a server shared with other nodes of the fleet,
    which wait at a barrier meanwhile: that load is the server's, not this node's; a node whose own CPU or memory is
    cut is slow in a quiet window too); the retries it took."""
    best = 0.0
    for window in range(retries + 1):
        busy, own, started = server_busy_seconds(), time.process_time(), time.perf_counter()
        best = max(best, sustained_rate(action, work, window_seconds))
        other_work = server_busy_seconds() - busy - (time.process_time() - own)
        if other_work <= OTHER_WORK_SHARE * (time.perf_counter() - started) * (os.cpu_count() or 1):
            return best, window
    return best, retries


def rounds(turns: int) -> int:
    """How many rounds of turns the nodes on one server take at compute and memory (a turn is about half a second):
    six on a fleet of separate servers and on small simulated ones, fewer as more nodes share one, at least one."""
    return max(1, min(6, TURNS_PER_CHECK // turns))


def window_seconds(turns: int) -> float:
    """Each measure's window: the full one while the turns fit TURNS_PER_CHECK, shorter beyond (the turns of 36
    nodes on one kernel take about as long as 18), never under SHORTEST_WINDOW_SECONDS."""
    return max(SHORTEST_WINDOW_SECONDS, WINDOW_SECONDS * min(1.0, TURNS_PER_CHECK / turns))


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def boot_id() -> str:
    """This kernel's boot id: the same on every node that shares the kernel (containers on one server)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return boot.read().strip()
    except OSError:
        return str(dist.get_rank())


def kernel_group(world: int) -> tuple[list[int], int]:
    """The ranks on this rank's kernel, in rank order, and how many ranks the largest such group holds."""
    kernels: list[Any] = [None] * world
    dist.all_gather_object(kernels, boot_id())
    mine = kernels[dist.get_rank()]
    group = [rank for rank, kernel in enumerate(kernels) if kernel == mine]
    return group, max(kernels.count(kernel) for kernel in kernels)


def turn_order(group: list[int], round_count: int) -> list[int]:
    """Who measures when on one kernel: the group's ranks one after another, in every round, the order rotated by one
    each round (round k starts with the group's k-th rank from its end), so that each rank measures at another place
    among the others' turns."""
    size = len(group)
    return [group[(turn - round_number) % size] for round_number in range(round_count) for turn in range(size)]


def neighbours(order: list[int], position: int) -> tuple[int | None, int | None]:
    """The rank that hands the turn at ``position`` of ``order`` to its holder, and the rank it hands it on to; None
    where there is none or it is the holder itself (one rank's turns back to back)."""
    holder = order[position]
    before = order[position - 1] if position > 0 else None
    after = order[position + 1] if position + 1 < len(order) else None
    return (before if before != holder else None), (after if after != holder else None)


TURN_TAG = 7  # the tag of the turn's token, apart from the ring's sends


def take_turns(order: list[int], measure: Callable[[], None]) -> None:
    """Measure at this rank's places in ``order``: the ranks of one kernel pass a token, each measures once it holds
    it and hands it on, while the others wait in their receive (idle). A turn waits for the one before it on its
    kernel only, not at a barrier of the whole world (which wakes every rank, on every kernel, for every turn);
    kernels apart measure at the same time, each at its own pace."""
    token = torch.zeros(1)
    for position in [index for index, rank in enumerate(order) if rank == dist.get_rank()]:
        before, after = neighbours(order, position)
        if before is not None:
            dist.recv(token, before, tag=TURN_TAG)
        measure()
        if after is not None:
            dist.send(token, after, tag=TURN_TAG)


def compute_figures(world: int) -> tuple[float, float, int]:
    """GFLOP/s of a float32 matrix multiply and GB/s of a large copy, the best of this rank's turns in every round;
    the turns the ranks on one kernel took in a round. A node that shares its server may take as many windows of
    each measure again as there are rounds, when other work kept the server busy: a loaded server costs a few
    seconds more, at most."""
    left, right = torch.rand(MATRIX_SIZE, MATRIX_SIZE), torch.rand(MATRIX_SIZE, MATRIX_SIZE)
    source = torch.ones(COPY_BYTES, dtype=torch.uint8)
    target = torch.empty_like(source)
    measures = {
        "gflops": (lambda: torch.mm(left, right), 2 * MATRIX_SIZE**3),
        "memory_gbps": (lambda: target.copy_(source), 2 * COPY_BYTES),
    }
    group, turns = kernel_group(world)
    shared = len(group) > 1
    round_count, window = rounds(turns), window_seconds(turns)
    best, retries_left = dict.fromkeys(measures, 0.0), dict.fromkeys(measures, round_count if shared else 0)

    def measure_turn() -> None:
        for measure, (action, work) in measures.items():
            rate, retries = turn_rate(action, work, retries_left[measure], window)
            best[measure], retries_left[measure] = max(best[measure], rate / 1e9), retries_left[measure] - retries

    take_turns(turn_order(group, round_count), measure_turn)
    if turns > 1:  # the same on every rank (the largest group), so every rank joins the gather
        fleet_best: list[Any] = [None] * world
        dist.all_gather_object(fleet_best, best)
        take_turns(second_look(group, fleet_best, float(os.environ.get("HEALTH_FRACTION", "0.6"))), measure_turn)
    return round(best["gflops"], 2), round(best["memory_gbps"], 2), turns


def second_look(group: list[int], fleet_best: list[dict[str, float]], fraction: float) -> list[int]:
    """The ranks of ``group`` (nodes on one kernel, in order) whose best figure of a measure is below ``fraction`` of
    the group's median of it: each takes one more turn before the check names it. On a shared server the nodes measure
    one after another, so a window that the server's own weather spoiled (a neighbour's memory traffic, say, which
    no CPU count shows) can put a healthy node under the gate when it measured in one round only; a node whose own
    CPU or memory is cut is slow in its second look too."""
    if len(group) < 2:
        return []
    medians = {
        measure: statistics.median(fleet_best[rank][measure] for rank in group) for measure in fleet_best[group[0]]
    }
    return [
        rank
        for rank in group
        if any(fleet_best[rank][measure] < fraction * median for measure, median in medians.items())
    ]


def node_figures(world: int) -> dict[str, Any]:
    """What this node is: compute, memory, disk, interface, versions, devices."""
    gflops, memory_gbps, turns = compute_figures(world)
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
        "gflops": gflops,
        "memory_gbps": memory_gbps,
        "turns": turns,
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


def network_figures(rank: int, world: int, shared: bool) -> dict[str, Any]:
    """The clock at a barrier, an all-reduce of a few sizes, and this node's link to the next rank of a ring (its
    sends one at a time when nodes share a kernel)."""
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
        figures["link_gbps"] = round(RING_ELEMENTS * 4 * 8 / ring_send_seconds(rank, world, shared) / 1e9, 3)
        figures["link_to"] = (rank + 1) % world
    return figures


def ring_round(rank: int, world: int) -> int:
    """The round in which ``rank`` sends to the next rank: odd and even ranks take turns, and with an odd world the
    last rank (whose next is rank 0, also even) sends alone in a third round."""
    if world % 2 and rank == world - 1:
        return 2
    return rank % 2


def ring_send_seconds(rank: int, world: int, one_at_a_time: bool) -> float:
    """The best of this rank's timed 64 MB sends to the next rank (the first send, the connection's first use, not
    counted): in the ring's rounds, or one send at a time when nodes share a kernel. There every send of a round ran
    on the same CPUs, and a send's time measured how the scheduler shared them (on 32 simulated nodes the links
    ranged from 0.58 to 4.2 times the median, and a healthy one fell below the gate); alone, a send is fast (about
    40 ms on a virtual link). The inbox is written before its first receive: a receive into untouched memory took
    0.24 s instead of 0.02 s (measured in one container; inferred: its pages were faulted in under the socket's
    copy), 7.8 s of the first round's sends on 32 ranks of one server, against 0.9 s written first."""
    payload, inbox = torch.ones(RING_ELEMENTS), torch.zeros(RING_ELEMENTS)
    if one_at_a_time:
        return min(ring_in_order(rank, world, payload, inbox, 4)[1:])
    return min(ring_in_rounds(rank, world, payload, inbox, 6)[1:])


def ring_in_rounds(rank: int, world: int, payload: Any, inbox: Any, repeats: int) -> list[float]:
    """The seconds of this rank's sends to the next rank, ``repeats`` times, in the ring's rounds (a barrier before
    each): a node either sends or receives in a round, never both."""
    after, before = (rank + 1) % world, (rank - 1) % world
    sender, receiver = ring_round(rank, world), ring_round(before, world)
    timings = []
    for repeat in range(repeats):  # noqa: B007 (only the count matters)
        for current in range(3 if world % 2 else 2):
            dist.barrier()
            if current == sender:
                timings.append(timed_send(payload, after))
            elif current == receiver:
                dist.recv(inbox, before)
    return timings


def ring_in_order(rank: int, world: int, payload: Any, inbox: Any, repeats: int) -> list[float]:
    """The seconds of this rank's sends around the ring in rank order, ``repeats`` times: a rank sends once the send
    before it has reached it, so one send runs at a time with no barrier between them (a barrier wakes every rank
    for every send)."""
    after, before = (rank + 1) % world, (rank - 1) % world
    timings = []
    for repeat in range(repeats):  # noqa: B007 (only the count matters)
        if rank != 0:
            dist.recv(inbox, before)
        timings.append(timed_send(payload, after))
        if rank == 0:
            dist.recv(inbox, before)
    return timings


def timed_send(payload: Any, destination: int) -> float:
    """Seconds to send ``payload`` to ``destination``, which is waiting for it."""
    started = time.perf_counter()
    dist.send(payload, destination)
    return time.perf_counter() - started


def main() -> None:
    timeout = datetime.timedelta(seconds=int(os.environ.get("HEALTH_TIMEOUT", "60")))
    started = time.perf_counter()
    dist.init_process_group("gloo", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    joined = time.perf_counter()
    figures = node_figures(world)
    measured = time.perf_counter()
    figures.update(network_figures(rank, world, figures["turns"] > 1), rank=rank)
    # Where the probe's time went: the rendezvous, compute and memory (with the turns), the network.
    figures["seconds"] = {
        "rendezvous": round(joined - started, 2),
        "compute": round(measured - joined, 2),
        "network": round(time.perf_counter() - measured, 2),
    }
    print(json.dumps(figures), flush=True)
    fleet: list[Any] | None = [None] * world if rank == 0 else None
    # Also the probe's last barrier: every rank has measured when rank 0 prints the fleet.
    dist.gather_object(figures, fleet, dst=0)
    if fleet is not None:
        print(json.dumps({"fleet": fleet}), flush=True)
    # Everything is printed: end without the interpreter's teardown, which with torch loaded took seconds when every
    # rank of a simulated cluster ended at once on one server (3.4 s for 16 ranks on 2 cores; 0.1 s this way).
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
