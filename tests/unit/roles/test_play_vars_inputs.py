# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job set in a playbook's ``vars`` (or an import_playbook's) is an input like one set with ``-e``, in real
ansible-playbook runs: the preflight judges it, and node_state records the same inputs for it. ``hostvars`` leaves
play vars out; reading it once let a bad value through the preflight and made every run of a job given the other
way miss the provisioning fast path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
INVENTORY = """\
all:
  vars: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
  children:
    launcher: {hosts: {node1: {}}}
    workers: {hosts: {node2: {}}}
"""
PREFLIGHT = """\
- hosts: all
  gather_facts: false
  vars: %s
  tasks:
    - multinode.training.preflight: {}
      run_once: true
"""
RECORD = """\
- hosts: all
  gather_facts: false
  vars: %s
  tasks:
    - multinode.training.node_state: {path: "{{ playbook_dir }}/{{ inventory_hostname }}.record", state: record}
"""
# A provisioning role of the play (not run) whose default follows a fact the run sets later (as oneapi's does).
BEFORE_AND_AFTER_A_FACT = """\
- hosts: all
  gather_facts: false
  roles:
    - {role: multinode.training.host_runtime, when: false}
  tasks:
    - multinode.training.node_state: {path: "{{ playbook_dir }}/{{ inventory_hostname }}.record", state: record}
    - ansible.builtin.set_fact: {oneapi_env_script: /opt/intel/oneapi/setvars.sh}
    - multinode.training.node_state: {path: "{{ playbook_dir }}/{{ inventory_hostname }}.after", state: record}
"""
IMPORTING = """\
- ansible.builtin.import_playbook: %s
  vars: %s
"""


def run_playbook(tmp_path: Path, playbook: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``playbook`` (its text) on two local hosts, with ``extra`` arguments."""
    (tmp_path / "hosts.yml").write_text(INVENTORY, encoding="utf-8")
    (tmp_path / "play.yml").write_text(playbook, encoding="utf-8")
    environ = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), *extra, str(tmp_path / "play.yml")]
    return subprocess.run(command, env=environ, capture_output=True, text=True, check=False, cwd=tmp_path)


def recorded_inputs(tmp_path: Path, playbook: str, *extra: str) -> dict[str, str]:
    """Each host's recorded inputs hash after ``playbook`` ran node_state's record."""
    result = run_playbook(tmp_path, playbook, *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return {path.stem: json.loads(path.read_text(encoding="utf-8"))["inputs"] for path in sorted(tmp_path.glob("*.record"))}


def test_the_preflight_refuses_a_bad_value_set_in_the_plays_vars(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, PREFLIGHT % "{cluster_ssh_port: 0}")
    assert result.returncode != 0
    assert "cluster_ssh_port: 0 is not allowed; use a port from 1 to 65535" in result.stdout


def test_the_preflight_refuses_a_bad_value_given_to_an_imported_playbook(tmp_path: Path) -> None:
    (tmp_path / "job.yml").write_text(PREFLIGHT % "{}", encoding="utf-8")
    result = run_playbook(tmp_path, IMPORTING % (tmp_path / "job.yml", "{cluster_runtime: vm}"))
    assert result.returncode != 0
    assert "cluster_runtime: value of cluster_runtime must be one of: container, host, got: vm" in result.stdout


def test_play_vars_and_extra_vars_record_the_same_inputs(tmp_path: Path) -> None:
    job = {"cluster_runtime": "host", "cluster_ssh_port": 2222}
    (tmp_path / "record.yml").write_text(RECORD % "{}", encoding="utf-8")
    as_extra_vars = recorded_inputs(tmp_path, RECORD % "{}", "-e", json.dumps(job))
    in_play_vars = recorded_inputs(tmp_path, RECORD % json.dumps(job))
    imported = recorded_inputs(tmp_path, IMPORTING % (tmp_path / "record.yml", json.dumps(job)))
    without = recorded_inputs(tmp_path, RECORD % "{}")
    assert set(as_extra_vars) == {"node1", "node2"}
    assert as_extra_vars == in_play_vars == imported
    # the job's values are in the hash: without them it is another one
    assert without["node1"] != as_extra_vars["node1"]


def test_the_roles_defaults_are_not_inputs(tmp_path: Path) -> None:
    """A role default is the collection's code (hashed as such); host_runtime's follows a fact oneapi sets during
    provisioning, so taking it in made the record (after) differ from the next run's check (before)."""
    before = recorded_inputs(tmp_path, BEFORE_AND_AFTER_A_FACT)
    after = {path.stem: json.loads(path.read_text(encoding="utf-8"))["inputs"] for path in sorted(tmp_path.glob("*.after"))}
    assert set(before) == {"node1", "node2"}
    assert before == after
