#!/usr/bin/env python3
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install the collections of requirements.yml into collections/ansible_collections, beside this checkout's own.

Ansible Galaxy is out of reach here, so the collections come from the `ansible` package on PyPI, which carries them:
its wheel is downloaded once (into the cache) without being installed, and only the named collections are taken
out of it, each checked to be the version requirements.yml names. A collection already there at that version is
left as it is. Where Galaxy is reachable, `ansible-galaxy collection install -r requirements.yml -p collections`
does the same.

    scripts/install_collections.py [--requirements requirements.yml] [--dest collections] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# The ansible package release that carries the versions requirements.yml names (each is checked).
ANSIBLE_PACKAGE = "ansible==12.3.0"
CACHE = Path(os.environ.get("MULTINODE_CACHE", Path.home() / ".cache" / "multinode-training"))


def wanted(requirements: Path) -> dict[str, str]:
    """Each collection's name -> its version, from a requirements.yml."""
    entries = yaml.safe_load(requirements.read_text(encoding="utf-8"))["collections"]
    return {entry["name"]: str(entry["version"]) for entry in entries}


def installed_version(collection_dir: Path) -> str | None:
    manifest = collection_dir / "MANIFEST.json"
    if not manifest.is_file():
        return None
    return str(json.loads(manifest.read_text(encoding="utf-8"))["collection_info"]["version"])


def package_wheel(cache: Path) -> Path:
    """The ansible package's wheel in the cache, downloaded (not installed) when missing."""
    name, version = ANSIBLE_PACKAGE.split("==")
    found = sorted(cache.glob(f"{name}-{version}-*.whl"))
    if not found:
        print(f"[collections] downloading {ANSIBLE_PACKAGE} (not installed: only its collections are taken)", file=sys.stderr)
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(cache), ANSIBLE_PACKAGE]
        subprocess.run(command, check=True)
        found = sorted(cache.glob(f"{name}-{version}-*.whl"))
    return found[0]


def extract(wheel: Path, name: str, version: str, dest: Path) -> None:
    """The collection ``name`` out of the wheel into ``dest``, replacing what was there, checked to be ``version``."""
    prefix = "ansible_collections/" + name.replace(".", "/") + "/"
    target = dest / "ansible_collections" / name.replace(".", "/")
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory(dir=dest) as staging:
        members = [member for member in archive.namelist() if member.startswith(prefix)]
        if not members:
            raise SystemExit(f"[collections] {wheel.name} has no {name}")
        archive.extractall(staging, members)
        found = installed_version(Path(staging, prefix))
        if found != version:
            raise SystemExit(f"[collections] {wheel.name} has {name} {found}, requirements.yml names {version}")
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        Path(staging, prefix).rename(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.yml")
    parser.add_argument("--dest", type=Path, default=ROOT / "collections")
    parser.add_argument("--cache", type=Path, default=CACHE / "collections")
    args = parser.parse_args(argv)
    missing = {
        name: version
        for name, version in wanted(args.requirements).items()
        if installed_version(args.dest / "ansible_collections" / name.replace(".", "/")) != version
    }
    if missing:
        args.cache.mkdir(parents=True, exist_ok=True)
        wheel = package_wheel(args.cache)
        for name, version in missing.items():
            extract(wheel, name, version, args.dest)
    for name, version in wanted(args.requirements).items():
        print(f"[collections] {name} {version}{' (installed)' if name in missing else ''}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
