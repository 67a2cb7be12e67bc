# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the oneapi role's controller-side wheelhouse (documented in <filter>.yml)."""

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


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"pip_wheel_argv": pip_wheel_argv}
