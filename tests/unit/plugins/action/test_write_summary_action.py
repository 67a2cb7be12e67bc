# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""multinode.training.write_summary in a play, as the launcher role's tasks call it: it writes a summary the run
schema accepts, reports changed only when the file changes (in check mode too, writing nothing), and fails naming
every problem of one the schema refuses, the file left as it was."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
RECORDED = REPO / "tests/unit/plugins/module_utils/fixtures/summaries/kubernetes-pytorchjob-failed.json"
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - {name: write, multinode.training.write_summary: {run_dir: "{{ run_dir }}", summary: "{{ summary }}"}, register: written}
    - {name: again, multinode.training.write_summary: {run_dir: "{{ run_dir }}", summary: "{{ summary }}"}, register: again}
    - name: another, in check mode
      multinode.training.write_summary: {run_dir: "{{ run_dir }}", summary: "{{ summary | combine({'timed_out': true}) }}"}
      check_mode: true
      register: checked
    - name: a broken one
      multinode.training.write_summary: {run_dir: "{{ run_dir }}", summary: "{{ summary | combine({'status': 'done', 'failure_reasons': 'lost'}) }}"}
      register: refused
      ignore_errors: true
    - ansible.builtin.copy:
        content: "{{ {'written': written, 'again': again, 'checked': checked, 'refused': refused} | to_json }}"
        dest: "{{ playbook_dir }}/results.json"
        mode: "0600"
"""


def test_write_summary_in_a_play(tmp_path: Path) -> None:
    summary = json.loads(RECORDED.read_text())
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps({"run_dir": str(tmp_path / "run"), "summary": summary}))
    environ = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-e", "@vars.json", "--diff", "play.yml"]
    played = subprocess.run(command, env=environ, capture_output=True, text=True, check=False, cwd=tmp_path, timeout=300)
    assert played.returncode == 0, played.stdout + played.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    path = tmp_path / "run" / "summary.json"

    assert results["written"]["changed"] and results["written"]["path"] == str(path)
    assert json.loads(path.read_text()) == summary
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not results["again"]["changed"]
    assert results["checked"]["changed"]
    assert '"timed_out": true' in results["checked"]["diff"]["after"]
    assert not json.loads(path.read_text())["timed_out"]
    assert results["refused"]["failed"]
    assert sorted(results["refused"]["problems"]) == [
        "failure_reasons: expected array, got string",
        "status: expected one of 'succeeded', 'failed', 'cancelled', got 'done'",
    ]
    assert "failure_reasons: expected array, got string" in results["refused"]["msg"]
    assert json.loads(path.read_text()) == summary
    assert sorted(item.name for item in path.parent.iterdir()) == ["summary.json"]
