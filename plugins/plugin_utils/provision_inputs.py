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

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

COLLECTION_ROOT = Path(__file__).resolve().parents[2]
# The roles of provision.yml's provisioning play whose variables are inputs (workload is left out: launch.yml
# syncs the code on every run anyway).
PROVISIONING_ROLES = ("oneapi", "host_runtime", "container_runtime", "gpu_drivers", "ssh_mesh", "workers", "slurm")
CODE_DIRS = ("roles", "plugins")


# Files named by a value are hashed by content up to this size, by size and modification time above it.
CONTENT_LIMIT = 1 << 20


def inputs_hash(values: Mapping[str, Any], tarball: str | None, collection_root: Path = COLLECTION_ROOT) -> str:
    """sha256 over the values (as sorted JSON, a file they name by what it holds), the tarball's stat and the
    collection's code stamp."""
    digest = hashlib.sha256(json.dumps(by_content(values), sort_keys=True, default=str).encode())
    digest.update(file_stamp(tarball).encode() if tarball else b"no tarball")
    digest.update(code_stamp(collection_root).encode())
    return digest.hexdigest()


def without_defaults(options: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without those that only restate their argument spec's default.

    A variable spelled out with its default's value (``-e cluster_runtime=container``) gives the roles what leaving
    it out gives them, so the hash must not tell the two runs apart. Both sides are compared as the spec converts
    them (``-e cluster_ssh_port=12345`` is the number 12345); a value the spec refuses is kept, and so is every
    variable without a spec or a default.
    """
    return {name: value for name, value in values.items() if not restates_default(options.get(name), name, value)}


def restates_default(spec: Mapping[str, Any] | None, name: str, value: Any) -> bool:
    """Whether ``value`` of ``name`` is what its ``spec``'s default converts to."""
    if not spec or "default" not in spec:
        return False
    validator = ArgumentSpecValidator({name: dict(spec)})
    given = validator.validate({name: value})
    default = validator.validate({name: spec["default"]})
    if given.error_messages or default.error_messages:
        return False
    return given.validated_parameters[name] == default.validated_parameters[name]


def by_content(value: Any) -> Any:
    """``value`` with every absolute path of an existing file replaced by that file's stamp (content_stamp).

    A requirements file reached through the collection's own path (``{{ role_path }}/...``) is the same input from
    the git checkout and from an installed copy, and an edit of it is a new input, though the path stays.
    """
    if isinstance(value, Mapping):
        return {str(key): by_content(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [by_content(item) for item in value]
    if isinstance(value, str) and os.path.isabs(value) and os.path.isfile(value):
        return content_stamp(value)
    return value


def content_stamp(path: str) -> str:
    """``file sha256:<hex>`` of a file up to CONTENT_LIMIT bytes, ``file <size> <mtime_ns>`` of a larger one."""
    if os.path.getsize(path) > CONTENT_LIMIT:
        return f"file {file_stamp(path)}"
    return "file sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()


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
