# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster contract as the cluster role records it, in real ansible-playbook runs: one fact, the same on every
node, whose inputs follow Ansible's precedence (extra vars > host vars > group vars > the role's defaults); and the
preflight refusing a cluster-wide input that one host sets otherwise, before anything changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {name: multinode.training.cluster, tasks_from: contract}
    - ansible.builtin.copy: {content: "{{ cluster | to_json }}", dest: "{{ playbook_dir }}/{{ inventory_hostname }}.json", mode: "0644"}
"""
PREFLIGHT = """\
- hosts: all
  gather_facts: false
  tasks:
    - {multinode.training.preflight: {roles: [cluster]}, run_once: true}
"""
# Every host sets the port (a host variable beats the group's); node2's may differ (the preflight's case).
INVENTORY = """\
all:
  vars: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}", cluster_name: lab}
  children:
    launcher: {hosts: {node1: {cluster_ssh_port: "2222"}}}
    workers: {hosts: {node2: {cluster_ssh_port: "%s"}, node3: {cluster_ssh_port: "2222"}}}
"""


def run_playbook(tmp_path: Path, *extra: str, playbook: str = PLAYBOOK, node2_port: str = "2222") -> subprocess.CompletedProcess[str]:
    """The cluster role's contract tasks on three local hosts: group variables, host variables, ``extra``."""
    (tmp_path / "group_vars").mkdir(exist_ok=True)
    (tmp_path / "group_vars" / "all.yml").write_text("cluster_uid: 2000\ncluster_runtime: host\ncluster_ssh_port: 4444\n", encoding="utf-8")
    (tmp_path / "hosts.yml").write_text(INVENTORY % node2_port, encoding="utf-8")
    (tmp_path / "play.yml").write_text(playbook, encoding="utf-8")
    environ = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), *extra, str(tmp_path / "play.yml")]
    return subprocess.run(command, env=environ, capture_output=True, text=True, check=False, cwd=tmp_path)


def contracts(tmp_path: Path, *extra: str) -> dict[str, dict]:
    """Each host's ``cluster`` fact."""
    result = run_playbook(tmp_path, *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in tmp_path.glob("node*.json")}


def test_the_role_defaults_group_and_host_variables_and_derived_paths(tmp_path: Path) -> None:
    found = contracts(tmp_path)
    assert set(found) == {"node1", "node2", "node3"}
    # one fact, the same on every node
    assert len({json.dumps(fact, sort_keys=True) for fact in found.values()}) == 1
    fact = found["node1"]
    # the role's defaults, an inventory-wide variable
    assert fact["gid"] == 1000 and fact["name"] == "lab" and fact["root"] == "/opt/multinode/lab"
    assert fact["worker_container"] == "lab-worker"
    # group vars beat the defaults, host vars beat group vars; a string from the inventory becomes a number
    assert fact["uid"] == 2000 and fact["ssh_port"] == 2222
    # derived once, from the values that won
    assert fact["runtime"] == "host" and fact["ssh_client_dir"] == "/opt/multinode/lab/home/.ssh"
    assert fact["env_script"] != "" and fact["owner"] == "2000:1000"
    assert fact["hosts"] == ["node1", "node2", "node3"] and fact["launcher_host"] == "node1"


def test_the_preflight_refuses_a_port_one_host_sets_otherwise_changing_nothing(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, playbook=PREFLIGHT, node2_port="2200")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert (
        "cluster_ssh_port: is one value for the whole cluster, but the hosts differ (node1, node3: 2222; node2: 2200);"
        " set it once (for group all, or with -e)"
    ) in output
    assert "changed=0" in output and "changed=1" not in output


def test_the_preflight_passes_the_same_port_on_every_host(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, playbook=PREFLIGHT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_extra_vars_beat_every_inventory_value(tmp_path: Path) -> None:
    found = contracts(tmp_path, "-e", "cluster_ssh_port=3333", "-e", "cluster_uid=3000", "-e", "cluster_runtime=container")
    assert {host: (fact["ssh_port"], fact["uid"], fact["runtime"]) for host, fact in found.items()} == {
        host: (3333, 3000, "container") for host in ("node1", "node2", "node3")
    }
    assert len({json.dumps(fact, sort_keys=True) for fact in found.values()}) == 1


def test_a_bad_runtime_fails_naming_the_input(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, "-e", "cluster_runtime=vm")
    assert result.returncode != 0
    assert "cluster_runtime: 'vm' is not allowed; use 'container' or 'host'" in result.stdout + result.stderr
