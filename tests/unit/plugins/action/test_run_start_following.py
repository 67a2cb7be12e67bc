# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_start records who follows the job and how to reach its launcher node (following.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ansible_collections.multinode.training.plugins.plugin_utils.follow import following_of, write_following


def test_following_names_this_playbook_the_inventory_and_the_jobs_node(tmp_path: Path) -> None:
    task_vars = {"ansible_inventory_sources": ["/srv/inventory/hosts.yml"], "ansible_config_file": "/srv/ansible.cfg"}
    extra_vars = {"cluster_runtime": "host", "launcher_script_args": ["--epochs", "3"]}
    write_following(tmp_path, following_of("node1", "/opt/multinode/lab/work/jobs/job-1", task_vars, True, extra_vars))
    assert json.loads((tmp_path / "following.json").read_text()) == {
        "pid": os.getppid(),
        "inventory": ["/srv/inventory/hosts.yml"],
        "ansible_config": "/srv/ansible.cfg",
        "extra_vars": {"cluster_runtime": "host", "launcher_script_args": ["--epochs", "3"]},
        "become": True,
        "launcher_host": "node1",
        "job_dir": "/opt/multinode/lab/work/jobs/job-1",
    }
    assert not list(tmp_path.glob(".following.json*")), "written atomically, nothing left behind"
    assert (tmp_path / "following.json").stat().st_mode & 0o777 == 0o600, "the extra variables: its owner's only"


def test_following_keeps_the_extra_variables_with_the_secret_values_of_launcher_env_masked(tmp_path: Path) -> None:
    extra_vars = {"launcher_env": {"HF_TOKEN": "s3cr3t-value", "MY_NOTE": "s3cr3t-value-2", "OMP_PROC_BIND": "close"},
                  "ansible_user": "train"}
    write_following(tmp_path, following_of("node1", "/jobs/job-1", {}, False, extra_vars, ["MY_NOTE"]))
    written = (tmp_path / "following.json").read_bytes()
    assert b"s3cr3t-value" not in written
    assert json.loads(written)["extra_vars"] == {
        "launcher_env": {"HF_TOKEN": "***", "MY_NOTE": "***", "OMP_PROC_BIND": "close"}, "ansible_user": "train",
    }
