# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The requirements layer built for real on the controller (plugin_utils/layer_build.py), from two package indexes the
test lays out on disk that serve different wheels under the same name and version: the layer holds the wheel of the
index the requirements file names, though the other is the controller's default, and a wrong --hash fails naming the
package. Offline: pip reads file:// indexes and directories only."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils import requirements_layer as layers
from ansible_collections.multinode.training.plugins.plugin_utils import layer_build
from ansible_collections.multinode.training.plugins.plugin_utils.layer_build import build, file_options

WHEEL = "demo_pkg-1.0-py3-none-any.whl"
WRONG = "0" * 64


def wheel(path: Path, value: str) -> str:
    """A pure-Python wheel of demo_pkg 1.0 whose module says ``VALUE = value``; its sha256."""
    files = {
        "demo_pkg/__init__.py": f"VALUE = {value!r}\n".encode(),
        "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo_pkg\nVersion: 1.0\n",
        "demo_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},sha256={_urlsafe(data)},{len(data)}\n" for name, data in files.items())
    files["demo_pkg-1.0.dist-info/RECORD"] = (record + "demo_pkg-1.0.dist-info/RECORD,,\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _urlsafe(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def index(root: Path, value: str) -> str:
    """A PEP 503 index at ``root``/simple serving demo_pkg 1.0 (its wheel in ``root``/files, also a find-links
    directory) whose module says ``VALUE = value``; the wheel's sha256."""
    digest = wheel(root / "files" / WHEEL, value)
    project = root / "simple" / "demo-pkg"
    project.mkdir(parents=True)
    (root / "simple" / "index.html").write_text('<a href="demo-pkg/">demo-pkg</a>\n')
    (project / "index.html").write_text(f'<a href="../../files/{WHEEL}#sha256={digest}">{WHEEL}</a>\n')
    return digest


@pytest.fixture(scope="module")
def node() -> dict[str, Any]:
    """This interpreter's probe, as the nodes' training environment (with no packages: nothing is held)."""
    done = subprocess.run([sys.executable, "-c", layers.PROBE_SCRIPT], capture_output=True, text=True, check=True)
    probe = json.loads(done.stdout)
    if probe["libc"] != "glibc":
        pytest.skip(f"this machine's libc is {probe['libc']!r}, not glibc")
    return {**probe, "packages": {}}


@pytest.fixture
def indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Index A, the controller's default (PIP_INDEX_URL, PIP_FIND_LINKS and a pip configuration file's find-links),
    and index B, each serving its own demo_pkg 1.0."""
    digests = {name: index(tmp_path / name, name) for name in ("A", "B")}
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nfind-links = {tmp_path / 'A' / 'files'}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "A" / "simple").as_uri())
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "A" / "files"))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    return {"root": tmp_path, "digest": digests, "b_index": (tmp_path / "B" / "simple").as_uri()}


def build_layer(requirements: str, indexes: dict[str, Any], node: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    """Build the layer of ``requirements`` (written beside index B's directory); the plan and the layer's
    directory."""
    path = indexes["root"] / "requirements.txt"
    path.write_text(requirements)
    layer_dir = indexes["root"] / "layers" / "key"
    args = {"requirements": str(path), "node": node, "nodes": ["node1"], "python": sys.executable}
    return build(args, "key", layer_dir), layer_dir


def value_in(layer_dir: Path) -> str:
    return (layer_dir / layers.SITE_DIR / "demo_pkg" / "__init__.py").read_text()


def left_nothing(indexes: dict[str, Any]) -> bool:
    """Whether a failed build left no layer and no scratch directory."""
    layers_dir = indexes["root"] / "layers"
    return not layers_dir.exists() or not any(layers_dir.iterdir())


def test_the_controller_s_default_is_index_a(indexes: dict[str, Any], node: dict[str, Any]) -> None:
    # Without a source of its own, a file gets the controller's: the setting the next tests must overcome.
    plan, layer_dir = build_layer("demo_pkg==1.0\n", indexes, node)
    assert plan == {"install": ["demo_pkg==1.0"], "replaced": []}
    assert value_in(layer_dir) == "VALUE = 'A'\n"


@pytest.mark.parametrize(
    "sources",
    [
        "--index-url {b_index}\n",
        # A find-links path relative to the requirements file, as pip reads it.
        "--no-index\n--find-links B/files\n",
    ],
)
def test_a_file_that_names_index_b_gets_b_s_wheel(sources: str, indexes: dict[str, Any], node: dict[str, Any]) -> None:
    plan, layer_dir = build_layer(sources.format(**indexes) + "demo_pkg==1.0\n", indexes, node)
    assert plan == {"install": ["demo_pkg==1.0"], "replaced": []}
    assert value_in(layer_dir) == "VALUE = 'B'\n"
    assert (layer_dir / layers.STAMP_FILE).read_text() == "key\n"


def test_a_hash_of_b_s_wheel_is_honoured(indexes: dict[str, Any], node: dict[str, Any]) -> None:
    requirements = f"--index-url {indexes['b_index']}\ndemo_pkg==1.0 --hash=sha256:{indexes['digest']['B']}\n"
    _, layer_dir = build_layer(requirements, indexes, node)
    assert value_in(layer_dir) == "VALUE = 'B'\n"


@pytest.mark.parametrize(
    "requirements",
    [
        f"demo_pkg==1.0 --hash=sha256:{WRONG}\n",
        # A's hash, while the file takes demo_pkg from B.
        "--index-url {b_index}\ndemo_pkg==1.0 --hash=sha256:{a}\n",
    ],
)
def test_a_wrong_hash_fails_naming_the_package(requirements: str, indexes: dict[str, Any], node: dict[str, Any]) -> None:
    text = requirements.format(a=indexes["digest"]["A"], **indexes)
    with pytest.raises(layers.LayerError) as raised:
        build_layer(text, indexes, node)
    message = str(raised.value)
    assert "the hash did not match for demo_pkg==1.0" in message, message
    assert left_nothing(indexes)


def test_the_install_refuses_a_file_other_than_the_one_resolved(
    indexes: dict[str, Any], node: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Index B serves another wheel under the same name and version between the resolution and the install.
    resolve: Callable[..., dict[str, Any]] = layer_build._resolve

    def resolve_then_replace(args: dict[str, Any], scratch: Path) -> dict[str, Any]:
        report = resolve(args, scratch)
        index(indexes["root"] / "B2", "B2")
        for name in ("files", "simple"):
            (indexes["root"] / "B" / name).rename(indexes["root"] / f"B-old-{name}")
            (indexes["root"] / "B2" / name).rename(indexes["root"] / "B" / name)
        return report

    monkeypatch.setattr(layer_build, "_resolve", resolve_then_replace)
    with pytest.raises(layers.LayerError, match="the hash did not match for demo_pkg==1.0") as raised:
        build_layer(f"--index-url {indexes['b_index']}\ndemo_pkg==1.0\n", indexes, node)
    assert indexes["digest"]["B"] not in str(raised.value)  # the hash it got is the new file's
    assert left_nothing(indexes)


def test_file_options_read_included_files_where_they_are_and_take_find_links_beside_their_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub" / "wheels").mkdir(parents=True)
    (tmp_path / "requirements.txt").write_text(
        "--index-url https://i.example/simple\n-r sub/base.txt\n--trusted-host i.example\n"
        f"Demo_Pkg==1.0 --hash=sha256:{WRONG}\n"
    )
    (tmp_path / "sub" / "base.txt").write_text(
        f"-f wheels\n--find-links elsewhere\n-r ../requirements.txt\neinops --hash=sha256:{WRONG}\n"
    )
    options = file_options(tmp_path / "requirements.txt")
    assert options.options == (
        ("--index-url", "https://i.example/simple"),
        ("-f", str((tmp_path / "sub" / "wheels").resolve())),
        ("--find-links", "elsewhere"),  # not beside the file: pip takes it as it is
        ("--trusted-host", "i.example"),
    )
    assert options.hashes == {"demo-pkg": frozenset({f"sha256:{WRONG}"}), "einops": frozenset({f"sha256:{WRONG}"})}


def test_file_options_name_an_included_file_that_is_not_there(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-c pins.txt\n")
    with pytest.raises(layers.LayerError, match="pins.txt: No such file"):
        file_options(tmp_path / "requirements.txt")


def test_file_options_refuse_an_included_url(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-r https://example.com/base.txt\n")
    with pytest.raises(layers.LayerError, match="is a URL"):
        file_options(tmp_path / "requirements.txt")
