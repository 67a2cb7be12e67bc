# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.multinode.training`` importable for plain pytest.

``collections/ansible_collections/multinode/training`` is a symlink to the
repository root, so putting ``<repo>/collections`` on sys.path is enough.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

COLLECTIONS_ROOT = Path(__file__).resolve().parents[2] / "collections"

if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))


def pytest_configure(config):
    # modules/ and module_utils/ both contain test_hostfile.py and there are no
    # __init__.py files, so the default "prepend" import mode would collide.
    config.option.importmode = "importlib"


def pytest_sessionstart(session: pytest.Session) -> None:
    # ansible-test runs every test in a forked child (its ansible_forked plugin): a base directory for tmp_path made in
    # the child was made again, and emptied first, by every test, while a process an earlier test had left (an ansible
    # run, a job's follower) could still write in it. The emptying then failed ("Directory not empty") and the test
    # errored at its set-up (FileExistsError, CI 2026-12-02). Made once here, in the process that forks, it is kept.
    session.config._tmp_path_factory.getbasetemp()  # pylint: disable=protected-access


@pytest.fixture
def summary_problems() -> Callable[[Any], list[str]]:
    """A function naming every way a summary.json departs from the one schema (empty when it conforms)."""
    from jsonschema import Draft202012Validator  # noqa: PLC0415 (a test-only dependency)

    from ansible_collections.multinode.training.plugins.module_utils.run_schema import SUMMARY_SCHEMA  # noqa: PLC0415

    validator = Draft202012Validator(SUMMARY_SCHEMA)

    def problems(summary: Any) -> list[str]:
        return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}" for error in validator.iter_errors(summary)]

    return problems
