# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the controller-side wheelhouses of host mode (documented in <filter>.yml)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.module_utils import wheelhouse as wheels

MODES = ("resolve", "download")


def pip_wheel_argv(
    node: Mapping[str, Any],
    mode: str = "resolve",
    wheelhouse: str | None = None,
    packages: Sequence[str] | None = None,
    python: str = "python3",
) -> list[str]:
    """The pip argv that resolves (``resolve``) or downloads (``download``) ``packages`` for the probed node."""
    try:
        if mode == "resolve":
            return wheels.resolve_argv(python, node, wheelhouse, packages)  # type: ignore[arg-type]
        if mode == "download":
            return wheels.download_argv(node, wheelhouse, packages, python)  # type: ignore[arg-type]
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    except ValueError as exc:
        raise AnsibleFilterError(f"pip_wheel_argv: {exc}") from exc


def python_wheel_problems(node_pythons: Mapping[str, str | None], wheel_files: Sequence[str] | None) -> list[str]:
    """One problem per Python version of the nodes that some project of ``wheel_files`` (the host-mode wheelhouse's
    wheels) has no wheel for, naming the hosts, the projects and how to fill it; none when ``wheel_files`` is None
    (not a provisioning run in host mode)."""
    if wheel_files is None:
        return []
    hosts_of: dict[str | None, list[str]] = {}
    for host, python in node_pythons.items():
        hosts_of.setdefault(python, []).append(host)
    problems = []
    for python, hosts in hosts_of.items():
        named = ", ".join(sorted(hosts))
        if python is None:
            problems.append(
                f"host_runtime_wheelhouse: no /usr/bin/python3 on {named}, which host mode builds the training environment with"
            )
            continue
        missing = wheels.projects_without_wheel(wheel_files, python)
        if missing:
            built_for = ", ".join(wheels.wheel_pythons(wheel_files)) or "other Pythons"
            problems.append(
                f"host_runtime_wheelhouse: {named} run Python {python} and the wheelhouse has no wheel of"
                f" {', '.join(missing)} for it (its wheels are for Python {built_for}); add them (pip download -r"
                f" <the training requirements> --python-version {python} --only-binary=:all: -d <the wheelhouse>),"
                " or train on these nodes in containers (cluster_runtime: container)"
            )
    return problems


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"pip_wheel_argv": pip_wheel_argv, "python_wheel_problems": python_wheel_problems}
