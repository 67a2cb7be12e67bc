# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.multinode.training`` importable for plain pytest.

``collections/ansible_collections/multinode/training`` is a symlink to the
repository root, so putting ``<repo>/collections`` on sys.path is enough.
"""

from __future__ import annotations

import sys
from pathlib import Path

COLLECTIONS_ROOT = Path(__file__).resolve().parents[2] / "collections"

if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))


def pytest_configure(config):
    # modules/ and module_utils/ both contain test_hostfile.py and there are no
    # __init__.py files, so the default "prepend" import mode would collide.
    config.option.importmode = "importlib"
