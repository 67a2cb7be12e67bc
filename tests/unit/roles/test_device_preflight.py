# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launcher role's device check (tasks/devices.yml), in real ansible-playbook runs: launcher_backend=xccl is
refused, naming the hosts and the variable, on nodes whose facts show no /dev/dri render node."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# Each host's cluster_node as the cluster role records it, its DRI devices from the inventory; then the check.
PLAYBOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact: {cluster_node: {dri_devices: "{{ devices }}"}}
    - ansible.builtin.include_role: {name: multinode.training.launcher, tasks_from: devices}
"""
INVENTORY = """\
all:
  vars: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
  hosts:
    node1: {devices: [/dev/dri/card0, /dev/dri/renderD128]}
    node2: {devices: []}
    node3: {devices: [/dev/dri/card1]}
"""
NO_RENDER_NODE = (
    "host node2, node3: launcher_backend: 'xccl' runs every rank on an Intel GPU, and no render node"
    " (/dev/dri/renderD*) was found on the node; use gloo, ccl or mpi on CPU nodes, or load the GPU's kernel driver"
    " (i915 or xe)"
)


def run_playbook(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "hosts.yml").write_text(INVENTORY, encoding="utf-8")
    (tmp_path / "play.yml").write_text(PLAYBOOK, encoding="utf-8")
    environ = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    command = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        str(tmp_path / "hosts.yml"),
        *extra,
        str(tmp_path / "play.yml"),
    ]
    return subprocess.run(command, env=environ, capture_output=True, text=True, check=False, cwd=tmp_path)


def test_xccl_on_nodes_without_a_render_node_fails_naming_them(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, "-e", "launcher_backend=xccl")
    assert result.returncode != 0
    assert NO_RENDER_NODE in " ".join((result.stdout + result.stderr).split())


def test_the_cpu_backends_need_no_device(tmp_path: Path) -> None:
    for extra in ((), ("-e", "launcher_backend=ccl")):
        result = run_playbook(tmp_path, *extra)
        assert result.returncode == 0, result.stdout + result.stderr


def test_xccl_on_a_node_with_a_render_node_passes(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, "-e", "launcher_backend=xccl", "--limit", "node1")
    assert result.returncode == 0, result.stdout + result.stderr
