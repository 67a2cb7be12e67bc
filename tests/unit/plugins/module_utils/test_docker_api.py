# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of docker_api.docker_request, stopped_container and remove_container against a fake Docker API
served over a real unix socket."""

from __future__ import annotations

import http.server
import json
import shutil
import socketserver
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from ansible_collections.multinode.training.plugins.module_utils import docker_api


@dataclass
class FakeContainer:
    """What the fake daemon answers about one container."""

    running_gets: int | None = 0  # GETs answered "running" before it stops; None: it never stops
    exit_code: int = 0
    delete_status: int = 204
    gets: int = 0


@dataclass
class FakeDocker:
    path: str
    containers: dict[str, FakeContainer] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    created: dict[str, dict[str, object]] = field(default_factory=dict)  # create bodies, by container name
    images: set[str] = field(default_factory=lambda: {"img:latest"})


class _Handler(http.server.BaseHTTPRequestHandler):
    server: "_Server"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        fake = self.server.fake
        fake.requests.append(("GET", self.path))
        parts = self.path.split("/")  # "", "containers", <name>, "json"
        container = fake.containers.get(parts[2]) if len(parts) == 4 and parts[1] == "containers" else None
        if container is None:
            self._answer(404, {"message": "No such container"})
            return
        container.gets += 1
        running = container.running_gets is None or container.gets <= container.running_gets
        state = {"Running": running, "ExitCode": 0 if running else container.exit_code, "OOMKilled": False}
        self._answer(200, {"State": state, "Image": "sha256:x"})

    def do_DELETE(self) -> None:  # noqa: N802
        fake = self.server.fake
        fake.requests.append(("DELETE", self.path))
        name = self.path.removeprefix("/containers/").removesuffix("?force=1")
        container = fake.containers.get(name)
        status = 404 if container is None else container.delete_status
        if status == 204:
            del fake.containers[name]
            self.send_response(204)
            self.end_headers()
        else:
            self._answer(status, {"message": "No such container" if status == 404 else "boom"})

    def do_POST(self) -> None:  # noqa: N802
        fake = self.server.fake
        fake.requests.append(("POST", self.path))
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path.startswith("/containers/create?name="):
            name = self.path.removeprefix("/containers/create?name=")
            if body.get("Image") not in fake.images:
                self._answer(404, {"message": f"No such image: {body.get('Image')}"})
                return
            fake.created[name] = body
            fake.containers[name] = FakeContainer(running_gets=None)
            self._answer(201, {"Id": f"id-{name}", "Warnings": []})
        elif self.path.endswith("/start"):
            self.send_response(204)
            self.end_headers()
        else:
            self._answer(404, {"message": "page not found"})

    def _answer(self, status: int, body: dict[str, object]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # the default logs client_address[0], which a unix socket does not have


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, fake: FakeDocker) -> None:
        super().__init__(fake.path, _Handler)
        self.fake = fake


@pytest.fixture
def docker() -> Iterator[FakeDocker]:
    directory = tempfile.mkdtemp(dir="/tmp", prefix="fd")  # short: AF_UNIX paths are limited to ~108 bytes
    fake = FakeDocker(path=f"{directory}/docker.sock")
    server = _Server(fake)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        shutil.rmtree(directory)


# --------------------------------------------------------------------------- docker_request


def test_docker_request_returns_status_and_json_body(docker: FakeDocker) -> None:
    docker.containers["web"] = FakeContainer(running_gets=None)

    status, body = docker_api.docker_request(docker.path, "GET", "/containers/web/json")

    assert status == 200
    assert body == {"State": {"Running": True, "ExitCode": 0, "OOMKilled": False}, "Image": "sha256:x"}


def test_docker_request_gives_the_json_answer_of_an_error_status(docker: FakeDocker) -> None:
    assert docker_api.docker_request(docker.path, "GET", "/containers/absent/json") == (404, {"message": "No such container"})


def test_docker_request_gives_no_body_for_204(docker: FakeDocker) -> None:
    docker.containers["web"] = FakeContainer()

    assert docker_api.docker_request(docker.path, "DELETE", "/containers/web?force=1") == (204, None)
    assert docker.requests == [("DELETE", "/containers/web?force=1")]


def test_docker_request_returns_status_0_when_the_socket_does_not_exist(tmp_path: Path) -> None:
    assert docker_api.docker_request(str(tmp_path / "absent.sock"), "GET", "/containers/web/json") == (0, None)


# --------------------------------------------------------------------------- stopped_container


def test_stopped_container_returns_as_soon_as_it_stops(docker: FakeDocker) -> None:
    docker.containers["worker"] = FakeContainer(running_gets=2, exit_code=137)
    start = time.monotonic()

    details = docker_api.stopped_container("worker", docker.path, wait_seconds=60, interval=0.05)

    assert time.monotonic() - start < 20
    assert details == {"present": True, "running": False, "exit_code": 137, "oom_killed": False}
    assert docker.containers["worker"].gets == 3
    assert docker.requests == [("GET", "/containers/worker/json")] * 3


class SteppedClock:
    """The module's clock: ``sleep`` moves it on, nothing else does, so how many reads fit is not the machine's load."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_stopped_container_gives_up_after_wait_seconds_while_it_runs(
    docker: FakeDocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker.containers["worker"] = FakeContainer(running_gets=None)
    clock = SteppedClock()
    monkeypatch.setattr(docker_api, "time", clock)

    # Binary fractions, so the clock lands on the deadline exactly (three 0.1-s sleeps sum to just over 0.3).
    details = docker_api.stopped_container("worker", docker.path, wait_seconds=0.75, interval=0.25)

    assert details == {"present": True, "running": True, "exit_code": 0, "oom_killed": False}
    # A read at once, then one after each of the three 0.25-s sleeps that bring the clock to the 0.75-s deadline.
    assert clock.now == 0.75
    assert docker.containers["worker"].gets == 4


def test_stopped_container_of_an_absent_container_returns_at_once(docker: FakeDocker) -> None:
    details = docker_api.stopped_container("absent", docker.path, wait_seconds=5, interval=0.05)

    assert details == {"present": False, "running": False, "exit_code": None, "oom_killed": False, "error": "absent"}
    assert len(docker.requests) == 1


# --------------------------------------------------------------------------- remove_container


def test_remove_container_is_true_when_docker_removed_it(docker: FakeDocker) -> None:
    docker.containers["worker"] = FakeContainer(running_gets=None)

    assert docker_api.remove_container("worker", docker.path) is True
    assert docker.requests == [("DELETE", "/containers/worker?force=1")]
    assert "worker" not in docker.containers


def test_remove_container_is_false_when_there_was_none(docker: FakeDocker) -> None:
    assert docker_api.remove_container("absent", docker.path) is False
    assert docker.requests == [("DELETE", "/containers/absent?force=1")]


def test_remove_container_raises_when_docker_fails(docker: FakeDocker) -> None:
    docker.containers["worker"] = FakeContainer(delete_status=500)

    with pytest.raises(OSError, match=r"^removing container worker: Docker answered error 500$"):
        docker_api.remove_container("worker", docker.path)


def test_remove_container_raises_when_there_is_no_daemon(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="Docker answered no daemon"):
        docker_api.remove_container("worker", str(tmp_path / "absent.sock"))


# --------------------------------------------------------------------------- start_container


def test_start_container_replaces_one_of_the_same_name_then_creates_and_starts(docker: FakeDocker) -> None:
    docker.containers["job-launcher"] = FakeContainer(running_gets=None)
    config = docker_api.launcher_config("img:latest", ["bash", "/jobs/1/launch.sh"], user="1000:1000", labels={"job": 1})
    assert docker_api.start_container("job-launcher", config, docker.path) == "id-job-launcher"
    assert docker.requests == [
        ("DELETE", "/containers/job-launcher?force=1"),
        ("POST", "/containers/create?name=job-launcher"),
        ("POST", "/containers/id-job-launcher/start"),
    ]
    assert docker.created["job-launcher"]["Cmd"] == ["bash", "/jobs/1/launch.sh"]
    assert docker.created["job-launcher"]["Labels"] == {"job": "1"}


def test_start_container_names_the_daemon_refusal(docker: FakeDocker) -> None:
    config = docker_api.launcher_config("missing:latest", ["true"])
    with pytest.raises(OSError, match="creating container x: .*No such image: missing:latest"):
        docker_api.start_container("x", config, docker.path)


def test_launcher_config_is_host_network_with_init_and_devices_passed_through() -> None:
    config = docker_api.launcher_config(
        "img", ["true"], volumes=["/a:/a:rw"], devices=["/dev/dri/renderD128"], groups=[44, "109"]
    )
    assert config["HostConfig"] == {
        "NetworkMode": "host",
        "Init": True,
        "Binds": ["/a:/a:rw"],
        "Devices": [{"PathOnHost": "/dev/dri/renderD128", "PathInContainer": "/dev/dri/renderD128", "CgroupPermissions": "rwm"}],
        "GroupAdd": ["44", "109"],
    }
    assert (config["User"], config["WorkingDir"], config["Labels"]) == ("", "", {})

