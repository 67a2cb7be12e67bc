# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The environment every rank gets, whatever launcher started it, and the wrapper script that gives it.

One definition of the launch contract: :data:`CONTRACT` names each standard
variable and the launcher variables it is derived from, :data:`JOB_VARIABLES`
the job's directories. :func:`render_rank_wrapper` turns them into ``rank.sh``,
the wrapper every rank runs under; it also records each rank's start and exit
in ``<job_dir>/status/rank-<RANK>.json`` (:data:`STATUS_FIELDS`), the facts
the run summary judges success by, and copies the rank's output to
``<job_dir>/logs/rank-<RANK>.log``.

Pure Python (no Ansible imports) so it runs on the controller, on managed
nodes (Python 3.9+) and in plain unit tests.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Mapping, Sequence

from ansible_collections.multinode.training.plugins.module_utils import events


@dataclass(frozen=True)
class ContractVariable:
    """A standard rank variable: the launcher variables it is taken from, in order, then a fallback.

    ``fallback`` names a :class:`NodeDefaults` field used when no launcher set
    any source; without one, the wrapper refuses to start the rank.
    """

    name: str
    sources: tuple[str, ...]
    fallback: str | None
    meaning: str


# Open MPI's OMPI_COMM_WORLD_* come before PMI_*: Open MPI with PMIx may set PMI_RANK too.
# Intel MPI and MPICH (hydra) set PMI_RANK, PMI_SIZE, MPI_LOCALRANKID and MPI_LOCALNRANKS. horovodrun's Gloo
# controller sets HOROVOD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE and _CROSS_RANK (horovod/runner/gloo_run.py).
CONTRACT: tuple[ContractVariable, ...] = (
    ContractVariable("RANK", ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "HOROVOD_RANK"), None, "global rank, 0 .. WORLD_SIZE-1"),
    ContractVariable(
        "WORLD_SIZE", ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "HOROVOD_SIZE"), None, "number of ranks in the job"
    ),
    ContractVariable(
        "LOCAL_RANK",
        ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "HOROVOD_LOCAL_RANK"),
        None,
        "rank among the ranks of this node",
    ),
    ContractVariable(
        "LOCAL_WORLD_SIZE",
        ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "HOROVOD_LOCAL_SIZE"),
        "slots",
        "number of ranks on this node",
    ),
    ContractVariable("GROUP_RANK", ("GROUP_RANK", "HOROVOD_CROSS_RANK"), "node_index", "index of this node in the job (node rank)"),
    ContractVariable("MASTER_ADDR", ("MASTER_ADDR",), "master_addr", "address of rank 0's node"),
    ContractVariable("MASTER_PORT", ("MASTER_PORT",), "master_port", "port of rank 0's rendezvous"),
)

# The job's own variables: (name, meaning). Their values are the same on every node.
JOB_VARIABLES: tuple[tuple[str, str], ...] = (
    ("JOB_ID", "the job's id"),
    ("OUTPUT_DIR", "directory for outputs; rank 0's node's (or every node's) copy is collected"),
    ("CHECKPOINT_DIR", "directory for checkpoints; with a job name it outlives the run"),
    ("RESUME_FROM", "the job's latest checkpoint (file or directory) on every node, empty when there is none"),
    ("DATA_DIR", "the staged (or shared) data set, empty when the job has none"),
)

# The rank variables each kind of launcher sets itself (the rest of CONTRACT comes from the wrapper); each launcher's
# registry entry (launch.REGISTRY) names its set.
HYDRA_SETS = ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS")
TORCHRUN_SETS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")
HOROVOD_SETS = ("HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK")
OPEN_MPI_SETS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")
# deepspeed.launcher.launch, each node's agent: torchrun's names for the rank, its own LOCAL_SIZE and CROSS_RANK for
# the node's (so LOCAL_WORLD_SIZE and GROUP_RANK come from the wrapper).
DEEPSPEED_SETS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")

# The per-rank variables a collective backend reads beyond the contract: (name, the contract variable it copies),
# exported after the contract, so they hold whatever launcher started the rank.
# xccl: with CCL_PROCESS_LAUNCHER=none (launch.XCCL_ENV), oneCCL takes the rank's place on its node from
# CCL_LOCAL_RANK and CCL_LOCAL_SIZE (oneCCL doc/rst/source/env-variables.rst; getenv_local_coord in
# src/common/global/global.cpp), as huggingface/accelerate#2339 sets them from LOCAL_RANK and LOCAL_WORLD_SIZE.
BACKEND_RANK_VARIABLES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "xccl": (("CCL_LOCAL_RANK", "LOCAL_RANK"), ("CCL_LOCAL_SIZE", "LOCAL_WORLD_SIZE")),
}

# Keys of the JSON object in status/rank-<RANK>.json: written when the rank starts
# (without ended/code/signal/stopped) and again when it ends.
STATUS_FIELDS = ("rank", "node", "host", "started", "ended", "code", "signal", "stopped")

# {name} placeholders the launch command's arguments may hold, expanded before launch.
PLACEHOLDERS = ("job_id", "output_dir", "checkpoint_dir", "resume_from", "data_dir", "work_dir")

# Names that end up in shell words, file names and JSON strings without quoting (launch.py, launch_script.py).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NODE_NAME = re.compile(r"[A-Za-z0-9_.:@+-]+")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


# Said on the rank's stream and in its log when a process the rank left behind still held its output at its end.
LEFT_BEHIND_NOTE = (
    "(multinode) a process a rank left behind holds its output open: the rank has ended, what that process prints"
    " from now on is not kept"
)
# How much of the end of a rank's log holds that note, if it was said (the wrapper says it last).
_NOTE_TAIL_BYTES = 4096


def ranks_that_left_a_process(logs_dir: str) -> list[int]:
    """The ranks whose logs in ``logs_dir`` (``rank-<RANK>.log``) end saying LEFT_BEHIND_NOTE, in rank order."""
    found = []
    for name in os.listdir(logs_dir) if os.path.isdir(logs_dir) else []:
        rank = name[len("rank-"):-len(".log")]
        if not (name.startswith("rank-") and name.endswith(".log") and rank.isdigit()):
            continue
        with open(os.path.join(logs_dir, name), "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - _NOTE_TAIL_BYTES))
            if LEFT_BEHIND_NOTE.encode() in log.read():
                found.append(int(rank))
    return sorted(found)


# The job directory's subdirectory holding the rank exit guard (module_utils/rank_exit_guard.py).
EXIT_GUARD_DIR = "python"
# What the exit guard knows the rank's own process by (rank_exit_guard.WRAPPER_PID_VARIABLE: the guard is shipped as
# a file of its own and imports nothing of the collection).
WRAPPER_PID_VARIABLE = "MULTINODE_RANK_WRAPPER_PID"


class ContractError(ValueError):
    """The rank wrapper cannot be written from these settings."""


@dataclass(frozen=True)
class NodeDefaults:
    """What the wrapper knows of its node when the launcher does not say it."""

    node: str
    node_index: int
    slots: int
    master_addr: str
    master_port: int


@dataclass(frozen=True)
class JobPaths:
    """The job's directories, the same paths on every node."""

    job_id: str
    job_dir: str
    work_dir: str
    output_dir: str
    checkpoint_dir: str
    resume_from: str = ""
    data_dir: str = ""

    def variables(self) -> dict[str, str]:
        """JOB_VARIABLES with their values."""
        return {
            "JOB_ID": self.job_id,
            "OUTPUT_DIR": self.output_dir,
            "CHECKPOINT_DIR": self.checkpoint_dir,
            "RESUME_FROM": self.resume_from,
            "DATA_DIR": self.data_dir,
        }


def placeholders_in(words: Sequence[str]) -> list[str]:
    """The names of the ``{output_dir}``-style placeholders ``words`` hold, in order."""
    return [match.group(1) for word in words for match in _PLACEHOLDER.finditer(word)]


def expand_placeholders(words: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """``words`` with every ``{output_dir}``-style placeholder replaced; other braces stay as they are."""
    return [_PLACEHOLDER.sub(lambda match: values[match.group(1)], word) for word in words]


def render_rank_wrapper(
    node: NodeDefaults,
    job: JobPaths,
    env: Mapping[str, str],
    *,
    env_script: str = "",
    backend: str = "",
    stack_dump_after: int = 0,
    python_path: Sequence[str] = (),
    secret_env_file: str = "",
) -> str:
    """``rank.sh`` for one node: run ``"$@"`` as one rank of the job, with the standard environment.

    ``env`` (the node's OMP_NUM_THREADS, tuning and interface variables) is
    exported first; the contract variables follow, each from the first launcher
    variable that is set, else the node's default, then the per-rank variables
    of the job's collective ``backend`` (BACKEND_RANK_VARIABLES). The rank runs in
    ``job.work_dir`` under ``setpriv --pdeathsig KILL`` (it dies with its
    wrapper), its output also appended to ``logs/rank-<RANK>.log``. SIGTERM,
    SIGINT and SIGHUP are passed on to it, and the status file then says
    ``stopped`` (a rank frozen by SIGSTOP gets SIGCONT after it, so it can act on the signal). The wrapper exits
    with the rank's exit code. While the rank runs, a watcher reports its state and CPU seconds every
    ``events.BEAT_SECONDS`` on the launcher's stream (the stall watchdog's input) and, after ``stack_dump_after``
    seconds without progress (0: never), dumps its Python stacks with py-spy into ``logs/stack-rank-<RANK>.txt``.
    The directories of ``python_path`` (the workload's requirements layer) come first on ``PYTHONPATH``, their
    ``bin`` first on ``PATH``. The job's secret variables are not in the script: it sources ``secret_env_file`` (the
    node's file of them, readable by the training user only) after ``env``, so that no value of theirs is ever a word
    of a command line or in a file others can read.
    """
    if not NODE_NAME.fullmatch(node.node):
        raise ContractError(f"node name {node.node!r}: use letters, digits and . _ : @ + - only")
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise ContractError(f"invalid environment variable name {name!r}")
    lines = [
        "#!/bin/bash",
        "# Written by the multinode.training.rank_wrapper module; local changes are overwritten.",
        f"# One rank of job {_one_line(job.job_id)} on {node.node}, with the standard environment whatever the launcher.",
    ]
    if env_script:
        # Before `set -u`: environment scripts such as oneAPI's vars.sh read unset variables.
        lines.append(f". {shlex.quote(env_script)} || exit")
    lines += ["set -u"]
    lines += [f"export {name}={shlex.quote(str(value))}" for name, value in env.items()]
    if secret_env_file:
        lines += ["# The job's secret variables, from a file only the training user can read.", f". {shlex.quote(secret_env_file)} || exit"]
    # After env: a PYTHONPATH or PATH given there comes after the layer, not instead of it.
    lines += _python_path_lines(python_path)
    lines += _exit_guard_lines(job)
    # Python buffers a pipe's output until exit: live progress needs every line as it is printed.
    lines += ['export PYTHONUNBUFFERED="${PYTHONUNBUFFERED:-1}"']
    # A rank killed by a fault or an abort (SIGSEGV, SIGABRT, ...) leaves its Python stacks, every thread's, in its log.
    lines += ['export PYTHONFAULTHANDLER="${PYTHONFAULTHANDLER:-1}"']
    lines += ["", "# The launch contract, from whichever launcher started this rank."]
    lines += [_contract_line(variable, node) for variable in CONTRACT]
    lines += _backend_lines(backend)
    lines += [f"export {name}={shlex.quote(value)}" for name, value in job.variables().items()]
    lines += ["", *_supervision(node.node, job, stack_dump_after)]
    return "\n".join(lines) + "\n"


def render_secret_env(env: Mapping[str, str]) -> str:
    """The node's file of the job's secret variables, which rank.sh sources: one quoted ``export`` per variable."""
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise ContractError(f"invalid environment variable name {name!r}")
    return "".join(f"export {name}={shlex.quote(str(value))}\n" for name, value in env.items())


def _python_path_lines(python_path: Sequence[str]) -> list[str]:
    """``export PYTHONPATH=...`` and ``PATH`` with the layer's directories first, the environment's after them."""
    if not python_path:
        return []
    for directory in python_path:
        if not directory.startswith("/") or ":" in directory:
            raise ContractError(f"python_path entry {directory!r}: an absolute path without ':' is needed")
    sites = ":".join(python_path)
    programs = ":".join(f"{directory}/bin" for directory in python_path)
    return [
        "# The workload's requirements, before the training environment's own packages.",
        _pythonpath_first(sites),
        f'export PATH={shlex.quote(programs)}":$PATH"',
    ]


def _pythonpath_first(directories: str) -> str:
    """``export PYTHONPATH=<directories>`` before what PYTHONPATH held, with no empty entry when it held nothing."""
    return f'export PYTHONPATH={shlex.quote(directories)}"${{PYTHONPATH:+:$PYTHONPATH}}"'


def exit_guard_dir(job_dir: str) -> str:
    """The directory of the job's rank exit guard (rank_exit_guard.py as ``sitecustomize.py``) on every node."""
    return os.path.join(job_dir, EXIT_GUARD_DIR)


def _exit_guard_lines(job: JobPaths) -> list[str]:
    """``export PYTHONPATH=<job>/python:...``: every Python the rank starts runs the exit guard first."""
    return [
        "# Every Python of the rank runs the job's exit guard first (python/sitecustomize.py, then the next one on the",
        "# path): a finished rank leaves its gloo process group before the interpreter is torn down (pytorch#117762).",
        _pythonpath_first(exit_guard_dir(job.job_dir)),
    ]


def _contract_line(variable: ContractVariable, node: NodeDefaults) -> str:
    """``export NAME="${A:-${B:-...}}"``: the first source that is set, else the fallback or an error."""
    if variable.fallback is None:
        sources = " ".join(variable.sources)
        innermost = f"${{{variable.sources[-1]}:?no launcher variable gives {variable.name} (tried {sources})}}"
        chain = variable.sources[:-1]
    else:
        innermost = _double_quoted(str(getattr(node, variable.fallback)))
        chain = variable.sources
    value = innermost
    for source in reversed(chain):
        value = f"${{{source}:-{value}}}"
    return f'export {variable.name}="{value}"'


def _backend_lines(backend: str) -> list[str]:
    """``export CCL_LOCAL_RANK="$LOCAL_RANK"``-style lines: the backend's names for contract variables, if any."""
    copies = BACKEND_RANK_VARIABLES.get(backend, ())
    if not copies:
        return []
    return [f"# launcher_backend={backend}: its own names for this rank's place on the node."] + [
        f'export {name}="${source}"' for name, source in copies
    ]


def _double_quoted(text: str) -> str:
    """``text`` escaped for the inside of a double-quoted bash word (where it is also a ${VAR:-...} default)."""
    return re.sub(r'([\\$`"}])', r"\\\1", text)


# CPU seconds a rank (with every process under it) must use between two beats to count as working when it printed
# nothing: a rank blocked in a collective or frozen uses (almost) none.
BUSY_CPU_SECONDS = 0.1


def _watcher(stack_dump_after: int) -> list[str]:
    """The bash function ``watch_rank``: beats on the launcher's stream, and the stack dump of a rank without progress.

    Progress is output (the rank's log grew) or CPU time (the rank and its descendants, from /proc: data loader
    workers count); a stopped rank (state T) makes none. Every command it starts keeps away from the launcher's
    stream but its own beats, so it never holds the rank's output open after the rank ended.

    A beat also carries how busy the rank was since the last one: the share of the time the main thread of the
    busiest process under it (the one with the most CPU time: the training loop) was running or waiting for a CPU
    (``/proc/<pid>/schedstat``), in percent. A rank the others wait for in every step is busy all the time; those
    waiting for it are not: the straggler watch's input (stragglers.py).
    """
    dumps = stack_dump_after > 0
    lines = [
        "# Every few seconds the rank's state and CPU seconds (it and every process under it) on the launcher's stream:",
        "# the stall watchdog's input.",
        *(["# Without progress (output or CPU) for a while, its Python stacks go to logs/."] if dumps else []),
        "watch_rank() {",
        "  local tick file stat pid up fields state total top top_ticks ran waited now busy_pct",
        "  local last_top='' last_sched=0 last_now=0 nap=''",
        *(["  local busy size idle=0 dumped=false last_total=-1 last_size=-1"] if dumps else []),
        "  local -A parent ticks",
        "  # Stopped at the rank's end, the watcher takes its nap with it: a sleep left behind would hold what the wrapper",
        "  # inherited (mpiexec's PMI socket: its proxy, and so the launcher, would wait up to a beat for it to close).",
        "  trap '[ -z \"$nap\" ] || kill \"$nap\" 2>/dev/null; exit 0' TERM",
        "  tick=$(getconf CLK_TCK 2>/dev/null) || tick=100",
        *([f"  busy=$((tick * {int(BUSY_CPU_SECONDS * 100)} / 100))"] if dumps else []),
        f"  while sleep {events.BEAT_SECONDS} >/dev/null 2>&1 & nap=$!; "
        + 'wait "$nap" && kill -0 "$child" 2>/dev/null; do',
        "    parent=() ticks=() state='?'",
        "    for file in /proc/[0-9]*/stat; do",
        '      read -r stat 2>/dev/null <"$file" || continue',
        "      # shellcheck disable=SC2206 # split on purpose: after the command's name, numbers and a state letter",
        '      pid=${stat%% *} fields=(${stat##*") "})',
        '      parent[$pid]=${fields[1]} ticks[$pid]=$((fields[11] + fields[12]))',
        '      [ "$pid" != "$child" ] || state=${fields[0]}',
        "    done",
        "    # The rank ended between the check above and the read of its stat: no beat (it would say 0 CPU seconds).",
        "    [ \"$state\" != '?' ] || continue",
        "    total=0 top=$child top_ticks=-1",
        '    for pid in "${!ticks[@]}"; do',
        '      up=$pid',
        '      while [ "$up" -gt 1 ] && [ "$up" != "$child" ]; do up=${parent[$up]:-0}; done',
        '      [ "$up" = "$child" ] || continue',
        "      total=$((total + ticks[$pid]))",
        '      [ "${ticks[$pid]}" -le "$top_ticks" ] || top=$pid top_ticks=${ticks[$pid]}',
        "    done",
        "    # Busy: the busiest process's main thread running or runnable (schedstat: ns on a CPU, ns waiting for one).",
        '    read -r ran waited _ 2>/dev/null <"/proc/$top/schedstat" || ran=0 waited=0',
        "    now=${EPOCHREALTIME:-$(date +%s.%6N)} now=${now//[.,]/} busy_pct=",
        '    if [ "$top" = "$last_top" ] && [ "$now" -gt "$last_now" ]; then',
        "      busy_pct=$(((ran + waited - last_sched) / 10 / (now - last_now)))",
        "      busy_pct=$((busy_pct > 100 ? 100 : busy_pct < 0 ? 0 : busy_pct))",
        "    fi",
        "    last_top=$top last_sched=$((ran + waited)) last_now=$now",
        "    printf '%s%s %s %d.%02d%s\\n' \"$prefix\" " + shlex.quote(events.RANK_BEAT)
        + ' "$state" $((total / tick)) $((total % tick * 100 / tick)) "${busy_pct:+ $busy_pct}"',
    ]
    return lines + (_stack_dump(stack_dump_after) if dumps else []) + ["  done", "}"]


def _stack_dump(stack_dump_after: int) -> list[str]:
    """The watcher's loop's end with a stack dump: the rank's progress since the last beat, and its Python stacks
    once it has made none for ``stack_dump_after`` seconds (once per stretch without progress)."""
    return [
        '    size=$(stat -c %s "$log" 2>/dev/null) || size=0',
        '    if [ "$state" != T ] && { [ "$size" != "$last_size" ] || [ $((total - last_total)) -ge "$busy" ]; }; then',
        "      idle=0 dumped=false",
        "    else",
        f"      idle=$((idle + {events.BEAT_SECONDS}))",
        "    fi",
        "    last_total=$total last_size=$size",
        f'    if [ "$idle" -ge {stack_dump_after} ] && ! "$dumped"; then',
        "      dumped=true",
        f'      {{ date; py-spy dump --pid "$child" --nonblocking || echo "no stack dump: py-spy failed or is not installed";'
        f' }} </dev/null >"$job_dir/logs/{events.STACK_DUMP.format(rank="$RANK")}" 2>&1',
        "    fi",
    ]


def _supervision(node: str, job: JobPaths, stack_dump_after: int = 0) -> list[str]:
    record = (
        'printf \'{"rank": %d, "node": "%s", "host": "%s", "started": %s%s}\\n\' '
        f'"$RANK" {node} "$(hostname)" "$started" "${{1:-}}" >"$status.tmp" && mv -f "$status.tmp" "$status"'
    )
    ended = r'", \"ended\": $(date +%s.%N), \"code\": $code, \"signal\": $signal, \"stopped\": $stopped"'
    return [
        "# Record the start and the end of this rank; its output also goes to its own log.",
        f"job_dir={shlex.quote(job.job_dir.rstrip('/'))}",
        'status="$job_dir/status/rank-$RANK.json"',
        'log="$job_dir/logs/rank-$RANK.log"',
        # NODE_NAME allows no character that bash double quotes or a sed replacement would interpret.
        'prefix="' + events.RANK_LINE_PREFIX.format(rank="$RANK", node=node) + '"',
        f"record() {{ {record}; }}",
        "started=$(date +%s.%N)",
        "record",
        "child=",
        "stopped=false",
        "signal=null",
        f"if ! cd {shlex.quote(job.work_dir)}; then code=1; record {ended}; exit 1; fi",
        'trap \'stopped=true; [ -z "$child" ] || { kill -TERM "$child"; kill -CONT "$child"; } 2>/dev/null\' TERM INT HUP',
        "# The launcher's stream gets every line behind the rank's prefix (the rank's log keeps it unchanged).",
        f'printf \'%s%s\\n\' "$prefix" {shlex.quote(events.RANK_STARTED)}',
        'exec {out}> >(tee -a "$log" | sed -u "s/^/$prefix/")',
        "out_pid=$!",
        'exec {err}> >(tee -a "$log" | sed -u "s/^/$prefix/" >&2)',
        "err_pid=$!",
        "# The rank's own process knows itself by its parent, this wrapper (the exit guard records its world).",
        f'{WRAPPER_PID_VARIABLE}=$$ setpriv --pdeathsig KILL -- "$@" >&"$out" 2>&"$err" {{out}}>&- {{err}}>&- &',
        "child=$!",
        "# A stop that came before the rank's pid was known (between the fork and child=$!) is passed on now.",
        '! "$stopped" || { kill -TERM "$child"; kill -CONT "$child"; } 2>/dev/null',
        *_watcher(stack_dump_after),
        "# Without the rank's output pipes and stdin: what the watcher starts must not keep the rank's output open",
        "# after its end, nor read the wrapper's input.",
        'watch_rank {out}>&- {err}>&- </dev/null &',
        "watcher=$!",
        'wait "$child"',
        "code=$?",
        "# A passed-on signal interrupts wait: wait until the rank has ended, then take its own status",
        "# (bash keeps an ended child's status for the next wait).",
        'if "$stopped"; then',
        '  while kill -0 "$child" 2>/dev/null; do wait "$child"; done',
        '  wait "$child"',
        "  code=$?",
        "fi",
        'kill "$watcher" 2>/dev/null',
        '[ "$code" -gt 128 ] && [ "$code" -lt 193 ] && signal=$((code - 128))',
        f"record {ended}",
        "# Its output is all in its log and on the launcher's stream before its end is announced (at most 2 s more",
        "# for what processes it left behind still hold open).",
        'exec {out}>&- {err}>&-',
        'for _ in {1..40}; do { kill -0 "$out_pid" || kill -0 "$err_pid"; } 2>/dev/null || break; sleep 0.05; done',
        "# The launcher node learns here that this rank is done (the job's followers stop waiting on it). A launcher",
        "# already gone must not turn the rank's exit code into SIGPIPE's.",
        "trap '' PIPE",
        "# Still there, they are held by a process the rank left behind (a server it started, a daemon): their tee and",
        "# sed would hold the launcher's stream open as long as it lives, and the launcher (a torchrun agent, hydra's",
        "# proxy, the SSH session) would wait for it, past the job's end to its timeout. They are stopped, saying so.",
        'if { kill -0 "$out_pid" || kill -0 "$err_pid"; } 2>/dev/null; then',
        f"  printf '%s\\n' {shlex.quote(LEFT_BEHIND_NOTE)} >>\"$log\"",
        f"  printf '%s%s\\n' \"$prefix\" {shlex.quote(LEFT_BEHIND_NOTE)} 2>/dev/null",
        "  for file in /proc/[0-9]*/stat; do",
        '    read -r stat 2>/dev/null <"$file" || continue',
        "    # shellcheck disable=SC2206 # split on purpose: after the command's name, numbers and a state letter",
        '    fields=(${stat##*") "})',
        '    if [ "${fields[1]:-}" = "$out_pid" ] || [ "${fields[1]:-}" = "$err_pid" ]; then kill "${stat%% *}" 2>/dev/null; fi',
        "  done",
        '  kill "$out_pid" "$err_pid" 2>/dev/null',
        "fi",
        f'printf \'%s%s %d\\n\' "$prefix" {shlex.quote(events.RANK_ENDED)} "$code" 2>/dev/null',
        'exit "$code"',
    ]


def _one_line(text: str) -> str:
    return " ".join(text.split())
