#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: job_status
short_description: Read what a running training job appended to its logs on the launcher node, or stop it
description:
  - Returns the complete lines appended to the C(*.log) files of O(job_dir)C(/logs) since O(offsets) (every rank's
    prefixed output as torchrun's agents or the MPI launcher collected it, and the launch script's events), leaving out
    each rank's own C(rank-<N>.log).
  - With O(stop=true) it creates O(job_dir)C(/stop); the launch script sees it within a second, logs a C(cancel) event
    and stops every rank on every node; the run summary then says C(cancelled).
  - The multinode.training.job_wait action calls it every few seconds while a job runs; it is rarely useful alone.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode O(stop) creates nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  job_dir:
    description: The job's directory on the launcher node (it holds C(logs/)).
    type: path
    required: true
  offsets:
    description: Bytes already read, by log file name (the RV(offsets) of the previous call).
    type: dict
    default: {}
  max_bytes:
    description: At most this many bytes are read per file and call.
    type: int
    default: 262144
  stop:
    description: Ask the launch script to stop the job.
    type: bool
    default: false
  stop_reason:
    description:
      - Why the job is stopped, written into the stop file. Empty, it is a cancel (the summary says C(cancelled)); V(stalled),
        the stall watchdog of multinode.training.job_wait stopped it (the launch script logs an C(abort) event instead).
    type: str
    choices: ["", stalled]
    default: ""
  wait:
    description:
      - Keep reading for up to this many seconds and return everything appended meanwhile; return at once when the
        launch script logs its exit (or, with O(check_pid=true), its process is gone). V(0) reads once.
    type: float
    default: 0
  ranks_to_end:
    description:
      - With O(wait), also return at once when this many ranks have logged their end during the call (the rank
        wrapper's last line). V(0) does not look for it.
    type: int
    default: 0
  until_milestone:
    description:
      - With O(wait), also return at once when the new text holds a rank's start, end or epoch, or an event of the
        launch script the follower shows (a node's exit, an abort, a cancel, the launcher's exit). A rank's other
        lines and its beats wait for the end of O(wait). So a follower can read seldom (each read is a module run on
        the launcher node) and still show what matters as it happens.
    type: bool
    default: false
  check_pid:
    description:
      - Also say whether the launch script's process (its pid in O(job_dir)C(/launch.pid)) still runs. Only where the
        script runs on the node itself (host runtime); in a container the pid belongs to the container.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Read the job's new log lines
  multinode.training.job_status:
    job_dir: /opt/multinode/sim/work/jobs/20261123-101500-torchrun
    offsets: "{{ previous.offsets | default({}) }}"
  register: previous
"""

RETURN = r"""
chunks:
  description: The new complete lines of each log file that grew.
  returned: always
  type: dict
  sample: {"node1.log": "[rank 0 node1] epoch 1 loss 0.35\n"}
offsets:
  description: Where the next call starts reading, by log file name.
  returned: always
  type: dict
  sample: {"node1.log": 1024, "launcher.log": 300}
stopped:
  description: Whether the stop file exists (this call or an earlier one created it).
  returned: always
  type: bool
launcher_running:
  description: Whether the launch script's process runs (null before it wrote its pid).
  returned: when O(check_pid=true)
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.module_utils.progress import process_running, read_for


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            job_dir=dict(type="path", required=True),
            offsets=dict(type="dict", default={}),
            max_bytes=dict(type="int", default=262144),
            stop=dict(type="bool", default=False),
            stop_reason=dict(type="str", default="", choices=["", events.STOP_STALLED]),
            check_pid=dict(type="bool", default=False),
            wait=dict(type="float", default=0),
            ranks_to_end=dict(type="int", default=0),
            until_milestone=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    job_dir = module.params["job_dir"]
    logs_dir = os.path.join(job_dir, "logs")
    if not os.path.isdir(logs_dir):
        module.fail_json(msg=f"{logs_dir} does not exist: the job was not started on this node")
    stop_file = os.path.join(job_dir, events.STOP_FILE)
    changed = False
    if module.params["stop"] and not os.path.exists(stop_file):
        changed = True
        if not module.check_mode:
            # Whole or not at all: the launch script reads the reason as soon as the file appears.
            with open(stop_file + ".tmp", "w", encoding="utf-8") as handle:
                handle.write(module.params["stop_reason"])
            os.replace(stop_file + ".tmp", stop_file)
    pid_file = os.path.join(job_dir, events.LAUNCH_PID_FILE)
    chunks = read_for(
        logs_dir, module.params["offsets"], module.params["max_bytes"], module.params["wait"],
        pid_file if module.params["check_pid"] else None, ranks_to_end=module.params["ranks_to_end"],
        until_milestone=module.params["until_milestone"],
    )
    offsets = {**module.params["offsets"], **{name: chunk.offset for name, chunk in chunks.items()}}
    result = dict(changed=changed, chunks={name: chunk.text for name, chunk in chunks.items()}, offsets=offsets)
    result["stopped"] = os.path.exists(stop_file)
    if module.params["check_pid"]:
        result["launcher_running"] = process_running(pid_file)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
