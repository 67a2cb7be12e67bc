# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fast_start callback: payloads reused from the store at a playbook's start, kept at its end, never a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.callback import fast_start
from ansible_collections.multinode.training.plugins.plugin_utils import warm_start

PAYLOAD = "ansible_collections.multinode.training.plugins.modules.rank_wrapper-ZIP_DEFLATED-none"


@pytest.fixture
def run_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This run's Ansible temporary directory, its payload cache inside (not made yet, as at a run's start)."""
    local_tmp = tmp_path / "ansible-local-1"
    local_tmp.mkdir()
    monkeypatch.setattr(fast_start.C, "DEFAULT_LOCAL_TMP", str(local_tmp))
    return local_tmp / fast_start.RUN_CACHE


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "payloads"
    monkeypatch.setenv(fast_start.STORE_VARIABLE, str(root))
    return root


def digest() -> str:
    return warm_start.fingerprint(fast_start.COLLECTION_DIR, fast_start.ansible_version)


def test_a_run_keeps_its_payloads_and_the_next_run_starts_with_them(run_cache: Path, store_root: Path) -> None:
    first = fast_start.CallbackModule()
    first.v2_playbook_on_start(None)
    (run_cache).mkdir()
    (run_cache / PAYLOAD).write_text("built by the first run")
    first.v2_playbook_on_stats(None)
    assert (store_root / digest() / PAYLOAD).read_text() == "built by the first run"

    (run_cache / PAYLOAD).unlink()
    fast_start.CallbackModule().v2_playbook_on_start(None)
    assert (run_cache / PAYLOAD).read_text() == "built by the first run"


def test_an_empty_store_setting_keeps_nothing(run_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(fast_start.STORE_VARIABLE, "")
    callback = fast_start.CallbackModule()
    callback.v2_playbook_on_start(None)
    run_cache.mkdir()
    (run_cache / PAYLOAD).write_text("built")
    callback.v2_playbook_on_stats(None)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ansible-local-1"]


def test_a_store_that_cannot_be_made_does_not_fail_the_run(run_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The store's place is a file: neither the start nor the end raises, and the run's own cache is left as it was.
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv(fast_start.STORE_VARIABLE, str(blocked))
    callback = fast_start.CallbackModule()
    callback.v2_playbook_on_start(None)
    run_cache.mkdir()
    (run_cache / PAYLOAD).write_text("built")
    callback.v2_playbook_on_stats(None)
    assert (run_cache / PAYLOAD).read_text() == "built"
    assert blocked.read_text() == ""


class _Task:
    """What the callback reads of a task as it starts."""

    def __init__(self, action: str) -> None:
        self.action = action


def test_a_task_starting_imports_its_action_plugin_once(monkeypatch: pytest.MonkeyPatch) -> None:
    imported: list[str] = []
    monkeypatch.setattr(warm_start, "import_plugin", lambda name: imported.append(name) or "")
    callback = fast_start.CallbackModule()

    for action in ("multinode.training.run_summary", "ansible.builtin.debug", "multinode.training.run_summary"):
        callback.v2_playbook_on_task_start(_Task(action), is_conditional=False)

    assert imported == ["ansible_collections.multinode.training.plugins.action.run_summary"]
