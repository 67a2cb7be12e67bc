#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done by the action plugin plugins/action/job_wait.py; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: job_wait
short_description: Follow a running training job until its launcher ends, showing its progress
description:
  - Runs on the controller against the launcher node. Every few seconds (O(poll)) it reads what the job appended to
    the launcher node's logs (with multinode.training.job_status) and shows progress lines while the job runs (ranks
    started and ended, each epoch a rank reports with loss and samples/s, a node's agent exiting, the job being stopped). When nothing
    was shown for O(heartbeat) seconds it shows how long the job has run and the last line a rank printed.
  - "An epoch is the optional script protocol's JSON C(epoch) event, or any printed line naming an epoch number and a
    loss (C(epoch 3 loss 0.41), C(Epoch: 3/10 ... Loss=0.41))."
  - Keeps the run directory's live files on the controller while the job runs, C(live.log) (every rank's output, each
    line behind C([rank N node]), and the job's events in words) and C(progress.jsonl) (one JSON record per line).
    C(python -m multinode_training watch) and C(multinode_training.train) read them.
  - When O(cancel_file) appears on the controller it asks the launch script to stop the job on every node (see
    multinode.training.job_status) and goes on waiting for the launcher to end; the summary then says C(cancelled).
  - Ends when the launch script logs its exit, when its process (O(check_pid)) or container (O(container)) is gone,
    or after O(timeout) seconds; with O(until=ranks_succeeded) already when every rank logged its end with exit code 0
    (the launcher's own end is then awaited by multinode.training.job_collect, whose O(multinode.training.job_collect#module:follow)
    shows the rest). It never fails because of the job; the run summary judges it.
  - Ansible runs it in a worker process of its own session, which outlives an C(ansible-playbook) that was killed. It
    stops, writing nothing more, once that C(ansible-playbook) has gone, so that nothing follows the job but a
    process that takes it over (O(resume)).
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode there is no job; the task is skipped.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  job_dir:
    description: The job's directory on the launcher node.
    type: path
    required: true
  run_dir:
    description: The run's directory on the controller (C(runs/<job-id>)); created when missing.
    type: path
    required: true
  world_size:
    description: Ranks in the job, for the count of ranks started.
    type: int
    required: true
  timeout:
    description: Seconds after which it stops waiting (the launcher's own timeout should come first).
    type: int
    required: true
  poll:
    description:
      - Seconds each read of the logs lasts on the launcher node (O(multinode.training.job_status#module:wait)); a read returns
        at once when the launch script logs its exit or a rank starts, ends or reports an epoch, so these are shown
        within moments. A rank's other output (C(live.log)), the stall watchdog, the straggler watch and a cancel
        are seen at most this late.
      - Each read is a module run on the launcher node (a Python start there, about 0.5 s of CPU on a slow 2-core
        machine). Read every second, the follower took 10-17% of a CPU from the node that also trains rank 0.
    type: float
    default: 5.0
  heartbeat:
    description: Seconds without a progress line after which it shows that the job still runs.
    type: int
    default: 30
  cancel_file:
    description: A file on the controller whose appearance cancels the job. Defaults to O(run_dir)C(/cancel).
    type: path
  container:
    description: The launcher container's name; checked every O(liveness_every) seconds (container runtime).
    type: str
  check_pid:
    description: Check the launch script's process on every read (host runtime).
    type: bool
    default: false
  liveness_every:
    description:
      - Seconds between two checks of the launcher container (community.docker.docker_container_info, about 0.7 s
        of the launcher node's CPU each on a slow 2-core machine). A launcher that ends logs its exit and is seen at
        once; this check finds a container that was removed or killed before it could.
    type: int
    default: 30
  stall_timeout:
    description:
      - Seconds without progress from any rank after which the job counts as stalled (V(0) never). Progress is a
        printed line or CPU time (the rank wrapper's beats), so a long first step or data loading is not a stall.
      - The rank to blame (one the kernel reports stopped or in uninterruptible sleep, else the first to stop making
        progress) is named, the stall is kept in O(run_dir)C(/stall.json) for the summary, and the job is stopped on
        every node (multinode.training.job_status with O(multinode.training.job_status#module:stop_reason=stalled)),
        then followed to its end.
    type: int
    default: 0
  straggler_margin:
    description:
      - A rank busy this much more of the time than the other ranks' median (V(0.3) is 30% more), beat after beat
        for O(straggler_after) seconds, is named as a straggler (V(0) never), live and in
        O(run_dir)C(/stragglers.json) for the summary. Busy is the share of the time its training loop was running
        or waiting for a CPU (the rank wrapper's beats). The rank the others wait for in every step is busy all the
        time, they are not. It must be busy at least 40% of the time, and the others at least 5%.
      - A straggler is only named, never stopped.
    type: float
    default: 0.0
  straggler_after:
    description: Seconds a rank must stay beyond O(straggler_margin) before it is named.
    type: int
    default: 30
  until:
    description:
      - V(launcher_exit) follows the job until the launch script logs its exit.
      - V(ranks_succeeded) returns as soon as every rank of O(world_size) logged its end with exit code 0, while the
        launcher's agents still wind down; a failed rank, a cancel or a timeout is still followed to the launcher's end.
    type: str
    choices: [launcher_exit, ranks_succeeded]
    default: launcher_exit
  handover:
    description:
      - What a later process needs to take over following the job when this one has gone (the job's own settings
        as the launch resolved them; playbooks/attach.yml).
      - Kept in C(follow.json) in O(run_dir) as the attempt starts; the offsets the job's logs were read to are kept
        beside it in C(follow-offsets.json), rewritten after each read that found new text.
      - Wherever an environment is in it (a key C(env) or ending in C(_env)), the value of each name that looks secret
        or is in O(secret_env_names) is kept as C(***).
    type: dict
    default: {}
  secret_env_names:
    description:
      - Environment variable names whose values are secret besides those that look it (a C(_)-separated part that
        is or ends with C(TOKEN), C(KEY), C(SECRET), C(PASSWORD), C(PASSWD), C(PASS), C(PWD), C(PASSPHRASE), C(CRED),
        C(AUTH), C(PAT) or C(CREDENTIAL), in any case; or a value holding a URL with a password in it).
      - The secret values of the environments in O(handover) are kept as C(***) in C(follow.json), and shown and
        kept as C(***) wherever the job's logs hold them (the progress lines, C(live.log), C(progress.jsonl)).
    type: list
    elements: str
    default: []
  resume:
    description:
      - Take over a job whose follower has gone. Its logs are read on from the offsets C(follow-offsets.json)
        recorded (what was read before is neither shown nor recorded again), the handover in C(follow.json) is kept
        (O(handover) is not used), and this ansible-playbook becomes the job's follower in C(following.json), so
        that a cancel asked for now reaches it.
      - Fails when O(run_dir) has no C(follow.json), as the job was never followed on its nodes.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Follow the job
  multinode.training.job_wait:
    job_dir: "{{ launcher_job.dir }}"
    run_dir: "{{ launcher_job.run_dir }}"
    world_size: 3
    timeout: 3660
    container: mnt-launcher
  register: launcher_wait

- name: Take over following a job whose follower has gone (from where it stopped reading)
  multinode.training.job_wait:
    job_dir: /opt/multinode/lab/work/jobs/20261127-101500-torchrun
    run_dir: runs/20261127-101500-torchrun
    world_size: 3
    timeout: 3660
    container: mnt-launcher
    resume: true
"""

RETURN = r"""
ended_by:
  description: C(launcher_exit) (the launch script logged its exit), C(ranks_succeeded) (every rank ended with 0,
    O(until=ranks_succeeded)), C(not_running) (its process or container is gone without that) or C(timeout).
  returned: success
  type: str
  sample: launcher_exit
cancelled:
  description: Whether the cancel file appeared and the job was asked to stop.
  returned: success
  type: bool
stalled:
  description: The stall the watchdog found (O(stall_timeout)) in words, or null.
  returned: success
  type: str
  sample: "rank 1 on node2 stalled: no progress for 60 s (stopped, state T)"
stragglers:
  description: The stragglers named (O(straggler_margin)) in words, the first named first.
  returned: success
  type: list
  elements: str
  sample: ["rank 2 on node3 is 45% slower than the median rank for 30 s (busy 97% of the time, the other ranks 67%: they wait for it)"]
launcher_exit_code:
  description: The exit code the launch script logged, or null.
  returned: success
  type: int
  sample: 0
offsets:
  description: Where following stopped in each of the launcher node's logs, by file name.
  returned: success
  type: dict
  sample: {"node1.log": 10240, "launcher.log": 512}
ranks_started:
  description: Ranks that reported their start.
  returned: success
  type: int
  sample: 3
epochs:
  description: Epoch records seen, across ranks.
  returned: success
  type: int
  sample: 5
seconds:
  description: Seconds spent following the job.
  returned: success
  type: float
  sample: 12.4
"""
