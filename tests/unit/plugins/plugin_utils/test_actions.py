"""The node temp directory an action uses: the one its task has already, never a second one left behind, and
removed by path when the action is done with it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.multinode.training.plugins.plugin_utils.actions import node_temp_directory


class FakeAction:
    """What node_temp_directory uses of an ActionBase: the shell's current temp directory, making and removing one
    (removing by path alone, as Mitogen's ActionBase takes it)."""

    def __init__(self, tmpdir: str | None) -> None:
        self._connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir=tmpdir))
        self.made: list[str] = []
        self.removed: list[str] = []

    def _make_tmp_path(self) -> str:
        path = f"/root/.ansible/tmp/ansible-tmp-{len(self.made) + 1}"
        self.made.append(path)
        self._connection._shell.tmpdir = path
        return path

    def _remove_tmp_path(self, tmp_path: str) -> None:
        self.removed.append(tmp_path)
        self._connection._shell.tmpdir = None


def test_the_directory_the_task_made_already_is_used_no_second_one_is_made_and_it_is_removed() -> None:
    action = FakeAction("/root/.ansible/tmp/ansible-tmp-early")
    with node_temp_directory(action) as path:  # type: ignore[arg-type]
        assert path == "/root/.ansible/tmp/ansible-tmp-early"
        assert action.removed == []
    assert action.made == []
    assert action.removed == ["/root/.ansible/tmp/ansible-tmp-early"]


def test_without_one_a_directory_is_made_and_removed() -> None:
    action = FakeAction(None)
    with node_temp_directory(action) as path:  # type: ignore[arg-type]
        assert path == "/root/.ansible/tmp/ansible-tmp-1"
    assert action.made == ["/root/.ansible/tmp/ansible-tmp-1"]
    assert action.removed == ["/root/.ansible/tmp/ansible-tmp-1"]


def test_the_directory_is_removed_when_the_block_fails() -> None:
    action = FakeAction(None)
    with pytest.raises(RuntimeError), node_temp_directory(action):  # type: ignore[arg-type]
        raise RuntimeError("the transfer failed")
    assert action.removed == ["/root/.ansible/tmp/ansible-tmp-1"]
