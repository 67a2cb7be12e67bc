"""The mirror's choice of files to send (plugin_utils/mirror_sync.py): what the node named, and retimed files whose
content differs; the retimed files whose content is equal are retimed instead."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.multinode.training.plugins.plugin_utils.mirror_sync import compared
from ansible_collections.multinode.training.plugins.module_utils import mirror


def test_a_retimed_file_is_sent_only_when_its_content_differs(tmp_path: Path) -> None:
    (tmp_path / "same.py").write_text("a = 1\n")
    (tmp_path / "edited.py").write_text("b = 2\n")
    node_copy = tmp_path.parent / f"{tmp_path.name}-node.py"
    node_copy.write_text("b = 3\n")  # same size, other content
    tree = {
        "to_send": ["new.py"],
        "to_verify": {"same.py": mirror.content_hash(str(tmp_path / "same.py")), "edited.py": mirror.content_hash(str(node_copy))},
    }
    assert compared({"/node": str(tmp_path)}, {"/node": tree}) == ({"/node": ["edited.py", "new.py"]}, {"/node": ["same.py"]})


def test_nothing_to_verify_sends_what_the_node_named(tmp_path: Path) -> None:
    assert compared({"/node": str(tmp_path)}, {"/node": {"to_send": ["b", "a"]}}) == ({"/node": ["a", "b"]}, {})
