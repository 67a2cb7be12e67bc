# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What makes a playbook run of the collection start warm (the fast_start callback, in the controller's main process).

Ansible forks a worker process for each task on each node. A worker imports again every plugin of the collection
its task uses (an action, the filters of its expressions) unless the main process had imported it before the fork,
and each run builds again, once per module, the payload it sends to the nodes (AnsiballZ: the module with its
module_utils, found by compiling every imported file), in a cache directory that lives as long as the run. Here:

- ``import_plugins``: the collection's own filter, test and lookup plugins imported into the main process at the
  start, so that every worker forked after inherits them; ``action_plugin`` names the collection's action plugin a
  task runs, imported there as the task starts (before its workers are forked): an action a run never uses (the
  health gate's, say) costs it nothing;
- ``restore`` and ``keep``: the built payloads of the collection's modules (and of ansible-core's own) kept between
  runs in a store whose directory is named by ``fingerprint``: the ansible-core version and the content of every
  module and module_util of the collection, so a changed module or another Ansible never meets an old payload;
- ``prune``: the store's older fingerprints removed, the newest few kept (checkouts of other versions side by side).

Payloads hold module code only, never a task's arguments (Ansible adds those to each module run); the store is the
user's own (0700). A file is written whole under another name and then renamed, so a run never reads half of one.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

# The plugins a task's worker loads from the collection (modules run on the nodes, not in the worker) that any task's
# expressions may use: imported at the start. A task's action plugin is imported as the task starts.
PLUGIN_TYPES = ("filter", "test", "lookup")
# How Ansible names the payloads of ansible-core's modules in its cache (those of a collection are named below).
CORE_MODULES_PREFIX = "ansible.modules."
# Fingerprints kept in the store besides the current one.
KEEP_OTHERS = 3


def collection_prefix(package: str) -> str:
    """How Ansible names the cached payloads of the modules of ``package`` (``ansible_collections.ns.name``)."""
    return f"{package}.plugins.modules."


def import_plugins(collection_dir: Path, package: str) -> list[str]:
    """The collection's filter, test and lookup plugins imported (``package.plugins.<type>.<name>``, as Ansible's
    loader names them); the ones that failed to import, each with why (the task that uses one says so itself)."""
    names = [
        f"{package}.plugins.{plugin_type}.{path.stem}"
        for plugin_type in PLUGIN_TYPES
        for path in sorted((collection_dir / "plugins" / plugin_type).glob("*.py"))
        if path.stem != "__init__"
    ]
    return [failure for failure in map(import_plugin, names) if failure]


def import_plugin(name: str) -> str:
    """``name`` imported; why it failed to, or empty."""
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any import error is the task's to report, not the start's
        return f"{name}: {exc}"
    return ""


def action_plugin(collection_dir: Path, package: str, action: str) -> str | None:
    """The module name of the collection's action plugin that a task's ``action`` (its fully qualified name, as the
    collection's playbooks write it) runs, or None: another collection's, or a module without an action plugin."""
    prefix = package.removeprefix("ansible_collections.") + "."
    if not action.startswith(prefix):
        return None
    short = action[len(prefix):]
    return f"{package}.plugins.action.{short}" if (collection_dir / "plugins" / "action" / f"{short}.py").is_file() else None


def fingerprint(collection_dir: Path, ansible_version: str) -> str:
    """A digest of what a payload of the collection is built from: Ansible's version, the controller's Python, and
    every file of the collection's modules and module_utils (name and content)."""
    digest = hashlib.sha256(f"{ansible_version}\n{sys.version_info[:2]}\n".encode())
    for directory in ("modules", "module_utils"):
        root = collection_dir / "plugins" / directory
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{path.relative_to(root)}\n".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


def _payloads(directory: Path, prefixes: tuple[str, ...]) -> list[Path]:
    """The built payloads in ``directory`` whose module names begin with one of ``prefixes`` (never a lock)."""
    if not directory.is_dir():
        return []
    return sorted(
        path
        for path in directory.iterdir()
        if path.name.startswith(prefixes) and not path.name.endswith(".lock") and path.is_file()
    )


def _copy_whole(source: Path, target: Path) -> None:
    """``source`` copied to ``target`` under a temporary name first, then renamed: a reader sees all of it or none."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as written, source.open("rb") as read:
            shutil.copyfileobj(read, written)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def restore(store: Path, cache: Path, prefixes: tuple[str, ...]) -> list[str]:
    """The stored payloads copied into this run's cache (those it has already left alone); their names."""
    restored = []
    for payload in _payloads(store, prefixes):
        target = cache / payload.name
        if not target.exists():
            cache.mkdir(parents=True, exist_ok=True)
            _copy_whole(payload, target)
            restored.append(payload.name)
    return restored


def keep(cache: Path, store: Path, prefixes: tuple[str, ...]) -> list[str]:
    """This run's payloads the store does not hold yet, copied into it (the store and its root made 0700); their
    names."""
    kept = []
    for payload in _payloads(cache, prefixes):
        target = store / payload.name
        if not target.exists():
            for directory in (store.parent, store):
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            _copy_whole(payload, target)
            kept.append(payload.name)
    return kept


def prune(root: Path, current: str, others: int = KEEP_OTHERS) -> list[str]:
    """The store's fingerprint directories but ``current`` and the ``others`` newest removed; their names."""
    if not root.is_dir():
        return []
    stale = sorted(
        (path for path in root.iterdir() if path.is_dir() and path.name != current),
        key=lambda path: path.stat().st_mtime,
        reverse=True,
    )[others:]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return [path.name for path in stale]
