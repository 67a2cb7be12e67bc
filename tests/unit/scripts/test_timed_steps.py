# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/timed_steps.py (make demo): each step timed, with the bytes the machine downloaded and wrote meanwhile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.multinode.training.tests.unit.scripts.conftest import load_script

STEPS = load_script("timed_steps")
NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 38335616   38529    0    0    0     0          0         0 38335616   38529    0    0    0     0       0          0
  eth0: 25099970670  521481    0    0    0     0          0         0 23378944  287662    0    0    0     0       0          0
docker0:  871795   14989    0    0    0     0          0         0 1579691405   29396    0    5    0     0       0          0
br-1a2b: 5000   10    0    0    0     0          0         0 7000   29396    0    5    0     0       0          0
vethab12: 9000   10    0    0    0     0          0         0 7000   29396    0    5    0     0       0          0
"""
DISKSTATS = """   7       0 loop0 10 0 80 0 5 0 4000 0 0 0 0 0 0 0 0 0 0
 253       0 vda 1000 0 2000 0 300 0 1000 0 0 0 0 0 0 0 0 0 0
 253       1 vda1 1000 0 2000 0 300 0 900 0 0 0 0 0 0 0 0 0 0
"""


def test_received_bytes_of_the_physical_interfaces_only() -> None:
    assert STEPS.received_bytes(NET_DEV, {"eth0"}) == 25099970670


def test_without_device_information_every_interface_but_the_virtual_kinds_counts() -> None:
    assert STEPS.received_bytes(NET_DEV, set()) == 25099970670


def test_written_bytes_of_whole_disks_only() -> None:
    assert STEPS.written_bytes(DISKSTATS, {"vda"}) == 1000 * 512


def test_the_machine_s_counters_are_read_and_grow() -> None:
    before = STEPS.read_counters()
    after = STEPS.read_counters()
    assert after.at >= before.at and after.received >= before.received >= 0 and after.written >= before.written >= 0


def test_a_step_line_gives_seconds_bytes_and_rates() -> None:
    line = STEPS.step_line("images", STEPS.Counters(0.0, 0, 0), STEPS.Counters(100.0, 2_000_000_000, 350_000_000))
    assert line.split() == ["images", "100", "s", "downloaded", "2.0", "GB", "(20.0", "MB/s)", "wrote", "350.0", "MB", "(3.5", "MB/s)"]


def test_the_command_after_the_steps() -> None:
    assert STEPS.split_command(["venv+images", "sim", "--", "show", "latest"]) == (["venv+images", "sim"], ["show", "latest"])
    assert STEPS.split_command(["train"]) == (["train"], [])


@pytest.fixture()
def makefile_dir(tmp_path: Path) -> Path:
    (tmp_path / "Makefile").write_text("ok:\n\t@touch ok\nbad:\n\t@exit 3\nslow:\n\t@sleep 30\n")
    return tmp_path


def test_steps_run_as_make_targets_side_by_side_and_a_failure_stops_the_others(makefile_dir: Path) -> None:
    cwd = os.getcwd()
    os.chdir(makefile_dir)
    try:
        assert STEPS.run_step("ok") is True and (makefile_dir / "ok").exists()
        assert STEPS.run_step("slow+bad") is False
    finally:
        os.chdir(cwd)
