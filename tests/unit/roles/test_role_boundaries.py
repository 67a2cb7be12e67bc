# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No role reads another role's inputs. A role's inputs are the options of its argument specs; a role may read its
own, the cluster role's published facts (``cluster``, ``cluster_node``: the contract every role documents as a fact
it reads, not an input to set) and what it is handed. A task that hands an included role its inputs (``vars:`` of
an ``include_role``) names them as keys, which is not a read: only Jinja expressions are searched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
# The cluster role's facts, which every other role reads by design (docs/ARCHITECTURE.md, "The contract").
CONTRACT_FACTS = frozenset({"cluster", "cluster_node"})
# The keys whose string values Ansible evaluates as a bare Jinja expression.
BARE_EXPRESSION_KEYS = frozenset({"when", "that", "until", "changed_when", "failed_when"})


class AnyName(dict[str, Any]):
    """Every filter and test name known: the search compiles the templates, and Ansible's plugins are not loaded."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name, str)


JINJA = jinja2.Environment()
JINJA.filters = AnyName()
JINJA.tests = AnyName()


def role_inputs(role: Path) -> frozenset[str]:
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))["argument_specs"]
    return frozenset(name for entry_point in specs.values() for name in entry_point.get("options", {}))


def expressions(node: Any, bare: bool = False) -> Iterator[str]:
    """Every Jinja template in a parsed YAML document, a bare expression wrapped as one."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from expressions(value, bare=key in BARE_EXPRESSION_KEYS)
    elif isinstance(node, list):
        for item in node:
            yield from expressions(item, bare)
    elif isinstance(node, str):
        yield f"{{{{ {node} }}}}" if bare else node


def names_read(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    templates = [text] if path.suffix == ".j2" else list(expressions(yaml.safe_load(text)))
    return {name for template in templates for name in jinja2.meta.find_undeclared_variables(JINJA.parse(template))}


def role_files(role: Path) -> Iterator[Path]:
    for part in ("defaults", "vars", "tasks", "handlers", "templates"):
        yield from sorted(path for path in (role / part).rglob("*") if path.suffix in (".yml", ".j2"))


ALL_ROLES = sorted(path for path in ROLES.iterdir() if (path / "meta" / "argument_specs.yml").is_file())


@pytest.mark.parametrize("role", ALL_ROLES, ids=lambda path: path.name)
def test_a_role_reads_no_other_roles_input(role: Path) -> None:
    own = role_inputs(role)
    foreign = {other.name: role_inputs(other) - own - CONTRACT_FACTS for other in ALL_ROLES if other != role}
    crossings = [
        f"{path.relative_to(ROLES)} reads {name} (an input of the {owner} role)"
        for path in role_files(role)
        for name in sorted(names_read(path))
        for owner, inputs in foreign.items()
        if name in inputs
    ]
    assert not crossings, "\n".join(crossings)


def test_the_search_finds_a_crossing(tmp_path: Path) -> None:
    """The search itself: a read in a template, a bare condition and a default, each found; a key and a word in a
    message not."""
    tasks = tmp_path / "tasks.yml"
    tasks.write_text(
        "- ansible.builtin.debug: {msg: 'set launcher_backend to xccl'}\n"
        "  when: launcher_backend == 'xccl'\n"
        "- ansible.builtin.include_role: {name: x}\n"
        "  vars: {workers_restart: '{{ cluster_runtime | default(1) }}'}\n",
        encoding="utf-8",
    )
    template = tmp_path / "t.j2"
    template.write_text("{% for host in launcher_hosts %}{{ host }}{% endfor %}\n", encoding="utf-8")
    assert names_read(tasks) == {"launcher_backend", "cluster_runtime"}
    assert names_read(template) == {"launcher_hosts"}
