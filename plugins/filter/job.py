# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training job as one object, from the launcher role's inputs (documented in job.yml and job_inputs.yml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.module_utils import job as job_object
from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain


def job(inputs: Mapping[str, Any], job_id: str, run_dir: str, cluster: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The job (module_utils/job.py's Job, as plain data) of the launcher role's inputs."""
    try:
        return job_object.job_record(job_object.build_job(plain(inputs), str(job_id), str(run_dir), plain(cluster)))
    except job_object.JobError as exc:
        raise AnsibleFilterError(f"job: {exc}") from exc


def job_inputs(role: str) -> list[str]:
    """The names of the inputs of ``role`` (launcher) a job is built from."""
    if role != "launcher":
        raise AnsibleFilterError(f"job_inputs: a job is built from the launcher role's inputs, not {role!r}'s")
    return job_object.input_names()


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"job": job, "job_inputs": job_inputs}
