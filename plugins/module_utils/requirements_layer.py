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

The layer holds exactly the files the resolution chose: each is installed by its hash from pip's report (and, when
the requirements file has ``--hash`` lines, only if that hash is one of them), with the file's own options (indexes,
find-links, trusted hosts) in the install as in the resolution. A file that names its own index (``--index-url`` or
``--no-index``) is resolved from the places it names alone: none of the controller's pip sources (its configuration
files' or ``PIP_*`` variables' index, extra indexes and find-links, which pip would otherwise search as well) is used.

Pure Python (no Ansible imports) so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shlex
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
# pip's report of a downloaded file whose hash is not one the requirements allow ("THESE PACKAGES DO NOT MATCH THE
# HASHES FROM THE REQUIREMENTS FILE"): the requirement, the file, the expected algorithm and the hash it has.
_HASH_MISMATCH = re.compile(
    r"^ +(?P<requirement>\S+) from (?P<url>\S+).*:\n"
    r" +Expected (?P<algorithm>\w+) .*\n(?: +(?:Expected +)?or .*\n)* +Got +(?P<got>\w+)",
    re.MULTILINE,
)
# A requirements file's lines: a backslash at the end continues a line; a comment runs from " #" to the end.
_CONTINUED = re.compile(r"\\\n")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
# Options of a requirements file: those that include another file, and those that replace the index.
INCLUDES = frozenset({"-r", "--requirement", "-c", "--constraint"})
_REPLACES_INDEX = frozenset({"-i", "--index-url", "--no-index"})
FIND_LINKS = frozenset({"-f", "--find-links"})
# pip's settings that name where packages come from (as its configuration and PIP_* variables spell them).
SOURCE_SETTINGS = ("index-url", "extra-index-url", "find-links", "no-index")


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
class Pin:
    """One file the resolution chose: a package at its version, by its hashes (``algorithm:hex``), and by its URL
    when the requirements named the file itself (``name @ url``)."""

    name: str
    version: str
    hashes: tuple[str, ...]
    url: str = ""

    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    def line(self) -> str:
        """The pin as a line of pip's requirements format, that only this file satisfies."""
        named = f"{self.name} @ {self.url}" if self.url else self.requirement()
        return " ".join([named, *(f"--hash={digest}" for digest in self.hashes)])


@dataclass(frozen=True)
class LayerPlan:
    """What the layer installs, and which of those replace the environment's."""

    pins: tuple[Pin, ...]
    replaced: tuple[Replacement, ...] = field(default_factory=tuple)

    @property
    def install(self) -> tuple[str, ...]:
        """The packages, as ``name==version``."""
        return tuple(pin.requirement() for pin in self.pins)


@dataclass(frozen=True)
class FileOptions:
    """What requirements files say besides their requirements: their option lines (``(option, value)``, value
    ``None`` for a flag) in order, the files they include (``-r``, ``-c``) among them, the hashes each package is
    allowed (``--hash``, by canonical name), and the requirement of each line with a ``--hash``, as written."""

    options: tuple[tuple[str, str | None], ...] = ()
    hashes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    hashed: tuple[str, ...] = ()

    def replaces_index(self) -> bool:
        """Whether they name their own index (``--index-url``, ``--no-index``) instead of the default one."""
        return any(option in _REPLACES_INDEX for option, _value in self.options)

    def lines(self) -> list[str]:
        """The option lines, in pip's requirements format."""
        return [option if value is None else f"{option} {shlex.quote(value)}" for option, value in self.options]


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


def plan_layer(
    report: Mapping[str, Any], environment_packages: Mapping[str, str], allowed: Mapping[str, frozenset[str]]
) -> LayerPlan:
    """From pip's installation report (``--dry-run --ignore-installed --report``), the files the layer must hold:
    every resolved package the environment lacks or has at another version (a replacement), by the hash of the file
    pip chose, which must be one of those ``allowed`` for it (by canonical name) when it has any."""
    installed = {canonical_name(name): version for name, version in environment_packages.items()}
    pins: list[Pin] = []
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
        pins.append(_pin(item, name, version, allowed.get(canonical_name(name), frozenset())))
    return LayerPlan(tuple(pins), tuple(replaced))


def _pin(item: Mapping[str, Any], name: str, version: str, allowed: frozenset[str]) -> Pin:
    """The file of one report item, by its hashes (those ``allowed``, when any are)."""
    download = item.get("download_info") or {}
    archive = download.get("archive_info") or {}
    found = {f"{algorithm}:{digest}" for algorithm, digest in (archive.get("hashes") or {}).items()}
    if archive.get("hash"):
        found.add(archive["hash"].replace("=", ":", 1))
    url = download.get("url") or "(no URL)"
    if not found:
        raise LayerError(f"pip's report has no hash of the file of {name} {version} ({url}), so it cannot be checked")
    if allowed:
        matching = found & allowed
        if not matching:
            raise LayerError(
                f"the hash of {name} {version} did not match: {url} has {', '.join(sorted(found))}, the --hash lines "
                f"allow {', '.join(sorted(allowed))}"
            )
        found = matching
    return Pin(name, version, tuple(sorted(found)), url if item.get("is_direct") else "")


def read_options(text: str) -> FileOptions:
    """The options (included files among them, as written) and hashes of one requirements file (pip's format: one
    requirement or option line each, ``\\`` continues a line, ``#`` starts a comment)."""
    return merge_options([_line_options(line) for line in _logical_lines(text)])


def _line_options(line: str) -> FileOptions:
    """An option line's options (an editable requirement left out), or a requirement line's hashes."""
    requirement, words = _split_line(line)
    pairs = _option_pairs(words)
    if not requirement:
        return FileOptions(tuple(pair for pair in pairs if pair[0] not in ("-e", "--editable")))
    found = frozenset(value for option, value in pairs if option == "--hash" and value)
    name = _NAME.match(requirement)
    if not found or not name:
        return FileOptions()
    return FileOptions(hashes={canonical_name(name.group(0)): found}, hashed=(requirement,))


def merge_options(parts: Sequence[FileOptions]) -> FileOptions:
    """The options of several files (a file and those it includes, in pip's order) as one."""
    hashes: dict[str, frozenset[str]] = {}
    for part in parts:
        for name, found in part.hashes.items():
            hashes[name] = hashes.get(name, frozenset()) | found
    return FileOptions(
        tuple(option for part in parts for option in part.options), hashes, tuple(line for part in parts for line in part.hashed)
    )


def _logical_lines(text: str) -> list[str]:
    lines = (_COMMENT.sub("", line).strip() for line in _CONTINUED.sub("", text).splitlines())
    return [line for line in lines if line]


def _split_line(line: str) -> tuple[str, list[str]]:
    """A line's requirement (empty on an option line) and its option words, as pip splits them."""
    words = line.split(" ")
    for index, word in enumerate(words):
        if word.startswith("-"):
            return " ".join(words[:index]).strip(), shlex.split(" ".join(words[index:]))
    return line, []


def _option_pairs(words: Sequence[str]) -> list[tuple[str, str | None]]:
    """``(option, value)`` of each option in ``words`` (``--option=value``, ``--option value``, ``-ovalue``); a word
    that does not start with ``-`` is the value of the option before it."""
    pairs: list[tuple[str, str | None]] = []
    for word in words:
        if not word.startswith("-"):
            if pairs and pairs[-1][1] is None:
                pairs[-1] = (pairs[-1][0], word)
            continue
        if word.startswith("--"):
            option, equals, value = word.partition("=")
            pairs.append((option, value if equals else None))
        else:
            pairs.append((word[:2], word[2:] or None))
    return pairs


def install_requirements(options: FileOptions, pins: Sequence[Pin]) -> str:
    """The requirements file of the install: the resolution's options and exactly the ``pins``, each by its hashes."""
    if not pins:
        raise LayerError("nothing to install")
    return "\n".join([*options.lines(), *(pin.line() for pin in pins)]) + "\n"


def hash_mismatches(pip_output: str) -> list[str]:
    """The files pip refused because their hash is not one the requirements allow, each as ``requirement: url has
    algorithm:hash``, from its error output."""
    return [
        f"{match['requirement']}: {match['url'].split('#')[0]} has {match['algorithm']}:{match['got']}"
        for match in _HASH_MISMATCH.finditer(pip_output)
    ]


def sources_isolated(environ: Mapping[str, str], pip_config: str) -> dict[str, str]:
    """The environment of a pip that uses no package source of the controller's: its other settings (``pip config
    list``'s ``pip_config``, the global section then the install section, then the PIP_* variables of ``environ``)
    as PIP_* variables, without SOURCE_SETTINGS, and no configuration file read."""
    settings = pip_settings(environ, pip_config)
    for name in SOURCE_SETTINGS:
        settings.pop(_variable(name), None)
    kept = {name: value for name, value in environ.items() if not name.startswith("PIP_")}
    return {**kept, **settings, "PIP_CONFIG_FILE": os.devnull}


def pip_settings(environ: Mapping[str, str], pip_config: str) -> dict[str, str]:
    """The controller's pip settings as PIP_* variables: ``pip config list``'s ``pip_config`` (the global section,
    then the install section), then the PIP_* variables of ``environ``, each over the one before."""
    settings: dict[str, str] = {}
    lines = [line.partition("=") for line in pip_config.splitlines()]
    for section in ("global", "install"):
        for key, _equals, value in lines:
            if key.startswith(section + "."):
                settings[_variable(key[len(section) + 1 :])] = str(ast.literal_eval(value))
    settings.update((name, value) for name, value in environ.items() if name.startswith("PIP_"))
    return settings


def _variable(setting: str) -> str:
    """The PIP_* variable of a pip setting (``find-links``: ``PIP_FIND_LINKS``)."""
    return "PIP_" + setting.upper().replace("-", "_")


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


def install_argv(python: str, node: Mapping[str, Any], target: str, requirements: str) -> list[str]:
    """pip's installation into ``target`` of exactly the files ``requirements`` (install_requirements) pins by their
    hashes (no dependencies: the plan has them all)."""
    return _pip_install(python, node, target, "--no-deps", ["--require-hashes", "--requirement", requirements])


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
