"""The collection's action plugins (and their shared helpers) call ActionBase's helpers only in the form every
strategy's ActionBase takes.

Mitogen for Ansible (its ``mitogen_linear`` strategy) mixes its own ``_make_tmp_path``, ``_remove_tmp_path`` and
``_low_level_execute_command`` into every action plugin; its ``_remove_tmp_path(self, tmp_path)`` takes no ``force``,
and an action that passed it failed at once under that strategy (``unexpected keyword argument 'force'``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[4] / "plugins"
# The action plugins, and the helpers they share, which get the action as ``action``.
SOURCES = sorted([*(PLUGINS / "action").glob("*.py"), *(PLUGINS / "plugin_utils").glob("*.py")])
RECEIVERS = {"self", "action"}
# ActionBase methods Mitogen replaces, and the keyword arguments its replacement takes.
MITOGEN_KEYWORDS = {
    "_remove_tmp_path": set(),
    "_make_tmp_path": {"remote_user"},
    "_low_level_execute_command": {"sudoable", "in_data", "executable", "encoding_errors", "chdir"},
}


def helper_calls(source: str) -> list[tuple[int, str, set[str]]]:
    """Each call of a replaced helper on ``self`` or ``action``: its line, its name and the keywords it passes."""
    return [
        (node.lineno, node.func.attr, {keyword.arg or "**" for keyword in node.keywords})
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in RECEIVERS
        and node.func.attr in MITOGEN_KEYWORDS
    ]


@pytest.mark.parametrize("plugin", SOURCES, ids=lambda path: f"{path.parent.name}/{path.stem}")
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


def test_the_search_reads_the_code_that_removes_a_temporary_directory() -> None:
    removing = [f"{path.parent.name}/{path.stem}" for path in SOURCES if "_remove_tmp_path" in path.read_text()]
    assert removing == ["plugin_utils/actions"]
