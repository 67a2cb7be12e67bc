# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The warm start's plain functions (plugin_utils/warm_start.py): the store's fingerprint, payloads restored into a
run's cache and kept from it, old fingerprints pruned, the collection's plugins imported."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.plugin_utils import warm_start

OURS = warm_start.collection_prefix("ansible_collections.multinode.training")
PREFIXES = (OURS, warm_start.CORE_MODULES_PREFIX)


def collection(tmp_path: Path) -> Path:
    """A collection with one module and one module_util."""
    root = tmp_path / "collection"
    (root / "plugins" / "modules").mkdir(parents=True)
    (root / "plugins" / "module_utils").mkdir(parents=True)
    (root / "plugins" / "modules" / "job.py").write_text("print('job')\n")
    (root / "plugins" / "module_utils" / "shared.py").write_text("VALUE = 1\n")
    return root


def payload(directory: Path, name: str, content: str = "zip") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(content)
    return path


def test_fingerprint_is_stable_for_the_same_files_and_version(tmp_path: Path) -> None:
    root = collection(tmp_path)
    assert warm_start.fingerprint(root, "2.19.4") == warm_start.fingerprint(root, "2.19.4")


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "plugins" / "modules" / "job.py").write_text("print('changed')\n"),
        lambda root: (root / "plugins" / "module_utils" / "shared.py").write_text("VALUE = 2\n"),
        lambda root: (root / "plugins" / "module_utils" / "new.py").write_text(""),
        lambda root: (root / "plugins" / "modules" / "job.py").rename(root / "plugins" / "modules" / "renamed.py"),
    ],
    ids=["module edited", "module_util edited", "module_util added", "module renamed"],
)
def test_fingerprint_changes_with_any_module_or_module_util(tmp_path: Path, change) -> None:
    root = collection(tmp_path)
    before = warm_start.fingerprint(root, "2.19.4")
    change(root)
    assert warm_start.fingerprint(root, "2.19.4") != before


def test_fingerprint_changes_with_the_ansible_version(tmp_path: Path) -> None:
    root = collection(tmp_path)
    assert warm_start.fingerprint(root, "2.19.4") != warm_start.fingerprint(root, "2.20.0")


def test_fingerprint_ignores_the_controller_side_plugins(tmp_path: Path) -> None:
    # An action or filter plugin is not in any payload: editing one keeps the store.
    root = collection(tmp_path)
    before = warm_start.fingerprint(root, "2.19.4")
    payload(root / "plugins" / "action", "job.py", "changed = True\n")
    assert warm_start.fingerprint(root, "2.19.4") == before


def test_restore_copies_the_stored_payloads_of_ours_and_ansible_core_not_locks_or_others(tmp_path: Path) -> None:
    store, cache = tmp_path / "store", tmp_path / "run" / "ansiballz_cache"
    payload(store, f"{OURS}rank_wrapper-ZIP_DEFLATED-none", "ours")
    payload(store, "ansible.modules.stat-ZIP_DEFLATED-none", "core")
    payload(store, f"{OURS}rank_wrapper-ZIP_DEFLATED-none.lock")
    payload(store, "ansible_collections.community.docker.plugins.modules.docker_container-ZIP_DEFLATED-none")
    restored = warm_start.restore(store, cache, PREFIXES)
    assert restored == ["ansible.modules.stat-ZIP_DEFLATED-none", f"{OURS}rank_wrapper-ZIP_DEFLATED-none"]
    assert sorted(path.name for path in cache.iterdir()) == restored
    assert (cache / f"{OURS}rank_wrapper-ZIP_DEFLATED-none").read_text() == "ours"


def test_restore_leaves_a_payload_the_run_built_already(tmp_path: Path) -> None:
    store, cache = tmp_path / "store", tmp_path / "cache"
    payload(store, f"{OURS}job_pack-ZIP_DEFLATED-none", "stored")
    payload(cache, f"{OURS}job_pack-ZIP_DEFLATED-none", "built")
    assert warm_start.restore(store, cache, PREFIXES) == []
    assert (cache / f"{OURS}job_pack-ZIP_DEFLATED-none").read_text() == "built"


def test_restore_from_a_store_not_made_yet_restores_nothing(tmp_path: Path) -> None:
    assert warm_start.restore(tmp_path / "none", tmp_path / "cache", PREFIXES) == []
    assert not (tmp_path / "cache").exists()


def test_keep_makes_the_store_0700_and_copies_only_new_payloads(tmp_path: Path) -> None:
    root = tmp_path / "payloads"
    store, cache = root / "digest", tmp_path / "cache"
    payload(cache, f"{OURS}job_status-ZIP_DEFLATED-none", "new")
    payload(cache, f"{OURS}job_status-ZIP_DEFLATED-none.lock")
    payload(cache, "ansible_collections.community.docker.plugins.modules.docker_container-ZIP_DEFLATED-none")
    assert warm_start.keep(cache, store, PREFIXES) == [f"{OURS}job_status-ZIP_DEFLATED-none"]
    assert os.stat(root).st_mode & 0o777 == 0o700
    assert os.stat(store).st_mode & 0o777 == 0o700
    assert warm_start.keep(cache, store, PREFIXES) == []
    # Nothing but the payload itself: no temporary file is left behind.
    assert [path.name for path in store.iterdir()] == [f"{OURS}job_status-ZIP_DEFLATED-none"]


def test_a_failed_copy_leaves_no_file_under_either_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, cache = tmp_path / "store", tmp_path / "cache"
    payload(cache, f"{OURS}node_facts-ZIP_DEFLATED-none")

    def disk_full(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(warm_start.shutil, "copyfileobj", disk_full)
    with pytest.raises(OSError, match="No space"):
        warm_start.keep(cache, store, PREFIXES)
    assert list(store.iterdir()) == []


def test_prune_keeps_the_current_and_the_newest_others(tmp_path: Path) -> None:
    for age, name in enumerate(["a", "b", "c", "d", "e", "current"]):
        (tmp_path / name).mkdir()
        # "a" the newest, "e" the oldest; "current" the oldest of all and still kept.
        os.utime(tmp_path / name, (1_000_000 - age * 100, 1_000_000 - age * 100))
    assert warm_start.prune(tmp_path, "current", others=3) == ["d", "e"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a", "b", "c", "current"]


def test_prune_of_no_store_removes_nothing(tmp_path: Path) -> None:
    assert warm_start.prune(tmp_path / "none", "current") == []


def test_import_plugins_imports_each_plugin_and_names_those_that_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = "warm_start_example"
    root = tmp_path / package
    for plugin_type in ("action", "filter"):
        (root / "plugins" / plugin_type).mkdir(parents=True)
        (root / "plugins" / plugin_type / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "plugins" / "__init__.py").write_text("")
    (root / "plugins" / "filter" / "good.py").write_text("LOADED = True\n")
    (root / "plugins" / "filter" / "broken.py").write_text("raise ImportError('needs a library')\n")
    (root / "plugins" / "action" / "later.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    failed = warm_start.import_plugins(root, package)
    assert failed == [f"{package}.plugins.filter.broken: needs a library"]
    assert sys.modules[f"{package}.plugins.filter.good"].LOADED
    # Action plugins wait for the task that runs them (action_plugin).
    assert f"{package}.plugins.action.later" not in sys.modules


def test_import_plugins_of_this_collection_imports_them_all() -> None:
    collection_dir = Path(warm_start.__file__).resolve().parents[2]
    assert warm_start.import_plugins(collection_dir, "ansible_collections.multinode.training") == []
    assert "ansible_collections.multinode.training.plugins.filter.job" in sys.modules


def test_a_task_of_the_collection_with_an_action_plugin_names_it() -> None:
    collection_dir = Path(warm_start.__file__).resolve().parents[2]
    package = "ansible_collections.multinode.training"
    assert warm_start.action_plugin(collection_dir, package, "multinode.training.job_collect") == (
        f"{package}.plugins.action.job_collect"
    )
    # A module of the collection without an action plugin, another collection's action, a short name.
    assert warm_start.action_plugin(collection_dir, package, "multinode.training.node_facts") is None
    assert warm_start.action_plugin(collection_dir, package, "ansible.builtin.copy") is None
    assert warm_start.action_plugin(collection_dir, package, "job_collect") is None


def test_import_plugin_says_why_it_failed() -> None:
    assert warm_start.import_plugin("warm_start_no_such_module") == (
        "warm_start_no_such_module: No module named 'warm_start_no_such_module'"
    )
    assert warm_start.import_plugin("json") == ""
