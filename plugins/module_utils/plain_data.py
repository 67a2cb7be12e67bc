# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Templated Ansible values as plain Python data.

Ansible 2.19 hands filters and action plugins lazy containers and tagged strings; a dataclass, ``asdict`` or
``json.dumps`` needs plain dicts, lists and strings. No Ansible imports, so plain unit tests use it too.
"""

from __future__ import annotations

from typing import Any


def plain(value: Any) -> Any:
    """``value`` with every mapping a dict (string keys), every sequence but strings a list, every string a str."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value
