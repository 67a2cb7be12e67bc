# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes manifest of a training job (documented in kubernetes_manifest.yml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.module_utils import kubernetes_job
from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain

_FIELDS = tuple(field.name for field in fields(kubernetes_job.KubernetesJob))


def kubernetes_manifest(job: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """``kind`` (PyTorchJob, TrainJob or MPIJob) for ``job`` (the fields of module_utils' KubernetesJob)."""
    unknown = sorted(set(job) - set(_FIELDS))
    if unknown:
        raise AnsibleFilterError(f"kubernetes_manifest: unknown fields {unknown}; expected some of {list(_FIELDS)}")
    try:
        return kubernetes_job.render(kubernetes_job.KubernetesJob(**plain(job)), kind)
    except (TypeError, kubernetes_job.KubernetesJobError) as exc:
        raise AnsibleFilterError(f"kubernetes_manifest: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"kubernetes_manifest": kubernetes_manifest}
