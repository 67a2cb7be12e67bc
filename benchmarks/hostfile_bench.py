#!/usr/bin/env python3
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time and memory of the hostfile code for a large cluster (10,000 hosts by default).

  (a) render_hostfile for every dialect, and horovod_hosts_arg;
  (b) parse_hostfile (and detect_dialect) on a hostfile of every line form;
  (c) the multinode.training.hostfile inventory plugin on such a hostfile: in-process through
      InventoryManager, and as ``ansible-inventory --list`` in a subprocess (wall seconds, and max RSS
      from resource.getrusage(RUSAGE_CHILDREN)), next to a 3-host run for the start-up cost.

In-process rows: median wall seconds of --repeats runs, and the tracemalloc peak of one extra run
(Python allocations only). Run from anywhere: .venv/bin/python benchmarks/hostfile_bench.py
Writes benchmarks/results/hostfile_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from functools import partial
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
PLUGIN = "multinode.training.hostfile"
# Read by ansible.constants at import time, and inherited by the ansible-inventory subprocess.
os.environ.setdefault("ANSIBLE_CONFIG", str(REPO / "ansible.cfg"))
os.environ["ANSIBLE_INVENTORY_ENABLED"] = f"{PLUGIN},yaml"
os.environ["ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED"] = "true"

from ansible import __version__ as ansible_version  # noqa: E402
from ansible.inventory.manager import InventoryManager  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.plugins.loader import init_plugin_loader  # noqa: E402

MiB = 1024 * 1024


def measure(func: Callable[[], Any], repeats: int) -> dict[str, float]:
    """Median wall seconds over ``repeats`` runs and the tracemalloc peak (MiB) of one more run."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    try:
        func()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {"seconds": statistics.median(times), "peak_mib": peak / MiB}


# Runs the command and reports its wall seconds and resource.getrusage(RUSAGE_CHILDREN).ru_maxrss (KiB on
# Linux). A small Python in between, because a child's max RSS includes the memory of the process that
# forked it (the kernel counts the pre-exec address space), and this benchmark process is large.
_RUSAGE_WRAPPER = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def run_child(argv: list[str]) -> dict[str, float]:
    """Wall seconds and max RSS (MiB) of one run of ``argv``."""
    result = subprocess.run([sys.executable, "-c", _RUSAGE_WRAPPER, *argv], capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit(f"{' '.join(argv)} failed:\n{result.stderr}")
    usage = json.loads(result.stdout)
    return {"seconds": usage["seconds"], "max_rss_mib": usage["max_rss_kib"] / 1024}


def measure_child(argv: list[str], repeats: int) -> dict[str, float]:
    runs = [run_child(argv) for _ in range(repeats)]
    return {
        "seconds": statistics.median(run["seconds"] for run in runs),
        "max_rss_mib": max(run["max_rss_mib"] for run in runs),
    }


def make_hosts(count: int, hostfile: Any) -> list[Any]:
    """``count`` hosts 10.x.y.z with 8 slots each, named after their address as parse_hostfile names them."""
    addresses = [f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}" for index in range(1, count + 1)]
    return [hostfile.HostEntry(name=address, address=address, slots=8) for address in addresses]


def benchmark(count: int, repeats: int, workdir: Path) -> list[dict[str, Any]]:
    # Imported through Ansible's collection loader, as the plugin itself is.
    from ansible_collections.multinode.training.plugins.module_utils import hostfile

    hosts = make_hosts(count, hostfile)
    rows: list[dict[str, Any]] = []

    for dialect in hostfile.ALL_DIALECTS:
        rows.append(
            {"case": f"(a) render {dialect}", **measure(partial(hostfile.render_hostfile, hosts, dialect), repeats)}
        )
    rows.append({"case": "(a) horovod_hosts_arg", **measure(partial(hostfile.horovod_hosts_arg, hosts), repeats)})

    for dialect in ("intelmpi", "mpich", "openmpi"):
        text = hostfile.render_hostfile(hosts, dialect)
        assert len(hostfile.parse_hostfile(text)) == count
        rows.append(
            {"case": f"(b) parse_hostfile {dialect} form", **measure(partial(hostfile.parse_hostfile, text), repeats)}
        )
    rows.append({"case": "(b) detect_dialect openmpi form", **measure(partial(hostfile.detect_dialect, text), repeats)})

    source = workdir / "big.hostfile"
    source.write_text(hostfile.render_hostfile(hosts, "openmpi"))

    def inventory() -> None:
        manager = InventoryManager(loader=DataLoader(), sources=[str(source)])
        assert len(manager.groups["workers"].hosts) == count - 1

    rows.append({"case": "(c) InventoryManager, in-process", **measure(inventory, repeats)})

    small = workdir / "small.hostfile"
    small.write_text(hostfile.render_hostfile(hosts[:3], "openmpi"))
    cli = str(Path(sys.executable).parent / "ansible-inventory")
    runs = (
        ("--list", "3 hosts, startup baseline", small),
        ("--list", f"{count} hosts", source),
        ("--graph", f"{count} hosts", source),
    )
    for mode, label, path in runs:
        rows.append(
            {"case": f"(c) ansible-inventory {mode}, {label}", **measure_child([cli, "-i", str(path), mode], repeats)}
        )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    width = max(len(row["case"]) for row in rows)
    print(f"{'case':<{width}}  {'seconds':>9}  {'peak MiB':>9}  {'max RSS MiB':>11}")
    for row in rows:
        peak = f"{row['peak_mib']:9.2f}" if "peak_mib" in row else f"{'':9}"
        rss = f"{row['max_rss_mib']:11.1f}" if "max_rss_mib" in row else ""
        print(f"{row['case']:<{width}}  {row['seconds']:9.4f}  {peak}  {rss}".rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10_000, help="number of hosts (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per case (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "hostfile_bench.json")
    args = parser.parse_args()

    init_plugin_loader([str(REPO / "collections")])
    with tempfile.TemporaryDirectory() as workdir:
        rows = benchmark(args.hosts, args.repeats, Path(workdir))
    print_table(rows)

    args.output.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "hosts": args.hosts,
        "repeats": args.repeats,
        "seconds": "median wall seconds of the repeats",
        "peak_mib": "tracemalloc peak of one extra run, Python allocations only",
        "max_rss_mib": "largest ru_maxrss of the ansible-inventory child over the repeats",
        "python": platform.python_version(),
        "ansible_core": ansible_version,
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "results": rows,
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
