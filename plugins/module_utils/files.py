# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write a generated text file from a module: atomically, only when its content differs, with diff support."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text


def ensure_content(module: AnsibleModule, path: str, content: str, file_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Make the file at ``path`` hold ``content`` and have the module's file attributes (mode, owner...), or those
    of ``file_args`` (the module's parameters with other values).

    Honours check mode. Returns ``changed`` and, in diff mode, ``diff``, to merge into the module's result.
    """
    wanted = to_bytes(content)
    current = _read_current(module, path)
    changed = current != wanted
    if changed and not module.check_mode:
        _write_atomically(module, path, wanted)
    if os.path.exists(path):
        # In check mode this only reports whether mode/owner/... would change.
        attributes = module.load_file_common_arguments(file_args or module.params, path=path)
        changed = module.set_fs_attributes_if_different(attributes, changed)
    result: dict[str, Any] = {"changed": changed}
    if module._diff:
        result["diff"] = dict(
            before="" if current is None else to_text(current, errors="surrogate_or_replace"),
            after=content,
            before_header=path,
            after_header=path,
        )
    return result


def _read_current(module: AnsibleModule, path: str) -> bytes | None:
    """Content of the existing file, or None if there is none."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {to_native(exc)}")


def _write_atomically(module: AnsibleModule, path: str, content: bytes) -> None:
    try:
        fd, tmp_path = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=f".{os.path.basename(path)}.")
    except OSError as exc:
        module.fail_json(msg=f"cannot create a temporary file next to {path}: {to_native(exc)}")
    module.add_cleanup_file(tmp_path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    module.atomic_move(tmp_path, path, unsafe_writes=module.params["unsafe_writes"])
