# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's choice after a node's comparison (plugin_utils/mirror_sync.py): the files of another time whose
content is equal are retimed on the node, the others sent with what the node named."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.plugin_utils.mirror_sync import compared, files_to_send

CODE, DATA = "/node/code", "/node/data"


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def node_tree(to_send: list[str] | None = None, to_verify: dict[str, str] | None = None) -> dict[str, object]:
    """One tree of the node's comparison (mirror_trees's ``trees``), nothing left unless given."""
    return {"to_send": to_send or [], "to_verify": to_verify or {}, "removed": [], "fixed": [], "written": []}


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, str]:
    """Two controller directories, by node directory: the code (train.py, model.py) and the data set (a.csv)."""
    for name, content in {"code/train.py": b"print(1)\n", "code/model.py": b"m = 1\n", "data/a.csv": b"a,b\n"}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(content)
    return {CODE: str(tmp_path / "code"), DATA: str(tmp_path / "data")}


def test_files_to_retime_are_only_those_whose_content_equals_the_nodes(sources: dict[str, str]) -> None:
    trees = {
        CODE: node_tree(to_send=["new.py"], to_verify={"train.py": digest(b"print(1)\n"), "model.py": digest(b"m = 2\n")}),
        DATA: node_tree(to_verify={"a.csv": digest(b"a,c\n")}),
    }

    assert compared(sources, trees)[1] == {CODE: ["train.py"]}


def test_files_to_send_are_those_the_node_named_and_the_retimed_ones_that_differ(sources: dict[str, str]) -> None:
    trees = {
        CODE: node_tree(to_send=["new.py", "lib/util.py"], to_verify={"train.py": digest(b"print(1)\n"), "model.py": digest(b"m = 2\n")}),
        DATA: node_tree(to_verify={"a.csv": digest(b"a,b\n")}),
    }

    assert files_to_send(sources, trees) == {CODE: ["lib/util.py", "model.py", "new.py"]}
