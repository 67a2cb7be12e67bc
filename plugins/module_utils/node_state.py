# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a provisioned node looks like, in a few hashes: is a new provisioning run provably a no-op?

After a provisioning run succeeded on a node, its record holds the hash of the run's inputs and one
part per thing that can drift on the node: every file of the watched trees (the SSH mesh: sshd_config,
host keys, authorized_keys, known_hosts, client config), each watched container (running, and from
which image), each watched image tag and each watched process (by pid file). The next run compares: same inputs and the same
parts mean nothing would change; any difference is named, and the node is provisioned in full.

Pure Python (stdlib only) so it runs on managed nodes and in plain unit tests.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Iterable, Mapping
from urllib.parse import quote

from ansible_collections.multinode.training.plugins.module_utils import docker_api

RECORD_VERSION = 1


def tree_state(root: str) -> str:
    """One hash over every file under ``root``: relative path, mode, owner, group and content."""
    digest = hashlib.sha256()
    if not os.path.isdir(root):
        return "absent"
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        linked = [name for name in subdirectories if os.path.islink(os.path.join(directory, name))]
        for name in sorted(files + linked):
            path = os.path.join(directory, name)
            info = os.lstat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{info.st_mode}\0{info.st_uid}\0{info.st_gid}\0".encode())
            if os.path.islink(path):
                digest.update(os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def container_state(name: str, docker_socket: str) -> str:
    """``running <image id>``, ``stopped <image id>``, ``absent`` or ``no daemon`` (the socket does not answer)."""
    status, info = docker_api.docker_get(docker_socket, f"/containers/{quote(name)}/json")
    if status != 200:
        return docker_api.missing(status)
    return f"{'running' if info['State']['Running'] else 'stopped'} {info['Image']}"


def image_state(name: str, docker_socket: str) -> str:
    """The image id ``name`` (a tag) refers to, ``absent`` or ``no daemon``."""
    status, info = docker_api.docker_get(docker_socket, f"/images/{quote(name, safe='')}/json")
    return str(info["Id"]) if status == 200 else docker_api.missing(status)


def process_state(pid_file: str) -> str:
    """``running`` when the process of ``pid_file`` exists, else ``stopped``."""
    try:
        with open(pid_file, encoding="utf-8") as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return "stopped"
    if pid <= 0:  # 0 and negative numbers name process groups, not a process
        return "stopped"
    try:
        os.kill(pid, 0)
    except PermissionError:  # it exists, owned by another user
        return "running"
    except OSError:
        return "stopped"
    return "running"


# The watched things and the Docker socket they are read through: options of the node_state module and of
# node_facts' watch, which observes the same parts for node_state's check.
WATCHED = ("trees", "containers", "images", "pid_files")
WATCHED_OPTIONS: dict[str, dict[str, Any]] = dict(
    trees=dict(type="list", elements="path", default=[]),
    containers=dict(type="list", elements="str", default=[]),
    images=dict(type="list", elements="str", default=[]),
    pid_files=dict(type="list", elements="path", default=[]),
    docker_socket=dict(type="path", default="/var/run/docker.sock"),
)


def watched_parts(params: Mapping[str, Any]) -> dict[str, str]:
    """``node_parts`` of the watched things a module's ``params`` (with WATCHED_OPTIONS) name."""
    return node_parts(*(params[name] for name in WATCHED), params["docker_socket"])


def part_names(trees: Iterable[str], containers: Iterable[str], images: Iterable[str], pid_files: Iterable[str]) -> list[str]:
    """The names of the parts ``node_parts`` returns for these watched things, in its order."""
    return (
        [f"files {root}" for root in trees]
        + [f"container {name}" for name in containers]
        + [f"image {name}" for name in images]
        + [f"process {path}" for path in pid_files]
    )


def node_parts(
    trees: Iterable[str], containers: Iterable[str], images: Iterable[str], pid_files: Iterable[str], docker_socket: str
) -> dict[str, str]:
    """The node's watched state, one entry per thing."""
    trees, containers, images, pid_files = list(trees), list(containers), list(images), list(pid_files)
    states = (
        [tree_state(root) for root in trees]
        + [container_state(name, docker_socket) for name in containers]
        + [image_state(name, docker_socket) for name in images]
        + [process_state(path) for path in pid_files]
    )
    return dict(zip(part_names(trees, containers, images, pid_files), states))


def differences(record: Mapping[str, Any] | None, inputs: str, parts: Mapping[str, str]) -> list[str]:
    """Why a provisioning run may change this node (empty: it would change nothing)."""
    if not record or record.get("version") != RECORD_VERSION:
        return ["no record of an earlier provisioning run"]
    found = [] if record.get("inputs") == inputs else ["the run's inputs changed (variables, image, or the collection)"]
    stored = record.get("parts") or {}
    for name in sorted(set(stored) | set(parts)):
        if stored.get(name) != parts.get(name):
            found.append(f"{name}: {_short(stored.get(name))} -> {_short(parts.get(name))}")
        elif name.startswith("process ") and parts.get(name) == "stopped":
            # A watched daemon that is not running is drift even if the record saw it so (it died right after start).
            found.append(f"{name}: not running")
    return found


def engine_down(parts: Mapping[str, str]) -> bool:
    """Whether the node's container engine does not answer: a watched container or image reads ``no daemon`` (the
    node restarted and its engine did not come back, or Docker was stopped), so no worker can run there."""
    return any(
        state == docker_api.missing(0) for name, state in parts.items() if name.startswith(("container ", "image "))
    )


def new_record(inputs: str, parts: Mapping[str, str]) -> dict[str, Any]:
    """The record a successful provisioning run leaves."""
    return {"version": RECORD_VERSION, "inputs": inputs, "parts": dict(parts)}


def read_record(path: str) -> dict[str, Any] | None:
    """The stored record, or None when there is none or it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_record(path: str, record: Mapping[str, Any]) -> None:
    """Write ``record`` atomically, readable by root only."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = f"{path}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(record, handle, sort_keys=True)
    os.replace(temporary, path)


def _short(value: str | None) -> str:
    if value is None:
        return "nothing"
    return value if len(value) <= 24 else value[:19] + "..."
