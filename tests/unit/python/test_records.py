"""multinode_training.records: ansible-runner events in, typed records out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from multinode_training.records import PLAY_PHASES, TASK_FILE_PHASES, Failure, PhaseChanged, PlanShown, Translator

ROOT = Path(__file__).resolve().parents[3]
RECORDED = Path(__file__).parent / "events"


def play(name: str) -> dict[str, Any]:
    return {"event": "playbook_on_play_start", "event_data": {"play": name, "name": name}}


def task(name: str, path: str = "/c/roles/cluster/tasks/main.yml:4") -> dict[str, Any]:
    return {"event": "playbook_on_task_start", "event_data": {"task": name, "task_path": path}}


def result(kind: str, host: str, task_name: str = "t", **res: Any) -> dict[str, Any]:
    return {"event": kind, "event_data": {"host": host, "task": task_name, "res": res}}


def test_every_play_of_the_playbooks_has_a_phase() -> None:
    names = {
        play_doc["name"]
        for playbook in ("provision.yml", "launch.yml")
        for play_doc in yaml.safe_load((ROOT / "playbooks" / playbook).read_text())
    }
    assert names == set(PLAY_PHASES)


def test_the_task_files_named_for_phases_exist() -> None:
    assert all((ROOT / "roles" / "launcher" / "tasks" / name).exists() for name in TASK_FILE_PHASES)


def test_phases_move_forward_with_the_counts_of_the_phase_that_ended() -> None:
    translate = Translator()
    stream = [
        play("Preflight and cluster facts"),
        result("runner_on_ok", "node1"),
        result("runner_on_ok", "node1", changed=True),
        result("runner_on_skipped", "node2"),
        play("Cluster facts"),
        task("Run the job", "/c/roles/launcher/tasks/run_container.yml:20"),
        result("runner_on_ok", "node1"),
        task("Collect", "/c/roles/launcher/tasks/collect.yml:5"),
        # a later cluster-role task does not move the phase back
        task("Gather", "/c/roles/cluster/tasks/main.yml:10"),
    ]
    records = [record for event in stream for record in translate(event)]
    assert [(r.previous, r.phase) for r in records if isinstance(r, PhaseChanged)] == [
        (None, "provision"),
        ("provision", "launch"),
        ("launch", "train"),
        ("train", "collect"),
    ]
    assert records[1].task_counts == {"node1": {"ok": 1, "changed": 1}, "node2": {"skipped": 1}}
    assert translate.totals() == {"node1": {"ok": 2, "changed": 1}, "node2": {"skipped": 1}}


def test_a_restarted_attempt_trains_again_after_its_collection() -> None:
    # The restart policy relaunches the job: the next attempt's run_container.yml follows attempt 1's collect.yml.
    translate = Translator()
    stream = [
        play("Cluster facts"),
        task("Run the job", "/c/roles/launcher/tasks/run_container.yml:20"),
        task("Collect", "/c/roles/launcher/tasks/collect.yml:5"),
        task("Restart the worker", "/c/roles/workers/tasks/main.yml:3"),
        task("Run the job", "/c/roles/launcher/tasks/run_container.yml:20"),
        task("Collect", "/c/roles/launcher/tasks/collect.yml:5"),
    ]
    records = [record for event in stream for record in translate(event)]
    assert [record.phase for record in records if isinstance(record, PhaseChanged)] == [
        "launch", "train", "collect", "train", "collect"
    ]


def test_failures_carry_the_reason_unless_ignored() -> None:
    translate = Translator()
    failed = result("runner_on_failed", "node2", "Check", msg="cluster_ssh_port: 70000 is not allowed")
    ignored = {**result("runner_on_failed", "node3", "Probe", msg="x"), "event_data": {
        **result("runner_on_failed", "node3", "Probe", msg="x")["event_data"], "ignore_errors": True}}
    unreachable = result("runner_on_unreachable", "node4", "Gather", msg="No route to host")
    records = translate(failed) + translate(ignored) + translate(unreachable)
    assert records == [
        Failure("node2", "Check", "cluster_ssh_port: 70000 is not allowed"),
        Failure("node4", "Gather", "No route to host"),
    ]


def test_the_plan_comes_from_the_show_the_plan_task() -> None:
    plan = {"world_size": 3, "hostfile": "a\n"}
    records = Translator()(result("runner_on_ok", "node1", "multinode.training.launcher : Show the plan", msg=plan))
    assert records == [PlanShown(plan)]


@pytest.mark.parametrize("stream", sorted(RECORDED.glob("*.jsonl")), ids=lambda path: path.stem)
def test_recorded_streams(stream: Path) -> None:
    """Streams recorded from real runs against the sim cluster; each file's first line says what to expect."""
    lines = stream.read_text().splitlines()
    expected = json.loads(lines[0])
    translate = Translator()
    records = [record for line in lines[1:] for record in translate(json.loads(line))]
    phases = [record.phase for record in records if isinstance(record, PhaseChanged)]
    assert phases == expected["phases"]
    assert len([r for r in records if isinstance(r, Failure)]) == expected["failures"]
    assert len([r for r in records if isinstance(r, PlanShown)]) == expected["plans"]
    assert sum(counts.get("changed", 0) for counts in translate.totals().values()) == expected["changed"]
