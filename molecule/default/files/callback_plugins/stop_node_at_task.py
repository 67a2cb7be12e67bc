# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test only (verify_drill_lost_moments.yml): lose a node at an exact moment of a play, as a power loss would.

The first time a task whose name starts with ``STOP_NODE_AT_TASK`` starts, ``docker stop -t 0 STOP_NODE_CONTAINER`` runs
before this callback returns. The linear strategy sends ``v2_playbook_on_task_start`` from the play's own process
before it queues the task to any host, so the node is down when the task reaches it. Each stop is one line of
``STOP_NODE_LOG`` (when set): the task's name, the container and the time, for the drill to check that it happened.
Enabled only for the drill's nested ansible-playbook (ANSIBLE_CALLBACK_PLUGINS, ANSIBLE_CALLBACKS_ENABLED); never
shipped (molecule/ is outside the collection's build).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: stop_node_at_task
type: aggregate
short_description: Stop a sim node's container when a named task starts (test only)
description:
  - The first time a task whose name starts with E(STOP_NODE_AT_TASK) starts, runs C(docker stop -t 0) on the node
    container E(STOP_NODE_CONTAINER), before the task reaches any host.
requirements:
  - enable in callbacks_enabled
"""


class CallbackModule(CallbackBase):
    """Stops one node container once, at the start of the first task named as asked."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "stop_node_at_task"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self.prefix = os.environ.get("STOP_NODE_AT_TASK", "")
        self.container = os.environ.get("STOP_NODE_CONTAINER", "")
        self.log = os.environ.get("STOP_NODE_LOG", "")
        self.done = False

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        name = task.name or ""
        if self.done or not self.prefix or not self.container or not name.startswith(self.prefix):
            return
        self.done = True
        stopped = subprocess.run(
            ["docker", "stop", "-t", "0", self.container], capture_output=True, text=True, check=False
        )
        record = {"task": name, "container": self.container, "rc": stopped.returncode, "time": round(time.time(), 3)}
        self._display.display(
            f"[stop_node_at_task] stopped {self.container} at the start of {name!r}: rc {stopped.returncode}"
        )
        if self.log:
            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
