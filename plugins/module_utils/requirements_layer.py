# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A workload's own requirements as a layer over the training environment.

The training environment (the image's Python, or host mode's virtualenv) stays as it is; the packages a
requirements file adds, and only those, are installed on the controller into a directory (``pip install --target``,
wheels for the nodes' Python and platform), shipped to every node once and put first on every rank's
``PYTHONPATH``. The layer is named by a key of the requirements file's content and the training environment it
sits on, so an unchanged file costs nothing and a changed one builds a layer beside the old one.

The packages the training environment already has at the resolved version are left out (torch is not installed
twice); one it has at another version is installed into the layer, where it shadows the environment's: a
replacement, which the caller warns about by name.

Pure Python (no Ansible imports) so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.multinode.training.plugins.module_utils import wheelhouse

# What the nodes' training environment reports: the wheelhouse probe's keys and its installed distributions.
PROBE_SCRIPT = (
    "import json, platform, sys, importlib.metadata as m; "
    "print(json.dumps({'python': '%d.%d' % sys.version_info[:2], 'machine': platform.machine(), "
    "'libc': platform.libc_ver()[0], 'libc_version': platform.libc_ver()[1], "
    "'packages': {d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}}))"
)
# A layer's directory holds the installed packages in SITE_DIR (console scripts in SITE_DIR/bin) and, once it is
# complete, STAMP_FILE with its key.
SITE_DIR = "site"
STAMP_FILE = ".multinode-layer"
KEY_LENGTH = 16

_NOT_FOUND = (
    re.compile(r"No matching distribution found for ([^\s;]+)"),
    re.compile(r"Could not find a version that satisfies the requirement ([^\s;]+)"),
)


class LayerError(ValueError):
    """A requirements file that cannot become a layer, said in words."""


@dataclass(frozen=True)
class Replacement:
    """A package of the training environment that the layer holds at another version."""

    name: str
    environment_version: str
    layer_version: str

    def describe(self) -> str:
        return f"{self.name} {self.environment_version} -> {self.layer_version}"


@dataclass(frozen=True)
class LayerPlan:
    """What the layer installs (``name==version`` pins), and which of those replace the environment's."""

    install: tuple[str, ...]
    replaced: tuple[Replacement, ...] = field(default_factory=tuple)


def canonical_name(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Typing_Extensions`` and ``typing-extensions`` are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def layer_key(requirements_text: str, environment: str) -> str:
    """The key of the layer for ``requirements_text`` over the training ``environment`` (its identity, e.g. the
    runtime and image): the same inputs give the same key on every controller."""
    if not environment:
        raise LayerError("the training environment's identity is empty")
    digest = hashlib.sha256(f"{environment}\0{requirements_text}".encode()).hexdigest()
    return digest[:KEY_LENGTH]


def environment_constraints(packages: Mapping[str, str]) -> list[str]:
    """``name==version`` lines that hold every package of the training environment at its installed version."""
    return [
        f"{name}=={version}" for name, version in sorted(packages.items(), key=lambda item: canonical_name(item[0]))
    ]


def plan_layer(report: Mapping[str, Any], environment_packages: Mapping[str, str]) -> LayerPlan:
    """From pip's installation report (``--dry-run --ignore-installed --report``), the packages the layer must hold:
    every resolved one the environment lacks or has at another version (a replacement)."""
    installed = {canonical_name(name): version for name, version in environment_packages.items()}
    install: list[str] = []
    replaced: list[Replacement] = []
    for item in report.get("install") or []:
        metadata = item.get("metadata") or {}
        name, version = metadata.get("name"), metadata.get("version")
        if not name or not version:
            raise LayerError(f"pip's report has an item without a name and version: {item.get('download_info')}")
        present = installed.get(canonical_name(name))
        if present == version:
            continue
        if present is not None:
            replaced.append(Replacement(name, present, version))
        install.append(f"{name}=={version}")
    return LayerPlan(tuple(install), tuple(replaced))


def unresolvable(pip_output: str) -> list[str]:
    """The requirements pip said it cannot find (in the order it said so), from its error output."""
    found: list[str] = []
    for pattern in _NOT_FOUND:
        for name in pattern.findall(pip_output):
            if name not in found:
                found.append(name)
    return found


def resolve_argv(
    python: str, node: Mapping[str, Any], requirements: str, scratch: str, constraints: str = ""
) -> list[str]:
    """pip's resolution of ``requirements`` for ``node`` that installs nothing and reports what it would install
    (``--report -`` on stdout); ``constraints`` (a file) holds the environment's packages at their versions."""
    constraint = ["--constraint", constraints] if constraints else []
    return _pip_install(
        python, node, scratch, "--dry-run", ["--report", "-", "--requirement", requirements, *constraint]
    )


def install_argv(python: str, node: Mapping[str, Any], target: str, pins: Sequence[str]) -> list[str]:
    """pip's installation of exactly ``pins`` (no dependencies: the plan has them all) into ``target``."""
    if not pins:
        raise LayerError("nothing to install")
    return _pip_install(python, node, target, "--no-deps", pins)


def _pip_install(python: str, node: Mapping[str, Any], target: str, mode: str, words: Sequence[str]) -> list[str]:
    """``pip install`` into ``target`` (nothing installed counts), wheels for ``node``, then ``words``."""
    return [
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        mode,
        "--ignore-installed",
        "--target",
        target,
        *wheelhouse.node_target_args(node),
        *words,
    ]


def differing_nodes(probes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Where the nodes' training environments differ (Python, platform or packages), one line per node that
    differs from the first; the layer is built once for all of them."""
    if not probes:
        return []
    first_node, first = next(iter(probes.items()))
    lines = []
    for node, probe in probes.items():
        differences = _differences(first, probe)
        if differences:
            lines.append(f"{node} has {', '.join(differences)} where {first_node} has {_versions(first, differences)}")
    return lines


def _differences(first: Mapping[str, Any], probe: Mapping[str, Any]) -> list[str]:
    keys = [key for key in wheelhouse.NODE_KEYS if first.get(key) != probe.get(key)]
    found = [f"{key} {probe.get(key)}" for key in keys]
    theirs = {canonical_name(name): version for name, version in (probe.get("packages") or {}).items()}
    ours = {canonical_name(name): version for name, version in (first.get("packages") or {}).items()}
    for name in sorted(set(ours) | set(theirs)):
        if ours.get(name) != theirs.get(name):
            found.append(f"{name} {theirs.get(name, '(none)')}")
    return found


def _versions(first: Mapping[str, Any], differences: Sequence[str]) -> str:
    ours = {canonical_name(name): version for name, version in (first.get("packages") or {}).items()}
    shown = []
    for difference in differences:
        name = difference.split(" ", 1)[0]
        value = first.get(name) if name in wheelhouse.NODE_KEYS else ours.get(name, "(none)")
        shown.append(f"{name} {value}")
    return ", ".join(shown)
