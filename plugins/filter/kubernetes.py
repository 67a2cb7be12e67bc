# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A training job on Kubernetes: its manifest, its description from the job variables, its state and summary.

Documented in kubernetes_manifest.yml, kubernetes_job_spec.yml, kubernetes_job_state.yml,
kubernetes_run_summary.yml, kubernetes_crd_problems.yml, kubernetes_crd_name.yml and module_installed.yml.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import module_loader

from ansible_collections.multinode.training.plugins.module_utils import kubernetes_crd, kubernetes_job, kubernetes_run
from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain

_FIELDS = tuple(field.name for field in fields(kubernetes_job.KubernetesJob))


def kubernetes_manifest(job: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """``kind`` (PyTorchJob, TrainJob or MPIJob) for ``job`` (the fields of module_utils' KubernetesJob), as given:
    the launcher role's preflight judged the inputs the job was described from (kubernetes_job's rules)."""
    unknown = sorted(set(job) - set(_FIELDS))
    if unknown:
        raise AnsibleFilterError(f"kubernetes_manifest: unknown fields {unknown}; expected some of {list(_FIELDS)}")
    if kind not in kubernetes_job.KINDS:
        raise AnsibleFilterError(f"kubernetes_manifest: unknown kind {kind!r}; expected one of {list(kubernetes_job.KINDS)}")
    try:
        return kubernetes_job.render(kubernetes_job.KubernetesJob(**plain(job)), kind)
    except TypeError as exc:
        raise AnsibleFilterError(f"kubernetes_manifest: {exc}") from exc


def kubernetes_job_spec(job: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The kind, API version, pod selector and KubernetesJob fields of the job (the filter job's) on Kubernetes."""
    try:
        return kubernetes_run.describe(kubernetes_run.job_params(plain(job), plain(settings)))
    except (KeyError, kubernetes_run.KubernetesRunError) as exc:
        raise AnsibleFilterError(f"kubernetes_job_spec: {exc}") from exc


def kubernetes_job_state(resource: Mapping[str, Any] | None, kind: str) -> str:
    """running, succeeded or failed, from the custom resource's conditions."""
    try:
        return kubernetes_run.job_state(kind, plain(resource or {}))
    except kubernetes_run.KubernetesRunError as exc:
        raise AnsibleFilterError(f"kubernetes_job_state: {exc}") from exc


def kubernetes_run_summary(
    resource: Mapping[str, Any] | None,
    kind: str,
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    timed_out: bool = False,
) -> dict[str, Any]:
    """summary.json of the run, from the custom resource and its pods as the API server returned them."""
    try:
        return kubernetes_run.summarize(kind, plain(job), plain(resource or {}), plain(list(pods)), bool(timed_out))
    except (KeyError, kubernetes_run.KubernetesRunError) as exc:
        raise AnsibleFilterError(f"kubernetes_run_summary: {exc}") from exc


def kubernetes_crd_problems(manifest: Mapping[str, Any], kind: str, crds: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """Why the cluster's CRD of ``kind`` (k8s_info's resources) would not keep ``manifest`` whole; empty if it would."""
    try:
        return kubernetes_crd.crd_problems(plain(manifest), kind, plain(list(crds or [])))
    except KeyError as exc:
        raise AnsibleFilterError(f"kubernetes_crd_problems: unknown kind {kind!r}") from exc


def module_installed(name: str) -> bool:
    """Whether Ansible on the controller can resolve the module ``name`` (its collection is installed)."""
    return bool(module_loader.find_plugin_with_context(str(name)).resolved)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "kubernetes_manifest": kubernetes_manifest,
            "kubernetes_job_spec": kubernetes_job_spec,
            "kubernetes_job_state": kubernetes_job_state,
            "kubernetes_run_summary": kubernetes_run_summary,
            "kubernetes_crd_problems": kubernetes_crd_problems,
            "kubernetes_crd_name": kubernetes_crd.crd_name,
            "module_installed": module_installed,
        }
