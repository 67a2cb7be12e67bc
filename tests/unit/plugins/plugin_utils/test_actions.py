"""The node temp directory an action uses: the one its task has already, never a second one left behind."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.multinode.training.plugins.plugin_utils.actions import node_temp_directory


class FakeAction:
    """What node_temp_directory reads of an ActionBase: the shell's current temp directory, and making one."""

    def __init__(self, tmpdir: str | None) -> None:
        self._connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir=tmpdir))
        self.made: list[str] = []

    def _make_tmp_path(self) -> str:
        path = f"/root/.ansible/tmp/ansible-tmp-{len(self.made) + 1}"
        self.made.append(path)
        self._connection._shell.tmpdir = path
        return path


def test_the_directory_the_task_made_already_is_used_and_no_second_one_is_made() -> None:
    action = FakeAction("/root/.ansible/tmp/ansible-tmp-early")
    assert node_temp_directory(action) == "/root/.ansible/tmp/ansible-tmp-early"  # type: ignore[arg-type]
    assert action.made == []


def test_without_one_a_directory_is_made() -> None:
    action = FakeAction(None)
    assert node_temp_directory(action) == "/root/.ansible/tmp/ansible-tmp-1"  # type: ignore[arg-type]
    assert action.made == ["/root/.ansible/tmp/ansible-tmp-1"]
