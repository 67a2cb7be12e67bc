# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inputs of a provisioning run, as one hash (multinode.training.node_state's action plugin).

The same hash means the roles would be given the same things: the same variables (as this host sets them,
and the cluster facts), the same training image tarball (by size and modification time, not content: hashing
a gigabyte on every run is what this fast path avoids) and the same collection (its roles and plugins, by
path and content, a few hundred small files).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

COLLECTION_ROOT = Path(__file__).resolve().parents[2]
# The roles of provision.yml's provisioning play whose variables are inputs (workload is left out: launch.yml
# syncs the code on every run anyway).
PROVISIONING_ROLES = ("oneapi", "host_runtime", "container_runtime", "gpu_drivers", "ssh_mesh", "workers", "slurm")
CODE_DIRS = ("roles", "plugins")


def inputs_hash(values: Mapping[str, Any], tarball: str | None, collection_root: Path = COLLECTION_ROOT) -> str:
    """sha256 over the values (as sorted JSON), the tarball's stat and the collection's code stamp."""
    digest = hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode())
    digest.update(file_stamp(tarball).encode() if tarball else b"no tarball")
    digest.update(code_stamp(collection_root).encode())
    return digest.hexdigest()


def file_stamp(path: str) -> str:
    """``size mtime_ns`` of a file, or ``absent``."""
    try:
        info = os.stat(path)
    except OSError:
        return "absent"
    return f"{info.st_size} {info.st_mtime_ns}"


def code_stamp(collection_root: Path) -> str:
    """One hash over the path and content of every file of the collection's roles and plugins (content, not
    times: the same collection installed elsewhere, from its galaxy tarball, is the same input)."""
    digest = hashlib.sha256()
    for directory in CODE_DIRS:
        for path in sorted((collection_root / directory).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(f"{path.relative_to(collection_root)}\0".encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
