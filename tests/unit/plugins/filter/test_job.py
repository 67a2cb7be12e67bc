# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job object (module_utils/job.py) and its filters: built once from the launcher role's inputs, typed, with its
places on an SSH cluster's nodes; and the launcher role reading the job's settings from it, not from the inputs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.filter.job import FilterModule
from ansible_collections.multinode.training.plugins.module_utils import job as job_object
from ansible_collections.multinode.training.plugins.module_utils import cluster

ROLE = Path(__file__).resolve().parents[4] / "roles" / "launcher"
FILTERS = FilterModule().filters()
DEFAULTS: dict[str, Any] = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
# The inputs as extra vars give them: every value a string.
AS_EXTRA_VARS: dict[str, Any] = {
    **{name: DEFAULTS[name] for name in job_object.input_names()},
    "launcher_data_dir": "/data",
    "launcher_requirements": {},
    "launcher_mlflow_tracking_uri": "",
    "launcher_timeout": "600",
    "launcher_max_restarts": "2",
    "launcher_straggler_margin": "0.5",
    "launcher_beside": "false",
    "launcher_keep_containers_on_failure": "yes",
    "launcher_script_args": ["--epochs", 3],
}
CLUSTER = cluster.build(
    {
        "name": "mnt", "user": "train", "uid": 1000, "gid": 1000, "ssh_port": 2222, "image": "train:1",
        "runtime": "container", "scheduler": "none", "root": "/srv/mnt", "state_dir": "/srv/mnt/state",
        "launcher_host": "node1", "hosts": ["node1", "node2"], "spares": [],
    }
).as_fact()


def test_every_input_of_the_job_is_an_option_of_the_launcher_role_with_a_default() -> None:
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    missing_from_spec = [name for name in job_object.input_names() if name not in specs["main"]["options"]]
    # query('ansible.builtin.vars') fails on an undefined name: each has a default, on either entry point.
    missing_default = [name for name in job_object.input_names() if name not in DEFAULTS]
    assert (missing_from_spec, missing_default) == ([], [])


def test_the_inputs_are_typed_as_the_job_holds_them() -> None:
    job = job_object.build_job(AS_EXTRA_VARS, "j1", "/runs/j1")
    assert (job.timeout, job.max_restarts, job.straggler_margin) == (600, 2, 0.5)
    assert (job.beside, job.keep_containers_on_failure) == (False, True)
    assert job.script_args == ("--epochs", "3")
    assert job.launcher == DEFAULTS["launcher_type"] and job.name == ""
    assert job.procs_per_node == "auto"


def test_lists_and_mappings_given_as_strings_are_converted_as_an_argument_spec_converts_them() -> None:
    # -e launcher_secret_env_names=HF_TOKEN is one name, not its letters; a,b two names; a dict as JSON or k=v.
    inputs = {**AS_EXTRA_VARS, "launcher_secret_env_names": "HF_TOKEN", "launcher_restart_on": "stall,node_lost",
              "launcher_env": '{"A": "1"}', "launcher_requirements": ""}
    job = job_object.build_job(inputs, "j1", "/runs/j1")
    assert (job.secret_env_names, job.restart_on) == (("HF_TOKEN",), ("stall", "node_lost"))
    assert (dict(job.env), dict(job.requirements)) == ({"A": "1"}, {})


def test_without_a_cluster_the_job_has_no_places_on_nodes() -> None:
    record = FILTERS["job"](AS_EXTRA_VARS, "j1", "/runs/j1")
    assert (record["id"], record["run_dir"]) == ("j1", "/runs/j1")
    assert [record[name] for name in job_object.PLACES] == [""] * len(job_object.PLACES)
    assert record["script_args"] == ["--epochs", "3"]


def test_on_a_cluster_the_job_lives_under_its_jobs_dir() -> None:
    record = FILTERS["job"](AS_EXTRA_VARS, "j1", "/runs/j1", CLUSTER)
    assert record["dir"] == "/srv/mnt/work/jobs/j1"
    assert (record["work_dir"], record["output_dir"]) == ("/srv/mnt/work/jobs/j1/work", "/srv/mnt/work/jobs/j1/outputs")
    assert record["checkpoint_dir"] == "/srv/mnt/work/jobs/j1/checkpoints"
    assert record["container"] == "mnt-launcher"


def test_a_named_job_keeps_its_checkpoints_by_name_and_a_job_beside_others_its_own_container() -> None:
    inputs = {**AS_EXTRA_VARS, "launcher_job_name": "mnist", "launcher_beside": True}
    record = FILTERS["job"](inputs, "j2", "/runs/j2", CLUSTER)
    assert record["checkpoint_dir"] == "/srv/mnt/work/checkpoints/mnist"
    assert record["container"] == "mnt-launcher-j2"


def test_a_missing_input_is_named() -> None:
    inputs = {name: value for name, value in AS_EXTRA_VARS.items() if name != "launcher_timeout"}
    with pytest.raises(AnsibleFilterError, match="job: the job's inputs lack launcher_timeout"):
        FILTERS["job"](inputs, "j1", "/runs/j1")


def test_a_value_of_the_wrong_type_is_named() -> None:
    with pytest.raises(AnsibleFilterError, match="job: launcher_timeout: 'soon' is not of type int .*cannot be converted to an int"):
        FILTERS["job"]({**AS_EXTRA_VARS, "launcher_timeout": "soon"}, "j1", "/runs/j1")


def test_a_job_needs_its_id_and_run_directory() -> None:
    with pytest.raises(AnsibleFilterError, match="needs its id"):
        FILTERS["job"](AS_EXTRA_VARS, "", "/runs/x")


def test_job_inputs_names_the_launcher_role_inputs_only() -> None:
    assert FILTERS["job_inputs"]("launcher") == job_object.input_names()
    with pytest.raises(AnsibleFilterError, match="launcher role's inputs"):
        FILTERS["job_inputs"]("workers")


# The task files that run before the job is built (the playbooks' checks right after the nodes' facts, the clean-up
# of containers left behind) and the id's own task read the inputs; every other reads the job.
BEFORE_THE_JOB = {"beside.yml", "devices.yml", "absent.yml"}
# Each node's own ranks, threads and environment (preflight.PER_HOST) are read per node (its tuning) as well.
PER_NODE = {"launcher_nproc_per_node", "launcher_omp_num_threads", "launcher_env"}


def input_reads(text: str) -> list[str]:
    """The job's inputs a task file's templates and conditions read (comments and task names left out)."""
    names = [name for name in job_object.input_names() if name not in PER_NODE]
    pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
    code = (line.split(" # ")[0] for line in text.splitlines() if not re.match(r"\s*(#|-?\s*name:)", line))
    return sorted({match for line in code for match in pattern.findall(line)})


def test_after_the_job_is_built_the_launcher_role_reads_its_settings_from_the_job() -> None:
    reads = {
        path.name: input_reads(path.read_text())
        for path in sorted((ROLE / "tasks").glob("*.yml"))
        if path.name not in BEFORE_THE_JOB
    }
    # main.yml's first tasks give the job its id (from its name and launcher) before it exists.
    assert reads.pop("main.yml") == ["launcher_job_name", "launcher_type"]
    assert reads.pop("kubernetes.yml") == ["launcher_job_name", "launcher_type"]
    assert {name: found for name, found in reads.items() if found} == {}


def test_the_launch_reads_the_job_and_only_each_node_tuning_reads_the_inputs() -> None:
    variables = (ROLE / "vars" / "main.yml").read_text()
    tuning, _, rest = variables.partition("launcher_launch_options:")
    assert input_reads(rest) == []
    assert input_reads(tuning) == ["launcher_backend", "launcher_type"]


def test_the_handover_carries_the_job_not_its_inputs() -> None:
    names = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["launcher_handover_names"]
    assert "launcher_job" in names
    assert set(names) & set(job_object.input_names()) == set()

