# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that show a job's settings with its secret environment values masked (documented in <filter>.yml)."""

from __future__ import annotations

from typing import Any

from ansible_collections.multinode.training.plugins.module_utils.secret_env import masked


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"masked_secrets": masked}
