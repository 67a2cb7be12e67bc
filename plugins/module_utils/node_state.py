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
import http.client
import json
import os
import socket
import time
from urllib.parse import quote
from typing import Any, Iterable, Mapping

RECORD_VERSION = 1


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over the Docker daemon's unix socket."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


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


def docker_request(
    docker_socket: str, method: str, path: str, timeout: float = 5.0, body: Mapping[str, Any] | None = None
) -> tuple[int, Any]:
    """The status and JSON answer (None when empty) of a Docker API request with an optional JSON ``body``; status 0
    when the daemon does not answer."""
    connection = _UnixConnection(docker_socket, timeout)
    payload = None if body is None else json.dumps(body).encode()
    headers = {} if payload is None else {"Content-Type": "application/json"}
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        answer = response.read()
    except (OSError, http.client.HTTPException):
        return 0, None
    finally:
        connection.close()
    if not answer:
        return response.status, None
    try:
        return response.status, json.loads(answer)
    except ValueError:  # a plain-text error keeps its status; a success must be JSON
        return (-1 if response.status in (200, 201) else response.status), None


def docker_get(docker_socket: str, path: str, timeout: float = 5.0) -> tuple[int, Any]:
    """The status and JSON body of a GET on the Docker API; status 0 when the daemon does not answer."""
    return docker_request(docker_socket, "GET", path, timeout)


def container_state(name: str, docker_socket: str) -> str:
    """``running <image id>``, ``stopped <image id>``, ``absent`` or ``no daemon`` (the socket does not answer)."""
    status, info = docker_get(docker_socket, f"/containers/{quote(name)}/json")
    if status != 200:
        return _missing(status)
    return f"{'running' if info['State']['Running'] else 'stopped'} {info['Image']}"


def container_details(name: str, docker_socket: str) -> dict[str, Any]:
    """How a container is: present, running, its exit code and whether the kernel's OOM killer stopped it."""
    status, info = docker_get(docker_socket, f"/containers/{quote(name)}/json")
    if status != 200:
        return {"present": False, "running": False, "exit_code": None, "oom_killed": False, "error": _missing(status)}
    state = info["State"]
    return {
        "present": True,
        "running": bool(state.get("Running")),
        "exit_code": state.get("ExitCode"),
        "oom_killed": bool(state.get("OOMKilled")),
    }


def stopped_container(name: str, docker_socket: str, wait_seconds: float, interval: float = 0.1) -> dict[str, Any]:
    """``container_details`` once the container stopped, or once ``wait_seconds`` passed with it still running."""
    deadline = time.monotonic() + wait_seconds
    details = container_details(name, docker_socket)
    while details["running"] and time.monotonic() < deadline:
        time.sleep(interval)
        details = container_details(name, docker_socket)
    return details


def remove_container(name: str, docker_socket: str) -> bool:
    """Remove the container (stopping it first if it runs); whether there was one to remove."""
    status, _ = docker_request(docker_socket, "DELETE", f"/containers/{quote(name)}?force=1", timeout=30.0)
    if status not in (204, 404):
        raise OSError(f"removing container {name}: Docker answered {_missing(status)}")
    return status == 204


def start_container(name: str, config: Mapping[str, Any], docker_socket: str) -> str:
    """Create the container ``name`` from ``config`` (the Docker API's create body), replacing one of that name, and
    start it; its id. OSError with the daemon's message when it refuses."""
    remove_container(name, docker_socket)
    status, created = docker_request(docker_socket, "POST", f"/containers/create?name={quote(name)}", 30.0, config)
    if status != 201:
        raise OSError(f"creating container {name}: {_refusal(status, created)}")
    status, answer = docker_request(docker_socket, "POST", f"/containers/{created['Id']}/start", 30.0)
    if status not in (204, 304):
        raise OSError(f"starting container {name}: {_refusal(status, answer)}")
    return str(created["Id"])


def _refusal(status: int, answer: Any) -> str:
    message = answer.get("message") if isinstance(answer, dict) else None
    return f"{_missing(status)}: {message}" if message else _missing(status)


def image_state(name: str, docker_socket: str) -> str:
    """The image id ``name`` (a tag) refers to, ``absent`` or ``no daemon``."""
    status, info = docker_get(docker_socket, f"/images/{quote(name, safe='')}/json")
    return str(info["Id"]) if status == 200 else _missing(status)


def _missing(status: int) -> str:
    return {0: "no daemon", 404: "absent", -1: "unreadable answer"}.get(status, f"error {status}")


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
    return found


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
