# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which entries of a directory of runs to remove so that only the newest ``keep`` are left."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    name: str
    mtime: float


def keep_error(keep: int) -> str | None:
    """Why ``keep`` is not a number of runs to keep (0 keeps all), or None."""
    return f"keep must be 0 (keep all) or more, not {keep}" if keep < 0 else None


def to_remove(entries: list[Entry], keep: int, protected: frozenset[str] = frozenset()) -> list[str]:
    """The names beyond the newest ``keep`` (0 keeps all). Protected names (the run in progress) are never removed
    and count towards ``keep``. Newest by modification time, then by name (job ids start with their date)."""
    if keep <= 0:
        return []
    newest_first = sorted(entries, key=lambda entry: (entry.mtime, entry.name), reverse=True)
    kept = [entry.name for entry in newest_first if entry.name in protected]
    removed = []
    for entry in newest_first:
        if entry.name in protected:
            continue
        if len(kept) < keep:
            kept.append(entry.name)
        else:
            removed.append(entry.name)
    return sorted(removed)


def directories(path: str) -> list[Entry]:
    """The subdirectories of ``path`` (not symlinks: runs/latest points at a run, it is not one)."""
    if not os.path.isdir(path):
        return []
    return [
        Entry(item.name, item.stat(follow_symlinks=False).st_mtime)
        for item in os.scandir(path)
        if item.is_dir(follow_symlinks=False)
    ]


def remove(path: str, names: list[str]) -> None:
    for name in names:
        shutil.rmtree(os.path.join(path, name))


def prune(path: str, keep: int, protected: frozenset[str] = frozenset(), dry_run: bool = False) -> tuple[list[str], int]:
    """Remove the subdirectories of ``path`` beyond the newest ``keep`` (see ``to_remove``); the names removed (to
    be removed with ``dry_run``) and how many are kept."""
    entries = directories(path)
    removed = to_remove(entries, keep, protected)
    if not dry_run:
        remove(path, removed)
    return removed, len(entries) - len(removed)
