#!/usr/bin/python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: run_summary
short_description: Summarize a collected training run into summary.json
version_added: 0.1.0
description:
  - Reads every C(*.log) file under O(run_dir) (the logs the launcher role fetched from all nodes), finds the
    JSON events the training job and the launch scripts print (C(launch), C(joined), C(epoch), C(result),
    C(exit), C(done), C(node_exit), C(launcher_exit)) and writes O(run_dir)/summary.json.
  - The run succeeded only if the launcher exited 0, it did not time out, every rank reported exit code 0
    and C(done), and a C(result) was printed. Otherwise RV(summary.failure_reasons) names the ranks and nodes.
  - Runs on the controller (delegate it to localhost).
author:
  - multinode.training team
attributes:
  check_mode:
    support: full
    description: Computes the summary and reports changed, writes nothing.
  diff_mode:
    support: none
    description: The summary is returned instead.
options:
  run_dir:
    description: Directory holding the collected logs; summary.json is written here.
    type: path
    required: true
  job_id:
    description: The job's id.
    type: str
    required: true
  launcher:
    description: Launcher that ran the job.
    type: str
    required: true
  nodes:
    description: Cluster addresses of the nodes, launcher first.
    type: list
    elements: str
    required: true
  node_names:
    description: Inventory names of the nodes, in the order of O(nodes).
    type: list
    elements: str
    required: true
  world_size:
    description: Number of ranks the job was launched with.
    type: int
    required: true
  launcher_exit_code:
    description: Exit code of the launcher container; -1 when it did not end.
    type: int
    required: true
  timed_out:
    description: Whether the job hit its timeout.
    type: bool
    default: false
  phase_stats:
    description:
      - Changed tasks and seconds per playbook phase, as published by the C(multinode.training.phase_stats)
        callback. Each phase name maps to a dict with the keys C(changed) and C(seconds).
      - Empty when the callback is not enabled.
    type: dict
    default: {}
  settings:
    description: Launch settings to record in the summary (threads, environment, interfaces, ...).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write the run summary
  multinode.training.run_summary:
    run_dir: "{{ playbook_dir }}/../runs/20261122-101500-torchrun"
    job_id: 20261122-101500-torchrun
    launcher: torchrun
    nodes: [172.30.77.11, 172.30.77.12, 172.30.77.13]
    node_names: [node1, node2, node3]
    world_size: 3
    launcher_exit_code: 0
    phase_stats: "{{ lookup('ansible.builtin.env', 'MULTINODE_TRAINING_PHASE_STATS', default='{}') | from_json }}"
  delegate_to: localhost
  register: run
"""

RETURN = r"""
path:
  description: Path of the summary file.
  returned: always
  type: str
summary:
  description: The summary written to summary.json.
  returned: always
  type: dict
  contains:
    status:
      description: C(succeeded) or C(failed).
      type: str
    failure_reasons:
      description: Why the run failed, each naming the rank or node.
      type: list
      elements: str
    test_accuracy:
      description: Test accuracy printed by rank 0, or null.
      type: float
    world_size:
      description: Ranks launched.
      type: int
    provision_changed:
      description: Changed tasks in the provisioning phase of this playbook run (null without the callback).
      type: int
    phases:
      description: Seconds of the provision, launch (launcher start until every rank joined) and train phases.
      type: dict
    rank_exit_codes:
      description: Exit code of each rank that reported one, by rank.
      type: dict
"""

import json
import os
import tempfile
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.multinode.training.plugins.module_utils.run_report import parse_events, summarize


def read_events(run_dir: Path) -> list[dict]:
    events: list[dict] = []
    for log in sorted(run_dir.rglob("*.log")):
        events.extend(parse_events(log.read_text(errors="replace")))
    return events


def write_json(path: Path, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".summary.")
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            run_dir=dict(type="path", required=True),
            job_id=dict(type="str", required=True),
            launcher=dict(type="str", required=True),
            nodes=dict(type="list", elements="str", required=True),
            node_names=dict(type="list", elements="str", required=True),
            world_size=dict(type="int", required=True),
            launcher_exit_code=dict(type="int", required=True),
            timed_out=dict(type="bool", default=False),
            phase_stats=dict(type="dict", default={}),
            settings=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    run_dir = Path(params["run_dir"])
    provision = params["phase_stats"].get("provision", {})
    summary = summarize(
        job_id=params["job_id"],
        launcher=params["launcher"],
        nodes=params["nodes"],
        node_names=params["node_names"],
        world_size=params["world_size"],
        launcher_exit_code=params["launcher_exit_code"],
        events=read_events(run_dir),
        provision_seconds=provision.get("seconds"),
        provision_changed=provision.get("changed"),
        timed_out=params["timed_out"],
        extra=params["settings"],
    )
    path = run_dir / "summary.json"
    if not module.check_mode:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(path, summary)
    module.exit_json(changed=True, path=str(path), summary=summary)


if __name__ == "__main__":
    main()
