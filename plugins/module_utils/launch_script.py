# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the bash script that starts a training job from the command lines of ``launch.build()``.

Pure Python (no Ansible imports) so it runs on the controller, on managed
nodes (Python 3.9+) and in plain unit tests. The script, run on the launcher
node:

1. checks, in parallel, that every node accepts the cluster's SSH (a changed
   host key, a refused or unreachable node stop the job before any rank starts;
   each node's answer is kept in ``logs/ssh-<node>.log``) and, when the script
   was started while the nodes were still being set up for it (``ReadyCheck``),
   waits in the same SSH session for each node's set-up of this launch;
2. copies the paths to stage (the checkpoint to resume from) from the launcher
   node to every other node that lacks them, and starts the checkpoint
   replicator (checkpoint_replica.py) in the background when asked
   (``Replication``): the script waits for its last pass when it exits;
3. starts the launcher: one agent per node over SSH (torchrun's, or the node's
   TensorFlow worker), supervised so that the first agent to fail stops the
   others (``agent.pid`` in each node's job directory), or the one launcher
   (MPI, DeepSpeed) that starts every rank and stops the job itself;
4. passes SIGTERM/SIGINT (the job's timeout, or a stop asked for with the
   ``stop`` file in the job directory) on, and exits with the first failure's
   code.

It appends the events of events.py to ``<job_dir>/logs/launcher.log``. Every word
taken from the spec is quoted with shlex.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY, LaunchError, LaunchSpec, build
# Node names become log file names, bash array keys and JSON strings in the script.
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import NODE_NAME

# Words that start a new line of a long command: launcher options and the ``env`` of the rank environment.
_OPTION = re.compile(r"--?[A-Za-z][A-Za-z0-9_.-]*")
_CONTINUATION = " \\\n  "
_EVENT_FUNCTION = (
    r"""event() { printf '{"event": "%s", "time": %s%s}\n' "$1" "$(date +%s.%N)" "${2:-}" >>"$logs/launcher.log"; }"""
)
# Seconds the agents get to stop after the first failure before their SSH sessions are cut.
ABORT_GRACE_SECONDS = 20
# JSON fragments of event lines, expanded by bash (inside double quotes).
_CODE_FIELD = r', \"code\": $code'
_NODE_CODE_FIELDS = r', \"node\": \"$1\", \"code\": $code'
_STALLED_FIELD = r', \"reason\": \"a rank stalled (the watchdog)\"'


@dataclass(frozen=True)
class ReadyCheck:
    """Each node's set-up of a launch writes that launch's token to ``path`` last, the launcher node's before the launch
    starts; the launch waits up to ``timeout`` seconds on every node for the token its own node holds (the launch
    started in the same module run as the launcher node's own set-up, while the other nodes were still being set up).
    """

    path: str
    timeout: int


@dataclass(frozen=True)
class Replication:
    """The checkpoint replicator the launch starts (checkpoint_replica.py, written to ``script``): the complete
    entries of ``directory`` copied to the ``count`` nodes that follow the launcher node in the job's order."""

    directory: str
    count: int
    script: str


def render_launch_script(
    spec: LaunchSpec,
    *,
    job_dir: str,
    work_dir: str,
    env_script: str = "",
    stage_paths: Sequence[str] = (),
    ready: Optional[ReadyCheck] = None,
    replication: Optional[Replication] = None,
) -> str:
    """The complete launch script for ``spec``, run from the launcher node.

    ``job_dir`` holds the job's ``logs/`` directory, ``work_dir`` is the working
    directory of the launcher and of every torchrun agent. ``env_script``, when
    given, is sourced first by the script and by every torchrun agent's remote
    shell. ``ready``, when given, makes the SSH check wait for each node's
    set-up of this launch. ``stage_paths`` (absolute files or directories on the launcher node)
    are copied to the same path on every other node that lacks them. ``replication``, when given and
    the job has more than one node, starts the checkpoint replicator after them. Raises
    LaunchError when ``build(spec)`` does, or a host's name or address is unusable.
    """
    argvs = build(spec)
    _check_words(argvs)
    names = _node_names(spec)
    _check_addresses(spec)
    ssh = _ssh_words(spec)
    launcher = REGISTRY[spec.launcher]
    if launcher.node_agent:
        body = _per_node_body(spec, argvs, job_dir, work_dir, names, env_script)
    elif launcher.scheduler == "slurm":
        body = _slurm_body(argvs, job_dir, work_dir, names, spec.job_id)
    else:
        body = _single_launcher_body(spec, argvs[0])
    lines = _preamble(spec, job_dir, work_dir, env_script) + [""] + _ssh_multiplexing()
    lines += [""] + _ssh_check(spec, names, ssh, ready)
    if stage_paths:
        lines += [""] + _staging(spec, names, ssh, stage_paths)
    if replication and replication.count > 0 and len(spec.hosts) > 1:
        lines += [""] + _replication(spec, names, replication)
    return "\n".join(lines + [""] + body) + "\n"


def _source(env_script: str) -> list[str]:
    """The shell words that load ``env_script``, or none."""
    return [".", env_script] if env_script else []


# The SSH check's connection to each node is kept open (ControlPersist) and the torchrun agent's session, started
# moments later, rides on it: one SSH handshake per node on the way to the first rank instead of two. The script sets
# these words (the bash array ssh_mux, _ssh_multiplexing) to the options that do it, or to none.
SSH_MULTIPLEXING = '"${ssh_mux[@]}"'
# The control sockets' directory, made by the script with mktemp -d in $TMPDIR (else /tmp): a fresh name nobody could
# have made first, mode 0700, the training user's. ssh does not check who owns a socket it finds at its ControlPath, so
# a shared /tmp (host mode) must not hold the socket itself.
SSH_MUX_DIR = "multinode-ssh.XXXXXXXXXX"
# The longest directory a control socket fits in: a Unix socket's path holds at most 107 bytes, and ssh puts the
# socket at <directory>/%C (40 hex digits), first as <that>.<16 random characters>. A longer one (a long $TMPDIR): no
# multiplexing, as ssh would fail on it.
SSH_MUX_DIR_MAX = 107 - len("/") - 40 - len(".") - 16
# Where the script says which directory holds the sockets, its mode and its owner's uid ("<dir> 700 <uid>"), or
# "none: ..." without multiplexing: the run's own record that nobody else could have made it.
SSH_MUX_LOG = "ssh-multiplexing.log"


def _ssh_multiplexing() -> list[str]:
    """Lines that set ``ssh_mux`` to the multiplexing options, their sockets in a directory of the script's own
    (removed when it exits), or leave it empty where no such directory can be made; either way said in the job's
    ``logs/ssh-multiplexing.log``."""
    return [
        "# SSH multiplexing: its sockets in a directory of this script's own (mode 0700), or none where it cannot be.",
        "ssh_mux=()",
        f'ssh_mux_dir="${{TMPDIR:-/tmp}}/{SSH_MUX_DIR}"',
        f'if [ "${{#ssh_mux_dir}}" -le {SSH_MUX_DIR_MAX} ] && ssh_mux_dir=$(mktemp -d "$ssh_mux_dir"); then',
        "  exit_hooks+='rm -rf \"$ssh_mux_dir\";'",
        '  ssh_mux=(-o ControlMaster=auto -o "ControlPath=$ssh_mux_dir/%C" -o ControlPersist=10)',
        f"  stat -c '%n %a %u' \"$ssh_mux_dir\" >\"$logs/{SSH_MUX_LOG}\"",
        "else",
        f'  echo "none: no private directory for the control sockets in ${{TMPDIR:-/tmp}}" >"$logs/{SSH_MUX_LOG}"',
        "fi",
    ]


# The checkpoint replicator's copies, one JSON line each (checkpoint_replica.py), and its own output.
REPLICAS_LOG = "replicas.jsonl"
REPLICATOR_LOG = "replicate.log"


def _replication(spec: LaunchSpec, names: list[str], replication: Replication) -> list[str]:
    """Lines that start the checkpoint replicator in the background for the ``count`` nodes after the launcher
    node, and make the script's exit wait for its last pass."""
    targets = list(zip(names[1:], spec.hosts[1:]))[: replication.count]
    words = ["python3", replication.script, "--dir", replication.directory, "--port", str(spec.ssh_port)]
    for name, host in targets:
        words += ["--node", name, host.address]
    start = shlex.join(words) + f' --log "$logs/{REPLICAS_LOG}" --parent $$'
    return [
        _comment(
            f"Checkpoint replicas: each complete entry of {replication.directory} is copied to "
            f"{', '.join(name for name, _host in targets)} in the background; its copies in $logs/{REPLICAS_LOG}."
        ),
        "replicator=",
        "# shellcheck disable=SC2034 # read by the exit hook below (single-quoted: the EXIT trap evals it)",
        "if command -v python3 >/dev/null; then",
        f'  {start} >>"$logs/{REPLICATOR_LOG}" 2>&1 </dev/null & replicator=$!',
        "else",
        f'  echo "no python3 on the launcher node: the checkpoints are not replicated" >>"$logs/{REPLICATOR_LOG}"',
        "fi",
        "# At the exit, after every rank: the replicator's last pass, which copies what the ranks left (it bounds",
        "# its own time: a node cut off does not hold the job's end).",
        "exit_hooks='[ -z \"$replicator\" ] || { kill -TERM \"$replicator\" 2>/dev/null; wait \"$replicator\"; };'\"$exit_hooks\"",
    ]


def _ssh_words(spec: LaunchSpec, *options: str) -> str:
    """``ssh`` with the cluster's port, the multiplexing and ``options``, ending with ``--``: the destination that
    follows is never read as an option."""
    return " ".join(["ssh", "-p", str(spec.ssh_port), SSH_MULTIPLEXING, *map(shlex.quote, options), "--"])


def _event(kind: str, fields: str = "") -> str:
    """``event KIND FIELDS``; FIELDS is a JSON fragment that may expand shell variables."""
    return f'event {kind} "{fields}"' if fields else f"event {kind}"


def _preamble(spec: LaunchSpec, job_dir: str, work_dir: str, env_script: str) -> list[str]:
    launcher_field = ', "launcher": ' + json.dumps(spec.launcher)
    # Before ``set -u``: environment scripts such as oneAPI's vars.sh read unset variables.
    source = [shlex.join(_source(env_script)) + " || exit"] if env_script else []
    return [
        "#!/bin/bash",
        "# Written by the multinode.training.launch_script module; local changes are overwritten.",
        _comment(f"Job {spec.job_id}: {spec.launcher} across {len(spec.hosts)} nodes."),
        *source,
        "set -u",
        f"cd {shlex.quote(work_dir)} || exit",
        f"logs={shlex.quote(posixpath.join(job_dir, 'logs'))}",
        "# What the script's exit does, whatever ends it: shell code the parts below add.",
        "exit_hooks=''",
        "trap 'eval \"$exit_hooks\"' EXIT",
        _EVENT_FUNCTION,
        f"event {events.LAUNCH} {shlex.quote(launcher_field)}",
        f"echo $$ >{shlex.quote(posixpath.join(job_dir, events.LAUNCH_PID_FILE))}",
        f"# The job is stopped when {events.STOP_FILE} appears in its directory: this script gets SIGTERM. Empty, the",
        f"# stop is a cancel; holding {events.STOP_STALLED}, the stall watchdog stopped the job.",
        f"stop_file={shlex.quote(posixpath.join(job_dir, events.STOP_FILE))}",
        '( while [ ! -e "$stop_file" ]; do kill -0 $$ 2>/dev/null || exit 0; sleep 1; done;'
        f' if [ "$(cat "$stop_file")" = {events.STOP_STALLED} ]; then {_event(events.ABORT, _STALLED_FIELD)};'
        f" else event {events.CANCEL}; fi; kill -TERM $$ ) </dev/null >/dev/null 2>&1 &",
    ]


def _ready_wait(ready: Optional[ReadyCheck]) -> str:
    """The remote command of the SSH check: nothing, or a wait (in the node's own shell) until the node holds the
    launcher node's token ($ready_token, passed as the remote script's $1)."""
    if ready is None:
        return "true"
    tries, not_ready = ready.timeout * 5, f"echo \"{events.NOT_READY_TEXT}"
    wait = (
        f'i=0; while got=$(cat {shlex.quote(ready.path)} 2>/dev/null); [ "$got" != "$1" ]; do'
        f' if [ "$got" = "{events.SETUP_FAILED} $1" ]; then {not_ready} failed\" >&2; exit {events.NOT_READY_CODE}; fi;'
        f' if [ "$i" -ge {tries} ]; then {not_ready} did not finish within {ready.timeout} s\" >&2; exit {events.NOT_READY_CODE}; fi;'
        " i=$((i + 1)); sleep 0.2; done"
    )
    return shlex.quote(shlex.join(["sh", "-c", wait, "ready"])) + ' "$ready_token"'


def _ready_token(ready: Optional[ReadyCheck]) -> list[str]:
    """The launcher node's own token, read when the script starts (its set-up wrote it just before)."""
    if ready is None:
        return []
    return [f"ready_token=$(cat {shlex.quote(ready.path)} 2>/dev/null)"]


def _ssh_check(spec: LaunchSpec, names: list[str], ssh: str, ready: Optional[ReadyCheck]) -> list[str]:
    what = " and have finished its set-up for this launch" if ready else ""
    lines = [
        f"# Every node must accept the cluster's SSH{what} before any rank starts; each answer in $logs/ssh-<node>.log.",
        *_ready_token(ready),
        "declare -A checks",
        f"check() {{ {ssh} \"$2\" {_ready_wait(ready)} >\"$logs/ssh-$1.log\" 2>&1 </dev/null; local code=$?;"
        f' {_event(events.SSH_CHECK, _NODE_CODE_FIELDS)}; return "$code"; }}',
    ]
    for host, name in zip(spec.hosts, names):
        lines.append(f"check {name} {shlex.quote(host.address)} & checks[{name}]=$!")
    return lines + [
        "refused=0",
        f"for node in {shlex.join(names)}; do wait \"${{checks[$node]}}\" || refused=1; done",
        'if [ "$refused" -ne 0 ]; then',
        "  " + _event(events.LAUNCHER_EXIT, _CODE_FIELD.replace("$code", "255")),
        "  exit 255",
        "fi",
    ]


def _staging(spec: LaunchSpec, names: list[str], ssh: str, paths: Sequence[str]) -> list[str]:
    lines = ["# Copy what every rank must find (the checkpoint to resume from) to the nodes that lack it."]
    for path in paths:
        parent, base = posixpath.split(path.rstrip("/"))
        remote_test = shlex.quote(f"test -e {shlex.quote(path)}")
        remote_unpack = shlex.quote(f"mkdir -p {shlex.quote(parent)} && tar -C {shlex.quote(parent)} -xf -")
        pack = shlex.join(["tar", "-C", parent, "-cf", "-", base])
        lines.append(
            f'stage() {{ {ssh} "$2" {remote_test} </dev/null || {pack} | {ssh} "$2" {remote_unpack}; local code=$?;'
            f' {_event(events.STAGED, _NODE_CODE_FIELDS)}; return "$code"; }}'
        )
        lines.append("declare -A stages")
        for host, name in zip(spec.hosts[1:], names[1:]):
            lines.append(f"stage {name} {shlex.quote(host.address)} >>\"$logs/stage-{name}.log\" 2>&1 & stages[{name}]=$!")
        lines += [
            "unstaged=0",
            f"for node in {shlex.join(names[1:])}; do wait \"${{stages[$node]}}\" || unstaged=1; done" if names[1:] else ":",
            'if [ "$unstaged" -ne 0 ]; then',
            "  " + _event(events.LAUNCHER_EXIT, _CODE_FIELD.replace("$code", "254")),
            "  exit 254",
            "fi",
        ]
    return lines


def _per_node_body(
    spec: LaunchSpec, argvs: list[list[str]], job_dir: str, work_dir: str, names: list[str], env_script: str
) -> list[str]:
    source = f"{shlex.join(_source(env_script))} && " if env_script else ""
    pid_file = shlex.quote(posixpath.join(job_dir, "agent.pid"))
    ssh = _ssh_words(spec)
    ssh_to_stop = _ssh_words(spec, "-o", "ConnectTimeout=5")
    lines = [
        f"# One {spec.launcher} agent per node over SSH, its pid in that node's job directory, its output in $logs/<node>.log.",
        "declare -A agents addresses",
    ]
    for host, name, argv in zip(spec.hosts, names, argvs):
        remote = f"{source}cd {shlex.quote(work_dir)} && echo $$ >{pid_file} && exec {shlex.join(argv)}"
        lines += [
            f"{ssh} {shlex.quote(host.address)} {shlex.quote(remote)} >\"$logs/{name}.log\" 2>&1 </dev/null &",
            f"agents[$!]={name}; addresses[{name}]={shlex.quote(host.address)}",
        ]
    kill_agent = shlex.quote(f"kill -TERM $(cat {pid_file}) 2>/dev/null")
    return lines + [
        "",
        "# The first agent to fail (or the job's timeout) stops every other one: its ranks get SIGTERM,",
        f"# and SSH sessions still open {ABORT_GRACE_SECONDS} s later are cut.",
        "status=0",
        "aborted=false",
        "abort() {",
        '  "$aborted" && return',
        "  aborted=true",
        "  " + _event(events.ABORT, r', \"reason\": \"$1\"'),
        '  for node in "${agents[@]}"; do',
        f'    {ssh_to_stop} "${{addresses[$node]}}" {kill_agent} </dev/null >/dev/null 2>&1 &',
        "  done",
        f'  (sleep {ABORT_GRACE_SECONDS}; kill "${{!agents[@]}}") </dev/null >/dev/null 2>&1 &',
        "  cutter=$!",
        "}",
        "cutter=",
        "trap 'abort signal; [ \"$status\" -ne 0 ] || status=143' TERM INT HUP",
        'while [ "${#agents[@]}" -gt 0 ]; do',
        "  finished=",
        '  wait -n -p finished "${!agents[@]}"',
        "  code=$?",
        '  [ -n "${finished:-}" ] || continue  # a trapped signal interrupts wait and unsets it',
        '  node=${agents[$finished]}',
        '  unset "agents[$finished]"',
        "  " + _event(events.NODE_EXIT, _node_exit_fields(REGISTRY[spec.launcher].node_agent)),
        '  if [ "$code" -ne 0 ]; then',
        '    [ "$status" -ne 0 ] || status=$code',
        '    abort "node $node exited $code"',
        "  fi",
        "done",
        '[ -z "$cutter" ] || kill "$cutter" 2>/dev/null',
        _event(events.LAUNCHER_EXIT, _CODE_FIELD.replace("$code", "$status")),
        'exit "$status"',
    ]


def _node_exit_fields(agent: str) -> str:
    """The node_exit event's fields: the node, what ran there (``agent``), its exit code, whether after an abort."""
    return r', \"node\": \"$node\", \"agent\": \"' + agent + r'\", \"code\": $code, \"after_abort\": $aborted'


# Intel MPI's Hydra (mpiexec.hydra, and the mpirun that ipexrun and horovodrun start) reaches each node over SSH
# with these extra words: its sessions ride on the SSH check's connections (one handshake per node on the way to the
# first rank instead of two). Any the launcher's environment had are kept after them; other launchers ignore it.
HYDRA_SSH_ARGS = "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS"


def _single_launcher_body(spec: LaunchSpec, argv: list[str]) -> list[str]:
    log = f"$logs/{spec.launcher}.log"
    return [
        # Hydra splits the words at spaces: none in a socket directory with one (a TMPDIR with a space).
        "# Intel MPI's Hydra reaches the nodes over the SSH check's connections (no second handshake per node).",
        'if [ "${#ssh_mux[@]}" -gt 0 ] && [[ "$ssh_mux_dir" != *[[:space:]]* ]]; then',
        f'  export {HYDRA_SSH_ARGS}="${{ssh_mux[*]}}${{{HYDRA_SSH_ARGS}:+ ${HYDRA_SSH_ARGS}}}"',
        "fi",
        f"# {spec.launcher} starts every rank itself and stops them all when one fails; its output goes to {log}.",
        f'{_wrapped(argv, len(spec.command))} >"{log}" 2>&1 </dev/null &',
        "launcher=$!",
        'trap \'kill -TERM "$launcher" 2>/dev/null\' TERM INT HUP',
        'wait "$launcher"',
        "code=$?",
        'while [ "$code" -gt 128 ] && kill -0 "$launcher" 2>/dev/null; do wait "$launcher"; code=$?; done',
        _event(events.LAUNCHER_EXIT, _CODE_FIELD),
        'exit "$code"',
    ]


# Where the launch script leaves the Slurm job's id for the launcher role (which reads its accounting).
SLURM_JOB_ID_FILE = "slurm.jobid"


def _slurm_body(argvs: list[list[str]], job_dir: str, work_dir: str, names: list[str], job_id: str) -> list[str]:
    """Submit the job to Slurm with sbatch and wait for it; a signal (timeout, stop) cancels it with scancel.

    One task per node (``srun`` in the batch script) runs that node's torchrun agent, picked by the node's Slurm
    name; every task's output goes to the batch script's, ``$logs/slurm-<id>.log`` on the batch host (the launcher
    node, first in slurm.conf). ``sbatch --wait`` exits with the job's exit code.
    """
    batch = posixpath.join(job_dir, "slurm.sbatch")
    batch_lines = slurm_batch_lines(slurm_node_script(argvs, work_dir, names))
    # The job's options on sbatch's command line, each one quoted word: an #SBATCH line would end at a newline.
    sbatch = [
        "sbatch",
        "--parsable",
        "--wait",
        f"--job-name={job_id}",
        f"--nodes={len(names)}",
        f"--nodelist={','.join(names)}",
        "--ntasks-per-node=1",
        f"--output={posixpath.join(job_dir, 'logs', 'slurm-%j.log')}",
        f"--chdir={work_dir}",
        batch,
    ]
    jobid_file = shlex.quote(posixpath.join(job_dir, SLURM_JOB_ID_FILE))
    return [
        "# Slurm runs the job: one task per node, each its node's torchrun agent.",
        _write_file(batch, batch_lines),
        f'{shlex.join(sbatch)} >"$logs/sbatch.log" 2>&1 </dev/null &',
        "sbatch_pid=$!",
        "# sbatch prints the job id when Slurm accepted the job, then waits for it to end.",
        "jobid=",
        'while [ -z "$jobid" ] && kill -0 "$sbatch_pid" 2>/dev/null; do',
        '  jobid=$(grep -Eom1 "^[0-9]+" "$logs/sbatch.log"); [ -n "$jobid" ] || sleep 0.1',
        "done",
        '[ -n "$jobid" ] || jobid=$(grep -Eom1 "^[0-9]+" "$logs/sbatch.log")',
        f'echo "$jobid" >{jobid_file}',
        "trap '[ -z \"$jobid\" ] || scancel \"$jobid\"' TERM INT HUP",
        'wait "$sbatch_pid"',
        "code=$?",
        'while [ "$code" -gt 128 ] && kill -0 "$sbatch_pid" 2>/dev/null; do wait "$sbatch_pid"; code=$?; done',
        _event(events.LAUNCHER_EXIT, _CODE_FIELD),
        'exit "$code"',
    ]


def slurm_node_script(argvs: list[list[str]], work_dir: str, names: list[str]) -> str:
    """What every Slurm task runs on its own node (``bash -c``): the agent of the node ``$SLURMD_NODENAME`` names,
    ``argvs`` being the nodes' agents in the order of ``names``."""
    arms = [f"  {name}) exec {shlex.join(argv)} ;;" for name, argv in zip(names, argvs)]
    return "\n".join(
        [
            f"cd {shlex.quote(work_dir)} || exit",
            'case "$SLURMD_NODENAME" in',
            *arms,
            '  *) echo "node $SLURMD_NODENAME is not a node of this job" >&2; exit 2 ;;',
            "esac",
        ]
    )


def slurm_batch_lines(node_script: str) -> list[str]:
    """The lines of the batch script (``slurm.sbatch``): sbatch sends it to the batch host, and its srun
    ``node_script`` to every node, one task each."""
    return ["#!/bin/bash", f"exec srun --kill-on-bad-exit=1 bash -c {shlex.quote(node_script)}"]


def _write_file(path: str, lines: list[str]) -> str:
    """A shell command that writes ``lines`` to ``path`` as they are, whatever they hold: each line is one quoted
    argument of printf (a here-document would end early at a line of a value that equals its marker)."""
    return _CONTINUATION.join([f"printf '%s\\n' >{shlex.quote(path)}", *map(shlex.quote, lines)])


def _node_names(spec: LaunchSpec) -> list[str]:
    names = [host.name for host in spec.hosts]
    for name in names:
        if not NODE_NAME.fullmatch(name):
            raise LaunchError(
                f"node name {name!r} cannot name a log file in the launch script;"
                " use letters, digits and . _ : @ + - only"
            )
    if len(set(names)) < len(names):
        raise LaunchError(f"node names are not unique: {', '.join(names)}")
    return names


# What the launch script's SSH takes as a node's address (the preflight refuses anything else in the first play).
ADDRESS_TEXT = (
    "an IP address or a host name (dot-separated labels of letters, digits, - and _, none starting or ending with -)"
)
_HOST_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
# The zone of a link-local IPv6 address (fe80::1%eth0): an interface's name or index. Python takes any text there.
_IPV6_ZONE = re.compile(r"[A-Za-z0-9_.-]{1,15}")


def is_address(text: str) -> bool:
    """``text`` is an IPv4 or IPv6 address, or a host name of RFC 1123 labels (with _ as well: resolvers and Docker's
    DNS take it) whose last label is not all digits (``10.0.0.256`` is no name). Nothing else (an ssh option such as
    ``-oProxyCommand=x``, a ``user@host``, spaces, shell characters) can be a node's address."""
    address, percent, zone = text.partition("%")
    try:
        version = ipaddress.ip_address(address).version
    except ValueError:
        labels = text.split(".")
        return len(text) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels) and not labels[-1].isdigit()
    return not percent or (version == 6 and bool(_IPV6_ZONE.fullmatch(zone)))


def _check_addresses(spec: LaunchSpec) -> None:
    for host in spec.hosts:
        if not is_address(host.address):
            raise LaunchError(
                f"node {host.name}: {host.address!r} cannot be the address SSH connects to; use {ADDRESS_TEXT}"
            )


# Why a word holding a NUL character is refused (bash will not even run a script that holds one).
NUL_TEXT = "no program's argument or environment can hold a NUL character"


def holding_nul(words: Iterable[str]) -> list[str]:
    """The words of ``words`` that hold a NUL character."""
    return [word for word in words if "\0" in word]


def _check_words(argvs: list[list[str]]) -> None:
    held = holding_nul(word for argv in argvs for word in argv)
    if held:
        raise LaunchError(f"{NUL_TEXT}: {', '.join(map(repr, held))}")


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
