"""Action plugins validate their arguments with ARGUMENT_SPEC; their documentation must say the same."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import yaml

ACTIONS = ("job_wait", "job_collect", "run_start", "mirror", "run_summary", "write_summary")
COLLECTION = "ansible_collections.multinode.training.plugins"
OWN_FRAGMENT = "multinode.training."


def documented_options(name: str) -> dict[str, Any]:
    """The module's options with those of the collection's own doc fragments it extends."""
    doc = yaml.safe_load(importlib.import_module(f"{COLLECTION}.modules.{name}").DOCUMENTATION)
    options = dict(doc["options"])
    for fragment in doc.get("extends_documentation_fragment", []):
        if fragment.startswith(OWN_FRAGMENT):
            module = importlib.import_module(f"{COLLECTION}.doc_fragments.{fragment[len(OWN_FRAGMENT):]}")
            options.update(yaml.safe_load(module.ModuleDocFragment.DOCUMENTATION)["options"])
    return options


@pytest.mark.parametrize("name", ACTIONS)
def test_documented_options_are_the_argument_spec(name: str) -> None:
    spec = importlib.import_module(f"{COLLECTION}.action.{name}").ARGUMENT_SPEC
    documented = documented_options(name)
    assert set(documented) == set(spec)
    for option, rules in spec.items():
        assert documented[option]["type"] == rules["type"], option
        assert documented[option].get("required", False) == rules.get("required", False), option
        assert documented[option].get("default") == rules.get("default"), option
