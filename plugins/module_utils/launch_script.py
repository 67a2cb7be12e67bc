# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the bash script that starts a training job from the command lines of ``launch.build()``.

Pure Python (no Ansible imports) so it runs on the controller, on managed
nodes (Python 3.9+) and in plain unit tests. The script writes the JSON event
lines that run_report.py reads to ``<job_dir>/logs/launcher.log``: ``launch``
when it starts, then ``node_exit`` per node for torchrun (one agent per node,
started over SSH) or ``launcher_exit`` for every launcher that starts all ranks
itself. Every word taken from the spec is quoted with shlex.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from ansible_collections.multinode.training.plugins.module_utils.launch import LaunchError, LaunchSpec, build

# Node names become log file names, bash array keys and JSON strings in the script,
# so they are limited to characters that need no quoting or escaping in any of those.
_NODE_NAME = re.compile(r"[A-Za-z0-9_.:@+-]+")
# Words that start a new line of a long command: launcher options and the ``env`` of the rank environment.
_OPTION = re.compile(r"--?[A-Za-z][A-Za-z0-9_.-]*")
_CONTINUATION = " \\\n  "
_EVENT_FUNCTION = (
    r"""event() { printf '{"event": "%s", "time": %s%s}\n' "$1" "$(date +%s.%N)" "${2:-}" >>"$logs/launcher.log"; }"""
)


def render_launch_script(
    spec: LaunchSpec,
    *,
    job_dir: str,
    code_dir: str,
    env_script: str = "",
) -> str:
    """The complete launch script for ``spec``, run from the launcher node.

    ``job_dir`` holds the job's ``logs/`` directory, ``code_dir`` is the working
    directory of the launcher and of every torchrun agent. ``env_script``, when
    given, is sourced first by the script and by every torchrun agent's remote
    shell (the oneAPI and Python environment of a job that runs on the hosts).
    With torchrun each host's name names its log file and its ``node_exit``
    events. Raises LaunchError when ``build(spec)`` does or a host name is
    unusable there.
    """
    argvs = build(spec)
    if spec.launcher == "torchrun":
        body = _per_node_body(spec, argvs, code_dir, _node_names(spec), env_script)
    else:
        body = _single_launcher_body(spec, argvs[0])
    return "\n".join(_preamble(spec, job_dir, code_dir, env_script) + [""] + body) + "\n"


def _source(env_script: str) -> list[str]:
    """The shell words that load ``env_script``, or none."""
    return [".", env_script] if env_script else []


def _preamble(spec: LaunchSpec, job_dir: str, code_dir: str, env_script: str) -> list[str]:
    launcher_field = ', "launcher": ' + json.dumps(spec.launcher)
    # Before ``set -u``: environment scripts such as oneAPI's vars.sh read unset variables.
    source = [shlex.join(_source(env_script)) + " || exit"] if env_script else []
    return [
        "#!/bin/bash",
        "# Written by the multinode.training.launch_script module; local changes are overwritten.",
        _comment(f"Job {spec.job_id}: {spec.launcher} across {len(spec.hosts)} nodes."),
        *source,
        "set -u",
        f"cd {shlex.quote(code_dir)} || exit",
        f"logs={shlex.quote(posixpath.join(job_dir, 'logs'))}",
        _EVENT_FUNCTION,
        f"event launch {shlex.quote(launcher_field)}",
    ]


def _per_node_body(
    spec: LaunchSpec, argvs: list[list[str]], code_dir: str, names: list[str], env_script: str
) -> list[str]:
    lines = [
        "# One torchrun agent per node over SSH; each node's output goes to $logs/<node>.log.",
        "declare -A pids",
    ]
    source = f"{shlex.join(_source(env_script))} && " if env_script else ""
    for host, name, argv in zip(spec.hosts, names, argvs):
        remote = f"{source}cd {shlex.quote(code_dir)} && exec {shlex.join(argv)}"
        ssh = shlex.join(["ssh", "-p", str(spec.ssh_port), host.address, remote])
        lines += [f'{ssh} >"$logs/{name}.log" 2>&1 </dev/null &', f"pids[{shlex.quote(name)}]=$!"]
    return lines + [
        "",
        "# Wait for every agent, in host order; the script exits with the first non-zero code.",
        "status=0",
        f"for node in {shlex.join(names)}; do",
        '  wait "${pids[$node]}"',
        "  code=$?",
        r'  event node_exit ", \"node\": \"$node\", \"code\": $code"',
        '  [ "$status" -ne 0 ] || status=$code',
        "done",
        'exit "$status"',
    ]


def _single_launcher_body(spec: LaunchSpec, argv: list[str]) -> list[str]:
    log = f"$logs/{spec.launcher}.log"
    return [
        f"# {spec.launcher} starts every rank itself; its output goes to {log}.",
        f'{_wrapped(argv, len(spec.command))} >"{log}" 2>&1 </dev/null',
        "code=$?",
        r'event launcher_exit ", \"code\": $code"',
        'exit "$code"',
    ]


def _node_names(spec: LaunchSpec) -> list[str]:
    names = [host.name for host in spec.hosts]
    for name in names:
        if not _NODE_NAME.fullmatch(name):
            raise LaunchError(
                f"node name {name!r} cannot name a log file in the launch script;"
                " use letters, digits and . _ : @ + - only"
            )
    if len(set(names)) < len(names):
        raise LaunchError(f"node names are not unique: {', '.join(names)}")
    return names


def _wrapped(argv: list[str], program_words: int) -> str:
    """``argv`` as one shell command continued over lines: one per launcher option, then the program.

    The program is the last ``program_words`` words (every builder puts it last). Line breaks are
    backslash-newlines, so where they fall never changes the command.
    """
    cut = len(argv) - program_words
    lines: list[list[str]] = []
    for word in argv[:cut]:
        if not lines or word == "env" or _OPTION.fullmatch(word):
            lines.append([])
        lines[-1].append(word)
    if cut < len(argv):
        lines.append(argv[cut:])
    return _CONTINUATION.join(shlex.join(line) for line in lines)


def _comment(text: str) -> str:
    """A one-line bash comment, whatever whitespace ``text`` holds."""
    return "# " + " ".join(text.split())
