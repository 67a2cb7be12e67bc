# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's action plugins share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


def execute(action: ActionBase, module: str, task_vars: dict[str, Any], module_args: dict[str, Any]) -> dict[str, Any]:
    """Run ``module`` on the action's host; its result, or AnsibleActionFail naming the module when it failed."""
    found = action._execute_module(module_name=module, module_args=module_args, task_vars=task_vars)
    if found.get("failed"):
        raise AnsibleActionFail(f"{module}: {found.get('msg', 'failed')}")
    return found


@contextmanager
def node_temp_directory(action: ActionBase) -> Iterator[str]:
    """The task's temporary directory on the node, removed when the block ends.

    The one ``ActionBase.run()`` made already (it does for an action that transfers files), else a new one: a second
    one would be left behind, since the path removed at the end is the one the connection's shell names last. Removed
    by path only: Mitogen's strategy replaces ``_remove_tmp_path`` with one that takes no ``force``; ansible-core
    removes it unless the run keeps remote files (ANSIBLE_KEEP_REMOTE_FILES), as its own actions do.
    """
    path = action._connection._shell.tmpdir or action._make_tmp_path()
    try:
        yield path
    finally:
        action._remove_tmp_path(path)
