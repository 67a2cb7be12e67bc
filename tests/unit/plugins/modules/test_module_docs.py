"""Every module's DOCUMENTATION, EXAMPLES and RETURN is YAML that parses (ansible-doc and sanity read them so)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

MODULES_DIR = Path(__file__).resolve().parents[4] / "plugins" / "modules"
MODULES = sorted(path.stem for path in MODULES_DIR.glob("*.py") if path.stem != "__init__")


@pytest.mark.parametrize("name", MODULES)
@pytest.mark.parametrize("block", ["DOCUMENTATION", "EXAMPLES", "RETURN"])
def test_the_documentation_is_yaml(name: str, block: str) -> None:
    module = importlib.import_module(f"ansible_collections.multinode.training.plugins.modules.{name}")
    assert yaml.safe_load(getattr(module, block)) is not None


def test_every_module_is_checked() -> None:
    assert len(MODULES) >= 15
