# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's side of a mirror (module_utils/mirror.py): the listing the node compares with, the choice of files
to send, and their transfer in one archive per tree. The mirror action runs it on its own; the rank_wrapper action
runs the comparison inside the job's set-up, so a job whose code did not change syncs it in no module run of its own."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils import mirror
from ansible_collections.multinode.training.plugins.plugin_utils.actions import execute, node_temp_directory

NODE_MODULE = "multinode.training.mirror_files"
# The options of a mirror as a task gives them (multinode.training.mirror, rank_wrapper's sync).
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


def node_arguments(args: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """The controller directory of each node directory, and the node's arguments: each tree's listing in place of its
    controller directory (sizes and modification times; no file is read)."""
    sources = {tree["dest"]: tree["src"] for tree in args["trees"]}
    trees = [{"dest": dest, "files": {path: entry.as_dict() for path, entry in _listing(src).items()}} for dest, src in sources.items()]
    return sources, {"trees": trees, "directories": args["directories"], "owner": args["owner"], "group": args["group"]}


def files_to_send(sources: dict[str, str], trees: dict[str, Any]) -> dict[str, list[str]]:
    """By node directory, the files a comparison left to send (the node's ``trees`` result)."""
    return compared(sources, trees)[0]


def compared(sources: dict[str, str], trees: dict[str, Any]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """By node directory, the files to send (those the node named, and those of another modification time whose
    content differs from the controller's) and the files to retime (another time, equal content: given the
    controller's time on the node, they are not compared by content again). Each file is hashed once."""
    sending: dict[str, list[str]] = {}
    retiming: dict[str, list[str]] = {}
    for dest, tree in trees.items():
        differ, equal = _by_content(sources[dest], tree.get("to_verify", {}))
        if paths := sorted(tree["to_send"] + differ):
            sending[dest] = paths
        if equal:
            retiming[dest] = equal
    return sending, retiming


def _by_content(src: str, node_digests: dict[str, str]) -> tuple[list[str], list[str]]:
    """The files of ``node_digests`` whose content differs from ``src``'s, and those whose content is equal, sorted."""
    differ, equal = [], []
    for path, digest in sorted(node_digests.items()):
        (equal if mirror.content_hash(os.path.join(src, path)) == digest else differ).append(path)
    return differ, equal


@contextmanager
def sent_archives(action: ActionBase, sources: dict[str, str], sending: dict[str, list[str]]) -> Iterator[dict[str, str]]:
    """One archive per tree with files to send, transferred to the node's temporary directory; by node directory, the
    archive's path there, for the module run that unpacks them inside the block (the directory goes with the block)."""
    with node_temp_directory(action) as remote_tmp:
        with tempfile.TemporaryDirectory(prefix="multinode-mirror-") as local:
            archives = {}
            for index, (dest, paths) in enumerate(sorted(sending.items())):
                local_archive = os.path.join(local, f"tree-{index}.tar")
                mirror.pack(sources[dest], paths, local_archive)
                archives[dest] = action._connection._shell.join_path(remote_tmp, f"tree-{index}.tar")
                action._transfer_file(local_archive, archives[dest])
                action._fixup_perms2([remote_tmp, archives[dest]])
        yield archives


def send(action: ActionBase, sources: dict[str, str], sending: dict[str, list[str]], node_args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
    """The files to send in one archive per tree, unpacked in one more module run; the node's trees."""
    with sent_archives(action, sources, sending) as archives:
        unpacked = execute(action, NODE_MODULE, task_vars, {**node_args, "archives": archives})
    left = files_to_send(sources, unpacked["trees"])
    if left:
        raise AnsibleActionFail(f"files still differ on the node after sending them (changed while copied?): {left}")
    return unpacked["trees"]


def _listing(src: str) -> dict[str, mirror.Entry]:
    if not os.path.isdir(src):
        raise AnsibleActionFail(f"{src} is not a directory on the controller")
    return mirror.listing(src)
