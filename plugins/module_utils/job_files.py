# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A job's files on one node: set up before it runs (directories, its own copy of the code), packed after.

Pure Python (stdlib only) so it runs on managed nodes and in plain unit tests.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from typing import Iterable

LAUNCHER_FILES = ("hostfile", "launch.sh")
RANK_WRAPPER = "rank.sh"
COLLECTED_DIRS = ("logs", "status")
# A launcher that takes longer than this to end once waited for is worth a word (its ranks had all ended).
SLOW_LAUNCHER_END_S = 10


def slow_launcher_end(waited_s: float, still_running: bool) -> str | None:
    """What to say of a launcher container that ended ``waited_s`` after every rank had ended: a process a rank left
    behind may have held the ranks' output open. Nothing when it ended soon, or has not ended (said elsewhere)."""
    if still_running or waited_s <= SLOW_LAUNCHER_END_S:
        return None
    return (
        f"the launcher container ended {waited_s:.0f} s after this wait began: a process a rank left behind"
        " may have held the ranks' output open"
    )


def make_directories(paths: Iterable[str], uid: int, gid: int, mode: int = 0o750) -> list[str]:
    """Create the missing directories of ``paths`` and of their parents, each owned by uid:gid with ``mode``; the
    ones created, parents first."""
    created = []
    for path in paths:
        missing = []
        parent = os.path.abspath(path)
        while not os.path.isdir(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(missing):  # parents first, each one owned and with the mode
            os.mkdir(directory, mode)
            os.chown(directory, uid, gid)
            os.chmod(directory, mode)
            created.append(directory)
    return created


def earlier_run(job_dir: str, keep: Iterable[str]) -> list[str]:
    """What an earlier run of the same job id left in ``job_dir`` (its logs, rank status, copy of the code, outputs,
    launch files), every entry but those of ``keep`` (the checkpoints a re-run resumes from); sorted paths."""
    if not os.path.isdir(job_dir):
        return []
    kept = {os.path.abspath(path) for path in keep}
    return sorted(path for path in (os.path.join(job_dir, name) for name in os.listdir(job_dir)) if os.path.abspath(path) not in kept)


# What one attempt of a job logs in its directory, which the next attempt after a restart must not read: the logs
# and rank status, the stop file and the process ids (events.STOP_FILE, events.LAUNCH_PID_FILE, the agents').
ATTEMPT_FILES = COLLECTED_DIRS + ("stop", "launch.pid", "agent.pid", "slurm.jobid")


def earlier_attempt(job_dir: str) -> list[str]:
    """What the failed attempt of the job left in ``job_dir`` that the next one must not read (ATTEMPT_FILES)."""
    return [path for path in (os.path.join(job_dir, name) for name in ATTEMPT_FILES) if os.path.lexists(path)]


def remove_paths(paths: Iterable[str]) -> None:
    """Remove files, links and directory trees."""
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def copy_tree(source: str, destination: str, uid: int, gid: int) -> bool:
    """Copy ``source`` to ``destination`` (modes and modification times kept, symbolic links as links), every
    copied path owned by uid:gid, unless ``destination`` exists. Whether it copied."""
    if os.path.exists(destination):
        return False
    shutil.copytree(source, destination, symlinks=True)
    for directory, subdirectories, files in os.walk(destination):
        os.lchown(directory, uid, gid)
        for name in subdirectories + files:
            os.lchown(os.path.join(directory, name), uid, gid)
    return True


def job_files(job_dir: str, work_dir: str, output_dir: str, *, outputs: bool, launcher: bool) -> list[str]:
    """What to collect from this node: the rank wrapper, the launcher's hostfile and script (on the launcher
    node), the logs and rank status files, and with ``outputs`` the output directory and what the ranks wrote
    in their working directory (files newer than the rank wrapper, written when the job started)."""
    wrapper = os.path.join(job_dir, RANK_WRAPPER)
    found = [path for path in [wrapper] + [os.path.join(job_dir, name) for name in LAUNCHER_FILES if launcher] if os.path.isfile(path)]
    for directory in [os.path.join(job_dir, name) for name in COLLECTED_DIRS] + ([output_dir] if outputs else []):
        found += _files_under(directory)
    if outputs and os.path.isfile(wrapper):
        started = os.stat(wrapper).st_mtime
        found += [path for path in _files_under(work_dir) if os.lstat(path).st_mtime > started]
    return found


def pack(job_dir: str, paths: Iterable[str], destination: str) -> int:
    """Write the files of ``paths`` to the tar ``destination``, named relative to ``job_dir``; their total size."""
    total = 0
    with tarfile.open(destination, "w") as archive:
        for path in paths:
            archive.add(path, arcname=os.path.relpath(path, job_dir), recursive=False)
            total += os.lstat(path).st_size
    return total


def _files_under(directory: str) -> list[str]:
    found = []
    for root, subdirectories, files in os.walk(directory):
        subdirectories.sort()
        found += [os.path.join(root, name) for name in sorted(files)]
    return found
