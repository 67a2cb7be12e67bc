# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A node directory kept a mirror of a controller directory, in one round trip when nothing changed.

The controller lists its tree (relative path, size, modification time, executable or not: no file is read);
the node compares its copy by the same quick check rsync uses (size and modification time), removes what the
controller no longer has, fixes owner and mode in place and names the files to send; a file of the same size but
another time is sent only when its content differs (a checkout elsewhere has other times). Those come over in one
tar archive and are unpacked with the controller's modification times, so the next run finds them equal.

Pure Python (stdlib and the collection's job_files) so it runs on managed nodes, on the controller and in plain unit
tests.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tarfile
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ansible_collections.multinode.training.plugins.module_utils import job_files

FILE_MODE = 0o640
EXECUTABLE_MODE = 0o750
DIRECTORY_MODE = 0o750


@dataclass(frozen=True)
class Entry:
    """What the quick check compares of one file."""

    size: int
    mtime: int
    executable: bool

    def as_dict(self) -> dict[str, int | bool]:
        return {"size": self.size, "mtime": self.mtime, "executable": self.executable}


def listing(root: str) -> dict[str, Entry]:
    """Every regular file under ``root`` (hidden ones too; symbolic links followed, as a copy would, but broken ones
    left out and a directory reached again through a link walked only once), by path relative to ``root``."""
    found = {}
    visited = set()
    for directory, subdirectories, files in os.walk(root, followlinks=True):
        # A link back up the tree would be walked forever: each real directory once.
        visited.add(os.path.realpath(directory))
        subdirectories[:] = sorted(name for name in subdirectories if os.path.realpath(os.path.join(directory, name)) not in visited)
        for name in sorted(files):
            path = os.path.join(directory, name)
            try:
                info = os.stat(path)
            except FileNotFoundError:  # a link to nothing
                continue
            if stat.S_ISREG(info.st_mode):
                found[os.path.relpath(path, root)] = Entry(info.st_size, int(info.st_mtime), bool(info.st_mode & 0o111))
    return found


def entries(raw: Mapping[str, Mapping[str, int | bool]]) -> dict[str, Entry]:
    """A listing passed as plain data (module arguments) back as entries."""
    return {path: Entry(int(value["size"]), int(value["mtime"]), bool(value["executable"])) for path, value in raw.items()}


def wanted_mode(entry: Entry) -> int:
    return EXECUTABLE_MODE if entry.executable else FILE_MODE


@dataclass(frozen=True)
class Differences:
    """What a node directory lacks against the controller's listing, sorted paths each."""

    to_send: list[str]  # missing, or of another size
    to_verify: list[str]  # the same size, another modification time: their content decides
    to_remove: list[str]  # not in the listing


def differences(wanted: Mapping[str, Entry], present: Mapping[str, Entry]) -> Differences:
    """Compare by size and modification time (rsync's quick check); a file that only differs in time is compared by
    content before it is sent, so the same tree from another checkout (other times) sends nothing."""
    to_send, to_verify = [], []
    for path, entry in sorted(wanted.items()):
        found = present.get(path)
        if found is None or found.size != entry.size:
            to_send.append(path)
        elif found.mtime != entry.mtime:
            to_verify.append(path)
    return Differences(to_send, to_verify, sorted(set(present) - set(wanted)))


def content_hash(path: str) -> str:
    """SHA-256 of the file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bad_names(paths: Iterable[str]) -> list[str]:
    """Relative paths that would leave the mirror (absolute, or through ``..``)."""
    return [path for path in paths if os.path.isabs(path) or ".." in path.split(os.sep)]


def remove_files(root: str, paths: Iterable[str]) -> None:
    """Remove the files, then the directories they leave empty (never ``root`` itself)."""
    emptied = set()
    for path in paths:
        os.remove(os.path.join(root, path))
        emptied.add(os.path.dirname(path))
    for directory in sorted(emptied, key=len, reverse=True):
        # A deeper one's walk up may have removed this one already.
        while directory and os.path.isdir(os.path.join(root, directory)) and not os.listdir(os.path.join(root, directory)):
            os.rmdir(os.path.join(root, directory))
            directory = os.path.dirname(directory)


def fix_owners_and_modes(root: str, wanted: Mapping[str, Entry], uid: int, gid: int, dry_run: bool = False) -> list[str]:
    """Give every present wanted file and every directory under ``root`` (``root`` too) its owner and mode; the
    paths that needed it (that would, with ``dry_run``)."""
    fixed = []
    targets = [(directory, DIRECTORY_MODE) for directory in _directories(root)]
    targets += [(os.path.join(root, path), wanted_mode(entry)) for path, entry in wanted.items()]
    for path, mode in targets:
        if not os.path.lexists(path):
            continue
        info = os.lstat(path)
        if (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) != (uid, gid, mode):
            if not dry_run:
                os.chown(path, uid, gid)
                os.chmod(path, mode)
            fixed.append(os.path.relpath(path, root))
    return fixed


def _directories(root: str) -> list[str]:
    found = [root]
    for directory, subdirectories, _files in os.walk(root):
        found += [os.path.join(directory, name) for name in sorted(subdirectories)]
    return found


def pack(root: str, paths: Iterable[str], destination: str) -> None:
    """A tar of the files of ``paths`` under ``root`` (links followed), named by their relative paths."""
    with tarfile.open(destination, "w", dereference=True) as archive:
        for path in paths:
            archive.add(os.path.join(root, path), arcname=path, recursive=False)


def unpack(archive_path: str, root: str, wanted: Mapping[str, Entry], uid: int, gid: int) -> list[str]:
    """Unpack the files of the archive that ``wanted`` names into ``root`` (parents created), each with its owner,
    mode and the controller's modification time; the paths written."""
    written = []
    with tarfile.open(archive_path) as archive:
        for member in archive.getmembers():
            entry = wanted.get(member.name)
            if entry is None or not member.isfile() or bad_names([member.name]):
                continue
            target = os.path.join(root, member.name)
            _make_parents(root, os.path.dirname(member.name), uid, gid)
            source = archive.extractfile(member)
            if source is None:  # a regular file member always has content
                raise ValueError(f"{member.name}: no content in the archive")
            temporary = f"{target}.mirror-tmp"
            with source, open(temporary, "wb") as handle:
                shutil.copyfileobj(source, handle)
            os.chown(temporary, uid, gid)
            os.chmod(temporary, wanted_mode(entry))
            os.utime(temporary, (entry.mtime, entry.mtime))
            os.replace(temporary, target)
            written.append(member.name)
    return written


def _make_parents(root: str, relative: str, uid: int, gid: int) -> None:
    path = root
    for part in [part for part in relative.split(os.sep) if part]:
        path = os.path.join(path, part)
        if os.path.isfile(path) or os.path.islink(path):
            os.remove(path)  # a file where the controller now has a directory
        if not os.path.isdir(path):
            os.mkdir(path, DIRECTORY_MODE)
            os.chown(path, uid, gid)
            os.chmod(path, DIRECTORY_MODE)


def mirror_tree(
    dest: str, wanted: dict[str, Entry], archive: str | None, owner: int, group: int, check: bool, retime: Iterable[str] = ()
) -> dict[str, Any]:
    """Bring one node directory in line with the controller's listing of it: what was done and what is left to do.
    The files of ``retime`` (the controller found their content equal) first get the listing's modification time, so
    they are not compared by content again."""
    if not check:
        retime_files(dest, wanted, retime)
    found = differences(wanted, listing(dest))
    hashes = {path: content_hash(os.path.join(dest, path)) for path in found.to_verify}
    if check:
        fixed = fix_owners_and_modes(dest, wanted, owner, group, dry_run=True)
        return {"to_send": found.to_send, "to_verify": hashes, "removed": found.to_remove, "fixed": fixed, "written": []}
    remove_files(dest, found.to_remove)
    written = unpack(archive, dest, wanted, owner, group) if archive else []
    fixed = fix_owners_and_modes(dest, wanted, owner, group)
    left = sorted(set(found.to_send) - set(written))
    verify = {path: digest for path, digest in hashes.items() if path not in written}
    return {"to_send": left, "to_verify": verify, "removed": found.to_remove, "fixed": fixed, "written": written}


def mirror_trees(params: Mapping[str, Any], check: bool) -> dict[str, Any]:
    """The node's side of a mirror (multinode.training.mirror_files's options, and rank_wrapper's O(sync)): every
    directory created, each tree brought in line (its archive unpacked when there is one); ``trees``, ``created`` and
    ``changed``. Raises ValueError for a listed name outside its tree, OSError when the node refuses."""
    listings = {tree["dest"]: entries(tree["files"]) for tree in params["trees"]}
    bad = [path for found in listings.values() for path in bad_names(found)]
    if bad:
        raise ValueError(f"file names outside the directory they mirror: {', '.join(bad)}")
    owner, group = params["owner"], params["group"]
    archives, retime = params.get("archives") or {}, params.get("retime") or {}
    created = [] if check else job_files.make_directories(list(params["directories"]) + list(listings), owner, group)
    trees = {
        dest: mirror_tree(dest, wanted, archives.get(dest), owner, group, check, retime.get(dest, ()))
        for dest, wanted in listings.items()
    }
    if check:
        missing = [path for path in list(params["directories"]) + list(listings) if not os.path.isdir(path)]
        changed = bool(missing) or any(tree["removed"] or tree["to_send"] or tree["fixed"] for tree in trees.values())
    else:
        changed = bool(created) or any(tree["removed"] or tree["fixed"] or tree["written"] for tree in trees.values())
    return {"trees": trees, "created": created, "changed": changed}


def retime_files(root: str, wanted: Mapping[str, Entry], paths: Iterable[str]) -> None:
    """Give each of ``paths`` (relative to ``root``, in ``wanted``) the listing's modification time."""
    for path in paths:
        if path in wanted and os.path.isfile(os.path.join(root, path)):
            os.utime(os.path.join(root, path), (wanted[path].mtime, wanted[path].mtime))


def pending(trees: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether a comparison left files for the controller to send or to verify by content."""
    return any(tree["to_send"] or tree["to_verify"] for tree in trees.values())
