# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health probe's rendezvous, order of turns, ring sends and all-reduce (roles/health/files/health_probe.py), its
ranks threads of this process speaking TCP over loopback as the probe's ranks do between nodes: an order that could
hang on real nodes hangs here (and fails on the join's timeout)."""

from __future__ import annotations

import importlib.util
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy
import pytest

PROBE = Path(__file__).resolve().parents[2] / "roles" / "health" / "files" / "health_probe.py"
JOIN_SECONDS = 20


def free_port() -> int:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        return probe_socket.getsockname()[1]


def run_ranks(probe: Any, world: int, work: Callable[[Any], Any], timeout: float = 10) -> list[Any]:
    """``work(mesh)`` on ``world`` threads, each a rank joined to the others over loopback; its results by rank.
    Fails when any rank fails or does not end."""
    master = ("127.0.0.1", free_port())
    results: list[Any] = [None] * world
    errors: list[BaseException] = []

    def rank_thread(rank: int) -> None:
        try:
            results[rank] = work(probe.Mesh.join(rank, world, master, timeout))
        except BaseException as error:  # pylint: disable=broad-exception-caught  # reported below
            errors.append(error)

    threads = [threading.Thread(target=rank_thread, args=(rank,), daemon=True) for rank in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_SECONDS)
    assert not [thread for thread in threads if thread.is_alive()], "ranks still waiting: the order hangs"
    assert errors == []
    return results


@pytest.fixture(name="probe")
def fixture_probe() -> Any:
    """The probe's module, loaded from its file."""
    spec = importlib.util.spec_from_file_location("health_probe_under_test", PROBE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_turn_order_is_the_group_in_every_round_rotated_by_one(probe: Any) -> None:
    # As the turns went when a barrier separated them: in round k, rank group[(slot - k) % n] measured in slot.
    assert probe.turn_order([3, 5, 9], 3) == [3, 5, 9, 9, 3, 5, 5, 9, 3]
    assert probe.turn_order([4], 3) == [4, 4, 4]


@pytest.mark.parametrize(
    "kernels",
    [
        pytest.param([0, 0, 0], id="three nodes on one server"),
        pytest.param([0, 1, 2, 3], id="four servers"),
        pytest.param([0, 1, 0, 1, 1, 0, 2], id="seven nodes on three servers"),
    ],
)
def test_every_rank_measures_its_turns_in_its_servers_order_and_none_hangs(probe: Any, kernels: list[int]) -> None:
    turns = max(kernels.count(kernel) for kernel in kernels)
    groups = probe.kernel_groups([str(kernel) for kernel in kernels])
    orders = [probe.turn_order(group, probe.rounds(turns)) for group in groups]
    measured: list[tuple[int, int]] = []
    lock = threading.Lock()

    def work(mesh: Any) -> None:
        def measure() -> None:
            with lock:
                measured.append((kernels[mesh.rank], mesh.rank))

        probe.take_turns(mesh, orders, measure)

    run_ranks(probe, len(kernels), work)
    for group, order in zip(groups, orders):
        assert [rank for kernel, rank in measured if kernel == kernels[group[0]]] == order


def test_a_rank_s_second_look_alone_on_a_shared_server_waits_for_nothing_else(probe: Any) -> None:
    """The second look: only some ranks of a shared server measure again, none on the other."""
    measured: list[int] = []

    def work(mesh: Any) -> None:
        probe.take_turns(mesh, [[2], [], [1, 4]], lambda: measured.append(mesh.rank))

    run_ranks(probe, 5, work)
    assert sorted(measured) == [1, 2, 4]


def logged_sends(probe: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ranks of every timed send, in the order they went (the probe's sends themselves unchanged)."""
    sends: list[int] = []
    timed_send = probe.Mesh.timed_send

    def logged_send(mesh: Any, payload: memoryview) -> float:
        sends.append(mesh.rank)
        return timed_send(mesh, payload)

    monkeypatch.setattr(probe.Mesh, "timed_send", logged_send)
    return sends


@pytest.mark.parametrize("world", [2, 3, 8])
def test_the_ring_in_order_sends_one_after_another_around_the_ring(probe: Any, world: int, monkeypatch: pytest.MonkeyPatch) -> None:
    sends = logged_sends(probe, monkeypatch)
    timings = run_ranks(probe, world, lambda mesh: probe.ring_in_order(mesh, memoryview(b"x" * 4096), memoryview(bytearray(4096)), 3))
    assert sends == [rank for _ in range(3) for rank in range(world)]
    assert all(len(timing) == 3 and min(timing) > 0 for timing in timings)


@pytest.mark.parametrize("world", [2, 3, 5])
def test_the_ring_in_rounds_gives_every_rank_its_link(probe: Any, world: int) -> None:
    timings = run_ranks(probe, world, lambda mesh: probe.ring_in_rounds(mesh, memoryview(b"x" * 65536), memoryview(bytearray(65536)), 2))
    assert all(len(timing) == 2 for timing in timings)


@pytest.mark.parametrize(("world", "slow"), [(4, [2]), (4, [3]), (6, [0, 1, 5]), (3, [])])
def test_the_ring_s_second_look_sends_again_from_the_slow_links_only(
    probe: Any, world: int, slow: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranks whose best send was under the gate send twice more, one at a time (rank 0's own, and rank 0 receiving,
    included); their best is kept, the others' stays."""
    sends = logged_sends(probe, monkeypatch)
    payload, first = memoryview(b"x" * 4096), {rank: (10.0 if rank in slow else 0.5) for rank in range(world)}
    seconds = run_ranks(probe, world, lambda mesh: probe.ring_second_look(mesh, first[mesh.rank], payload, memoryview(bytearray(4096)), 0.6))
    assert sends == [rank for rank in slow for _send in range(2)]
    assert [rank for rank in range(world) if seconds[rank] < first[rank]] == slow


@pytest.mark.parametrize(("world", "elements"), [(1, 8), (2, 256), (3, 7), (5, 3), (4, 262144)])
def test_the_ring_all_reduce_sums_every_rank_s_values(probe: Any, world: int, elements: int) -> None:
    """Each rank's values are its rank plus 1 and their position; every rank ends with the sum (fewer elements than
    ranks too: some chunks are empty)."""

    def work(mesh: Any) -> list[float]:
        data = bytearray((numpy.arange(elements, dtype=numpy.float32) + mesh.rank + 1).tobytes())
        probe.ring_all_reduce(mesh, probe.Arrays(), data, bytearray((elements // world + 1) * 4))
        return numpy.frombuffer(data, dtype=numpy.float32).tolist()

    expected = (numpy.arange(elements, dtype=numpy.float32) * world + world * (world + 1) / 2).tolist()
    assert run_ranks(probe, world, work) == [expected] * world


def test_gather_and_all_gather_keep_rank_order(probe: Any) -> None:
    results = run_ranks(probe, 4, lambda mesh: (mesh.all_gather(mesh.rank * 10), mesh.gather({"rank": mesh.rank})))
    assert [result[0] for result in results] == [[0, 10, 20, 30]] * 4
    assert results[0][1] == [{"rank": rank} for rank in range(4)]
    assert [result[1] for result in results[1:]] == [None] * 3


def test_rank_0_names_the_ranks_that_never_came(probe: Any) -> None:
    with pytest.raises(probe.ProbeError, match=r"ranks \[1, 2\] did not reach rank 0's rendezvous within 1 s"):
        probe.Mesh.join(0, 3, ("127.0.0.1", free_port()), 1)


def test_a_rank_without_rank_0_says_its_rendezvous_never_opened(probe: Any) -> None:
    port = free_port()
    with pytest.raises(probe.ProbeError, match=rf"rank 0's rendezvous at 127.0.0.1:{port} did not open within 1 s"):
        probe.Mesh.join(1, 3, ("127.0.0.1", port), 1)


@pytest.mark.parametrize(
    "hello",
    [
        {"rank": 1, "port": 1, "check": "earlier"},  # a rank of an earlier check, still waiting for its rank 0
        {"rank": 7, "port": 1, "check": "this"},  # a rank this check does not have
        ["not", "a", "hello"],
    ],
)
def test_rank_0_turns_away_what_is_not_a_rank_of_this_check(probe: Any, hello: Any) -> None:
    master, meshes = ("127.0.0.1", free_port()), {}

    def rank_thread(rank: int) -> None:
        meshes[rank] = probe.Mesh.join(rank, 3, master, 10, "this")

    threads = [threading.Thread(target=rank_thread, args=(0,), daemon=True)]
    threads[0].start()
    stranger = probe.connected(master, time.monotonic() + 10, 10)
    probe.send_message(stranger, hello)  # first in rank 0's queue
    threads += [threading.Thread(target=rank_thread, args=(rank,), daemon=True) for rank in (1, 2)]
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(JOIN_SECONDS)
    assert sorted(meshes) == [0, 1, 2]
    assert sorted(meshes[0].ranks) == [1, 2] and stranger not in meshes[0].ranks.values()
    assert stranger.recv(1) == b""  # rank 0 closed it


def figures(gflops: float, memory_gbps: float) -> dict[str, float]:
    return {"gflops": gflops, "memory_gbps": memory_gbps}


def test_second_look_takes_the_ranks_under_the_gate_of_their_servers_median(probe: Any) -> None:
    # n16-2 of the health bench: node9 (rank 8) measured one window at 44% under the memory median.
    fleet_best = [figures(120.0, 25.6)] * 16
    fleet_best = fleet_best[:8] + [figures(116.7, 14.46)] + fleet_best[9:]
    assert probe.second_look(list(range(16)), fleet_best, 0.6) == [8]


def test_second_look_judges_each_server_on_its_own_median_and_skips_a_node_alone(probe: Any) -> None:
    # Ranks 0-2 share a server, rank 3 is alone (its figures are judged by the check, not looked at again).
    fleet_best = [figures(100.0, 20.0), figures(55.0, 20.0), figures(100.0, 20.0), figures(10.0, 1.0)]
    assert probe.second_look([0, 1, 2], fleet_best, 0.6) == [1]
    assert probe.second_look([3], fleet_best, 0.6) == []


def test_second_look_leaves_a_node_at_the_gate(probe: Any) -> None:
    fleet_best = [figures(100.0, 20.0), figures(60.0, 12.0), figures(100.0, 20.0)]
    assert probe.second_look([0, 1, 2], fleet_best, 0.6) == []


def test_the_torch_version_is_the_one_import_torch_would_load_without_importing_it(
    probe: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package's version.py, not its distribution's metadata (they differ when the package was patched or
    another torch comes first on the path); torch itself is not imported."""
    package = tmp_path / "torch"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (package / "version.py").write_text("from typing import Optional\n__version__ = '2.13.0+cpu.drill'\ndebug = False\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert probe.torch_version() == "2.13.0+cpu.drill"
    assert "torch" not in sys.modules


def test_the_torch_version_is_none_without_torch(probe: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(probe, "package_version", lambda name: None)
    assert probe.torch_version() is None


def test_an_exchange_whose_send_never_ends_is_named_not_a_traceback(probe: Any) -> None:
    """The next rank reads nothing: the send to it blocks past the timeout, and the rank says so in its words."""
    mesh = probe.Mesh(0, 2, 0.5)
    mesh.next, far_end = socket.socketpair()
    mesh.previous, previous_end = socket.socketpair()
    previous_end.sendall(b"x" * 8)
    with pytest.raises(probe.ProbeError, match=r"the send to rank 1 did not end within the health timeout"):
        mesh.exchange(memoryview(b"x" * (64 * 1024 * 1024)), memoryview(bytearray(8)))
    for connection in (mesh.next, far_end, mesh.previous, previous_end):
        connection.close()


def test_the_mpi_version_is_the_one_the_python_sees(probe: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "package_version", lambda name: "2021.18.1" if name == "impi-rt" else None)
    monkeypatch.setenv("I_MPI_ROOT", "/nowhere")
    assert probe.mpi_version() == "2021.18.1"


def test_the_mpi_version_is_read_where_i_mpi_root_installed_it(
    probe: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # oneAPI's pip method: Intel MPI in a virtualenv of its own, which the training environment's Python does not see.
    site = tmp_path / "lib" / "python3.11" / "site-packages" / "impi_rt-2021.18.1.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: impi-rt\nVersion: 2021.18.1\n")
    monkeypatch.setattr(probe, "package_version", lambda name: None)
    monkeypatch.setenv("I_MPI_ROOT", str(tmp_path))
    assert probe.mpi_version() == "2021.18.1"


@pytest.mark.parametrize(("directory", "expected"), [("2021.13", "2021.13"), ("mpi", None)])
def test_the_mpi_version_of_oneapis_layout_is_its_directory(
    probe: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, directory: str, expected: str | None
) -> None:
    (tmp_path / directory).mkdir()
    (tmp_path / "latest").symlink_to(tmp_path / directory)
    monkeypatch.setattr(probe, "package_version", lambda name: None)
    monkeypatch.setenv("I_MPI_ROOT", str(tmp_path / "latest"))
    assert probe.mpi_version() == expected


def test_no_mpi_version_without_intel_mpi(probe: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "package_version", lambda name: None)
    monkeypatch.delenv("I_MPI_ROOT", raising=False)
    assert probe.mpi_version() is None
