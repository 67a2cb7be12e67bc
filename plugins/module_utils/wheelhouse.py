# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pip command lines that resolve and download a node's wheels (oneapi role, pip install method).

Pure Python (no Ansible imports). ``node`` is the probe the role runs with the node's own Python:
``{"python": "3.11", "libc": "glibc", "libc_version": "2.36", "machine": "x86_64"}``. The wheels are
chosen for that node, not for the machine running pip: ``--only-binary=:all:`` with
``--python-version``, ``--implementation``, ``--abi`` and ``--platform`` (repeatable), as documented
for ``pip download`` and ``pip install``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# The probe keys the command lines are built from (the probe's "libc" is checked by the role itself).
NODE_KEYS = ("python", "machine", "libc_version")
# manylinux_2_17 is the oldest glibc tag listed by version; manylinux2014 is its legacy alias.
OLDEST_GLIBC_MINOR = 17

_PYTHON_VERSION = re.compile(r"^(\d+)\.(\d+)$")
_GLIBC_VERSION = re.compile(r"^\d+\.(\d+)(\.\d+)*$")


def platform_tags(libc_version: str, machine: str) -> list[str]:
    """The platform tags whose wheels run on a node with glibc ``libc_version`` on ``machine``.

    ``manylinux_2_<minor>_<machine>`` from the node's glibc minor down to 17, then
    ``manylinux2014_<machine>`` and ``linux_<machine>``.
    """
    match = _GLIBC_VERSION.match(str(libc_version))
    if not match:
        raise ValueError(f"glibc version {libc_version!r} is not of the form 2.<minor>, for example 2.36")
    if not machine:
        raise ValueError("the node's machine is empty (expected for example x86_64)")
    minor = int(match.group(1))
    tags = [f"manylinux_2_{m}_{machine}" for m in range(minor, OLDEST_GLIBC_MINOR - 1, -1)]
    return tags + [f"manylinux2014_{machine}", f"linux_{machine}"]


def resolve_argv(python: str, node: Mapping[str, Any], wheelhouse: str, packages: Sequence[str]) -> list[str]:
    """``python -m pip install --dry-run --report -`` resolving ``packages`` for ``node`` from ``wheelhouse`` only.

    Offline (``--no-index --find-links``), installing nothing; ``--target`` (never written) is what older
    pip needs to accept the platform options. The JSON report on stdout lists the wheels to ship.
    """
    python_version, machine, libc_version = _node(node)
    wheelhouse = _wheelhouse(wheelhouse)
    return [
        _nonempty("python", python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--dry-run",
        "--ignore-installed",
        "--no-index",
        "--find-links",
        wheelhouse,
        "--target",
        wheelhouse + "/.never-written",
        *_node_target_args(python_version, libc_version, machine),
        "--report",
        "-",
        *_packages(packages),
    ]


def node_target_args(node: Mapping[str, Any]) -> list[str]:
    """pip's options that pick wheels for the probed ``node`` instead of this machine (binary wheels only)."""
    python_version, machine, libc_version = _node(node)
    return _node_target_args(python_version, libc_version, machine)


def _node_target_args(python_version: str, libc_version: str, machine: str) -> list[str]:
    """pip's options that pick wheels for the node's interpreter and platform instead of this machine's."""
    return [
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "--abi",
        _abi(python_version),
        *_platform_args(libc_version, machine),
    ]


def download_argv(
    node: Mapping[str, Any], wheelhouse: str, packages: Sequence[str], python: str = "python3"
) -> list[str]:
    """``python -m pip download`` of ``packages`` and their dependencies, as wheels for ``node``, into ``wheelhouse``.

    Runs on any machine that reaches the package index (the wheels are chosen for the node, not for
    that machine); pip creates ``wheelhouse`` when missing and keeps the wheels already there.
    """
    python_version, machine, libc_version = _node(node)
    return [
        _nonempty("python", python),
        "-m",
        "pip",
        "download",
        *_node_target_args(python_version, libc_version, machine),
        "-d",
        _wheelhouse(wheelhouse),
        *_packages(packages),
    ]


def _node(node: Mapping[str, Any]) -> tuple[str, str, str]:
    """The probe's (python, machine, libc_version), checked."""
    if not isinstance(node, Mapping):
        raise ValueError(
            f"the node probe must be a mapping with the keys {', '.join(NODE_KEYS)}, got {type(node).__name__}"
        )
    missing = [key for key in NODE_KEYS if key not in node or node[key] in (None, "")]
    if missing:
        raise ValueError(
            f"the node probe lacks {', '.join(missing)} (it needs {', '.join(NODE_KEYS)}); got {dict(node)!r}"
        )
    python_version = str(node["python"])
    if not _PYTHON_VERSION.match(python_version):
        raise ValueError(f"the node's python {python_version!r} is not of the form <major>.<minor>, for example 3.11")
    return python_version, str(node["machine"]), str(node["libc_version"])


def _abi(python_version: str) -> str:
    return "cp" + python_version.replace(".", "")


def _platform_args(libc_version: str, machine: str) -> list[str]:
    return [f"--platform={tag}" for tag in platform_tags(libc_version, machine)]


def _wheelhouse(wheelhouse: str) -> str:
    return _nonempty("wheelhouse", wheelhouse)


def _nonempty(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return str(value)


def _packages(packages: Sequence[str]) -> list[str]:
    if isinstance(packages, str) or not isinstance(packages, Sequence):
        raise ValueError(f"packages must be a list of requirements, got {packages!r}")
    if not packages or not all(isinstance(item, str) and item for item in packages):
        raise ValueError(f"packages must be a non-empty list of requirement strings, got {list(packages)!r}")
    return [str(item) for item in packages]


# name-version(-build)?-python-abi-platform.whl (PEP 427); each tag may be a dotted set (py2.py3).
_WHEEL_FILE = re.compile(r"^(?P<name>[^-]+)-[^-]+(?:-\d[^-]*)?-(?P<python>[^-]+)-(?P<abi>[^-]+)-[^-]+\.whl$")


def wheel_serves(wheel: str, python_version: str) -> bool:
    """Whether the wheel file ``wheel`` installs on CPython ``python_version`` (``major.minor``), by its Python and
    ABI tags: ``cp<major><minor>``, ``py<major>`` or ``py<major><minor>``, or a stable-ABI (``abi3``) wheel of an
    older minor of the same major. A name that is not a wheel's serves nothing."""
    match = _WHEEL_FILE.match(wheel)
    version = _PYTHON_VERSION.match(python_version)
    if not match or not version:
        return False
    major, minor = version.group(1), int(version.group(2))
    for tag in match.group("python").split("."):
        if tag in (f"cp{major}{minor}", f"py{major}", f"py{major}{minor}"):
            return True
        stable = re.match(rf"^cp{major}(\d+)$", tag)
        if stable and "abi3" in match.group("abi").split(".") and int(stable.group(1)) <= minor:
            return True
    return False


def projects_without_wheel(wheels: Sequence[str], python_version: str) -> list[str]:
    """The projects of ``wheels`` (wheel file names) none of whose wheels installs on Python ``python_version``,
    sorted, by their names as the files spell them."""
    projects: dict[str, bool] = {}
    for wheel in wheels:
        match = _WHEEL_FILE.match(wheel)
        if match:
            name = match.group("name")
            projects[name] = projects.get(name, False) or wheel_serves(wheel, python_version)
    return sorted(name for name, served in projects.items() if not served)


def wheel_pythons(wheels: Sequence[str]) -> list[str]:
    """The CPython versions (``major.minor``) the version-specific wheels of ``wheels`` are for, sorted."""
    found = set()
    for wheel in wheels:
        match = _WHEEL_FILE.match(wheel)
        for tag in match.group("python").split(".") if match else ():
            version = re.match(r"^cp(\d)(\d+)$", tag)
            if version:
                found.add((int(version.group(1)), int(version.group(2))))
    return [f"{major}.{minor}" for major, minor in sorted(found)]
