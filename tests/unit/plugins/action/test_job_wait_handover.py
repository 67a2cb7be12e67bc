# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""job_wait keeps what a later process needs to take the job over (follow.json), takes over from it (resume), and
stops following once the ansible-playbook it ran for has gone."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.multinode.training.plugins.action import job_wait
from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.plugin_utils.follow import (
    FOLLOW_STATE,
    FOLLOWING_FILE,
    PROGRESS_FILE,
    Follower,
    keep_handover,
    keep_offsets,
    recorded_follow_state,
)

HANDOVER = {"vars": {"launcher_type": "mpiexec", "launcher_world_size": 2}, "runtime": "container"}
JOB_DIR = "/opt/multinode/lab/work/jobs/job-1"
ARGS = {
    "job_dir": JOB_DIR, "timeout": 60, "poll": 0.0, "check_pid": False, "liveness_every": 10, "container": None,
    "until": "launcher_exit", "world_size": 2, "resume": False, "handover": HANDOVER, "secret_env_names": [],
}
TASK_VARS = {"inventory_hostname": "node1", "ansible_inventory_sources": ["/srv/hosts.yml"], "ansible_config_file": ""}


def rank_line(rank: int, text: str) -> str:
    return f"[rank {rank} node1] {text}\n"


def launcher_exit(code: int) -> str:
    return json.dumps({"event": events.LAUNCHER_EXIT, "time": 1.0, "code": code}) + "\n"


class Node:
    """The launcher node's job_status answers, one read after the other; what each read was asked."""

    def __init__(self, reads: list[dict[str, str]]) -> None:
        self.reads = iter(reads)
        self.asked: list[dict[str, Any]] = []
        self.offsets: dict[str, int] = {}

    def __call__(self, _action: Any, _module: str, _task_vars: Any, module_args: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(module_args)
        chunks = next(self.reads, {})
        for name, text in chunks.items():
            self.offsets[name] = module_args.get("offsets", {}).get(name, 0) + len(text)
        return {"chunks": chunks, "offsets": dict(self.offsets), "launcher_running": True}


@pytest.fixture
def action() -> job_wait.ActionModule:
    module = job_wait.ActionModule.__new__(job_wait.ActionModule)
    module._play_context = SimpleNamespace(become=True)
    return module


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> Iterator[Node]:
    reads = [
        {"node1.log": rank_line(0, events.RANK_STARTED) + rank_line(1, events.RANK_STARTED)},
        {"node1.log": rank_line(0, "epoch 1")},
        {"launcher.log": launcher_exit(0)},
    ]
    fake = Node(reads)
    monkeypatch.setattr(job_wait, "execute", fake)
    yield fake


def follow(action: job_wait.ActionModule, run_dir: Path, **args: Any) -> tuple[str, bool, dict[str, int], Any]:
    wanted = {**ARGS, **args}
    offsets = action._starting_offsets(wanted, run_dir, TASK_VARS)
    follower = Follower(run_dir=run_dir, world_size=2)
    return action._follow(wanted, follower, run_dir / "cancel", offsets, TASK_VARS)


def test_the_handover_is_kept_and_the_offsets_read_after_each_read(
    action: job_wait.ActionModule, node: Node, tmp_path: Path
) -> None:
    ended_by, _, offsets, _ = follow(action, tmp_path)
    assert ended_by == "launcher_exit"
    state = recorded_follow_state(tmp_path)
    assert state == {"handover": HANDOVER, "offsets": offsets}
    assert offsets == node.offsets


def test_a_take_over_reads_on_from_the_recorded_offsets_and_becomes_the_follower(
    action: job_wait.ActionModule, node: Node, tmp_path: Path
) -> None:
    recorded = {"node1.log": 120, "launcher.log": 40}
    keep_handover(tmp_path, HANDOVER)
    keep_offsets(tmp_path, recorded)
    (tmp_path / FOLLOWING_FILE).write_text(json.dumps({"pid": 1, "extra_vars": {"cluster_runtime": "host"}}))
    follow(action, tmp_path, resume=True, handover={"vars": {"launcher_type": "torchrun"}})
    assert node.asked[0]["offsets"] == recorded
    # The handover recorded by the job's own launch is kept, not the one of the run taking it over.
    assert json.loads((tmp_path / FOLLOW_STATE).read_text())["handover"] == HANDOVER
    following = json.loads((tmp_path / FOLLOWING_FILE).read_text())
    assert following["pid"] == os.getppid()
    assert following["launcher_host"] == "node1" and following["job_dir"] == JOB_DIR
    assert following["extra_vars"] == {"cluster_runtime": "host"}, "the job's own, kept for whoever comes next"


def test_a_take_over_without_a_follow_state_names_it_and_writes_nothing(
    action: job_wait.ActionModule, node: Node, tmp_path: Path
) -> None:
    with pytest.raises(AnsibleActionFail, match=f"no {FOLLOW_STATE}.*never followed"):
        follow(action, tmp_path, resume=True)
    assert not node.asked
    assert not list(tmp_path.iterdir())


def test_a_worker_whose_playbook_has_gone_stops_without_writing(
    action: job_wait.ActionModule, node: Node, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ansible-playbook dies while the first read is on the node: its worker is taken in by another process.
    parents = iter([4242, 4242])
    monkeypatch.setattr(job_wait.os, "getppid", lambda: next(parents, 1))
    with pytest.raises(AnsibleActionFail, match="pid 4242.*has gone"):
        follow(action, tmp_path)
    assert len(node.asked) == 1
    assert not (tmp_path / PROGRESS_FILE).exists()
    assert recorded_follow_state(tmp_path)["offsets"] == {}, "no read recorded after its playbook had gone"


SECRET = "s3cr3t-value"


def test_follow_json_keeps_every_node_s_environment_with_its_secret_values_masked(
    action: job_wait.ActionModule, node: Node, tmp_path: Path
) -> None:
    env = {"HF_TOKEN": SECRET, "MY_NOTE": SECRET + "-2", "KMP_BLOCKTIME": "1"}
    handover = {**HANDOVER, "tuning": {"node1": {"slots": 2, "env": env}, "node2": {"slots": 2, "env": env}}}
    follow(action, tmp_path, handover=handover, secret_env_names=["MY_NOTE"])
    written = (tmp_path / FOLLOW_STATE).read_bytes()
    assert SECRET.encode() not in written
    tuning = json.loads(written)["handover"]["tuning"]
    assert tuning["node2"] == {"slots": 2, "env": {"HF_TOKEN": "***", "MY_NOTE": "***", "KMP_BLOCKTIME": "1"}}
    assert all(oct(path.stat().st_mode & 0o777) == oct(0o600) for path in tmp_path.iterdir())
