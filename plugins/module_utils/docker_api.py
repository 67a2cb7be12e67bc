# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The few Docker Engine API calls the collection makes on a node, over the daemon's unix socket (no Docker SDK):
how a container is, waiting for one to stop, removing one, and starting a job's launcher container.

Pure Python (stdlib only) so it runs on managed nodes and in plain unit tests.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any, Mapping
from urllib.parse import quote


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over the Docker daemon's unix socket."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


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


def container_details(name: str, docker_socket: str) -> dict[str, Any]:
    """How a container is: present, running, its exit code and whether the kernel's OOM killer stopped it."""
    status, info = docker_get(docker_socket, f"/containers/{quote(name)}/json")
    if status != 200:
        return {"present": False, "running": False, "exit_code": None, "oom_killed": False, "error": missing(status)}
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
    status = docker_request(docker_socket, "DELETE", f"/containers/{quote(name)}?force=1", timeout=30.0)[0]
    if status not in (204, 404):
        raise OSError(f"removing container {name}: Docker answered {missing(status)}")
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
    return f"{missing(status)}: {message}" if message else missing(status)


def missing(status: int) -> str:
    return {0: "no daemon", 404: "absent", -1: "unreadable answer"}.get(status, f"error {status}")


def launcher_config(
    image: str,
    command: list[str],
    user: str = "",
    working_dir: str = "",
    volumes: list[str] | None = None,
    devices: list[str] | None = None,
    groups: list[str] | None = None,
    labels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The create body of a launcher container: host network, an init process, devices passed through at the same
    path with rwm access."""
    return {
        "Image": image,
        "Cmd": list(command),
        "User": user,
        "WorkingDir": working_dir,
        "Labels": {str(key): str(value) for key, value in (labels or {}).items()},
        "HostConfig": {
            "NetworkMode": "host",
            "Init": True,
            "Binds": list(volumes or []),
            "Devices": [{"PathOnHost": path, "PathInContainer": path, "CgroupPermissions": "rwm"} for path in devices or []],
            "GroupAdd": [str(group) for group in groups or []],
        },
    }
