#!/usr/bin/env python3
"""Render every bash script the collection generates and run ShellCheck over them all (make lint).

The scripts, each rendered by the builder its module uses, with the values a job of the launcher role gets:

- launch.sh (launch_files.render_launch, the launch_script and rank_wrapper modules' own): every launcher of the
  registry in each runtime it runs in, plain and with everything the role adds (the checkpoint to stage, checkpoint
  replicas, the ready check, a secret variable); for Slurm also its batch script and the script each task runs;
- rank.sh (rank_contract.render_rank_wrapper, the rank_wrapper module's): each runtime, each collective backend, with
  and without a secret env file and the stack dump, and the secret env file itself.

Exits non-zero naming each finding's script variant, line and code. Whatever ShellCheck should not say about a line
that is right is said in the generated text, at that line, with its reason (``# shellcheck disable=...``); the codes
excluded here are those that hold for every script as a whole.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.multinode.training.plugins.module_utils import cluster  # noqa: E402
from ansible_collections.multinode.training.plugins.module_utils.launch import (  # noqa: E402
    REGISTRY,
    TRAINING_BACKENDS,
    interface_env,
    rank_tuning,
)
from ansible_collections.multinode.training.plugins.module_utils.launch_files import (  # noqa: E402
    render_launch,
    validated_launch_options,
)
from ansible_collections.multinode.training.plugins.module_utils.launch_script import (  # noqa: E402
    slurm_batch_lines,
    slurm_node_script,
)
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import (  # noqa: E402
    PLACEHOLDERS,
    JobPaths,
    NodeDefaults,
    render_rank_wrapper,
    render_secret_env,
)
from ansible_collections.multinode.training.plugins.module_utils.secret_env import split_env  # noqa: E402

# ShellCheck's codes not checked in any script, each for every line it could be said of.
EXCLUDED = (
    # Expressions in single quotes: every word that comes from the job's settings is quoted with shlex (literal on
    # purpose), and the scripts' own single-quoted code (the exit hooks launch.sh evals, the lines of the Slurm batch
    # script it writes, the task script srun hands to bash -c) is to expand where it runs, not where it is written.
    "SC2016",
    # Sourced files not given: the host runtime's env.sh and the job's secret env file exist on the nodes only.
    "SC1091",
)
NODES = ("node1", "node2", "node3")
IFACE = "eth1"
# A two-socket node as node_facts reports it.
CPU = {"sockets": 2, "numa_nodes": 2, "cores_per_socket": 16, "physical_cores": 32}
# A variable that secret_env takes for a secret by its name: it goes to the secret env file, never a launcher's words.
SECRET_ENV = {"HF_TOKEN": "hf_example"}
JOB_ID = "train-20250101-120000-ab12"
RESUME_FROM = "checkpoint-epoch007.pt"


@dataclass(frozen=True)
class Script:
    """One rendered script: what it is (its variant, as findings name it) and its text."""

    variant: str
    text: str

    @property
    def file_name(self) -> str:
        return self.variant.replace(" ", "_").replace("/", "-").replace("+", "_") + ".sh"


def cluster_of(runtime: str) -> cluster.Cluster:
    """The cluster contract the cluster role builds, for ``runtime``."""
    return cluster.build(
        dict(
            name="multinode",
            user="train",
            uid=1500,
            gid=1500,
            ssh_port=2222,
            image="multinode/training:latest",
            runtime=runtime,
            scheduler="none",
            root="/srv/multinode",
            state_dir="/var/lib/multinode",
            launcher_host=NODES[0],
            hosts=list(NODES),
            spares=[],
        )
    )


def job_paths(contract: cluster.Cluster, resume: bool) -> JobPaths:
    """The job's directories as the launcher role names them (tasks/main.yml)."""
    job_dir = f"{contract.jobs_dir}/{JOB_ID}"
    checkpoint_dir = f"{job_dir}/checkpoints"
    return JobPaths(
        job_id=JOB_ID,
        job_dir=job_dir,
        work_dir=f"{job_dir}/work",
        output_dir=f"{job_dir}/outputs",
        checkpoint_dir=checkpoint_dir,
        resume_from=f"{checkpoint_dir}/{RESUME_FROM}" if resume else "",
    )


def launch_options(launcher: str, runtime: str, full: bool) -> dict[str, Any]:
    """The launch options the launcher role passes (vars/main.yml launcher_launch_options); ``full`` adds a
    checkpoint to resume from (staged), replicas, the ready check and a secret variable."""
    contract = cluster_of(runtime)
    job = job_paths(contract, resume=full)
    tuning = rank_tuning(CPU, "gloo", launcher=launcher, env={"KMP_BLOCKTIME": "1", **(SECRET_ENV if full else {})})
    hosts = [dict(name=name, address=f"10.0.0.{index}", slots=tuning["slots"]) for index, name in enumerate(NODES, 1)]
    return validated_launch_options(
        dict(
            path=f"{job.job_dir}/launch.sh",
            job_dir=job.job_dir,
            work_dir=job.work_dir,
            launcher=launcher,
            hosts=hosts,
            launcher_address=hosts[0]["address"],
            iface=IFACE,
            hostfile_path=f"{job.job_dir}/hostfile",
            hostfile_dialect="auto",
            ssh_port=contract.ssh_port,
            job_id=JOB_ID,
            command=["bash", f"{job.job_dir}/rank.sh", "python3", "train.py", "--checkpoint-dir", "{checkpoint_dir}"],
            placeholders={name: getattr(job, name) for name in PLACEHOLDERS},
            stage_paths=[job.resume_from] if job.resume_from else [],
            replicate_dir=job.checkpoint_dir if full else "",
            replicas=1 if full else 0,
            omp_num_threads=tuning["omp_num_threads"],
            env=tuning["env"],
            env_script=contract.env_script,
            wait_ready=full,
        )
    )


def launch_scripts() -> Iterator[Script]:
    """launch.sh for every launcher in each of its runtimes, plain and full; Slurm's batch and task scripts."""
    for launcher in REGISTRY.values():
        for runtime in launcher.runtimes:
            for full in (False, True):
                options = launch_options(launcher.name, runtime, full)
                rendered = render_launch(options)
                variant = f"launch.sh {launcher.name} {runtime} {'staged+replicated+ready+secret' if full else 'plain'}"
                yield Script(variant, rendered.content)
                if launcher.scheduler == "slurm" and not full:
                    names = [host["name"] for host in options["hosts"]]
                    node_script = slurm_node_script(rendered.argvs, options["work_dir"], names)
                    yield Script(f"slurm.sbatch {runtime}", "\n".join(slurm_batch_lines(node_script)) + "\n")
                    yield Script(f"slurm task script {runtime}", node_script)


def rank_script(runtime: str, backend: str, full: bool) -> Script:
    """rank.sh of the second node as the rank_wrapper module writes it; ``full`` with the secret env file and the
    stack dump of a rank without progress."""
    contract = cluster_of(runtime)
    job = job_paths(contract, resume=full)
    tuning = rank_tuning(CPU, backend or "gloo", env={"KMP_BLOCKTIME": "1", **(SECRET_ENV if full else {})})
    env, secret = split_env(
        {"OMP_NUM_THREADS": str(tuning["omp_num_threads"]), **interface_env(IFACE), **tuning["env"]}
    )
    node = NodeDefaults(node=NODES[1], node_index=1, slots=tuning["slots"], master_addr="10.0.0.1", master_port=29500)
    text = render_rank_wrapper(
        node,
        job,
        env,
        env_script=contract.env_script,
        backend=backend,
        stack_dump_after=45 if full else 0,
        python_path=[f"{contract.workdir}/envs/0123abcd/site"] if full else [],
        secret_env_file=f"{job.job_dir}/secret.env" if secret else "",
    )
    variant = f"rank.sh {runtime} backend={backend or 'none'} {'secret+stack-dump+layer' if full else 'plain'}"
    return Script(variant, text)


def rank_scripts() -> Iterator[Script]:
    """rank.sh for each runtime and backend, plain and full; the secret env file it sources."""
    for runtime in cluster.RUNTIMES:
        for backend in ("", *TRAINING_BACKENDS):
            for full in (False, True):
                yield rank_script(runtime, backend, full)
    yield Script("secret.env", render_secret_env(SECRET_ENV))


def scripts() -> list[Script]:
    """Every script variant the checker renders."""
    return [*launch_scripts(), *rank_scripts()]


def findings(rendered: list[Script], directory: Path) -> list[str]:
    """ShellCheck's findings in ``rendered`` (written to ``directory``), one line each naming the variant."""
    by_path = {}
    for script in rendered:
        path = directory / script.file_name
        path.write_text(script.text)
        by_path[str(path)] = script.variant
    command = ["shellcheck", "-s", "bash", "-f", "json", f"--exclude={','.join(EXCLUDED)}", *by_path]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"shellcheck failed ({result.returncode}): {result.stderr.strip()}")
    return [
        f"{by_path[item['file']]}: line {item['line']}: SC{item['code']} ({item['level']}): {item['message']}"
        for item in json.loads(result.stdout or "[]")
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="write the rendered scripts to this directory and keep them")
    args = parser.parse_args()
    rendered = scripts()
    with tempfile.TemporaryDirectory(prefix="shellcheck-generated-") as temporary:
        directory = args.keep or Path(temporary)
        directory.mkdir(parents=True, exist_ok=True)
        found = findings(rendered, directory)
    for line in found:
        print(line, file=sys.stderr)
    print(f"shellcheck: {len(rendered)} generated scripts, {len(found)} findings", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
