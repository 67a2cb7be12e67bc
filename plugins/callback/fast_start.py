# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: fast_start
type: aggregate
short_description: Start each task of a run warm, and keep the modules' built payloads between runs
description:
  - Ansible forks a worker process for every task on every node, and each worker imports again the collection's
    plugins its task uses; each run also builds again, once per module, the payload sent to the nodes (the module and
    its module_utils, found by compiling every file they import), in a cache that lives as long as the run.
  - At the start of a playbook this callback imports the collection's filter, test and lookup plugins in the
    controller's main process, and as each task starts the collection's action plugin it runs, so that every worker
    forked after inherits them; it also puts the payloads of the collection's modules (and ansible-core's) that an
    earlier run built into this run's cache.
  - At the end of the playbook it keeps the payloads this run built in the directory the environment variable
    E(MULTINODE_TRAINING_PAYLOAD_STORE) names (made 0700; by default C(~/.cache/multinode-training/payloads); empty to
    keep none, the plugins are still imported up front), under a directory named by a
    digest of the ansible-core version and the content of the collection's modules and module_utils, so a changed
    module or another Ansible version never meets an old payload. Payloads hold module code only, never a task's
    arguments. The newest few other digests are kept; older ones are removed.
  - Nothing it does can fail a run; what it could not do is shown at verbosity 3 (C(-vvv)).
  - The collection's playbooks load it by themselves (C(playbooks/callback_plugins/multinode_fast_start.py) needs no
    enabling); enable it with C(callbacks_enabled = multinode.training.fast_start) for playbooks of your own.
"""

import os
from pathlib import Path
from typing import Any

from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ansible_version

from ansible_collections.multinode.training.plugins.plugin_utils import warm_start

COLLECTION_DIR = Path(__file__).resolve().parents[2]
PACKAGE = "ansible_collections.multinode.training"
# Where this run's Ansible caches the payloads it builds (its own temporary directory, removed at its end).
RUN_CACHE = "ansiballz_cache"
# Where the payloads are kept between runs (the variable's value, else the default).
STORE_VARIABLE = "MULTINODE_TRAINING_PAYLOAD_STORE"
DEFAULT_STORE = "~/.cache/multinode-training/payloads"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "multinode.training.fast_start"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._store: Path | None = None
        # The action plugins imported as their tasks started (each once).
        self._imported: set[str] = set()
        self._prefixes = (warm_start.collection_prefix(PACKAGE), warm_start.CORE_MODULES_PREFIX)

    def v2_playbook_on_start(self, playbook: Any) -> None:
        for failure in warm_start.import_plugins(COLLECTION_DIR, PACKAGE):
            self._display.vvv(f"fast_start: not imported up front: {failure}")
        root = os.environ.get(STORE_VARIABLE, DEFAULT_STORE)
        if not root:
            return
        try:
            digest = warm_start.fingerprint(COLLECTION_DIR, ansible_version)
            self._store = Path(root).expanduser() / digest
            restored = warm_start.restore(self._store, self._run_cache(), self._prefixes)
            self._display.vvv(f"fast_start: {len(restored)} module payloads reused from {self._store}")
        except OSError as exc:
            self._store = None
            self._display.vvv(f"fast_start: the module payloads of earlier runs are not reused: {exc}")

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        action = warm_start.action_plugin(COLLECTION_DIR, PACKAGE, str(task.action or ""))
        if action and action not in self._imported:
            self._imported.add(action)
            failure = warm_start.import_plugin(action)
            if failure:
                self._display.vvv(f"fast_start: not imported before the task: {failure}")

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if self._store is None:
            return
        try:
            kept = warm_start.keep(self._run_cache(), self._store, self._prefixes)
            removed = warm_start.prune(self._store.parent, self._store.name)
            self._display.vvv(f"fast_start: {len(kept)} module payloads kept in {self._store}, {len(removed)} old stores removed")
        except OSError as exc:
            self._display.vvv(f"fast_start: this run's module payloads are not kept: {exc}")

    @staticmethod
    def _run_cache() -> Path:
        return Path(C.DEFAULT_LOCAL_TMP) / RUN_CACHE
