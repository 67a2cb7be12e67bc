# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/install_collections.py: requirements.yml's collections taken out of a wheel of the ansible package,
checked to be the named versions, and a collection already there at its version left alone."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.multinode.training.tests.unit.scripts.conftest import REPO, load_script

SCRIPT = load_script("install_collections")
NAME, VERSION = SCRIPT.ANSIBLE_PACKAGE.split("==")


def manifest(version: str) -> str:
    return json.dumps({"collection_info": {"version": version}})


def fake_wheel(cache: Path, collections: dict[str, str]) -> Path:
    """A wheel of the ansible package holding the given collections (name -> version) and one more."""
    wheel = cache / f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, version in {**collections, "community.general": "11.0.0"}.items():
            path = "ansible_collections/" + name.replace(".", "/")
            archive.writestr(f"{path}/MANIFEST.json", manifest(version))
            archive.writestr(f"{path}/plugins/modules/thing.py", "# a module\n")
    return wheel


def requirements(tmp_path: Path, collections: dict[str, str]) -> Path:
    lines = ["collections:"] + [f"  - {{name: {name}, version: {version}}}" for name, version in collections.items()]
    path = tmp_path / "requirements.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(tmp_path: Path, collections: dict[str, str]) -> Path:
    dest = tmp_path / "collections"
    dest.mkdir(exist_ok=True)
    args = ["--requirements", str(requirements(tmp_path, collections)), "--dest", str(dest), "--cache", str(tmp_path / "cache")]
    assert SCRIPT.main(args) == 0
    return dest / "ansible_collections"


def test_only_the_named_collections_are_taken_out_at_their_versions(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    fake_wheel(tmp_path / "cache", {"community.docker": "4.8.5", "ansible.posix": "2.1.0"})
    installed = run(tmp_path, {"community.docker": "4.8.5", "ansible.posix": "2.1.0"})
    assert SCRIPT.installed_version(installed / "community" / "docker") == "4.8.5"
    assert (installed / "ansible" / "posix" / "plugins" / "modules" / "thing.py").is_file()
    assert not (installed / "community" / "general").exists()


def test_a_collection_already_at_its_version_is_left_and_no_wheel_is_needed(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    fake_wheel(tmp_path / "cache", {"community.docker": "4.8.5"})
    installed = run(tmp_path, {"community.docker": "4.8.5"})
    marker = installed / "community" / "docker" / "left.txt"
    marker.write_text("mine", encoding="utf-8")
    next((tmp_path / "cache").glob("*.whl")).unlink()
    run(tmp_path, {"community.docker": "4.8.5"})
    assert marker.read_text(encoding="utf-8") == "mine"


def test_a_wheel_with_another_version_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    fake_wheel(tmp_path / "cache", {"community.docker": "4.8.5"})
    with pytest.raises(SystemExit, match="has community.docker 4.8.5, requirements.yml names 5.0.0"):
        run(tmp_path, {"community.docker": "5.0.0"})
    assert not (tmp_path / "collections" / "ansible_collections" / "community").exists()


def test_the_checkouts_requirements_name_the_collections_galaxy_yml_depends_on() -> None:
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))
    assert set(SCRIPT.wanted(REPO / "requirements.yml")) == set(galaxy["dependencies"])
