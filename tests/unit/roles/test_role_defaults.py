# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role's defaults are written once: its argument spec says what defaults/main.yml holds.

defaults/main.yml is what Ansible uses; meta/argument_specs.yml is what ansible-doc and the role README
(scripts/role_docs.py) show. For every role with an argument spec (the collection's roles/ and harness/roles/):

- an option with a ``default:`` in any entry point has that very value in defaults/main.yml, compared as YAML
  data (a Jinja template is a string like any other: the spec states the same template or no default at all;
  a placeholder such as ``<cluster.state_dir>/x`` belongs in the description, "Defaults to ...");
- every variable in defaults/main.yml is an option of at least one entry point. No role keeps a private
  variable in defaults/main.yml: the roles' own working values live in vars/main.yml (launcher, health,
  workers, ...) or in facts, so there is no exemption here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(
    path.parents[1] for pattern in ("roles/*/meta/argument_specs.yml", "harness/roles/*/meta/argument_specs.yml") for path in REPO.glob(pattern)
)
MISSING = "<not in defaults/main.yml>"


def entry_points(role: Path) -> dict[str, dict[str, Any]]:
    """Each entry point's options."""
    specs = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]
    return {entry: spec.get("options") or {} for entry, spec in specs.items()}


def role_defaults(role: Path) -> dict[str, Any]:
    return yaml.safe_load((role / "defaults/main.yml").read_text()) or {}


def role_id(role: Path) -> str:
    return str(role.relative_to(REPO))


def test_every_role_has_an_argument_spec() -> None:
    """A role without one would be left out of the checks below without a word."""
    without = [str(role.relative_to(REPO)) for role in (REPO / "roles").iterdir() if role.is_dir() and role not in ROLES]
    assert without == []


@pytest.mark.parametrize("role", ROLES, ids=role_id)
def test_every_spec_default_is_the_roles_default(role: Path) -> None:
    defaults = role_defaults(role)
    mismatches = [
        f"{role_id(role)}: {name} (entry point {entry}): argument spec default {option['default']!r},"
        f" defaults/main.yml {defaults.get(name, MISSING)!r}"
        for entry, options in entry_points(role).items()
        for name, option in options.items()
        if "default" in option and defaults.get(name, MISSING) != option["default"]
    ]
    assert mismatches == []


@pytest.mark.parametrize("role", ROLES, ids=role_id)
def test_every_default_is_an_option(role: Path) -> None:
    documented = {name for options in entry_points(role).values() for name in options}
    undocumented = [
        f"{role_id(role)}: {name} (defaults/main.yml {value!r}) is an option of no entry point in meta/argument_specs.yml"
        for name, value in role_defaults(role).items()
        if name not in documented
    ]
    assert undocumented == []
