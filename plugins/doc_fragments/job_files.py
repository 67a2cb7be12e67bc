# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The options of multinode.training.job_pack that multinode.training.job_collect passes on to it."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  job_dir:
    description: The job's directory on the node.
    type: path
    required: true
  work_dir:
    description: The ranks' working directory (the job's copy of the code).
    type: path
    required: true
  output_dir:
    description: The job's C(OUTPUT_DIR).
    type: path
    required: true
  outputs:
    description: Also take the output directory and what the ranks wrote in O(work_dir) (newer than C(rank.sh)).
    type: bool
    default: false
  launcher:
    description: This is the launcher node (its hostfile and launch script are taken too).
    type: bool
    default: false
  worker_container:
    description: Also report how this node's worker container came through the job (container runtime).
    type: str
  worker_pid_file:
    description: Also report whether this node's worker sshd still runs, by its pid file (host runtime).
    type: path
  launcher_container:
    description:
      - The job's launcher container on this node. It is waited for until it stopped (at most
        O(launcher_stop_wait) seconds), so its last log lines are packed; how it ended is reported in RV(launcher),
        then it is removed (stopped first if it still runs).
    type: str
  launcher_stop_wait:
    description: Seconds to wait for O(launcher_container) to stop.
    type: int
    default: 30
  keep_jobs:
    description:
      - After packing, keep the newest O(keep_jobs) job directories beside O(job_dir) (this job's always among
        them) and remove the others, as multinode.training.prune does. Unset, nothing is removed.
    type: int
  checkpoint_dir:
    description:
      - The job's checkpoint directory, whose complete entries (not hidden, not ending in C(.tmp) or C(.partial)) are
        listed in RV(checkpoints), not packed.
    type: path
"""
