# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared fixtures for the plugin unit tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

NODE_FACTS_FIXTURES = Path(__file__).parent / "module_utils" / "fixtures" / "node_facts"


@pytest.fixture
def node_facts_root(tmp_path: Path) -> Callable[[str], Path]:
    """Return a function that writes ``fixtures/node_facts/<machine>.yml`` under tmp_path.

    Each YAML file maps a path relative to the filesystem root (``proc/cpuinfo``,
    ``sys/bus/pci/devices/0000:4d:00.0/class``...) to the file's exact content; the
    function returns the root directory to pass as the module's ``sysfs_root``.
    """

    def materialize(machine: str) -> Path:
        files = yaml.safe_load((NODE_FACTS_FIXTURES / f"{machine}.yml").read_bytes())
        root = tmp_path / machine
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode("utf-8"))  # bytes: no newline translation on Windows
        return root

    return materialize


@pytest.fixture
def run_module(capsys: pytest.CaptureFixture[str]) -> Callable[..., dict[str, Any]]:
    """Return a function that runs a module's ``main`` in-process with the given arguments.

    It returns the module's JSON result and checks the exit code matches ``failed``.
    """

    def run(main: Callable[[], None], **args: Any) -> dict[str, Any]:
        with patch_module_args(args), pytest.raises(SystemExit) as exc:
            main()
        result = json.loads(capsys.readouterr().out)
        assert exc.value.code == (1 if result.get("failed") else 0)
        return result

    return run
