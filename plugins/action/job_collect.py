# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.job_collect: one archive per node, packed and unpacked; a small one comes back
in the packing module run's own result, a larger one is fetched."""

from __future__ import annotations

import base64
import getpass
import io
import os
import shlex
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.multinode.training.plugins.module_utils.secret_env import secret_values
from ansible_collections.multinode.training.plugins.plugin_utils.actions import execute
from ansible_collections.multinode.training.plugins.plugin_utils.follow import Follower, collected_rest, show

ARGUMENT_SPEC: dict[str, Any] = {
    "job_dir": {"type": "path", "required": True},
    "work_dir": {"type": "path", "required": True},
    "output_dir": {"type": "path", "required": True},
    "outputs": {"type": "bool", "default": False},
    "launcher": {"type": "bool", "default": False},
    "dest": {"type": "path", "required": True},
    "worker_container": {"type": "str"},
    "worker_pid_file": {"type": "path"},
    "launcher_container": {"type": "str"},
    "launcher_stop_wait": {"type": "int", "default": 30},
    "keep_jobs": {"type": "int"},
    "checkpoint_dir": {"type": "path"},
    "follow": {
        "type": "dict",
        "options": {
            "run_dir": {"type": "path", "required": True},
            "world_size": {"type": "int", "required": True},
            "offsets": {"type": "dict", "default": {}},
            "tuning": {"type": "dict", "default": {}},
            "secret_env_names": {"type": "list", "elements": "str", "default": []},
        },
    },
}


display = Display()
PACK_ARGS = tuple(name for name in ARGUMENT_SPEC if name not in ("dest", "follow"))
REPORTED = ("worker", "launcher", "pruned", "checkpoints", "warnings")
# An archive up to this size comes back in the module's result (base64): no temporary directory, fetch or removal of
# its own (four SSH round trips per node); a larger one (outputs, checkpoints) is fetched as a file.
INLINE_MAX_BYTES = 8 * 1024 * 1024


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        if self._task.check_mode:
            return {**result, "changed": False, "skipped": True, "msg": "check mode: no job to collect"}
        packed = execute(
            self,
            "multinode.training.job_pack",
            task_vars or {},
            {key: args[key] for key in PACK_ARGS if args[key] is not None}
            | {"inline_max_bytes": INLINE_MAX_BYTES, "owner": self._get_remote_user() or getpass.getuser()},
        )
        members = self._bring_back(packed, args["dest"])
        follow = args["follow"]
        if follow:
            # What the job logged after job_wait stopped following it (its agents' and launcher's end).
            follower = Follower(
                run_dir=Path(follow["run_dir"]), world_size=follow["world_size"],
                secret_values=tuple(secret_values(follow["tuning"], follow["secret_env_names"])),
            )
            show(follower, collected_rest(Path(args["dest"]) / "logs", follow["offsets"]))
        result.update(changed=True, files=members, bytes=packed["bytes"], dest=args["dest"])
        result.update({key: packed[key] for key in REPORTED if key in packed})
        return result

    def _bring_back(self, packed: dict[str, Any], dest: str) -> int:
        """Unpack the node's archive (in the result, else fetched from its file, which is then removed) into ``dest``
        on the controller; the number of files."""
        os.makedirs(dest, exist_ok=True)
        if "archive" in packed:
            return _unpack(io.BytesIO(base64.b64decode(packed["archive"])), dest)
        remote_archive = packed["archive_path"]
        try:
            with tempfile.TemporaryDirectory(prefix="multinode-collect-") as local:
                archive_path = os.path.join(local, "collect.tar")
                self._connection.fetch_file(remote_archive, archive_path)
                with open(archive_path, "rb") as archive:
                    return _unpack(archive, dest)
        finally:
            removed = self._low_level_execute_command(f"rm -f {shlex.quote(remote_archive)}", sudoable=True)
            if removed.get("rc") != 0:
                display.warning(f"could not remove the job's archive {remote_archive} on the node: {removed.get('stderr', '')}")


def _unpack(archive_file: Any, dest: str) -> int:
    """Extract a tar archive (an open file) into ``dest``; the number of its members."""
    with tarfile.open(fileobj=archive_file) as archive:
        members = archive.getmembers()
        archive.extractall(dest, filter="data")
    return len(members)
