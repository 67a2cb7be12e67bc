# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``summary.json``, what every run leaves in ``runs/<job-id>/``: its file name and its one schema (JSON Schema).

Two producers compute it: run_report.py (a run over SSH, through the run_summary action) and kubernetes_run.py (a
run on Kubernetes). One function writes it, summary_file.write_summary, which checks every summary against
:data:`SUMMARY_SCHEMA` as it writes and refuses one that departs from it; both producers are tested against it too,
and the Python package's ``Summary`` type and the key table of docs/RUNS.md are held to it by tests. Keys an SSH
run has and a Kubernetes run cannot know (ranks one by one, restarts, metrics) are optional; every key either writes
means the same on both.

Plain data, no imports: it is read by the tests, the docs generator and the Python package alike.
"""

from __future__ import annotations

from typing import Any

SUMMARY_FILE = "summary.json"
STATUSES = ("succeeded", "failed", "cancelled")
SCHEDULERS = ("slurm", "kubernetes")

_NUMBER_OR_NULL: dict[str, Any] = {"type": ["number", "null"]}
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}


def _key(description: str, **schema: Any) -> dict[str, Any]:
    return {"description": description, **schema}


def _codes(description: str) -> dict[str, Any]:
    return _key(description, type="object", additionalProperties={"type": ["integer", "null"]})


# Keys both producers write.
_COMMON: dict[str, dict[str, Any]] = {
    "job_id": _key("The job's id: the run directory's name.", type="string", minLength=1),
    "status": _key("`succeeded`, `failed` or `cancelled` (a stop was asked for while it ran).", enum=list(STATUSES)),
    "failure_reasons": _key(
        "The root cause first in plain words, then its consequences; empty on success.", **_STRINGS
    ),
    "launcher": _key("The launcher that ran the job (`launcher_type`).", type="string"),
    "world_size": _key("Ranks in the job.", type="integer", minimum=1),
    "nodes": _key("Each node's address (pods' on Kubernetes), the launcher's first.", **_STRINGS),
    "node_names": _key("Each node's inventory name (pod names on Kubernetes), in the order of `nodes`.", **_STRINGS),
    "node_exit_codes": _codes(
        "Each node's agent (a pod on Kubernetes) and its exit code; null while it had not ended."
    ),
    "launcher_exit_code": _key(
        "The launcher's exit code; null when it did not end or there is none.", type=["integer", "null"]
    ),
    "rank_exit_codes": _codes(
        "Each rank (a string key) and its exit code; empty on Kubernetes, which does not see ranks."
    ),
    "timed_out": _key("Whether the job ran out of `launcher_timeout`.", type="boolean"),
    "phases": _key(
        "Seconds per phase: `provision`; `launch` (launch script start until every rank started); `train` (until every"
        " rank ended; on Kubernetes, submit until the end was seen). Null where unknown.",
        type="object",
        properties={"provision": _NUMBER_OR_NULL, "launch": _NUMBER_OR_NULL, "train": _NUMBER_OR_NULL},
        required=["train"],
        additionalProperties=False,
    ),
    "scheduler": _key(
        "How the scheduler the job went through saw it (`type` `slurm` or `kubernetes`, its id or name and `state`);"
        " null without one.",
        anyOf=[
            {"type": "null"},
            {
                "type": "object",
                "properties": {"type": {"enum": list(SCHEDULERS)}, "state": {"type": "string"}},
                "required": ["type", "state"],
            },
        ],
    ),
    "settings": _key(
        "What the job ran with: `runtime` (`container`, `host` or `kubernetes`), `script`, `script_args`; over SSH also"
        " `backend`, `hostfile_dialect`, `data_dir`, `requirements`, `health` and per node `interfaces`, `tuning`,"
        " `topology` and `devices`; on Kubernetes the `image`.",
        type="object",
        properties={
            "runtime": {"enum": ["container", "host", "kubernetes"]},
            "script": {"type": "string"},
            "script_args": _STRINGS,
        },
        required=["runtime", "script", "script_args"],
    ),
}

# Keys only a run over SSH knows.
_SSH: dict[str, dict[str, Any]] = {
    "root_cause_kind": _key(
        "What kind of failure the first reason is (the table below); null on success.", type=["string", "null"]
    ),
    "root_cause_error": _key(
        "The last error the log of the rank the first reason names ends with (its uncaught exception, e.g."
        " `RuntimeError: ...`, or a fatal error of its runtime), its secret values as `***`; null when the first"
        " reason is not a rank's or its log ends without one.",
        type=["string", "null"],
    ),
    "job_name": _key(
        "`launcher_job_name`: a named job resumes from its own checkpoints; null without one.", type=["string", "null"]
    ),
    "resumed_from": _key("The checkpoint the job resumed from; null for a fresh start.", type=["string", "null"]),
    "checkpoints": _key(
        "The job's checkpoints when the attempt ended, newest first: each one's `name`, `bytes`, `mtime` and the"
        " `nodes` that hold it (the launcher node's and its replicas, `launcher_checkpoint_replicas`; a lost node is"
        " not listed).",
        type="array",
        items={"type": "object", "required": ["name", "bytes", "mtime", "nodes"]},
    ),
    "ranks_started": _key("The ranks that started.", type="array", items={"type": "integer"}),
    "rank_nodes": _key(
        "Each rank (a string key) and the node it ran on.",
        type="object",
        additionalProperties={"type": ["string", "null"]},
    ),
    "provision_changed": _key(
        "Changed tasks in this run's provisioning; null when it did not provision.", type=["integer", "null"]
    ),
    "started_at": _key("When the first rank started (epoch seconds).", **_NUMBER_OR_NULL),
    "failure_detected_at": _key("When the failure was seen (epoch seconds); null on success.", **_NUMBER_OR_NULL),
    "test_accuracy": _key("The script's reported test accuracy, optional.", **_NUMBER_OR_NULL),
    "metrics": _key("The script's last `result` event, optional.", type="object"),
    "epochs": _key(
        "One entry per epoch the script reported (`epoch`, `loss`, `samples_per_s`), every attempt's: rank 0's epoch"
        " events, else the epoch lines the controller followed live.",
        type="array",
        items={"type": "object", "required": ["epoch"]},
    ),
    "outputs": _key("The collected output files, relative to the run directory.", **_STRINGS),
    "stragglers": _key(
        "The ranks the straggler watch named (`rank`, `node`, `slower_by`, `text`, ...).",
        type="array",
        items={"type": "object"},
    ),
    "attempt": _key("Which attempt this summary is of (1 unless the job was restarted).", type="integer", minimum=1),
    "restarts": _key(
        "One entry per automatic restart: `attempt`, `cause`, `kind`, `detected_at`, `resumed_at`, `resumed_from`,"
        " `nodes`.",
        type="array",
        items={
            "type": "object",
            "required": ["attempt", "cause", "kind", "detected_at", "resumed_at", "resumed_from", "nodes"],
        },
    ),
    "restart_verdict": _key("Why a job that did not succeed was not restarted.", type="string"),
    "world": _key(
        "Whether the ranks formed one world (`launcher_world_check`): `formed` (true, false, or null where it cannot"
        " be judged: ranks that form their world in a way the guard does not record, TensorFlow's strategies or JAX,"
        " or left no record), `text` (why not) and `group_sizes` (each rank's process groups, by world size: torch's,"
        " Horovod's, MPI's); `spawned_worlds` when processes the ranks started"
        " (torch.multiprocessing.spawn, say) initialized groups: how many of them initialized one, by its world size.",
        type="object",
        properties={
            "formed": {"type": ["boolean", "null"]},
            "text": {"type": ["string", "null"]},
            "group_sizes": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}},
            "spawned_worlds": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        required=["formed", "text", "group_sizes"],
    ),
}

SUMMARY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": SUMMARY_FILE,
    "type": "object",
    "properties": {**_COMMON, **_SSH},
    "required": list(_COMMON),
    "additionalProperties": False,
}
