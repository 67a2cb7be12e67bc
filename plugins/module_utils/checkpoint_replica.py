# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checkpoint replicas: every complete entry of the job's ``CHECKPOINT_DIR`` on the launcher node, copied in the
background to the next nodes of the job over the cluster's SSH, so that a restart after the launcher node is lost
resumes from a checkpoint a surviving node holds.

The launch script starts this file (written beside it as ``replicate.py``) with the launcher node's ``python3``, at
a lower priority than the ranks, and it ends with the launch script (which waits for its last pass: every rank has
ended by then, so every entry there is complete). While the ranks run, an entry is complete when it is not hidden,
does not end in ``.tmp`` or ``.partial`` (what a script writes before its atomic rename) and its files kept their
sizes and modification times for one scan interval (a script that writes in place). Each complete entry is packed
with ``tar``, unpacked on the node into a hidden directory of the same ``CHECKPOINT_DIR`` and renamed into place, so
a node never holds half an entry under its name; an entry that leaves the launcher node's directory (the script
keeps its last few) leaves the replicas too. ``tar`` keeps the files' modification times: the nodes' entries compare
as equal (``signature``), and a later launch copies only what a node lacks.

Each copy is one JSON line in the ``--log`` file: the entry, the node, whether it succeeded, its bytes, modification
time and seconds; each removal one with ``removed``; the last line, the CPU seconds the replication took on the launcher
node (``cpu_seconds``). The controller reads them (``restart.checkpoint_holders``): the last pass ends after the other
nodes were listed for the summary.

Pure Python standard library, Python 3.9+, so that any node's ``python3`` runs it; no Ansible imports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from stat import S_ISREG
from typing import Dict, List, Optional, Sequence, Tuple

# What a script writes before its atomic rename; never copied (checkpoint.yml passes them over too).
INCOMPLETE_SUFFIXES = (".tmp", ".partial")
# The hidden directory, inside CHECKPOINT_DIR on each replica node, an entry is unpacked into before its rename.
INCOMING = ".replica-incoming"
# Seconds a copy or a listing may take before it is given up (and tried again at the next scan).
COPY_TIMEOUT = 1800
LIST_TIMEOUT = 60
# The last pass, after the launch script ended: the script waits for it, so its copies get at most this long.
LAST_PASS_SECONDS = 15
# What ``ssh -O check`` says of a running shared connection: its process.
MASTER_PID = re.compile(r"Master running \(pid=(\d+)\)")

# An entry's signature: its files' total bytes, their newest modification time (whole seconds, as tar keeps it) and
# their number.
Signature = Tuple[int, int, int]


def is_candidate(name: str) -> bool:
    """Whether an entry of that name can be a checkpoint: not hidden, not a file still being written."""
    return not name.startswith(".") and not name.endswith(INCOMPLETE_SUFFIXES)


def signatures_from_listing(lines: Sequence[str]) -> Dict[str, Signature]:
    """The signature of each top-level entry from ``find DIR -mindepth 1 -type f -printf '%P\\t%s\\t%T@\\n'`` lines
    (each file's path relative to DIR, bytes and modification time); entries that are not candidates are left out."""
    totals: Dict[str, List[int]] = {}
    for line in lines:
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            continue
        path, size, mtime = parts
        entry = path.split("/", 1)[0]
        if not is_candidate(entry):
            continue
        try:
            # Whole seconds from the digits: a float would round T.9999999 up to T+1, and tar keeps T.
            bytes_, seconds = int(size), int(mtime.split(".", 1)[0])
        except ValueError:
            continue
        total = totals.setdefault(entry, [0, 0, 0])
        total[0] += bytes_
        total[1] = max(total[1], seconds)
        total[2] += 1
    return {entry: (total[0], total[1], total[2]) for entry, total in totals.items()}


def local_listing(directory: str) -> List[str]:
    """The regular files under ``directory`` as the listing lines ``signatures_from_listing`` reads, as ``find -type
    f`` lists them on a node (symbolic links left out); empty when it is gone."""
    lines = []
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            try:
                stat = os.lstat(path)
            except OSError:
                continue
            if not S_ISREG(stat.st_mode):
                continue
            seconds, nanoseconds = divmod(stat.st_mtime_ns, 10**9)
            lines.append(f"{os.path.relpath(path, directory)}\t{stat.st_size}\t{seconds}.{nanoseconds:09d}")
    return lines


def entries(directory: str) -> List[Dict[str, object]]:
    """The candidate entries of ``directory`` (what a restart can resume from), newest first: each one's ``name``,
    its files' total ``bytes`` and their newest ``mtime``."""
    found = signatures_from_listing(local_listing(directory))
    listed = [{"name": name, "bytes": found[name][0], "mtime": found[name][1]} for name in found]
    return sorted(listed, key=lambda entry: (entry["mtime"], entry["name"]), reverse=True)


def complete_entries(now: Dict[str, Signature], earlier: Dict[str, Signature]) -> Dict[str, Signature]:
    """The entries of ``now`` whose signature is what it was one scan ago (``earlier``): nothing is writing them."""
    return {entry: signature for entry, signature in now.items() if earlier.get(entry) == signature}


def to_copy(complete: Dict[str, Signature], held: Dict[str, Signature]) -> List[str]:
    """The complete entries a node does not hold as they are (``held``: its signatures), newest first: the one a
    restart resumes from is copied before older ones."""
    missing = [entry for entry, signature in complete.items() if held.get(entry) != signature]
    return sorted(missing, key=lambda entry: (complete[entry][1], entry), reverse=True)


def to_remove(now: Dict[str, Signature], held: Dict[str, Signature], copied: Sequence[str]) -> List[str]:
    """What this replicator copied to a node that the launcher node no longer has (``now``): the script removed it."""
    return sorted(entry for entry in copied if entry in held and entry not in now)


def unpack_command(directory: str, entry: str) -> str:
    """The node's shell command that unpacks an entry's tar stream (its stdin) beside ``directory`` and renames it
    into place (an entry of that name already there is replaced); the unpacking at a lower priority than the ranks
    there (the lowest, as the replicator's own side)."""
    quoted_dir, quoted_entry = shlex.quote(directory), shlex.quote(entry)
    incoming = f"{quoted_dir}/{INCOMING}"
    return (
        f"set -e; mkdir -p {incoming}; rm -rf {incoming}/{quoted_entry}; nice -n 19 tar -C {incoming} -xf -;"
        f" rm -rf {quoted_dir}/{quoted_entry}; mv {incoming}/{quoted_entry} {quoted_dir}/{quoted_entry}"
    )


def listing_command(directory: str) -> str:
    """The node's shell command that lists the files of ``directory`` for ``signatures_from_listing``."""
    return f"mkdir -p {shlex.quote(directory)} && find {shlex.quote(directory)} -mindepth 1 -type f -printf '%P\\t%s\\t%T@\\n'"


def remove_command(directory: str, entries: Sequence[str]) -> str:
    """The node's shell command that removes ``entries`` from ``directory``."""
    return "rm -rf -- " + " ".join(shlex.quote(f"{directory}/{entry}") for entry in entries)


class Node:
    """One replica node, reached with ``ssh -p <port> <address>`` (the cluster's client configuration does the rest).

    Given ``control_dir`` (a directory only this user reads), its calls share one connection (OpenSSH multiplexing),
    opened at its first call: a copy then costs no key exchange on either node, CPU the ranks keep. A node whose
    connection cannot be opened so is called one connection at a time, as without it."""

    def __init__(self, name: str, address: str, port: int, control_dir: Optional[str] = None) -> None:
        self.name = name
        self.address = address
        # A node cut off mid-copy is given up on within 15 s (keepalives), not at the copy's time-out.
        self.options = ["-p", str(port), "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
        self.options += ["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        self.control_dir = control_dir
        self.control: List[str] = []  # the shared connection's options, once it is open
        self.listed = False  # whether its listing was read (what it held before this replicator started)
        self.held: Dict[str, Signature] = {}
        self.copied: List[str] = []

    def argv(self, options: Sequence[str] = (), command: Optional[str] = None) -> List[str]:
        """ssh's words for ``options`` and the node's shell ``command``, through the shared connection when it is
        open."""
        return ["ssh", *self.options, *self.control, *options, "--", self.address] + ([command] if command else [])

    def run(self, command: str, timeout: float, stdin=None) -> subprocess.CompletedProcess:
        if self.control_dir is not None:
            self._open_shared(timeout)
        return subprocess.run(
            self.argv(command=command),
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def _open_shared(self, timeout: float) -> None:
        """The shared connection, in the background (``-f``, no stdio: nothing waits on its output), gone 30 s
        after its last call (``ControlPersist``) should this program end without closing it; tried once."""
        control = ["-o", f"ControlPath={self.control_dir}/%C"]
        self.control_dir = None
        try:
            opened = subprocess.run(
                self.argv(["-M", "-N", "-f", "-o", "ControlPersist=30", *control]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return
        if opened.returncode == 0:
            self.control = control

    def close(self) -> float:
        """Close the shared connection, if one is open; the CPU seconds its process took (0 when none or unknown):
        it runs in the background, not as a child whose time this program's own includes."""
        if not self.control:
            return 0.0
        checked = subprocess.run(self.argv(["-O", "check"]), capture_output=True, text=True, timeout=LIST_TIMEOUT, check=False)
        master = MASTER_PID.search(checked.stderr)
        cpu_seconds = process_cpu_seconds(int(master.group(1))) if master else 0.0
        subprocess.run(self.argv(["-O", "exit"]), capture_output=True, timeout=LIST_TIMEOUT, check=False)
        return cpu_seconds


def process_cpu_seconds(pid: int) -> float:
    """The user and system CPU seconds of a live process (/proc/<pid>/stat), 0 when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            after_name = stat.read().rsplit(")", 1)[1].split()
        return (int(after_name[11]) + int(after_name[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def own_cpu_seconds() -> float:
    """This program's CPU seconds and those of the children it waited for (tar, ssh)."""
    return sum(os.times()[:4])


class Replicator:
    """Copies the complete entries of ``directory`` to ``nodes``, recording each copy in ``log``."""

    def __init__(self, directory: str, nodes: Sequence[Node], log: str) -> None:
        self.directory = directory
        self.nodes = list(nodes)
        self.log = log
        self.earlier: Dict[str, Signature] = {}
        self.deadline: Optional[float] = None  # time.monotonic() by which the last pass gives up

    def _timeout(self, seconds: float) -> float:
        """``seconds``, or what is left of the last pass's time (at least a moment: the call fails at once)."""
        if self.deadline is None:
            return seconds
        return max(0.1, min(seconds, self.deadline - time.monotonic()))

    def scan(self, final: bool = False) -> None:
        """One pass: what is complete now reaches every node that lacks it; what is gone leaves them. The ``final``
        pass, after the ranks ended, takes every entry as complete and ends within LAST_PASS_SECONDS."""
        if final:
            self.deadline = time.monotonic() + LAST_PASS_SECONDS
        now = signatures_from_listing(local_listing(self.directory))
        complete = now if final else complete_entries(now, self.earlier)
        self.earlier = now
        for node in self.nodes:
            if not node.listed and not self._read_listing(node):
                continue
            for entry in to_copy(complete, node.held):
                self._copy(node, entry, complete[entry])
            gone = to_remove(now, node.held, node.copied)
            if gone and self._removed(node, gone):
                for entry in gone:
                    node.held.pop(entry, None)
                    node.copied.remove(entry)
                    self._record({"entry": entry, "node": node.name, "ok": True, "removed": True})

    def _removed(self, node: Node, entries: Sequence[str]) -> bool:
        try:
            return node.run(remove_command(self.directory, entries), self._timeout(LIST_TIMEOUT)).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def _read_listing(self, node: Node) -> bool:
        try:
            listed = node.run(listing_command(self.directory), self._timeout(LIST_TIMEOUT))
        except subprocess.TimeoutExpired:
            return False
        if listed.returncode != 0:
            self._record({"node": node.name, "ok": False, "error": listed.stderr.strip()[-300:] or "listing failed"})
            return False
        node.held = signatures_from_listing(listed.stdout.splitlines())
        node.listed = True
        return True

    def _copy(self, node: Node, entry: str, signature: Signature) -> None:
        began = time.monotonic()
        pack = subprocess.Popen(
            ["tar", "-C", self.directory, "-cf", "-", "--", entry], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            timeout = self._timeout(COPY_TIMEOUT)
            copied = node.run(unpack_command(self.directory, entry), timeout, stdin=pack.stdout)
            ok, error = copied.returncode == 0 and pack.wait(LIST_TIMEOUT) == 0, copied.stderr.strip()[-300:]
        except subprocess.TimeoutExpired:
            ok, error = False, f"not copied within {timeout:.0f} s"
        finally:
            if pack.stdout:
                pack.stdout.close()
            if pack.poll() is None:
                pack.kill()
            pack.wait()
        if ok:
            node.held[entry] = signature
            if entry not in node.copied:
                node.copied.append(entry)
        record = {"entry": entry, "node": node.name, "ok": ok, "bytes": signature[0], "mtime": signature[1]}
        record["seconds"] = round(time.monotonic() - began, 3)
        if not ok:
            record["error"] = error or "tar failed"
        self._record(record)

    def record_cost(self, cpu_seconds: float) -> None:
        """The last line of the log: the CPU seconds the replication took on the launcher node (this program, its
        tar and ssh calls, the shared connections): what it took from the ranks there. Each replica node does the
        mirror of it (its sshd's decryption, the unpacking), not counted here."""
        self._record({"ok": True, "cpu_seconds": round(cpu_seconds, 3)})

    def _record(self, record: dict) -> None:
        line = json.dumps({"time": time.time(), **record})
        try:
            with open(self.log, "a", encoding="utf-8") as log:
                log.write(line + "\n")
        except OSError as error:  # a full disk must not end the copies: said on stderr (the launch's replicate.log)
            sys.stderr.write(f"{line} (not recorded in {self.log}: {error})\n")
            sys.stderr.flush()


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Copy the job's complete checkpoints to other nodes of the job.")
    parser.add_argument("--dir", required=True, help="the job's CHECKPOINT_DIR (the same path on every node)")
    parser.add_argument(
        "--node", action="append", nargs=2, metavar=("NAME", "ADDRESS"), default=[], help="a replica node"
    )
    parser.add_argument("--port", type=int, required=True, help="the cluster's SSH port")
    parser.add_argument("--log", required=True, help="where each copy is recorded (JSON lines)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between scans")
    parser.add_argument("--parent", type=int, required=True, help="the launch script's pid: ends when it ends")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    arguments = parse_arguments(argv)
    os.nice(19)  # the lowest priority: the ranks' CPU first (and the disk: its I/O priority follows)
    control_dir = tempfile.mkdtemp(prefix="replicate-")  # mode 0700: the shared connections' sockets
    nodes = [Node(name, address, arguments.port, control_dir) for name, address in arguments.node]
    replicator = Replicator(arguments.dir, nodes, arguments.log)
    try:
        replicate(arguments, replicator)
    finally:
        shared_cpu_seconds = sum(node.close() for node in nodes)
        shutil.rmtree(control_dir, ignore_errors=True)
        replicator.record_cost(own_cpu_seconds() + shared_cpu_seconds)
    return 0


def replicate(arguments: argparse.Namespace, replicator: Replicator) -> None:
    """Scan until the launch script ends (SIGTERM from its exit, or its pid gone), then the last pass."""
    stopping: List[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    while not stopping and _alive(arguments.parent):
        replicator.scan()
        _sleep_unless_stopped(arguments.interval, stopping)
    replicator.scan(final=True)


def _sleep_unless_stopped(seconds: float, stopping: List[int]) -> None:
    """Sleep ``seconds``, less when a stop comes in (``time.sleep`` resumes after a handled signal)."""
    deadline = time.monotonic() + seconds
    while not stopping and time.monotonic() < deadline:
        time.sleep(min(0.2, deadline - time.monotonic()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    # A program of its own on the node (replicate.py), not a module: its status is its exit code.
    sys.exit(main(sys.argv[1:]))  # pylint: disable=ansible-bad-function
