# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The --hash lines of a requirements file judged against the release's files where pip looks (plugin_utils/
requirement_hashes.py), before any node changes: a local index served on 127.0.0.1 (test_layer_build's, as PEP 503
HTML or PEP 691 JSON) and a local find-links directory; then through the preflight's rule. Loopback only."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.plugin_utils import preflight, requirement_hashes
from ansible_collections.multinode.training.plugins.plugin_utils.layer_build import file_options
from ansible_collections.multinode.training.tests.unit.plugins.plugin_utils.test_layer_build import WHEEL, WRONG, index, wheel

# Another platform's file of the same release, and a file of another release.
OTHER_PLATFORM = "demo_pkg-1.0-cp312-cp312-win_amd64.whl"
OTHER_RELEASE = "demo_pkg-2.0-py3-none-any.whl"


class IndexHandler(SimpleHTTPRequestHandler):
    """Serves its directory, a project's index.json (PEP 691) to a client that accepts it; records every request."""

    def __init__(self, *args: Any, requests: list[str], **kwargs: Any) -> None:
        self.requests = requests
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        self.requests.append(self.path)
        page = Path(self.translate_path(self.path)) / "index.json"
        if requirement_hashes.PEP691 not in self.headers.get("Accept", "") or not page.is_file():
            super().do_GET()
            return
        body = page.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", requirement_hashes.PEP691)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def add_file(root: Path, filename: str, value: str) -> str:
    """Another file of demo_pkg in ``root``'s index (test_layer_build.index's layout); its sha256."""
    digest = wheel(root / "files" / filename, value)
    with (root / "simple" / "demo-pkg" / "index.html").open("a") as page:
        page.write(f'<a href="../../files/{filename}#sha256={digest}">{filename}</a>\n')
    return digest


def as_pep691(served: dict[str, Any]) -> None:
    """The project's page as PEP 691 JSON only (its HTML page gone): what the index lists is then read from JSON."""
    project = served["root"] / "simple" / "demo-pkg"
    files = [{"filename": name, "url": f"../../files/{name}", "hashes": {"sha256": digest}} for name, digest in served["digest"].items()]
    (project / "index.json").write_text(json.dumps({"meta": {"api-version": "1.0"}, "name": "demo-pkg", "files": files}))
    (project / "index.html").unlink()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """test_layer_build's index of demo_pkg 1.0 with another platform's wheel and a 2.0 wheel, served on 127.0.0.1."""
    root = tmp_path / "served"
    digests = {WHEEL: index(root, "any"), OTHER_PLATFORM: add_file(root, OTHER_PLATFORM, "win"), OTHER_RELEASE: add_file(root, OTHER_RELEASE, "2")}
    requests: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(IndexHandler, requests=requests, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield {"root": root, "digest": digests, "index": f"http://127.0.0.1:{server.server_port}/simple/", "requests": requests}
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def judged(tmp_path: Path, text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The wrong hashes of the requirements file ``text`` (written in ``tmp_path``), as requirement and places."""
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    wrong = requirement_hashes.wrong_hashes(file_options(path), "python-never-run", timeout=2.0)
    return [(pinned.requirement, tuple(map(str, places))) for pinned, places in wrong]


@pytest.mark.parametrize("pep691", [False, True], ids=["pep503-html", "pep691-json"])
@pytest.mark.parametrize("filename", [WHEEL, OTHER_PLATFORM])
def test_a_hash_of_any_file_of_the_release_passes(tmp_path: Path, served: dict[str, Any], filename: str, pep691: bool) -> None:
    # The nodes' platform is unknown in the first play: the Windows wheel's hash may be the one the nodes never take.
    if pep691:
        as_pep691(served)
    text = f"--index-url {served['index']}\ndemo_pkg==1.0 --hash=sha256:{served['digest'][filename]}\n"
    assert judged(tmp_path, text) == []
    assert served["requests"] == ["/simple/demo-pkg/"]


@pytest.mark.parametrize("pep691", [False, True], ids=["pep503-html", "pep691-json"])
@pytest.mark.parametrize("given", ["wrong", OTHER_RELEASE])
def test_a_hash_no_file_of_the_release_has_is_refused_naming_the_package_and_the_index(
    tmp_path: Path, served: dict[str, Any], given: str, pep691: bool
) -> None:
    if pep691:
        as_pep691(served)
    digest = served["digest"].get(given, WRONG)
    text = f"--index-url {served['index']}\neinops\ndemo-pkg==1.0 --hash=sha256:{WRONG} \\\n    --hash=sha256:{digest}\n"
    assert judged(tmp_path, text) == [("demo-pkg==1.0", (served["index"],))]


def test_the_index_is_asked_without_the_credentials_it_names_and_shown_without_them(tmp_path: Path, served: dict[str, Any]) -> None:
    with_credentials = served["index"].replace("http://", "http://user:secret@")
    assert judged(tmp_path, f"-i {with_credentials}\ndemo_pkg==1.0 --hash=sha256:{WRONG}\n") == [("demo_pkg==1.0", (served["index"],))]


def test_an_unreachable_index_refuses_nothing(tmp_path: Path, served: dict[str, Any]) -> None:
    closed = "http://127.0.0.1:1/simple/"  # nothing listens on port 1
    text = f"--index-url {closed}\n--extra-index-url {served['index']}\ndemo_pkg==1.0 --hash=sha256:{WRONG}\n"
    assert judged(tmp_path, text) == []


def test_a_release_no_place_lists_is_left_to_the_build(tmp_path: Path, served: dict[str, Any]) -> None:
    text = f"--index-url {served['index']}\ndemo_pkg==3.0 --hash=sha256:{WRONG}\nno-such-package==1.0 --hash=sha256:{WRONG}\n"
    assert judged(tmp_path, text) == []
    assert sorted(served["requests"]) == ["/simple/demo-pkg/", "/simple/no-such-package/"]


@pytest.mark.parametrize(
    "requirement",
    [
        "demo_pkg>=1.0",  # not one release
        'demo_pkg==1.0 ; sys_platform == "win32"',  # a marker the nodes may not meet
        "demo_pkg @ https://example.invalid/demo_pkg-1.0-py3-none-any.whl",
    ],
)
def test_a_requirement_that_does_not_pin_one_release_makes_no_request(tmp_path: Path, served: dict[str, Any], requirement: str) -> None:
    assert judged(tmp_path, f"--index-url {served['index']}\n{requirement} --hash=sha256:{WRONG}\n") == []
    assert served["requests"] == []


def test_a_file_without_hashes_makes_no_request(tmp_path: Path, served: dict[str, Any]) -> None:
    # Nor does it ask pip for the controller's configuration ("python-never-run" would fail it).
    assert judged(tmp_path, "demo_pkg==1.0\n") == []
    assert judged(tmp_path, f"--index-url {served['index']}\ndemo_pkg==1.0\n") == []
    assert served["requests"] == []


@pytest.mark.parametrize("location", ["wheels", "{root}/wheels", "file://{root}/wheels"])
def test_a_find_links_directory_is_judged_by_hashing_its_files(tmp_path: Path, location: str) -> None:
    digest = wheel(tmp_path / "wheels" / OTHER_PLATFORM, "win")
    wheel(tmp_path / "wheels" / OTHER_RELEASE, "2")
    location = location.format(root=tmp_path)
    sources = f"--no-index\n--find-links {location}\n"
    assert judged(tmp_path, f"{sources}demo_pkg==1.0 --hash=sha256:{digest}\n") == []
    shown = location if "://" in location else str((tmp_path / "wheels").resolve())  # as file_options takes a path
    assert judged(tmp_path, f"{sources}demo_pkg==1.0 --hash=sha256:{WRONG}\n") == [("demo_pkg==1.0", (shown,))]


def test_a_file_index_is_read_from_its_pages(tmp_path: Path) -> None:
    digest = index(tmp_path, "any")
    sources = f"--index-url {(tmp_path / 'simple').as_uri()}\n"
    assert judged(tmp_path, f"{sources}demo_pkg==1.0 --hash=sha256:{digest}\n") == []
    assert judged(tmp_path, f"{sources}demo_pkg==1.0 --hash=sha256:{WRONG}\n") == [("demo_pkg==1.0", ((tmp_path / "simple").as_uri(),))]


def test_a_hash_of_an_algorithm_the_index_does_not_give_is_left_to_the_build(tmp_path: Path, served: dict[str, Any]) -> None:
    assert judged(tmp_path, f"--index-url {served['index']}\ndemo_pkg==1.0 --hash=sha512:{WRONG * 2}\n") == []


def test_without_an_index_of_its_own_the_file_is_judged_on_the_controller_s(
    tmp_path: Path, served: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # PyPI is not asked: the controller's pip (PIP_INDEX_URL) names the index the build uses.
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", served["index"])
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    path = tmp_path / "requirements.txt"
    path.write_text(f"demo_pkg==1.0 --hash=sha256:{WRONG}\n")
    places = requirement_hashes.search_places(file_options(path), sys.executable)
    assert places == [requirement_hashes.Place(served["index"], index=True)]


def test_the_controller_s_pip_that_cannot_be_asked_refuses_nothing(tmp_path: Path, served: dict[str, Any]) -> None:
    assert judged(tmp_path, f"demo_pkg==1.0 --hash=sha256:{WRONG}\n") == []
    assert served["requests"] == []


@pytest.mark.parametrize(
    ("filename", "version"),
    [
        ("demo_pkg-1.0-py3-none-any.whl", "1.0"),
        ("Demo.Pkg-1.0.post1.tar.gz", "1.0.post1"),
        ("demo-pkg-2.0rc1.zip", "2.0rc1"),
        ("demo_pkg_extra-1.0-py3-none-any.whl", None),
        ("demo-pkg-extra-1.0.tar.gz", None),
        ("demo_pkg-1.0.egg", None),
    ],
)
def test_file_version_reads_names_as_pip_does(filename: str, version: str | None) -> None:
    found = requirement_hashes.file_version(filename, "demo-pkg")
    assert (str(found) if found else None) == version


def test_the_preflight_refuses_a_wrong_hash_of_the_file_beside_the_script(tmp_path: Path, served: dict[str, Any]) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "requirements.txt").write_text(f"-r pins.txt\n--index-url {served['index']}\n")
    (code / "pins.txt").write_text(f"demo_pkg==1.0 --hash=sha256:{WRONG}\n")
    problems = preflight.requirements_problems("", str(code))
    assert [str(problem) for problem in problems] == [
        f"workload_requirements: {(code / 'requirements.txt').resolve()}: demo_pkg==1.0: no file of that release on {served['index']} has the sha256 "
        "given (a --hash line that is wrong)"
    ]
    (code / "pins.txt").write_text(f"demo_pkg==1.0 --hash=sha256:{served['digest'][OTHER_PLATFORM]}\n")
    assert preflight.requirements_problems("", str(code)) == []


def test_the_preflight_takes_the_file_as_the_workload_role_does(tmp_path: Path, served: dict[str, Any]) -> None:
    (tmp_path / "requirements.txt").write_text(f"--index-url {served['index']}\ndemo_pkg==1.0 --hash=sha256:{WRONG}\n")
    assert preflight.requirements_problems("none", str(tmp_path)) == []
    assert preflight.requirements_problems("", str(tmp_path / "elsewhere")) == []
    assert [problem.variable for problem in preflight.requirements_problems(str(tmp_path / "requirements.txt"), "")] == ["workload_requirements"]
    missing = preflight.requirements_problems(str(tmp_path / "nope.txt"), str(tmp_path))
    assert [str(problem) for problem in missing] == [f"workload_requirements: {(tmp_path / 'nope.txt').resolve()} is not a file on the controller"]
    (tmp_path / "requirements.txt").write_text("-c pins.txt\n")
    assert [problem.message for problem in preflight.requirements_problems("", str(tmp_path))] == [
        f"{tmp_path / 'pins.txt'}: No such file or directory"
    ]
