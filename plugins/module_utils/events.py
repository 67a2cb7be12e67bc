# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The names of the JSON events a run's logs hold: one place for the writers and the reader.

The launch script (launch_script.py) appends the first group of events below to
``<job_dir>/logs/launcher.log``. A training script MAY print the last group, one
JSON object per line on stdout, to report progress and metrics; nothing depends
on them: success is decided by exit codes.
"""

from __future__ import annotations

# Written by the launch script.
LAUNCH = "launch"  # the launch script started: {"launcher"}
SSH_CHECK = "ssh_check"  # one per node, before any rank starts: {"node", "code"}
STAGED = "staged"  # the resume checkpoint reached a node: {"node", "code"}
NODE_EXIT = "node_exit"  # a node's agent (torchrun's, a TensorFlow worker) ended: {"node", "agent", "code", "after_abort"}
ABORT = "abort"  # the launch script stops the job: {"reason"}
LAUNCHER_EXIT = "launcher_exit"  # the launcher (or the launch script's own check) ended: {"code"}
CANCEL = "cancel"  # a stop was asked for (<job_dir>/stop appeared): the job is stopped, its status is cancelled

# Written by the controller (job_wait, run_summary) to the run's progress.jsonl, never to the node's logs.
STALL = "stall"  # the watchdog found no rank making progress: {"ranks", "seconds"}
STRAGGLER = "straggler"  # a rank the others kept waiting for: {"rank", "node", "slower_by", "busy", "median_busy"}
RESTART = "restart"  # the job is relaunched from its newest checkpoint: {"attempt", "cause_kind"}

# The file whose appearance in the job directory on the launcher node stops the job (job_status stop=true). Empty, the
# stop is a cancel; holding STOP_STALLED, the watchdog stopped a stalled job (the launch script logs an abort).
STOP_FILE = "stop"
STOP_STALLED = "stalled"
# The launch script's process id, in the job directory (meaningful where the script runs on the host itself).
LAUNCH_PID_FILE = "launch.pid"
# The file each node's set-up for a launch writes last, holding that launch's token; a launch started while the nodes
# are still being set up waits in its SSH check for it. A set-up that failed writes SETUP_FAILED and the token there
# when it can. On a node where the token does not come in time, or the failure does, the check exits NOT_READY_CODE
# after printing NOT_READY_TEXT (and why) to the node's SSH log.
READY_FILE = "ready"
SETUP_FAILED = "failed"
NOT_READY_CODE = 3
NOT_READY_TEXT = "the job's set-up on this node"

# What the rank wrapper copies to the launcher's stream (stdout, collected by torchrun's agents and the MPI
# launchers into the launcher node's logs): every line of the rank's output behind RANK_LINE_PREFIX, one
# RANK_STARTED line first and one RANK_ENDED line, followed by the rank's exit code, last. The rank's own log
# (logs/rank-<RANK>.log) holds its output unchanged.
RANK_LINE_PREFIX = "[rank {rank} {node}] "
RANK_STARTED = "-- multinode: rank started"
RANK_ENDED = "-- multinode: rank ended"
# Every BEAT_SECONDS while the rank runs, the rank wrapper's watcher adds RANK_BEAT, the rank process's state letter
# (R, S, D, T, ...) and the CPU seconds the rank and every process under it used so far (the stall watchdog's
# input), then from the second beat on the percent of the time since the last beat its training loop was busy
# (running or waiting for a CPU: the straggler watch's input).
RANK_BEAT = "-- multinode: rank beat"
BEAT_SECONDS = 5
# The watcher's dump of a rank's Python stacks (py-spy) when it made no progress for a while, in the job's logs/.
STACK_DUMP = "stack-rank-{rank}.txt"

# The optional protocol of training scripts: {"event": "epoch", "epoch": 3, "loss": 0.4, "samples_per_s": 812.5}
# from rank 0 after each epoch, {"event": "step", "epoch": 3, "step": 1, "loss": 2.3} for a training step (at
# least the first of each launch: the controller keeps the first of each attempt, the moment a restarted job trains
# again), and {"event": "result", "test_accuracy": 0.96, ...} once at the end (every key but "event" and "time" is
# kept as a metric). "joined" and "done" are accepted and ignored.
EPOCH = "epoch"
STEP = "step"
RESULT = "result"
