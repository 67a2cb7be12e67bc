#!/usr/bin/env python3
"""Benchmark: render the ssh_mesh role's client config and known_hosts for N hosts.

Uses Ansible's own templating engine on the role's real templates (roles/ssh_mesh/templates),
with each host's public host key in its hostvars, as the role's key generation task registers it.
Prints seconds and peak Python memory, and writes benchmarks/results/ssh_mesh_bench.json.

    .venv/bin/python benchmarks/ssh_mesh_bench.py [--hosts 10000]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "roles" / "ssh_mesh" / "templates"
RESULTS = ROOT / "benchmarks" / "results" / "ssh_mesh_bench.json"
FAKE_PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchmarkBenchmarkBenchmarkBenchmarkBench node"


def host_names(count: int) -> list[str]:
    return [f"node{index:05d}" for index in range(count)]


def address(index: int) -> str:
    return f"10.{index // 65536}.{index // 256 % 256}.{index % 256}"


def template_vars(hosts: list[str]) -> dict[str, Any]:
    return {
        "ansible_managed": "Ansible managed",
        "cluster": {"hosts": hosts, "ssh_port": 12345, "user": "dev"},
        "hostvars": {
            host: {"cluster_node": {"address": address(index)}, "ssh_mesh_host_key": {"public_key": FAKE_PUBKEY}}
            for index, host in enumerate(hosts)
        },
    }


def render(name: str, variables: dict[str, Any]) -> tuple[str, float, int]:
    templar = Templar(loader=DataLoader(), variables=variables)
    source = trust_as_template((TEMPLATES / name).read_text())
    tracemalloc.start()
    started = time.perf_counter()
    text = templar.template(source)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return text, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    count = parser.parse_args().hosts
    init_plugin_loader()
    hosts = host_names(count)
    results: dict[str, Any] = {"hosts": count}
    variables = template_vars(hosts)
    for name in ("ssh_config.j2", "known_hosts.j2"):
        text, seconds, peak = render(name, variables)
        results[name] = {"seconds": round(seconds, 3), "peak_mib": round(peak / 2**20, 1), "lines": text.count("\n")}
        print(f"{name:16} {count} hosts: {seconds:7.3f} s, peak {peak / 2**20:7.1f} MiB, {text.count(chr(10))} lines")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
