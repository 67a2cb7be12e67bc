"""The collection's action plugins call ActionBase's helpers only in the form every strategy's ActionBase takes.

Mitogen for Ansible (its ``mitogen_linear`` strategy) mixes its own ``_make_tmp_path``, ``_remove_tmp_path`` and
``_low_level_execute_command`` into every action plugin; its ``_remove_tmp_path(self, tmp_path)`` takes no ``force``,
and an action that passed it failed at once under that strategy (``unexpected keyword argument 'force'``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ACTION_DIR = Path(__file__).resolve().parents[4] / "plugins" / "action"
# ActionBase methods Mitogen replaces, and the keyword arguments its replacement takes.
MITOGEN_KEYWORDS = {
    "_remove_tmp_path": set(),
    "_make_tmp_path": {"remote_user"},
    "_low_level_execute_command": {"sudoable", "in_data", "executable", "encoding_errors", "chdir"},
}


def helper_calls(source: str) -> list[tuple[int, str, set[str]]]:
    """Each call of a replaced helper on ``self``: its line, its name and the keywords it passes."""
    return [
        (node.lineno, node.func.attr, {keyword.arg or "**" for keyword in node.keywords})
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
        and node.func.attr in MITOGEN_KEYWORDS
    ]


@pytest.mark.parametrize("plugin", sorted(ACTION_DIR.glob("*.py")), ids=lambda path: path.stem)
def test_replaced_helpers_get_only_the_keywords_mitogen_takes(plugin: Path) -> None:
    wrong = [
        f"{plugin.name}:{line} {name}({', '.join(sorted(keywords - MITOGEN_KEYWORDS[name]))}=...)"
        for line, name, keywords in helper_calls(plugin.read_text())
        if keywords - MITOGEN_KEYWORDS[name]
    ]
    assert not wrong, f"keywords Mitogen's ActionBase does not take: {wrong}"


def test_the_search_finds_a_forced_removal() -> None:
    calls = helper_calls("class A:\n    def run(self):\n        self._remove_tmp_path(path, force=True)\n")
    assert calls == [(3, "_remove_tmp_path", {"force"})]


def test_the_collection_has_action_plugins_that_remove_their_temporary_directory() -> None:
    removing = [path.stem for path in ACTION_DIR.glob("*.py") if "_remove_tmp_path" in path.read_text()]
    assert sorted(removing) == ["job_collect", "mirror"]
