# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training job as one object: built once from the launcher role's inputs, read by every path.

The launcher role builds it with the filter multinode.training.job (the fact ``launcher_job``) after the
preflight judged the inputs, on an SSH cluster (with the places the job takes on its nodes, from the cluster
contract) and on Kubernetes (without them). From then on the roles read the job's settings from it, never from
the inputs again: the SSH launch (launch_script's options), the Kubernetes manifest (kubernetes_run.describe),
the restart policy, the collection, the summary, the plan a check run shows, and the handover a later attach
takes the job from (follow.json). An attach therefore follows the job as it was launched, whatever its own inputs.

Only what a node may set apart from the others (its ranks, threads and environment: preflight.PER_HOST) is read
per node as well: the job holds the job-wide values, each node's tuning its own.

Pure Python (no Ansible imports but module_utils') so it runs on the controller and in plain unit tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from ansible.module_utils.common.validation import (
    check_type_bool,
    check_type_dict,
    check_type_float,
    check_type_int,
    check_type_list,
    check_type_str,
)

# The input of each field whose name is not launcher_<field>.
INPUT_NAMES = {"name": "launcher_job_name", "launcher": "launcher_type", "procs_per_node": "launcher_nproc_per_node"}


class JobError(ValueError):
    """Inputs no job can be built from (the preflight refuses them first; this names what slipped past it)."""


@dataclass(frozen=True)
class Job:  # pylint: disable=too-many-instance-attributes
    """One job: its identity, what it runs, how it is watched and restarted, and where it lives.

    The fields up to ``world_check`` are the launcher role's inputs of the same name (``launcher_<field>``; see
    INPUT_NAMES for the others), typed; ``id`` and ``run_dir`` are resolved once; ``dir`` to ``container`` are the
    places on the nodes of an SSH cluster, empty on Kubernetes.
    """

    name: str
    launcher: str
    backend: str
    script: str
    script_args: tuple[str, ...]
    procs_per_node: Any
    omp_num_threads: Any
    env: Mapping[str, Any]
    secret_env_names: tuple[str, ...]
    data_dir: str
    requirements: Mapping[str, Any]
    timeout: int
    stall_timeout: int
    straggler_margin: float
    straggler_after: int
    node_timeout: int
    max_restarts: int
    restart_on: tuple[str, ...]
    min_nodes: int
    lost_node: str
    checkpoint_replicas: int
    collect_outputs: str
    keep_jobs: int
    keep_containers_on_failure: bool
    beside: bool
    rdzv: str
    rdzv_port: int
    master_port: int
    ipex_version: str
    mlflow_tracking_uri: str
    mlflow_experiment: str
    world_check: str
    id: str
    run_dir: str
    dir: str = ""
    work_dir: str = ""
    output_dir: str = ""
    checkpoint_dir: str = ""
    container: str = ""


# The fields resolved once (the id and run directory) and the places on an SSH cluster's nodes; every other field
# is an input's.
RESOLVED = ("id", "run_dir")
PLACES = ("dir", "work_dir", "output_dir", "checkpoint_dir", "container")
INPUT_FIELDS = tuple(field for field in fields(Job) if field.name not in RESOLVED + PLACES)
INPUTS = {field.name: INPUT_NAMES.get(field.name, f"launcher_{field.name}") for field in INPUT_FIELDS}


def input_names() -> list[str]:
    """The launcher role's inputs a job is built from (what the role hands the filter)."""
    return list(INPUTS.values())


def _typed(kind: Any, value: Any) -> Any:
    """``value`` as the field's type, converted as an argument spec converts an option of that type (extra vars come
    as strings: ``-e launcher_secret_env_names=HF_TOKEN`` is the list ``['HF_TOKEN']``, ``a,b`` two names)."""
    converters = {
        "str": lambda raw: "" if raw is None else check_type_str(raw, allow_conversion=True),
        "int": check_type_int,
        "float": check_type_float,
        "bool": check_type_bool,
        "tuple[str, ...]": lambda raw: tuple(str(item) for item in check_type_list(raw)) if raw else (),
        "Mapping[str, Any]": lambda raw: dict(check_type_dict(raw)) if raw else {},
    }
    convert = converters.get(str(kind))
    return convert(value) if convert else value


def _places(job_id: str, name: str, beside: bool, cluster: Mapping[str, Any]) -> dict[str, str]:
    """Where the job lives on the nodes of an SSH cluster (the cluster contract's directories and names)."""
    job_dir = f"{cluster['jobs_dir']}/{job_id}"
    # A named job keeps its checkpoints beside the jobs, so the next run of that name resumes from them.
    checkpoint_dir = f"{cluster['workdir']}/checkpoints/{name}" if name else f"{job_dir}/checkpoints"
    # The launcher container (container runtime): one per job beside others, so none replaces another's.
    container = str(cluster["launcher_container"]) + (f"-{job_id}" if beside else "")
    return {
        "dir": job_dir,
        "work_dir": f"{job_dir}/work",
        "output_dir": f"{job_dir}/outputs",
        "checkpoint_dir": checkpoint_dir,
        "container": container,
    }


def build_job(
    inputs: Mapping[str, Any], job_id: str, run_dir: str, cluster: Mapping[str, Any] | None = None
) -> Job:
    """The job of ``inputs`` (the launcher role's, by input name), with its id and run directory on the controller;
    with ``cluster`` (the cluster contract) also its places on the nodes."""
    missing = sorted(name for name in INPUTS.values() if name not in inputs)
    if missing:
        raise JobError(f"the job's inputs lack {', '.join(missing)}")
    if not job_id or not run_dir:
        raise JobError("a job needs its id and its run directory")
    values: dict[str, Any] = {}
    for field in INPUT_FIELDS:
        try:
            values[field.name] = _typed(field.type, inputs[INPUTS[field.name]])
        except (TypeError, ValueError) as exc:
            raise JobError(f"{INPUTS[field.name]}: {inputs[INPUTS[field.name]]!r} is not of type {field.type} ({exc})") from exc
    places = _places(job_id, values["name"], values["beside"], cluster) if cluster is not None else {}
    return Job(**values, id=str(job_id), run_dir=str(run_dir), **places)


def job_record(job: Job) -> dict[str, Any]:
    """The job as plain data (the fact ``launcher_job``, the handover's copy of it)."""
    record = asdict(job)
    return {name: list(value) if isinstance(value, tuple) else value for name, value in record.items()}
