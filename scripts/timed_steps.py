#!/usr/bin/env python3
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run make targets in turn, each timed, and say per step what it downloaded and wrote (make demo):

    scripts/timed_steps.py venv+images sim train -- .venv/bin/multinode-training show latest

Steps joined by + run side by side; the command after ``--`` runs last, untimed, before the times are printed. For each step the machine's own counters are read before and after: the bytes
its network interfaces received (the physical ones: not loopback, bridges or veth pairs, so the simulated nodes'
traffic is left out) and the bytes written to its disks (/proc/diskstats, whole disks only), each with its rate.
A step that downloads little at a low rate shows a slow network; one that writes a lot at a low rate a slow disk.
The counters are the machine's: whatever else runs meanwhile is counted too. Plain Python (it runs before the venv
exists).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SECTOR_BYTES = 512
NET = Path("/sys/class/net")
BLOCK = Path("/sys/block")


@dataclass(frozen=True)
class Counters:
    """The machine's bytes received and written so far, and when they were read."""

    at: float
    received: int
    written: int


def physical_interfaces(net: Path = NET) -> set[str]:
    """The interfaces backed by a device (a NIC, a VM's virtio); empty where /sys says nothing."""
    return {path.name for path in net.iterdir() if (path / "device").exists()} if net.is_dir() else set()


def received_bytes(proc_net_dev: str, interfaces: set[str]) -> int:
    """The bytes ``interfaces`` received, from /proc/net/dev's text; every interface but the virtual kinds when
    ``interfaces`` is empty."""
    total = 0
    for line in proc_net_dev.splitlines()[2:]:
        name, _, fields = line.partition(":")
        name = name.strip()
        virtual = name == "lo" or name.startswith(("veth", "br-", "docker", "ifb"))
        if (name in interfaces) if interfaces else not virtual:
            total += int(fields.split()[0])
    return total


def whole_disks(block: Path = BLOCK) -> set[str]:
    """The block devices backed by a device (not loop, ram or zram devices, not partitions)."""
    return {path.name for path in block.iterdir() if (path / "device").exists()} if block.is_dir() else set()


def written_bytes(diskstats: str, disks: set[str]) -> int:
    """The bytes written to ``disks``, from /proc/diskstats's text (its tenth field: sectors written)."""
    total = 0
    for line in diskstats.splitlines():
        fields = line.split()
        if len(fields) > 9 and fields[2] in disks:
            total += int(fields[9]) * SECTOR_BYTES
    return total


def read_counters() -> Counters:
    def text(path: str) -> str:
        try:
            return Path(path).read_text()
        except OSError:
            return ""

    return Counters(
        at=time.monotonic(),
        received=received_bytes(text("/proc/net/dev"), physical_interfaces()),
        written=written_bytes(text("/proc/diskstats"), whole_disks()),
    )


def size(count: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return ""


def step_line(name: str, before: Counters, after: Counters) -> str:
    """One step's line: its seconds, then what it downloaded and wrote, each with its rate."""
    seconds = max(after.at - before.at, 0.001)
    received, written = after.received - before.received, after.written - before.written
    return (
        f"  {name:<12} {seconds:5.0f} s   downloaded {size(received):>8} ({size(received / seconds)}/s)"
        f"   wrote {size(written):>8} ({size(written / seconds)}/s)"
    )


def run_step(step: str) -> bool:
    """The step's targets side by side; False as soon as one failed (the others are stopped then)."""
    processes = [subprocess.Popen(["make", "--no-print-directory", target]) for target in step.split("+")]
    while True:
        codes = [process.poll() for process in processes]
        if any(code not in (None, 0) for code in codes):
            for process in processes:
                if process.poll() is None:
                    process.terminate()
            for process in processes:
                process.wait()
            return False
        if all(code == 0 for code in codes):
            return True
        time.sleep(0.2)


def split_command(arguments: list[str]) -> tuple[list[str], list[str]]:
    """The steps, and the command after ``--`` (empty without one)."""
    if "--" not in arguments:
        return arguments, []
    cut = arguments.index("--")
    return arguments[:cut], arguments[cut + 1 :]


def main(arguments: list[str]) -> int:
    steps, then = split_command(arguments)
    lines = []
    began = read_counters()
    for step in steps:
        before = read_counters()
        ok = run_step(step)
        lines.append(step_line(step, before, read_counters()))
        if not ok:
            print("\n".join(["", f"{step} failed; time per step until then:", *lines]), file=sys.stderr)
            return 1
    ended = read_counters()
    if then and subprocess.call(then) != 0:
        return 1
    print("\n".join(["", "make demo, time per step (the machine's network received and disk writes):", *lines]))
    print(step_line("total", began, ended))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
