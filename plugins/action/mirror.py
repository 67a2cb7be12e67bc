# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.mirror: node directories made mirrors of controller directories, one module
run when nothing changed, and the changed files in one archive when something did."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils import mirror
from ansible_collections.multinode.training.plugins.plugin_utils.actions import execute, node_temp_directory

NODE_MODULE = "multinode.training.mirror_files"
ARGUMENT_SPEC: dict[str, Any] = {
    "trees": {
        "type": "list",
        "elements": "dict",
        "required": True,
        "options": {"src": {"type": "path", "required": True}, "dest": {"type": "path", "required": True}},
    },
    "directories": {"type": "list", "elements": "path", "default": []},
    "owner": {"type": "int", "required": True},
    "group": {"type": "int", "required": True},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = True
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        sources = {tree["dest"]: tree["src"] for tree in args["trees"]}
        listings = {dest: _listing(src) for dest, src in sources.items()}
        module_args = {
            "trees": [{"dest": dest, "files": {path: entry.as_dict() for path, entry in listing.items()}} for dest, listing in listings.items()],
            "directories": args["directories"],
            "owner": args["owner"],
            "group": args["group"],
        }
        compared = execute(self, NODE_MODULE, task_vars, module_args)
        to_send = {dest: paths for dest, tree in compared["trees"].items() if (paths := _to_send(sources[dest], tree))}
        trees = compared["trees"]
        changed = bool(compared["changed"]) or bool(to_send)  # in check mode: would send
        if to_send and not self._task.check_mode:
            trees = self._send(sources, to_send, module_args, task_vars)
            changed = True
        result.update(changed=changed, trees=trees, created=compared["created"])
        return result

    def _send(self, sources: dict[str, str], to_send: dict[str, list[str]], module_args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        """One archive per tree with files to send, transferred and unpacked in one more module run."""
        with node_temp_directory(self) as remote_tmp:
            with tempfile.TemporaryDirectory(prefix="multinode-mirror-") as local:
                archives = {}
                for index, (dest, paths) in enumerate(sorted(to_send.items())):
                    local_archive = os.path.join(local, f"tree-{index}.tar")
                    mirror.pack(sources[dest], paths, local_archive)
                    archives[dest] = self._connection._shell.join_path(remote_tmp, f"tree-{index}.tar")
                    self._transfer_file(local_archive, archives[dest])
                    self._fixup_perms2([remote_tmp, archives[dest]])
            unpacked = execute(self, NODE_MODULE, task_vars, {**module_args, "archives": archives})
        left = {dest: paths for dest, tree in unpacked["trees"].items() if (paths := _to_send(sources[dest], tree))}
        if left:
            raise AnsibleActionFail(f"files still differ on the node after sending them (changed while copied?): {left}")
        return unpacked["trees"]


def _to_send(src: str, tree: dict[str, Any]) -> list[str]:
    """The node's files to send: those it named, and those of another time whose content differs from ``src``'s."""
    retimed = [path for path, digest in tree.get("to_verify", {}).items() if mirror.content_hash(os.path.join(src, path)) != digest]
    return sorted(tree["to_send"] + retimed)


def _listing(src: str) -> dict[str, mirror.Entry]:
    if not os.path.isdir(src):
        raise AnsibleActionFail(f"{src} is not a directory on the controller")
    return mirror.listing(src)
