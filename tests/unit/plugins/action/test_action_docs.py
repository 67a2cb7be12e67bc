"""Action plugins validate their arguments with ARGUMENT_SPEC; their documentation must say the same."""

from __future__ import annotations

import importlib

import pytest
import yaml

ACTIONS = ("job_wait", "job_collect", "run_start")


@pytest.mark.parametrize("name", ACTIONS)
def test_documented_options_are_the_argument_spec(name: str) -> None:
    spec = importlib.import_module(f"ansible_collections.multinode.training.plugins.action.{name}").ARGUMENT_SPEC
    docs = importlib.import_module(f"ansible_collections.multinode.training.plugins.modules.{name}").DOCUMENTATION
    documented = yaml.safe_load(docs)["options"]
    assert set(documented) == set(spec)
    for option, rules in spec.items():
        assert documented[option]["type"] == rules["type"], option
        assert documented[option].get("required", False) == rules.get("required", False), option
        assert documented[option].get("default") == rules.get("default"), option
