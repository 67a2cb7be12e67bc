"""The health probe (multinode.training.health): one rank of a small job on every node at once, over TCP.

It measures this node (a matrix multiply, memory bandwidth, free disk under HEALTH_DISK_PATH, free memory, the MTU
of GLOO_SOCKET_IFNAME, the Python, torch and Intel MPI versions, Intel GPUs and render-node access, its clock at a
barrier) and the network (a ring all-reduce of 1 KB, 1 MB and 16 MB; a 64 MB send to the next rank of a ring, which
times this node's link), and prints one JSON object. RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come from the
caller, as for a torch job: rank 0 listens on MASTER_ADDR:MASTER_PORT, every other rank connects to it from the
cluster network, and each connects to the next rank of the ring. The ranks speak plain TCP and compute with numpy
(torch where numpy is missing): importing torch costs a CPU-second per rank, which on nodes that share a server (a
simulated cluster of 32 nodes on 2 cores) was most of the check.

Nodes measure their compute and memory at the same time, so the check takes as long for a thousand nodes as for
three; but nodes that share one kernel (containers on one server, a simulated cluster: the same boot id) take turns,
so that none measures the others' load instead of itself: rank 0 hands each kernel's turns out one at a time. Each
node measures in up to six rounds and keeps its best (on a shared server the other nodes' turns come between its
own, and the order rotates each round), and a node on a shared server takes a window again when work from outside
the fleet kept the server busy in it: that load does not make one node look slow, while a node whose own CPU or
memory is cut is slow in a quiet window too. A node of a shared server whose best is still below the gate
(HEALTH_FRACTION of its server's median) takes one more turn before it is named: one spoiled window is not a slow
node. A ring's sends go in rounds in which a node either sends or receives, never both, so a slow sender cannot slow
its neighbour's send through the acknowledgements it owes it; nodes that share a kernel send one at a time, and one
whose link measured below the gate sends twice more, alone, before it is named. A shared
server's turns fit a budget of about nine seconds: past 18 nodes on one kernel each takes a single, shorter window
per measure (never under the kernel's CPU quota period).

Rank 0 gathers every rank's figures and prints them as one line, ``{"fleet": [...]}`` in rank order, after its own:
the controller reads one node's output instead of every node's, and reads the others only when that line is missing
(a rank that failed before the end).
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import json
import os
import queue
import re
import select
import shutil
import socket
import statistics
import struct
import sys
import threading
import time
from typing import Any, Callable

MATRIX_SIZE = 1024
COPY_BYTES = 64 * 1024 * 1024
ALLREDUCE_ELEMENTS = (256, 262144, 4194304)
RING_BYTES = 64 * 1024 * 1024
TURNS_PER_CHECK = 18  # the rounds of compute and memory times the turns in a round, at most (about 9 s)
WINDOW_SECONDS = 0.25  # one measure's window: longer than the kernel's CPU quota period (100 ms)
SHORTEST_WINDOW_SECONDS = 0.12  # the shortest window a turn takes when more turns than TURNS_PER_CHECK share a kernel
OTHER_WORK_SHARE = 0.25  # of a shared server's CPUs, the most other work may take in a window that stands alone
LENGTH = struct.Struct("!Q")  # the length before each message between a rank and rank 0
GO, DONE = "go", "done"  # rank 0 hands a turn out; its holder says it measured
ACK = b"\x06"  # a ring send's receiver has all of it


class ProbeError(Exception):
    """What stopped this rank, in words the check shows as its node's finding."""


def receive_into(connection: socket.socket, view: memoryview, peer: str) -> None:
    """Fill ``view`` from ``connection``; a peer that closed it or went silent past its timeout is named."""
    received = 0
    try:
        while received < len(view):
            # MSG_WAITALL: one wake-up for the whole of it, not one per segment that arrives.
            count = connection.recv_into(view[received:], 0, socket.MSG_WAITALL)
            if count == 0:
                raise ProbeError(f"{peer} closed its connection (its probe failed: its own finding says why)")
            received += count
    except socket.timeout as exc:
        raise ProbeError(f"{peer} sent nothing within the health timeout (HEALTH_TIMEOUT)") from exc


def send_message(connection: socket.socket, value: Any) -> None:
    payload = json.dumps(value).encode()
    connection.sendall(LENGTH.pack(len(payload)) + payload)


def receive_message(connection: socket.socket, peer: str) -> Any:
    header = bytearray(LENGTH.size)
    receive_into(connection, memoryview(header), peer)
    payload = bytearray(LENGTH.unpack(header)[0])
    receive_into(connection, memoryview(payload), peer)
    return json.loads(payload)


def connected(address: tuple[str, int], deadline: float, timeout: float) -> socket.socket:
    """A connection to ``address``, tried until ``deadline`` (the listener may not be up yet)."""
    while True:
        try:
            connection = socket.create_connection(address, timeout=1)
            connection.settimeout(timeout)
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return connection
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.25)


class Mesh:
    """The probe's ranks: every rank's connection to rank 0 (a star, for gathers, barriers and the turns) and to the
    next rank of the ring (the link measure and the all-reduce)."""

    def __init__(self, rank: int, world: int, timeout: float, check: str = "") -> None:
        self.rank, self.world, self.timeout, self.check = rank, world, timeout, check
        self.ranks: dict[int, socket.socket] = {}  # rank 0's connection to each other rank
        self.root: socket.socket | None = None  # every other rank's to rank 0
        self.next: socket.socket | None = None  # to the next rank of the ring (it receives, then acknowledges)
        self.previous: socket.socket | None = None  # from the rank before
        self.outgoing: queue.Queue[memoryview] = queue.Queue()  # what the sender thread sends to the next rank
        self.sent: queue.Queue[OSError | None] = queue.Queue()  # how each of those sends ended
        self.sender: threading.Thread | None = None  # started at the first exchange

    @classmethod
    def join(cls, rank: int, world: int, master: tuple[str, int], timeout: float, check: str = "") -> "Mesh":
        """Every rank of the check ``check`` connected to rank 0 and to its ring neighbours, within ``timeout``
        seconds."""
        mesh = cls(rank, world, timeout, check)
        deadline = time.monotonic() + timeout
        if rank == 0:
            listener = mesh._listen(master[0], master[1])
            ring = mesh._listen(master[0], 0)
            addresses = mesh._accept_ranks(listener, deadline, (master[0], ring.getsockname()[1]))
        else:
            ring, addresses = mesh._reach_root(master, deadline)
        if world > 1:
            mesh.next = connected(tuple(addresses[(rank + 1) % world]), deadline, timeout)  # type: ignore[arg-type]
            ring.settimeout(max(1.0, deadline - time.monotonic()))
            try:
                mesh.previous, _address = ring.accept()
            except socket.timeout as exc:
                raise ProbeError(f"rank {(rank - 1) % world} did not connect to this rank within {timeout:g} s") from exc
            mesh.previous.settimeout(timeout)
        ring.close()
        return mesh

    @staticmethod
    def _listen(address: str, port: int) -> socket.socket:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address, port))
        listener.listen(128)
        return listener

    def _accept_ranks(self, listener: socket.socket, deadline: float, own: tuple[str, int]) -> list[list[Any]]:
        """Rank 0: every other rank's connection and the address of its ring listener (on the address it came from),
        sent back to every rank."""
        addresses: list[list[Any]] = [list(own)] + [[] for _rank in range(1, self.world)]
        while len(self.ranks) < self.world - 1:
            listener.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                connection, (address, _port) = listener.accept()
            except socket.timeout as exc:
                missing = [rank for rank in range(1, self.world) if rank not in self.ranks]
                raise ProbeError(
                    f"ranks {missing} did not reach rank 0's rendezvous within {self.timeout:g} s (their own findings"
                    " say why)"
                ) from exc
            connection.settimeout(self.timeout)
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            hello = receive_message(connection, "a rank at the rendezvous")
            if not self._welcome(hello):
                connection.close()
                continue
            self.ranks[hello["rank"]] = connection
            addresses[hello["rank"]] = [address, int(hello["port"])]
        listener.close()
        for connection in self.ranks.values():
            send_message(connection, addresses)
        return addresses

    def _welcome(self, hello: Any) -> bool:
        """Whether a rank at the rendezvous belongs to this check: a rank of an earlier check on the same port (still
        waiting for a rank 0 that failed) is turned away, as is a rank this check already has or does not have."""
        return (
            isinstance(hello, dict)
            and hello.get("check") == self.check
            and hello.get("rank") in range(1, self.world)
            and hello["rank"] not in self.ranks
        )

    def _reach_root(self, master: tuple[str, int], deadline: float) -> tuple[socket.socket, list[list[Any]]]:
        """Every other rank: its connection to rank 0, from which its ring listener takes its address."""
        try:
            self.root = connected(master, deadline, self.timeout)
        except OSError as exc:
            raise ProbeError(
                f"rank 0's rendezvous at {master[0]}:{master[1]} did not open within {self.timeout:g} s: the launcher"
                " node's probe did not start or failed (its own finding says why)"
            ) from exc
        ring = self._listen(self.root.getsockname()[0], 0)
        send_message(self.root, {"rank": self.rank, "port": ring.getsockname()[1], "check": self.check})
        return ring, receive_message(self.root, "rank 0")

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's ``value`` in rank order, on rank 0; None on the others."""
        if self.rank != 0:
            send_message(self.root, value)  # type: ignore[arg-type]
            return None
        return [value] + [receive_message(self.ranks[rank], f"rank {rank}") for rank in range(1, self.world)]

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's ``value`` in rank order, on every rank."""
        values = self.gather(value)
        if self.rank != 0:
            return receive_message(self.root, "rank 0")  # type: ignore[arg-type]
        for connection in self.ranks.values():
            send_message(connection, values)
        return values  # type: ignore[return-value]

    def barrier(self) -> None:
        self.all_gather(None)

    def hand_turn(self, holder: int) -> None:
        """Rank 0: ``holder``'s turn starts."""
        send_message(self.ranks[holder], GO)

    def await_turn(self) -> None:
        """Every other rank: wait until rank 0 hands this rank its turn."""
        if receive_message(self.root, "rank 0") != GO:  # type: ignore[arg-type]
            raise ProbeError("rank 0 sent something else than a turn")

    def end_turn(self) -> None:
        """Every other rank: tell rank 0 this rank's turn is over."""
        send_message(self.root, DONE)  # type: ignore[arg-type]

    def turn_ended(self, holder: int) -> None:
        """Rank 0: wait until ``holder`` says its turn is over."""
        receive_message(self.ranks[holder], f"rank {holder}")

    def first_done(self, holders: list[int]) -> int:
        """Rank 0: the first of ``holders`` to say it measured."""
        readable = select.select([self.ranks[rank] for rank in holders], [], [], self.timeout)[0]
        if not readable:
            raise ProbeError(f"ranks {holders} did not end their turn within {self.timeout:g} s")
        holder = next(rank for rank in holders if self.ranks[rank] is readable[0])
        self.turn_ended(holder)
        return holder

    @property
    def previous_name(self) -> str:
        return f"rank {(self.rank - 1) % self.world}"

    @property
    def next_name(self) -> str:
        return f"rank {(self.rank + 1) % self.world}"

    def exchange(self, outgoing: memoryview, incoming: memoryview) -> None:
        """Send ``outgoing`` to the next rank while ``incoming`` is received from the previous one."""
        if self.sender is None:
            self.sender = threading.Thread(target=self._send_outgoing, daemon=True)
            self.sender.start()
        self.outgoing.put(outgoing)
        receive_into(self.previous, incoming, self.previous_name)  # type: ignore[arg-type]
        try:
            failure = self.sent.get(timeout=self.timeout)
        except queue.Empty as exc:
            raise ProbeError(f"the send to {self.next_name} did not end within the health timeout (HEALTH_TIMEOUT)") from exc
        if failure is not None:
            raise ProbeError(f"the send to {self.next_name} failed: {failure}")

    def _send_outgoing(self) -> None:
        """The sender thread: each view put on ``outgoing``, sent in turn (one thread for every exchange: a thread
        started per exchange cost more than the exchange itself for small chunks)."""
        while True:
            outgoing = self.outgoing.get()
            try:
                self.next.sendall(outgoing)  # type: ignore[union-attr]
                self.sent.put(None)
            except OSError as exc:
                self.sent.put(exc)

    def timed_send(self, payload: memoryview) -> float:
        """Seconds until the next rank, waiting for it, has all of ``payload``."""
        started = time.perf_counter()
        self.next.sendall(payload)  # type: ignore[union-attr]
        receive_into(self.next, memoryview(bytearray(1)), self.next_name)  # type: ignore[arg-type]
        return time.perf_counter() - started

    def receive_send(self, inbox: memoryview) -> None:
        """Receive the previous rank's send into ``inbox`` and acknowledge it."""
        receive_into(self.previous, inbox, self.previous_name)  # type: ignore[arg-type]
        self.previous.sendall(ACK)  # type: ignore[union-attr]


class Arrays:
    """Float32 arrays for the compute measure and the all-reduce's sums: numpy's, or torch's where numpy is missing."""

    def __init__(self) -> None:
        try:
            import numpy  # pylint: disable=import-outside-toplevel

            self.matrix: Callable[[int], Any] = lambda size: numpy.random.default_rng(0).random((size, size), numpy.float32)
            self.multiply: Callable[[Any, Any], Any] = numpy.matmul
            self.floats: Callable[[Any], Any] = lambda buffer: numpy.frombuffer(buffer, dtype=numpy.float32)
            self.add: Callable[[Any, Any], Any] = lambda into, other: numpy.add(into, other, out=into)
        except ImportError:
            import torch  # pylint: disable=import-outside-toplevel

            self.matrix = lambda size: torch.rand(size, size)
            self.multiply = torch.mm
            self.floats = lambda buffer: torch.frombuffer(buffer, dtype=torch.float32)
            self.add = lambda into, other: into.add_(other)


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
    which wait for their turn meanwhile: that load is the server's, not this node's; a node whose own CPU or memory
    is cut is slow in a quiet window too); the retries it took."""
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


MPI_VERSION_DIRECTORY = re.compile(r"^\d+(\.\d+)+$")


def mpi_version() -> str | None:
    """Intel MPI's version: of the impi-rt distribution this Python sees; else of the one installed where I_MPI_ROOT
    points (oneAPI's pip method installs it in a virtualenv of its own, which the training environment's Python does
    not see); else I_MPI_ROOT's own directory name when it is a version (oneAPI's layout, /opt/intel/oneapi/mpi/2021.13,
    or a link named latest to it)."""
    version, root = package_version("impi-rt"), os.environ.get("I_MPI_ROOT", "")
    if version or not root:
        return version
    installed = glob.glob(os.path.join(root, "lib", "python3*", "site-packages"))
    for distribution in importlib.metadata.distributions(name="impi-rt", path=installed):
        return distribution.version
    name = os.path.basename(os.path.realpath(root))
    return name if MPI_VERSION_DIRECTORY.match(name) else None


TORCH_VERSION_LINE = re.compile(r"""^__version__(?:\s*:\s*str)?\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def torch_version() -> str | None:
    """The ``torch.__version__`` the ranks get, read from the torch package ``import torch`` would load (its
    version.py), without importing it; the installed distribution's version where that file says none."""
    spec = importlib.util.find_spec("torch")
    for location in (spec.submodule_search_locations or []) if spec else []:
        try:
            with open(os.path.join(location, "version.py"), encoding="utf-8") as version_file:
                found = TORCH_VERSION_LINE.search(version_file.read())
        except OSError:
            continue
        if found:
            return found.group(1)
    return package_version("torch")


def boot_id(rank: int) -> str:
    """This kernel's boot id: the same on every node that shares the kernel (containers on one server)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return boot.read().strip()
    except OSError:
        return str(rank)


def kernel_groups(kernels: list[str]) -> list[list[int]]:
    """The ranks of each kernel (``kernels``: every rank's boot id), in rank order, kernels by their first rank."""
    return [[rank for rank, kernel in enumerate(kernels) if kernel == mine] for mine in dict.fromkeys(kernels)]


def turn_order(group: list[int], round_count: int) -> list[int]:
    """Who measures when on one kernel: the group's ranks one after another, in every round, the order rotated by one
    each round (round k starts with the group's k-th rank from its end), so that each rank measures at another place
    among the others' turns."""
    size = len(group)
    return [group[(turn - round_number) % size] for round_number in range(round_count) for turn in range(size)]


def take_turns(mesh: Mesh, orders: list[list[int]], measure: Callable[[], None]) -> None:
    """Measure at this rank's places in its kernel's order (``orders``: every kernel's, the same on every rank). A
    rank alone on its kernel measures its turns at once; on a shared kernel rank 0 hands the turns out one at a time
    and the others wait for theirs, idle. Kernels apart measure at the same time, each at its own pace."""
    shared = [order for order in orders if len(set(order)) > 1]
    own = sum(order.count(mesh.rank) for order in orders if len(set(order)) == 1)
    if mesh.rank != 0:
        for _turn in range(own):
            measure()
        for _turn in range(sum(order.count(mesh.rank) for order in shared)):
            mesh.await_turn()
            measure()
            mesh.end_turn()
        return
    hand_out_turns(mesh, shared, own, measure)


def hand_out_turns(mesh: Mesh, shared: list[list[int]], own: int, measure: Callable[[], None]) -> None:
    """Rank 0: each shared kernel's turns, one after another in its order (rank 0's own where they fall), every
    kernel's at once; then its turns alone on its kernel, if it is."""
    places = [0] * len(shared)
    holding: dict[int, int] = {}  # a rank measuring now -> its kernel's index in ``shared``
    mine: list[int] = []  # the kernels whose turn is rank 0's

    def hand_out(kernel: int) -> None:
        if places[kernel] == len(shared[kernel]):
            return
        holder = shared[kernel][places[kernel]]
        if holder == 0:
            mine.append(kernel)
            return
        mesh.hand_turn(holder)
        holding[holder] = kernel

    for kernel in range(len(shared)):
        hand_out(kernel)
    while mine or holding:
        if mine:
            kernel = mine.pop(0)
            measure()
        else:
            kernel = holding.pop(mesh.first_done(list(holding)))
        places[kernel] += 1
        hand_out(kernel)
    for _turn in range(own):
        measure()


def compute_figures(mesh: Mesh, arrays: Arrays) -> tuple[float, float, int]:
    """GFLOP/s of a float32 matrix multiply and GB/s of a large copy, the best of this rank's turns in every round;
    the turns the ranks on one kernel took in a round. A node that shares its server may take as many windows of
    each measure again as there are rounds, when other work kept the server busy: a loaded server costs a few
    seconds more, at most."""
    left, right = arrays.matrix(MATRIX_SIZE), arrays.matrix(MATRIX_SIZE)
    source, target = memoryview(b"\x01" * COPY_BYTES), memoryview(bytearray(COPY_BYTES))

    def copy() -> None:
        target[:] = source

    measures = {
        "gflops": (lambda: arrays.multiply(left, right), 2 * MATRIX_SIZE**3),
        "memory_gbps": (copy, 2 * COPY_BYTES),
    }
    groups = kernel_groups(mesh.all_gather(boot_id(mesh.rank)))
    group = next(group for group in groups if mesh.rank in group)
    turns = max(len(group) for group in groups)
    round_count, window = rounds(turns), window_seconds(turns)
    best, retries_left = dict.fromkeys(measures, 0.0), dict.fromkeys(measures, round_count if len(group) > 1 else 0)

    def measure_turn() -> None:
        for measure, (action, work) in measures.items():
            rate, retries = turn_rate(action, work, retries_left[measure], window)
            best[measure], retries_left[measure] = max(best[measure], rate / 1e9), retries_left[measure] - retries

    take_turns(mesh, [turn_order(group, round_count) for group in groups], measure_turn)
    if turns > 1:  # the same on every rank (the largest group), so every rank joins the gather
        fleet_best = mesh.all_gather(best)
        fraction = gate_fraction()
        take_turns(mesh, [second_look(group, fleet_best, fraction) for group in groups], measure_turn)
    return round(best["gflops"], 2), round(best["memory_gbps"], 2), turns


def gate_fraction() -> float:
    """The check's gate (HEALTH_FRACTION of the median), under which a node measures again before it is named."""
    return float(os.environ.get("HEALTH_FRACTION", "0.6"))


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


def gpu_count(render_nodes: list[str]) -> int:
    """Intel GPUs torch sees, asked only where the node has render nodes (importing torch costs a CPU-second)."""
    if not render_nodes:
        return 0
    import torch  # pylint: disable=import-outside-toplevel

    return torch.xpu.device_count() if hasattr(torch, "xpu") and torch.xpu.is_available() else 0


def node_figures(mesh: Mesh, arrays: Arrays) -> dict[str, Any]:
    """What this node is: compute, memory, disk, interface, versions, devices."""
    gflops, memory_gbps, turns = compute_figures(mesh, arrays)
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        memory = dict(line.split(":", 1) for line in meminfo)
    renders = (
        sorted(name for name in os.listdir("/dev/dri") if name.startswith("renderD"))
        if os.path.isdir("/dev/dri")
        else []
    )
    return {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "torch": torch_version(),
        "mpi": mpi_version(),
        "gflops": gflops,
        "memory_gbps": memory_gbps,
        "turns": turns,
        "disk_free_gb": round(shutil.disk_usage(os.environ["HEALTH_DISK_PATH"]).free / 1e9, 2),
        "memory_free_gb": round(int(memory["MemAvailable"].split()[0]) * 1024 / 1e9, 2),
        "mtu": interface_mtu(os.environ.get("GLOO_SOCKET_IFNAME", "")),
        "render_nodes": len(renders),
        "render_access": all(os.access(f"/dev/dri/{name}", os.R_OK | os.W_OK) for name in renders),
        "gpus": gpu_count(renders),
    }


def interface_mtu(iface: str) -> int | None:
    try:
        with open(f"/sys/class/net/{iface}/mtu", encoding="ascii") as mtu:
            return int(mtu.read())
    except (OSError, ValueError):
        return None


def ring_all_reduce(mesh: Mesh, arrays: Arrays, data: bytearray, scratch: bytearray) -> None:
    """Sum ``data`` (float32) over every rank, as gloo's ring does: a reduce-scatter, then an all-gather, each
    ``world - 1`` steps in which every rank sends a chunk to the next rank while it receives one from the rank
    before. ``scratch`` holds a chunk."""
    world, rank = mesh.world, mesh.rank
    if world == 1:
        return
    elements = len(data) // 4
    bounds = [(index * elements // world * 4, (index + 1) * elements // world * 4) for index in range(world)]
    view, inbox = memoryview(data), memoryview(scratch)
    values, received = arrays.floats(data), arrays.floats(scratch)
    for step in range(world - 1):
        (send_start, send_end), (start, end) = bounds[(rank - step) % world], bounds[(rank - step - 1) % world]
        mesh.exchange(view[send_start:send_end], inbox[: end - start])
        arrays.add(values[start // 4 : end // 4], received[: (end - start) // 4])
    for step in range(world - 1):
        (send_start, send_end), (start, end) = bounds[(rank + 1 - step) % world], bounds[(rank - step) % world]
        mesh.exchange(view[send_start:send_end], view[start:end])


def network_figures(mesh: Mesh, arrays: Arrays, shared: bool) -> dict[str, Any]:
    """The clock at a barrier, an all-reduce of a few sizes, and this node's link to the next rank of a ring (its
    sends one at a time when nodes share a kernel)."""
    mesh.barrier()
    figures: dict[str, Any] = {"clock": time.time(), "allreduce": {}}
    world = mesh.world
    for elements in ALLREDUCE_ELEMENTS:
        data, scratch = bytearray(elements * 4), bytearray((elements // world + 1) * 4)
        seconds = seconds_per_call(lambda: ring_all_reduce(mesh, arrays, data, scratch), 3)
        bus_bits = 2 * (world - 1) / world * elements * 4 * 8
        figures["allreduce"][str(elements * 4)] = {
            "seconds": round(seconds, 6),
            "busbw_gbps": round(bus_bits / seconds / 1e9, 3) if seconds else None,
        }
    if world > 1:
        figures["link_gbps"] = round(RING_BYTES * 8 / ring_send_seconds(mesh, shared) / 1e9, 3)
        figures["link_to"] = (mesh.rank + 1) % world
    return figures


def ring_round(rank: int, world: int) -> int:
    """The round in which ``rank`` sends to the next rank: odd and even ranks take turns, and with an odd world the
    last rank (whose next is rank 0, also even) sends alone in a third round."""
    if world % 2 and rank == world - 1:
        return 2
    return rank % 2


def ring_send_seconds(mesh: Mesh, one_at_a_time: bool) -> float:
    """The best of this rank's timed 64 MB sends to the next rank (the first send, the connection's first large use,
    not counted): in the ring's rounds, or one send at a time when nodes share a kernel. There every send of a round
    ran on the same CPUs, and a send's time measured how the scheduler shared them (on 32 simulated nodes the links
    ranged from 0.58 to 4.2 times the median, and a healthy one fell below the gate); alone, a send is fast (about
    40 ms on a virtual link). The inbox is written before its first receive (bytearray zeroes it): a receive into
    untouched memory took 0.24 s instead of 0.02 s (its pages faulted in under the socket's copy)."""
    payload, inbox = memoryview(b"\x01" * RING_BYTES), memoryview(bytearray(RING_BYTES))
    if one_at_a_time:
        seconds = min(ring_in_order(mesh, payload, inbox, 4)[1:])
        return ring_second_look(mesh, seconds, payload, inbox, gate_fraction())
    return min(ring_in_rounds(mesh, payload, inbox, 6)[1:])


def ring_second_look(mesh: Mesh, seconds: float, payload: memoryview, inbox: memoryview, fraction: float) -> float:
    """This rank's best send time, after the ranks whose link measured below ``fraction`` of the fleet's median sent
    twice more, one rank at a time in rank order (rank 0 hands the turns out): on a shared server a send that the
    scheduler put behind the other nodes' work looks like a slow link, while a link that is slow stays slow."""
    rates = mesh.all_gather(1 / seconds)
    gate = fraction * statistics.median(rates)
    for sender in (rank for rank, rate in enumerate(rates) if rate < gate):
        handed_out = mesh.rank == 0 and sender != 0
        if handed_out:
            mesh.hand_turn(sender)
        if mesh.rank == sender:
            if sender != 0:
                mesh.await_turn()
            seconds = min(seconds, mesh.timed_send(payload), mesh.timed_send(payload))
            if sender != 0:
                mesh.end_turn()
        elif mesh.rank == (sender + 1) % mesh.world:
            mesh.receive_send(inbox)
            mesh.receive_send(inbox)
        if handed_out:
            mesh.turn_ended(sender)
    return seconds


def ring_in_rounds(mesh: Mesh, payload: memoryview, inbox: memoryview, repeats: int) -> list[float]:
    """The seconds of this rank's sends to the next rank, ``repeats`` times, in the ring's rounds (a barrier before
    each): a node either sends or receives in a round, never both."""
    rank, world = mesh.rank, mesh.world
    sender, receiver = ring_round(rank, world), ring_round((rank - 1) % world, world)
    timings = []
    for repeat in range(repeats):  # noqa: B007 (only the count matters)
        for current in range(3 if world % 2 else 2):
            mesh.barrier()
            if current == sender:
                timings.append(mesh.timed_send(payload))
            elif current == receiver:
                mesh.receive_send(inbox)
    return timings


def ring_in_order(mesh: Mesh, payload: memoryview, inbox: memoryview, repeats: int) -> list[float]:
    """The seconds of this rank's sends around the ring in rank order, ``repeats`` times: a rank sends once the send
    before it has reached it, so one send runs at a time with no barrier between them."""
    timings = []
    for repeat in range(repeats):  # noqa: B007 (only the count matters)
        if mesh.rank != 0:
            mesh.receive_send(inbox)
        timings.append(mesh.timed_send(payload))
        if mesh.rank == 0:
            mesh.receive_send(inbox)
    return timings


def main() -> None:
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    master = (os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500")))
    started = time.perf_counter()
    try:
        timeout, check = float(os.environ.get("HEALTH_TIMEOUT", "60")), os.environ.get("HEALTH_CHECK", "")
        mesh = Mesh.join(rank, world, master, timeout, check)
        joined = time.perf_counter()
        arrays = Arrays()
        figures = node_figures(mesh, arrays)
        measured = time.perf_counter()
        figures.update(network_figures(mesh, arrays, figures["turns"] > 1), rank=rank)
        # Where the probe's time went: the rendezvous, compute and memory (with the turns), the network.
        figures["seconds"] = {
            "rendezvous": round(joined - started, 2),
            "compute": round(measured - joined, 2),
            "network": round(time.perf_counter() - measured, 2),
        }
        print(json.dumps(figures), flush=True)
        # Also the probe's last step: every rank has measured when rank 0 prints the fleet.
        fleet = mesh.gather(figures)
    except (ProbeError, OSError) as exc:
        sys.exit(f"rank {rank}: {exc}")
    if fleet is not None:
        print(json.dumps({"fleet": fleet}), flush=True)


if __name__ == "__main__":
    main()
