# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/node_state.py: the hashes that say whether a provisioning run is a no-op.

The Docker parts are checked against a fake daemon: a tiny HTTP server on a unix socket.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import socketserver
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote

import pytest

from ansible_collections.multinode.training.plugins.module_utils import node_state

# --------------------------------------------------------------------------- fake Docker daemon

CONTAINERS = {
    "sshd": {"State": {"Running": True}, "Image": "sha256:abc"},
    "idle": {"State": {"Running": False}, "Image": "sha256:def"},
}
IMAGES = {"multinode/training:latest": {"Id": "sha256:img"}}


class _DockerHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.server.requested.append(self.path)  # type: ignore[attr-defined]
        parts = self.path.split("/")
        body = None
        # /containers/<name>/json and /images/<quoted name>/json
        if len(parts) == 4 and parts[0] == "" and parts[3] == "json":
            name = unquote(parts[2])
            if parts[1] == "containers":
                body = CONTAINERS.get(name)
            elif parts[1] == "images":
                body = IMAGES.get(name)
        if body is None:
            payload = json.dumps({"message": "No such object"}).encode()
            self.send_response(404)
        else:
            payload = json.dumps(body).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        # The default logs client_address[0], which a unix socket does not have.
        pass


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str) -> None:
        super().__init__(path, _DockerHandler)
        self.requested: list[str] = []


@pytest.fixture
def docker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, _UnixHTTPServer]]:
    # A short directory: unix socket paths are limited to ~108 bytes.
    path = str(tmp_path_factory.mktemp("d") / "docker.sock")
    server = _UnixHTTPServer(path)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield path, server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# --------------------------------------------------------------------------- tree_state


def make_tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


FILES = {"sshd_config": b"Port 2222\n", "keys/ssh_host_ed25519_key": b"secret", "keys/a.pub": b"public"}


def test_tree_state_same_tree_same_hash(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    first = node_state.tree_state(str(root))
    assert first == node_state.tree_state(str(root))
    assert len(first) == 64 and first != "absent"


def test_tree_state_same_content_elsewhere_same_hash(tmp_path: Path) -> None:
    # Paths are hashed relative to the root.
    assert node_state.tree_state(str(make_tree(tmp_path / "a", FILES))) == node_state.tree_state(
        str(make_tree(tmp_path / "b", FILES))
    )


def test_tree_state_creation_order_does_not_matter(tmp_path: Path) -> None:
    forward = make_tree(tmp_path / "forward", FILES)
    backward = make_tree(tmp_path / "backward", dict(reversed(list(FILES.items()))))
    assert node_state.tree_state(str(forward)) == node_state.tree_state(str(backward))


def test_tree_state_content_change(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    before = node_state.tree_state(str(root))
    (root / "sshd_config").write_bytes(b"Port 2223\n")  # same size, other content
    assert node_state.tree_state(str(root)) != before


def test_tree_state_nested_content_change(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    before = node_state.tree_state(str(root))
    (root / "keys" / "a.pub").write_bytes(b"publix")
    assert node_state.tree_state(str(root)) != before


def test_tree_state_mode_change(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    key = root / "keys" / "ssh_host_ed25519_key"
    key.chmod(0o600)
    before = node_state.tree_state(str(root))
    key.chmod(0o644)
    after = node_state.tree_state(str(root))
    assert after != before
    key.chmod(0o600)
    assert node_state.tree_state(str(root)) == before


def test_tree_state_added_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    before = node_state.tree_state(str(root))
    (root / "keys" / "extra").write_bytes(b"")
    assert node_state.tree_state(str(root)) != before


def test_tree_state_removed_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    before = node_state.tree_state(str(root))
    (root / "keys" / "a.pub").unlink()
    assert node_state.tree_state(str(root)) != before


def test_tree_state_renamed_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    before = node_state.tree_state(str(root))
    (root / "keys" / "a.pub").rename(root / "keys" / "b.pub")
    assert node_state.tree_state(str(root)) != before


def test_tree_state_absent(tmp_path: Path) -> None:
    assert node_state.tree_state(str(tmp_path / "missing")) == "absent"
    # A file is not a tree either.
    (tmp_path / "file").write_text("x")
    assert node_state.tree_state(str(tmp_path / "file")) == "absent"


def test_tree_state_empty_dir_is_not_absent(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert node_state.tree_state(str(tmp_path / "empty")) != "absent"


# --------------------------------------------------------------------------- process_state


def test_process_state_own_pid_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "own.pid"
    pid_file.write_text(f"{os.getpid()}\n")
    assert node_state.process_state(str(pid_file)) == "running"


def test_process_state_finished_process_stopped(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid no longer exists
    pid_file = tmp_path / "child.pid"
    pid_file.write_text(str(child.pid))
    assert node_state.process_state(str(pid_file)) == "stopped"


def test_process_state_missing_file_stopped(tmp_path: Path) -> None:
    assert node_state.process_state(str(tmp_path / "none.pid")) == "stopped"


@pytest.mark.parametrize("content", ["not a pid", "", "12abc", "1.5"])
def test_process_state_garbage_stopped(tmp_path: Path, content: str) -> None:
    pid_file = tmp_path / "bad.pid"
    pid_file.write_text(content)
    assert node_state.process_state(str(pid_file)) == "stopped"


# --------------------------------------------------------------------------- Docker


def test_container_running(docker: tuple[str, _UnixHTTPServer]) -> None:
    path, server = docker
    assert node_state.container_state("sshd", path) == "running sha256:abc"
    assert server.requested == ["/containers/sshd/json"]


def test_container_stopped(docker: tuple[str, _UnixHTTPServer]) -> None:
    path, _ = docker
    assert node_state.container_state("idle", path) == "stopped sha256:def"


def test_container_unknown_is_absent(docker: tuple[str, _UnixHTTPServer]) -> None:
    path, _ = docker
    assert node_state.container_state("nope", path) == "absent"


def test_image_tag_is_url_quoted(docker: tuple[str, _UnixHTTPServer]) -> None:
    path, server = docker
    assert node_state.image_state("multinode/training:latest", path) == "sha256:img"
    # The slash must be quoted or the daemon would see /images/multinode/training:latest/json.
    assert server.requested == ["/images/multinode%2Ftraining%3Alatest/json"]


def test_image_unknown_is_absent(docker: tuple[str, _UnixHTTPServer]) -> None:
    path, _ = docker
    assert node_state.image_state("multinode/other:latest", path) == "absent"


def test_no_daemon_without_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "missing.sock")
    assert node_state.container_state("sshd", path) == "no daemon"
    assert node_state.image_state("multinode/training:latest", path) == "no daemon"


def test_no_daemon_when_nobody_listens(tmp_path_factory: pytest.TempPathFactory) -> None:
    path = str(tmp_path_factory.mktemp("s") / "dead.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.close()  # the socket file stays, nothing accepts
    assert os.path.exists(path)
    assert node_state.container_state("sshd", path) == "no daemon"


# --------------------------------------------------------------------------- node_parts


def test_node_parts_keys_and_values(tmp_path: Path, docker: tuple[str, _UnixHTTPServer]) -> None:
    path, _ = docker
    tree = make_tree(tmp_path / "ssh", FILES)
    pid_file = tmp_path / "own.pid"
    pid_file.write_text(str(os.getpid()))
    parts = node_state.node_parts(
        trees=[str(tree), str(tmp_path / "gone")],
        containers=["sshd", "nope"],
        images=["multinode/training:latest"],
        pid_files=[str(pid_file)],
        docker_socket=path,
    )
    assert parts == {
        f"files {tree}": node_state.tree_state(str(tree)),
        f"files {tmp_path / 'gone'}": "absent",
        "container sshd": "running sha256:abc",
        "container nope": "absent",
        "image multinode/training:latest": "sha256:img",
        f"process {pid_file}": "running",
    }


def test_node_parts_empty() -> None:
    assert node_state.node_parts([], [], [], [], "/nonexistent.sock") == {}


# --------------------------------------------------------------------------- differences

PARTS = {"files /etc/ssh": "a" * 64, "container sshd": "running sha256:abc", "process /run/x.pid": "running"}


def test_differences_without_record() -> None:
    assert node_state.differences(None, "h", PARTS) == ["no record of an earlier provisioning run"]
    assert node_state.differences({}, "h", PARTS) == ["no record of an earlier provisioning run"]


def test_differences_wrong_version() -> None:
    record = node_state.new_record("h", PARTS)
    record["version"] = node_state.RECORD_VERSION + 1
    assert node_state.differences(record, "h", PARTS) == ["no record of an earlier provisioning run"]
    del record["version"]
    assert node_state.differences(record, "h", PARTS) == ["no record of an earlier provisioning run"]


def test_differences_equal_is_empty() -> None:
    record = node_state.new_record("h", PARTS)
    assert node_state.differences(record, "h", dict(reversed(list(PARTS.items())))) == []


def test_differences_inputs() -> None:
    found = node_state.differences(node_state.new_record("h1", PARTS), "h2", PARTS)
    assert len(found) == 1
    assert "inputs" in found[0]


def test_differences_changed_part_is_named() -> None:
    now = {**PARTS, "container sshd": "stopped sha256:abc"}
    found = node_state.differences(node_state.new_record("h", PARTS), "h", now)
    assert len(found) == 1
    assert found[0].startswith("container sshd: ")
    assert "running sha256:abc" in found[0] and "stopped sha256:abc" in found[0]


def test_a_watched_process_that_is_not_running_is_drift_even_as_recorded() -> None:
    stopped = {**PARTS, "process /run/x.pid": "stopped"}
    found = node_state.differences(node_state.new_record("h", stopped), "h", stopped)
    assert found == ["process /run/x.pid: not running"]


def test_a_stopped_container_as_recorded_is_not_drift() -> None:
    stopped = {**PARTS, "container sshd": "stopped sha256:abc"}
    assert node_state.differences(node_state.new_record("h", stopped), "h", stopped) == []


def test_differences_long_values_are_shortened() -> None:
    now = {**PARTS, "files /etc/ssh": "b" * 64}
    (found,) = node_state.differences(node_state.new_record("h", PARTS), "h", now)
    assert found.startswith("files /etc/ssh: ")
    assert "a" * 19 + "..." in found and "b" * 19 + "..." in found
    assert "a" * 20 not in found


def test_differences_part_only_now() -> None:
    now = {**PARTS, "image multinode/training:latest": "sha256:img"}
    found = node_state.differences(node_state.new_record("h", PARTS), "h", now)
    assert found == ["image multinode/training:latest: nothing -> sha256:img"]


def test_differences_part_only_in_record() -> None:
    now = {name: value for name, value in PARTS.items() if name != "process /run/x.pid"}
    found = node_state.differences(node_state.new_record("h", PARTS), "h", now)
    assert found == ["process /run/x.pid: running -> nothing"]


def test_differences_inputs_and_parts_together() -> None:
    now = {**PARTS, "process /run/x.pid": "stopped"}
    found = node_state.differences(node_state.new_record("h1", PARTS), "h2", now)
    assert len(found) == 2
    assert "inputs" in found[0]
    assert found[1].startswith("process /run/x.pid: ")


# --------------------------------------------------------------------------- engine_down


def test_the_engine_is_down_when_a_watched_container_or_image_reads_no_daemon(tmp_path: Path) -> None:
    parts = node_state.node_parts([], ["sim-worker"], ["multinode/training:latest"], [], str(tmp_path / "no.sock"))
    assert node_state.engine_down(parts)
    assert node_state.engine_down({"container sim-worker": "absent", "image x:1": "no daemon"})


@pytest.mark.parametrize(
    "parts",
    [
        {"container sim-worker": "stopped sha256:4f2", "image x:1": "sha256:4f2"},
        {"container sim-worker": "absent", "image x:1": "absent"},
        {"process /run/sshd.pid": "stopped", "files /etc/ssh": "absent"},
        {},
    ],
)
def test_a_stopped_or_removed_worker_is_no_engine_down(parts: dict[str, str]) -> None:
    """A stopped or removed worker the job's restart can bring back; only an engine that does not answer stops it."""
    assert not node_state.engine_down(parts)


# --------------------------------------------------------------------------- records


def test_new_record_shape() -> None:
    parts = dict(PARTS)
    record = node_state.new_record("h", parts)
    assert record == {"version": node_state.RECORD_VERSION, "inputs": "h", "parts": PARTS}
    parts["extra"] = "x"  # the record holds its own copy
    assert "extra" not in record["parts"]


def test_record_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "state" / "deeper" / "node_state.json"
    record = node_state.new_record("h", PARTS)
    node_state.write_record(str(path), record)
    assert path.parent.is_dir()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert node_state.read_record(str(path)) == record
    assert node_state.differences(node_state.read_record(str(path)), "h", PARTS) == []
    assert sorted(os.listdir(path.parent)) == ["node_state.json"]  # no temporary left


def test_write_record_replaces(tmp_path: Path) -> None:
    path = tmp_path / "node_state.json"
    node_state.write_record(str(path), node_state.new_record("h1", PARTS))
    node_state.write_record(str(path), node_state.new_record("h2", {}))
    assert node_state.read_record(str(path)) == node_state.new_record("h2", {})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_read_record_missing(tmp_path: Path) -> None:
    assert node_state.read_record(str(tmp_path / "none.json")) is None


def test_read_record_unreadable(tmp_path: Path) -> None:
    # A directory cannot be opened as a file (chmod 000 does not stop root).
    (tmp_path / "dir.json").mkdir()
    assert node_state.read_record(str(tmp_path / "dir.json")) is None


@pytest.mark.parametrize("content", [b"{not json", b"", b"\xff\xfe\x00garbage", b"[1, 2]", b'"text"'])
def test_read_record_garbage(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "node_state.json"
    path.write_bytes(content)
    assert node_state.read_record(str(path)) is None


def test_tree_state_sees_a_symlink_pointed_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a\n")
    (tmp_path / "b").write_text("b\n")
    (tmp_path / "link").symlink_to("a")
    before = node_state.tree_state(str(tmp_path))
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to("b")
    assert node_state.tree_state(str(tmp_path)) != before


def test_tree_state_sees_a_symlinked_directory_pointed_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()
    (tmp_path / "dlink").symlink_to("d1")
    before = node_state.tree_state(str(tmp_path))
    (tmp_path / "dlink").unlink()
    (tmp_path / "dlink").symlink_to("d2")
    assert node_state.tree_state(str(tmp_path)) != before


@pytest.mark.parametrize("content", ["0", "-1"])
def test_process_state_of_a_process_group_number_is_stopped(tmp_path: Path, content: str) -> None:
    pid_file = tmp_path / "x.pid"
    pid_file.write_text(content)
    assert node_state.process_state(str(pid_file)) == "stopped"
