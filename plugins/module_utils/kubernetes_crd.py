# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The operator releases the Kubernetes entry point targets, and whether the cluster's CRD of a kind keeps a job whole.

An API server prunes the fields of a custom resource its CRD's structural schema does not know, silently: a TrainJob
with ``spec.runtimePatches`` sent to a Trainer older than v2.3 would run without its volumes. Before a job is
submitted, the CRD the cluster serves is read and every field of the manifest is looked up in it; a field it does
not know refuses the job, naming the release to install.

Pure Python, unit tested against the upstream CRDs (tests/unit/plugins/module_utils/fixtures/crds/).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

# Per kind: the API version written, the CRD's name on the cluster, and the release whose CRD the manifests are
# validated against (the oldest known to keep every field this collection writes).
TARGETS: Mapping[str, tuple[str, str, str]] = {
    "PyTorchJob": ("kubeflow.org/v1", "pytorchjobs.kubeflow.org", "the Kubeflow Training Operator v1.9"),
    "TrainJob": ("trainer.kubeflow.org/v1alpha1", "trainjobs.trainer.kubeflow.org", "Kubeflow Trainer v2.3"),
    "MPIJob": ("kubeflow.org/v2beta1", "mpijobs.kubeflow.org", "the MPI Operator v0.8"),
}


def crd_name(kind: str) -> str:
    """The name of ``kind``'s CustomResourceDefinition (``<plural>.<group>``)."""
    return TARGETS[kind][1]


def served_schema(crd: Mapping[str, Any], api_version: str) -> Mapping[str, Any] | None:
    """The openAPIV3Schema the CRD serves for ``api_version`` (``group/version``), or None when it serves none."""
    group, version = api_version.split("/")
    spec = crd.get("spec") or {}
    if spec.get("group") != group:
        return None
    for entry in spec.get("versions") or []:
        if entry.get("name") == version and entry.get("served", True):
            return (entry.get("schema") or {}).get("openAPIV3Schema") or {}
    return None


def unknown_keys(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Paths of the keys in ``value`` that ``schema`` has no property for, where it does not keep unknown keys."""
    if isinstance(value, list):
        return [key for i, item in enumerate(value) for key in unknown_keys(item, schema.get("items") or {}, f"{path}[{i}]")]
    if not isinstance(value, Mapping):
        return []
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    open_ended = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
    unknown = []
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key in properties:
            unknown += unknown_keys(item, properties[key], where)
        elif isinstance(extra, Mapping):
            unknown += unknown_keys(item, extra, where)
        elif not open_ended:
            unknown.append(where)
    return unknown


def crd_problems(manifest: Mapping[str, Any], kind: str, crds: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why the cluster's CRD of ``kind`` (``crds``: what k8s_info found, none or one) would not keep ``manifest``
    whole; empty when it would. Metadata is left out: the API server itself keeps it."""
    api_version, name, release = TARGETS[kind]
    install = f"install {release} or later"
    if not crds:
        return [f"the cluster has no {kind} definition ({name}): {install}"]
    schema = served_schema(crds[0], api_version)
    if schema is None:
        return [f"the cluster's {kind} definition ({name}) does not serve {api_version}: {install}"]
    body = {key: item for key, item in manifest.items() if key != "metadata"}
    dropped = unknown_keys(body, schema)
    if dropped:
        fields = ", ".join(dropped)
        return [f"the cluster's {kind} definition ({name}) does not know {fields}, which it would drop silently: {install}"]
    return []
