# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A marker file on a node holding one value (a checksum, a digest): read it, compare it, write it.

The roles keep such a file next to what an expensive step produced (a loaded image, a built
virtualenv) and run the step again only when the value they would record now differs.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule


def value_error(value: str) -> str | None:
    """Why ``value`` cannot be recorded (it must survive the strip of the comparison), or None."""
    if not value.strip():
        return "value is empty"
    if value != value.strip():
        return f"value {value!r} has leading or trailing whitespace, which the comparison strips"
    return None


def content(value: str) -> bytes:
    """What the file holds for ``value``: the value and a newline."""
    return f"{value}\n".encode("utf-8")


def read_bytes(path: str) -> bytes | None:
    """The file's content, or None when there is no file (nor its directory). Other errors are raised."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def recorded(raw: bytes | None) -> str | None:
    """The value a file's content records: the content without surrounding whitespace, or None for no file."""
    if raw is None:
        return None
    return raw.decode("utf-8", errors="replace").strip()


def matches(raw: bytes | None, value: str) -> bool:
    """Whether a file with this content (None: no file) records ``value``."""
    return recorded(raw) == value


def write(module: AnsibleModule, path: str, value: str) -> None:
    """Replace the file at ``path`` with the content for ``value`` atomically (a temporary file next to it)."""
    descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=f".{os.path.basename(path)}.")
    module.add_cleanup_file(temporary)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(content(value))
    module.atomic_move(temporary, path)


def ensure(module: AnsibleModule, path: str, value: str, attributes: dict[str, Any]) -> bool:
    """Make the file at ``path`` hold exactly the content for ``value`` and have ``attributes`` (owner, group, mode);
    whether anything changed (in check mode, would change; nothing is written)."""
    changed = read_bytes(path) != content(value)
    if changed and not module.check_mode:
        write(module, path, value)
    if os.path.exists(path):
        # In check mode this only reports whether owner, group or mode would change.
        changed = module.set_fs_attributes_if_different(module.load_file_common_arguments(attributes, path=path), changed)
    return changed
