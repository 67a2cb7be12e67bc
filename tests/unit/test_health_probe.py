# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health probe's order of turns and ring sends (roles/health/files/health_probe.py), on a stand-in for
torch.distributed whose ranks are threads: a send waits until its receiver has taken it, as a large gloo send does,
so an order that could hang on real nodes hangs here (and fails on the join's timeout)."""

from __future__ import annotations

import importlib.util
import queue
import sys
import threading
import types
from pathlib import Path
from typing import Any, Callable

import pytest

PROBE = Path(__file__).resolve().parents[2] / "roles" / "health" / "files" / "health_probe.py"
JOIN_SECONDS = 10


class Ranks:
    """torch.distributed's point-to-point calls between threads, each thread one rank; every call is logged."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.channels: dict[tuple[int, int, int], queue.Queue[threading.Event]] = {}
        self.lock = threading.Lock()
        self.log: list[tuple[str, int, int]] = []

    def channel(self, source: int, destination: int, tag: int) -> queue.Queue[threading.Event]:
        with self.lock:
            return self.channels.setdefault((source, destination, tag), queue.Queue())

    def record(self, *entry: Any) -> None:
        with self.lock:
            self.log.append(entry)

    def get_rank(self) -> int:
        return self.local.rank

    def send(self, _tensor: Any, dst: int, tag: int = 0) -> None:
        taken = threading.Event()
        self.record("send", self.get_rank(), dst)
        self.channel(self.get_rank(), dst, tag).put(taken)
        assert taken.wait(JOIN_SECONDS), f"rank {self.get_rank()}: nobody took its send to {dst}"

    def recv(self, _tensor: Any, src: int, tag: int = 0) -> None:
        taken = self.channel(src, self.get_rank(), tag).get(timeout=JOIN_SECONDS)
        taken.set()

    def run(self, world: int, work: Callable[[int], None]) -> None:
        """``work(rank)`` on ``world`` threads; fails when any of them fails or does not end."""
        errors: list[BaseException] = []

        def rank_thread(rank: int) -> None:
            self.local.rank = rank
            try:
                work(rank)
            except BaseException as error:  # pylint: disable=broad-exception-caught  # reported below
                errors.append(error)

        threads = [threading.Thread(target=rank_thread, args=(rank,), daemon=True) for rank in range(world)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_SECONDS * 3)
        assert not [thread for thread in threads if thread.is_alive()], "ranks still waiting: the order hangs"
        assert errors == []


@pytest.fixture(name="ranks")
def fixture_ranks() -> Ranks:
    return Ranks()


@pytest.fixture(name="probe")
def fixture_probe(ranks: Ranks, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The probe's module, loaded with torch and torch.distributed stood in for."""
    torch = types.ModuleType("torch")
    torch.zeros = lambda *shape: list(shape)  # type: ignore[attr-defined]
    torch.distributed = ranks  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.distributed", ranks)  # type: ignore[arg-type]
    spec = importlib.util.spec_from_file_location("health_probe_under_test", PROBE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def timed_send(payload: Any, destination: int) -> float:
        ranks.send(payload, destination)
        return 1.0

    monkeypatch.setattr(module, "timed_send", timed_send)
    return module


def test_turn_order_is_the_group_in_every_round_rotated_by_one(probe: Any) -> None:
    # As the turns went when a barrier separated them: in round k, rank group[(slot - k) % n] measured in slot.
    assert probe.turn_order([3, 5, 9], 3) == [3, 5, 9, 9, 3, 5, 5, 9, 3]
    assert probe.turn_order([4], 3) == [4, 4, 4]


def test_neighbours_skip_a_rank_handing_the_turn_to_itself(probe: Any) -> None:
    order = [3, 5, 9, 9, 3, 5]
    assert [probe.neighbours(order, position) for position in range(len(order))] == [
        (None, 5),
        (3, 9),
        (5, None),
        (None, 3),
        (9, 5),
        (3, None),
    ]


@pytest.mark.parametrize(
    "kernels",
    [
        pytest.param([0, 0, 0], id="three nodes on one server"),
        pytest.param([0, 1, 2, 3], id="four servers"),
        pytest.param([0, 1, 0, 1, 1, 0, 2], id="seven nodes on three servers"),
    ],
)
def test_every_rank_measures_its_turns_in_its_servers_order_and_none_hangs(
    probe: Any, ranks: Ranks, kernels: list[int]
) -> None:
    turns = max(kernels.count(kernel) for kernel in kernels)
    round_count = probe.rounds(turns)
    orders = {
        kernel: probe.turn_order([rank for rank, mine in enumerate(kernels) if mine == kernel], round_count)
        for kernel in set(kernels)
    }

    def work(rank: int) -> None:
        probe.take_turns(orders[kernels[rank]], lambda: ranks.record("measure", rank, kernels[rank]))

    ranks.run(len(kernels), work)
    for kernel, order in orders.items():
        measured = [entry[1] for entry in ranks.log if entry[0] == "measure" and entry[2] == kernel]
        assert measured == order


@pytest.mark.parametrize("world", [2, 3, 8])
def test_the_ring_in_order_sends_one_after_another_around_the_ring(probe: Any, ranks: Ranks, world: int) -> None:
    timings: dict[int, list[float]] = {}

    def work(rank: int) -> None:
        timings[rank] = probe.ring_in_order(rank, world, None, None, 3)

    ranks.run(world, work)
    sends = [(entry[1], entry[2]) for entry in ranks.log if entry[0] == "send"]
    assert sends == [(rank, (rank + 1) % world) for _ in range(3) for rank in range(world)]
    assert all(len(timings[rank]) == 3 for rank in range(world))


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
