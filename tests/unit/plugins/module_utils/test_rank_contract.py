# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch contract, and rank.sh run for real with bash under simulated launchers."""

from __future__ import annotations

import json
import re
import os
import shlex
import signal
import socket
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, Mapping

import pytest

from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY, XCCL_ENV
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import (
    BACKEND_RANK_VARIABLES,
    CONTRACT,
    EXIT_GUARD_DIR,
    JOB_VARIABLES,
    LEFT_BEHIND_NOTE,
    PLACEHOLDERS,
    placeholders_in,
    ranks_that_left_a_process,
    STATUS_FIELDS,
    ContractError,
    WRAPPER_PID_VARIABLE,
    JobPaths,
    NodeDefaults,
    exit_guard_dir,
    expand_placeholders,
    render_rank_wrapper,
)
from ansible_collections.multinode.training.plugins.module_utils import events
from ansible_collections.multinode.training.plugins.module_utils.events import BEAT_SECONDS, RANK_BEAT, RANK_ENDED, RANK_STARTED
from ansible_collections.multinode.training.plugins.module_utils.progress import RANK_LINE
from ansible_collections.multinode.training.plugins.module_utils.run_report import read_run_dir, summarize

NODE = NodeDefaults(node="node2", node_index=1, slots=4, master_addr="10.0.0.1", master_port=29500)
ENV = {"OMP_NUM_THREADS": "4", "NCCL_SOCKET_IFNAME": "eth1", "ODD": "a 'b' \"c\" $HOME `id` \\ ;"}

# What each launcher sets in a rank's environment: rank 5 of 8, local rank 1 of 2 (each registry entry's rank_variables names them).
LAUNCHER_ENVS: dict[str, dict[str, str]] = {
    "torchrun": {
        "RANK": "5",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "2",
        "MASTER_ADDR": "10.9.9.9",
        "MASTER_PORT": "12345",
        "OMP_NUM_THREADS": "1",  # torchrun's own default, which the node's env overrides
    },
    "mpiexec": {"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"},
    "mpirun": {
        "OMPI_COMM_WORLD_RANK": "5",
        "OMPI_COMM_WORLD_SIZE": "8",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    },
}
# deepspeed.launcher.launch (deepspeed/launcher/launch.py): RANK, LOCAL_RANK, WORLD_SIZE, MASTER_* and LOCAL_SIZE.
LAUNCHER_ENVS["deepspeed"] = {
    "RANK": "5",
    "WORLD_SIZE": "8",
    "LOCAL_RANK": "1",
    "MASTER_ADDR": "10.9.9.9",
    "MASTER_PORT": "12345",
}
# Under Slurm, each node's Slurm task is a torchrun agent: its ranks get torchrun's variables.
LAUNCHER_ENVS["slurm"] = LAUNCHER_ENVS["torchrun"]
# horovodrun's Gloo controller (horovod/runner/gloo_run.py, create_run_env_vars): node 2 of the job.
LAUNCHER_ENVS["horovodrun"] = {
    "HOROVOD_RANK": "5",
    "HOROVOD_SIZE": "8",
    "HOROVOD_LOCAL_RANK": "1",
    "HOROVOD_LOCAL_SIZE": "2",
    "HOROVOD_CROSS_RANK": "2",
}
# tensorflow: the launch script gives each node's one worker torchrun's variables itself (launch._tensorflow).
# ipexrun's ranks are started by Intel MPI's mpiexec.hydra.
LAUNCHER_ENVS["ipexrun"] = LAUNCHER_ENVS["mpiexec"]
LAUNCHER_ENVS["tensorflow"] = {**LAUNCHER_ENVS["torchrun"], "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
TORCHRUN = LAUNCHER_ENVS["torchrun"]
MINIMAL = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}  # what every launcher gives, one way or another
RANK = 5

# A rank that prints its working directory and environment.
SHOW = (sys.executable, "-c", "import json, os; print(json.dumps({'cwd': os.getcwd(), 'env': dict(os.environ)}))")


def status_file(job_dir: str, rank: int | str) -> str:
    """Where the wrapper records rank ``rank``'s start and exit."""
    return f"{job_dir.rstrip('/')}/status/rank-{rank}.json"


def standard(
    local_world_size: str,
    group_rank: str = str(NODE.node_index),
    master_addr: str = NODE.master_addr,
    master_port: str = str(NODE.master_port),
) -> dict[str, str]:
    """The contract variables of rank 5 of 8, local rank 1; the rest defaults to NODE's fallbacks."""
    return {
        "RANK": "5",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": local_world_size,
        "GROUP_RANK": group_rank,
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": master_port,
    }


def new_job(tmp_path: Path, **overrides: str) -> JobPaths:
    """A job whose directory is laid out as a collected run's node directory: run/nodes/node2/{logs,status,work}."""
    job_dir = tmp_path / "run" / "nodes" / NODE.node
    for sub in ("logs", "status", "work"):
        (job_dir / sub).mkdir(parents=True, exist_ok=True)
    values = {
        "job_id": "job-7",
        "job_dir": str(job_dir),
        "work_dir": str(job_dir / "work"),
        "output_dir": "/shared/outputs/job-7",
        "checkpoint_dir": "/shared/checkpoints/digits",
        "resume_from": "/shared/checkpoints/digits/step-3.pt",
        "data_dir": "/data/digits",
        **overrides,
    }
    return JobPaths(**values)


def make_wrapper(
    job: JobPaths, env: Mapping[str, str] = ENV, *, env_script: str = "", node: NodeDefaults = NODE, backend: str = ""
) -> Path:
    path = Path(job.job_dir) / "rank.sh"
    path.write_text(render_rank_wrapper(node, job, env, env_script=env_script, backend=backend))
    return path


def _default_stop_signals() -> None:
    # A process started in the background of a non-interactive shell ignores SIGINT, one started under nohup ignores
    # SIGHUP, and bash cannot trap a signal that was ignored when it started: give the wrapper the normal SIGINT and
    # SIGHUP a launcher's rank gets (sshd and the launchers start ranks with both at their defaults).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def rank_command(wrapper: Path, launcher_env: Mapping[str, str], command: tuple[str, ...]) -> dict:
    """Popen arguments for running ``command`` as a rank under ``wrapper``, with only the launcher's variables."""
    return {
        "args": ["bash", str(wrapper), *command],
        "env": {"PATH": os.environ["PATH"], **launcher_env},
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "text": True,
        "preexec_fn": _default_stop_signals,
    }


def run_rank(wrapper: Path, launcher_env: Mapping[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(**rank_command(wrapper, launcher_env, command), timeout=30, check=False)


def rank_view(wrapper: Path, launcher_env: Mapping[str, str]) -> tuple[Path, dict[str, str]]:
    """The working directory and environment the rank ran with."""
    result = run_rank(wrapper, launcher_env, *SHOW)
    assert result.returncode == 0, result.stderr
    shown = json.loads(launcher_stream(result.stdout))
    return Path(shown["cwd"]), shown["env"]


def launcher_stream(output: str, rank: int | None = None, node: str = NODE.node) -> str:
    """What a rank printed, from what the wrapper passed to the launcher: every line behind ``[rank N node]``
    (N = ``rank`` when given), the first one the start marker, the last one the end marker with the exit code."""
    lines = output.splitlines()
    matches = [RANK_LINE.fullmatch(line) for line in lines]
    assert all(match and match.group(2) == node and rank in (None, int(match.group(1))) for match in matches), output
    texts = [match.group(3) for match in matches if match]
    if not texts:
        return ""
    assert texts[0] == RANK_STARTED, output
    assert re.fullmatch(re.escape(RANK_ENDED) + r" \d+", texts[-1]), output
    return "".join(text + "\n" for text in texts[1:-1])


def status_of(job: JobPaths, rank: int = RANK) -> dict:
    return json.loads(Path(status_file(job.job_dir, rank)).read_text())


def rank_log(job: JobPaths, rank: int = RANK) -> Path:
    return Path(job.job_dir) / "logs" / f"rank-{rank}.log"


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def started() -> Iterator[Callable[..., tuple[subprocess.Popen[str], int]]]:
    """Start a rank in the background; returns the wrapper's process and the rank's pid. Kills leftovers."""
    processes: list[subprocess.Popen[str]] = []
    pids: list[int] = []

    def start(
        wrapper: Path, launcher_env: Mapping[str, str], script: str, *, prepare: str = ":"
    ) -> tuple[subprocess.Popen[str], int]:
        """Runs ``prepare``, writes the rank's pid where the test finds it (then it is ready), runs ``script``."""
        pid_file = wrapper.parent / "rank.pid"
        pid_file.unlink(missing_ok=True)
        ready = f'echo $$ > "{pid_file}.tmp" && mv "{pid_file}.tmp" "{pid_file}"'
        command = ("bash", "-c", f"{prepare}\n{ready}\n{script}")
        processes.append(subprocess.Popen(**rank_command(wrapper, launcher_env, command)))
        wait_for(pid_file.exists)
        pids.append(int(pid_file.read_text()))
        return processes[-1], pids[-1]

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    for process in processes:
        process.communicate(timeout=10)


# --- the contract itself ---


def test_contract_names_the_standard_variables() -> None:
    assert [variable.name for variable in CONTRACT] == [
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
    ]
    assert [name for name, _ in JOB_VARIABLES] == ["JOB_ID", "OUTPUT_DIR", "CHECKPOINT_DIR", "RESUME_FROM", "DATA_DIR"]


def test_contract_tables_agree() -> None:
    sources = {source for variable in CONTRACT for source in variable.sources}
    fallbacks = {variable.fallback for variable in CONTRACT} - {None}
    job = JobPaths("j", "/j", "/w", "/o", "/c")
    assert all(set(launcher.rank_variables) <= sources for launcher in REGISTRY.values())
    assert fallbacks <= set(NodeDefaults.__dataclass_fields__)
    assert all(variable.sources[0] == variable.name for variable in CONTRACT)
    assert list(job.variables()) == [name for name, _ in JOB_VARIABLES]


@pytest.mark.parametrize("launcher", sorted(REGISTRY))
def test_simulated_launchers_set_what_the_contract_says(launcher: str) -> None:
    assert set(LAUNCHER_ENVS[launcher]) - {"OMP_NUM_THREADS"} == set(REGISTRY[launcher].rank_variables)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["--out", "{output_dir}"], ["--out", "/o"]),
        (["--resume={resume_from}", "{data_dir}/train"], ["--resume=/r", "/d/train"]),
        (["{job_id}-{work_dir}-{checkpoint_dir}"], ["job-1-/w-/c"]),
        (["{job_id}{job_id}"], ["job-1job-1"]),
        (['{"a": 1}', "{foo}", "{ job_id }", "{JOB_ID}", "{job_id", "job_id}"], None),
        ([], []),
    ],
)
def test_expand_placeholders(words: list[str], expected: list[str] | None) -> None:
    values = dict(zip(PLACEHOLDERS, ["job-1", "/o", "/c", "/r", "/d", "/w"]))
    assert expand_placeholders(words, values) == (words if expected is None else expected)


def test_expand_placeholders_with_empty_values() -> None:
    values = dict(zip(PLACEHOLDERS, ["job-1", "/o", "/c", "", "", "/w"]))
    assert expand_placeholders(["--resume", "{resume_from}", "{data_dir}"], values) == ["--resume", "", ""]


def test_every_contract_and_job_variable_is_in_the_script(tmp_path: Path) -> None:
    script = make_wrapper(new_job(tmp_path)).read_text()
    for variable in CONTRACT:
        assert f"export {variable.name}=" in script
        assert all(f"${{{source}:" in script for source in variable.sources)
    for name, _ in JOB_VARIABLES:
        assert f"export {name}=" in script


@pytest.mark.parametrize(
    ("env", "env_script"),
    [({}, ""), (ENV, ""), (ENV, "/opt/intel/oneapi/setvars.sh"), ({"A": "x y"}, "/opt/my env/vars.sh")],
)
def test_rendered_script_is_valid_bash(tmp_path: Path, env: dict[str, str], env_script: str) -> None:
    wrapper = make_wrapper(new_job(tmp_path), env, env_script=env_script)
    assert wrapper.read_text().startswith("#!/bin/bash\n")
    result = subprocess.run(["bash", "-n", str(wrapper)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_job_id_cannot_break_out_of_the_comment(tmp_path: Path) -> None:
    script = make_wrapper(new_job(tmp_path, job_id="job\nrm -rf /")).read_text()
    assert "# One rank of job job rm -rf / on node2" in script
    assert "rm -rf /" not in script.splitlines()


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "X=Y", "A;B", "ÄB"])
def test_invalid_env_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ContractError, match="invalid environment variable name"):
        render_rank_wrapper(NODE, new_job(tmp_path), {name: "1"})


@pytest.mark.parametrize("name", ["node 1", "", "n;rm", "n$x", 'n"', "n'", "n/1", "n\n"])
def test_invalid_node_name_is_refused(tmp_path: Path, name: str) -> None:
    node = NodeDefaults(node=name, node_index=0, slots=1, master_addr="a", master_port=1)
    with pytest.raises(ContractError, match="node name"):
        render_rank_wrapper(node, new_job(tmp_path), {})


@pytest.mark.parametrize("name", ["node1", "gpu-node.example.org", "n_1", "user@host", "h:2", "a+b"])
def test_valid_node_names(tmp_path: Path, name: str) -> None:
    node = NodeDefaults(node=name, node_index=0, slots=1, master_addr="a", master_port=1)
    job = new_job(tmp_path)
    wrapper = make_wrapper(job, node=node)
    assert run_rank(wrapper, MINIMAL, "true").returncode == 0
    assert status_of(job)["node"] == name


# --- rank.sh under each launcher ---


@pytest.mark.parametrize(
    ("launcher_env", "expected"),
    [
        pytest.param(TORCHRUN, standard("2", "2", "10.9.9.9", "12345"), id="torchrun-sets-everything"),
        pytest.param(LAUNCHER_ENVS["mpiexec"], standard("2"), id="intel-mpi"),
        pytest.param(LAUNCHER_ENVS["mpirun"], standard("2"), id="open-mpi"),
        pytest.param(LAUNCHER_ENVS["horovodrun"], standard("2", group_rank="2"), id="horovod-gloo"),
        pytest.param(MINIMAL, standard(str(NODE.slots)), id="local-world-size-from-slots"),
        pytest.param(
            {**LAUNCHER_ENVS["mpirun"], "PMI_RANK": "0", "PMI_SIZE": "1", "MPI_LOCALNRANKS": "7"},
            standard("2"),
            id="open-mpi-before-pmi",
        ),
        pytest.param(
            {**LAUNCHER_ENVS["mpiexec"], "RANK": "", "WORLD_SIZE": "", "MASTER_PORT": ""},
            standard("2"),
            id="empty-counts-as-unset",
        ),
        pytest.param(
            {**MINIMAL, "OMPI_COMM_WORLD_RANK": "0", "PMI_RANK": "1", "MPI_LOCALNRANKS": "3"},
            standard("3"),
            id="torchrun-names-first",
        ),
        pytest.param({**MINIMAL, "GROUP_RANK": "0", "MASTER_ADDR": "h0"}, standard("4", "0", "h0"), id="some-given"),
    ],
)
def test_standard_variables(tmp_path: Path, launcher_env: dict[str, str], expected: dict[str, str]) -> None:
    _, env = rank_view(make_wrapper(new_job(tmp_path)), launcher_env)
    assert {name: env[name] for name in expected} == expected


# --- rank.sh of an xccl job (PyTorch on Intel GPUs): oneCCL's names for the rank's place on its node ---

XCCL_NAMES = ("CCL_LOCAL_RANK", "CCL_LOCAL_SIZE")


def test_xccl_wrapper_spells_out_the_oneccl_lines(tmp_path: Path) -> None:
    script = make_wrapper(new_job(tmp_path), backend="xccl").read_text()
    contract_end = script.index("export MASTER_PORT=")
    lines = ['export CCL_LOCAL_RANK="$LOCAL_RANK"', 'export CCL_LOCAL_SIZE="$LOCAL_WORLD_SIZE"']
    assert [script.index(line) > contract_end for line in lines] == [True, True]
    comment = "# launcher_backend=xccl: its own names for this rank's place on the node."
    assert "\n".join([comment, *lines, ""]) in script
    assert list(BACKEND_RANK_VARIABLES) == ["xccl"]


@pytest.mark.parametrize(
    ("launcher", "local_rank", "local_size"),
    [
        ("torchrun", "1", "2"),
        ("slurm", "1", "2"),
        ("mpiexec", "1", "2"),
        ("mpirun", "1", "2"),
        ("horovodrun", "1", "2"),
        ("deepspeed", "1", str(NODE.slots)),  # deepspeed's agent sets no LOCAL_WORLD_SIZE: the node's slots
        ("tensorflow", "0", "1"),
    ],
)
def test_xccl_rank_gets_its_local_rank_and_size_whatever_the_launcher(
    tmp_path: Path, launcher: str, local_rank: str, local_size: str
) -> None:
    env = {**ENV, **XCCL_ENV}
    _, shown = rank_view(make_wrapper(new_job(tmp_path), env, backend="xccl"), LAUNCHER_ENVS[launcher])
    assert [shown.get(name) for name in XCCL_NAMES] == [local_rank, local_size]
    assert {name: shown[name] for name in XCCL_ENV} == dict(XCCL_ENV)


def test_xccl_under_torchrun_gets_no_pmi_variables(tmp_path: Path) -> None:
    # PMI_RANK/PMI_SIZE would make PyTorch's ProcessGroupXCCL believe an MPI launcher started the rank (launch.XCCL_ENV).
    _, shown = rank_view(make_wrapper(new_job(tmp_path), backend="xccl"), TORCHRUN)
    assert [name for name in shown if name.startswith(("PMI_", "PMIX_"))] == []


@pytest.mark.parametrize("backend", ["", "gloo", "ccl", "mpi"])
def test_other_backends_add_no_per_rank_variable(tmp_path: Path, backend: str) -> None:
    job = new_job(tmp_path)
    assert render_rank_wrapper(NODE, job, ENV, backend=backend) == render_rank_wrapper(NODE, job, ENV)
    _, shown = rank_view(make_wrapper(job, backend=backend), TORCHRUN)
    assert [name for name in XCCL_NAMES if name in shown] == []


@pytest.mark.parametrize(
    ("job_overrides", "expected_empty"),
    [({}, ()), ({"resume_from": "", "data_dir": ""}, ("RESUME_FROM", "DATA_DIR"))],
)
def test_rank_runs_in_work_dir_with_job_variables_and_env(
    tmp_path: Path, job_overrides: dict[str, str], expected_empty: tuple[str, ...]
) -> None:
    job = new_job(tmp_path, **job_overrides)
    cwd, env = rank_view(make_wrapper(job), TORCHRUN)
    assert cwd.resolve() == Path(job.work_dir).resolve()
    assert {name: env[name] for name, _ in JOB_VARIABLES} == job.variables()
    assert [name for name, _ in JOB_VARIABLES if env[name] == ""] == list(expected_empty)
    assert {name: env[name] for name in ENV} == ENV  # OMP_NUM_THREADS=4 beats torchrun's 1


def test_work_dir_with_spaces(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    work_dir = tmp_path / "my work dir"
    work_dir.mkdir()
    cwd, _ = rank_view(make_wrapper(JobPaths(**{**job.__dict__, "work_dir": str(work_dir)})), TORCHRUN)
    assert cwd.resolve() == work_dir.resolve()


@pytest.mark.parametrize(
    ("launcher_env", "missing"),
    [
        ({}, "RANK (tried RANK OMPI_COMM_WORLD_RANK PMI_RANK HOROVOD_RANK)"),
        ({"RANK": "0", "LOCAL_RANK": "0"}, "WORLD_SIZE (tried WORLD_SIZE OMPI_COMM_WORLD_SIZE PMI_SIZE HOROVOD_SIZE)"),
        (
            {"PMI_RANK": "0", "PMI_SIZE": "2"},
            "LOCAL_RANK (tried LOCAL_RANK OMPI_COMM_WORLD_LOCAL_RANK MPI_LOCALRANKID HOROVOD_LOCAL_RANK)",
        ),
    ],
)
def test_missing_rank_variable_fails_naming_the_variables_tried(
    tmp_path: Path, launcher_env: dict[str, str], missing: str
) -> None:
    job = new_job(tmp_path)
    marker = tmp_path / "ran"
    result = run_rank(make_wrapper(job), launcher_env, "touch", str(marker))
    assert result.returncode != 0
    assert f"no launcher variable gives {missing}" in result.stderr
    assert not marker.exists()
    assert list((Path(job.job_dir) / "status").iterdir()) == []


def test_env_script_is_sourced_before_anything(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    seen = tmp_path / "seen-by-env-script"
    env_script = tmp_path / "my env" / "vars.sh"
    env_script.parent.mkdir()
    env_script.write_text(
        # Runs before `set -u` (reads an unset variable), before the wrapper's own env and the contract,
        # before the start is recorded and in the caller's directory.
        f': "${{NEVER_SET_ANYWHERE}}"\n'
        f'ls "{job.job_dir}/status" > "{seen}"; pwd >> "{seen}"\n'
        "export FROM_SCRIPT=yes OMP_NUM_THREADS=99 MASTER_PORT=4242 I_MPI_ROOT=/opt/intel/mpi\n"
    )
    cwd, env = rank_view(make_wrapper(job, env_script=str(env_script)), MINIMAL)
    assert env["FROM_SCRIPT"] == "yes"
    assert env["I_MPI_ROOT"] == "/opt/intel/mpi"
    assert env["OMP_NUM_THREADS"] == "4"  # the wrapper's env comes after the script
    assert env["MASTER_PORT"] == "4242"  # the script runs before the contract, as a launcher would
    assert seen.read_text().splitlines() == [os.getcwd()]  # no status file yet, not yet in work_dir
    assert cwd.resolve() == Path(job.work_dir).resolve()


@pytest.mark.parametrize(("body", "code"), [("return 7", 7), ("false", 1)])
def test_failing_env_script_stops_the_rank(tmp_path: Path, body: str, code: int) -> None:
    job = new_job(tmp_path)
    env_script = tmp_path / "vars.sh"
    env_script.write_text(f"{body}\n")
    marker = tmp_path / "ran"
    result = run_rank(make_wrapper(job, env_script=str(env_script)), MINIMAL, "touch", str(marker))
    assert result.returncode == code
    assert not marker.exists()
    assert not Path(status_file(job.job_dir, RANK)).exists()


def test_missing_env_script_stops_the_rank(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    result = run_rank(make_wrapper(job, env_script=str(tmp_path / "absent.sh")), MINIMAL, "true")
    assert result.returncode != 0
    assert "absent.sh" in result.stderr
    assert not Path(status_file(job.job_dir, RANK)).exists()


# --- exit status, status file and log ---


@pytest.mark.parametrize(
    ("script", "code", "signal_number"),
    [
        ("exit 0", 0, None),
        ("exit 3", 3, None),
        ("exit 1", 1, None),
        ("kill -KILL $$", 137, 9),
        ("kill -TERM $$", 143, 15),  # a signal the wrapper did not pass on: not stopped
    ],
)
def test_exit_code_is_passed_through_and_recorded(
    tmp_path: Path, script: str, code: int, signal_number: int | None
) -> None:
    job = new_job(tmp_path)
    before = time.time()
    result = run_rank(make_wrapper(job), TORCHRUN, "bash", "-c", script)
    after = time.time()
    assert result.returncode == code
    status = status_of(job)
    assert tuple(status) == STATUS_FIELDS
    assert {key: status[key] for key in ("rank", "node", "host", "code", "signal", "stopped")} == {
        "rank": RANK,
        "node": NODE.node,
        "host": socket.gethostname(),
        "code": code,
        "signal": signal_number,
        "stopped": False,
    }
    assert before - 1 <= status["started"] <= status["ended"] <= after + 1
    assert not Path(status_file(job.job_dir, RANK) + ".tmp").exists()


def test_status_is_what_the_run_summary_reads(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    wrapper = make_wrapper(job)
    for rank, code in ((0, 0), (1, 3)):
        run_rank(wrapper, {**MINIMAL, "RANK": str(rank), "WORLD_SIZE": "2"}, "bash", "-c", f"exit {code}")
    records = read_run_dir(tmp_path / "run", [NODE.node])
    assert sorted(records.rank_status) == [0, 1]
    summary = summarize(
        records,
        job_id="job-7",
        launcher="torchrun",
        nodes=["10.0.0.2"],
        node_names=[NODE.node],
        world_size=2,
        timed_out=False,
        launcher_exit_code=1,
    )
    assert summary["failure_reasons"] == ["rank 1 on node2 exited 3", "launcher exited 1"]
    assert summary["rank_exit_codes"] == {"0": 0, "1": 3}
    assert summary["phases"]["train"] is not None


def test_stdout_and_stderr_are_appended_to_the_rank_log(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    rank_log(job).write_text("an earlier attempt\n")
    result = run_rank(make_wrapper(job), TORCHRUN, "bash", "-c", "echo to-stdout; echo to-stderr >&2; exit 2")
    assert result.returncode == 2
    assert launcher_stream(result.stdout, RANK) == "to-stdout\n"
    assert result.stderr == f"[rank {RANK} {NODE.node}] to-stderr\n"
    lines = rank_log(job).read_text().splitlines()
    assert lines[0] == "an earlier attempt"
    assert sorted(lines[1:]) == ["to-stderr", "to-stdout"]


def test_the_end_marker_is_last_and_carries_the_exit_code(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    result = run_rank(make_wrapper(job), TORCHRUN, "bash", "-c", "echo done; exit 4")
    assert result.stdout.splitlines()[-1] == f"[rank {RANK} {NODE.node}] {RANK_ENDED} 4"


def test_the_rank_log_is_complete_when_the_end_marker_arrives(tmp_path: Path) -> None:
    # The job's followers stop at the marker and the node is collected at once: nothing may still be on its way.
    job = new_job(tmp_path)
    script = "for i in $(seq 3000); do echo out-$i; echo err-$i >&2; done"
    process = subprocess.Popen(**{**rank_command(make_wrapper(job), TORCHRUN, ("bash", "-c", script)), "stderr": subprocess.DEVNULL})
    assert process.stdout is not None
    for line in process.stdout:
        if RANK_ENDED in line:
            break
    logged = rank_log(job).read_text().splitlines()
    process.communicate(timeout=30)
    assert len(logged) == 6000
    assert logged.count("out-3000") == 1 and logged.count("err-3000") == 1


def test_a_process_left_holding_the_output_delays_the_end_by_at_most_seconds(tmp_path: Path) -> None:
    # A daemon the rank started keeps the output streams open: the wrapper still ends, long before the daemon does
    # (the stream is a file here, a pipe would be held open by the daemon). The bound is the daemon's life, not a
    # quiet machine's 2 s: beside the other lanes on CI this took 10.9 s against 2.1 s quiet.
    job = new_job(tmp_path)
    stream = tmp_path / "stream"
    daemon_pid_file = tmp_path / "daemon.pid"
    command = ("bash", "-c", f"echo bye; (sleep 600 & echo $! > {daemon_pid_file}); exit 0")
    try:
        with stream.open("w") as output:
            start = time.monotonic()
            code = subprocess.run(**{**rank_command(make_wrapper(job), TORCHRUN, command), "stdout": output, "stderr": output}, timeout=300).returncode
        elapsed = time.monotonic() - start
    finally:
        os.kill(int(daemon_pid_file.read_text()), signal.SIGKILL)
    assert code == 0
    assert elapsed < 120
    assert stream.read_text().splitlines()[-1].endswith(f"{RANK_ENDED} 0")


def test_a_process_left_holding_the_output_does_not_hold_the_launcher_s_stream(tmp_path: Path) -> None:
    # The launcher reads the wrapper's stdout through a pipe and ends when it closes: a daemon the rank started with
    # the rank's output (a server, `subprocess.Popen` without redirection) held it through the wrapper's tee and sed
    # for its whole life, and the job ran to its timeout after every rank had succeeded (2026-12-02, mpiexec and
    # torchrun alike). Those are stopped at the rank's end, and the rank's stream and log say so.
    job = new_job(tmp_path)
    daemon_pid_file = tmp_path / "daemon.pid"
    command = ("bash", "-c", f"echo bye; (sleep 600 & echo $! > {daemon_pid_file}); exit 0")
    process = subprocess.Popen(**{**rank_command(make_wrapper(job), TORCHRUN, command), "stderr": subprocess.DEVNULL})
    try:
        stream, _ = process.communicate(timeout=120)  # to the stream's end: every writer has closed it
        assert process.returncode == 0
        assert alive(int(daemon_pid_file.read_text())), "the daemon itself is the user's: it is left running"
    finally:
        os.kill(int(daemon_pid_file.read_text()), signal.SIGKILL)
    lines = stream.splitlines()
    assert lines[-2:] == [f"[rank {RANK} {NODE.node}] {LEFT_BEHIND_NOTE}", f"[rank {RANK} {NODE.node}] {RANK_ENDED} 0"]
    assert rank_log(job).read_text().splitlines() == ["bye", LEFT_BEHIND_NOTE]


def test_the_ranks_whose_logs_end_with_the_note_are_found(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank-0.log").write_text("epoch 1\n")
    (logs / "rank-2.log").write_text("x" * 100_000 + f"\n{LEFT_BEHIND_NOTE}\n")
    (logs / "rank-10.log").write_text(f"bye\n{LEFT_BEHIND_NOTE}\n")
    (logs / "rank-1.log").write_text(f"{LEFT_BEHIND_NOTE}\n" + "later output\n" * 1000)  # not its end
    (logs / "launcher.log").write_text(LEFT_BEHIND_NOTE)
    assert ranks_that_left_a_process(str(logs)) == [2, 10]
    assert ranks_that_left_a_process(str(tmp_path / "none")) == []


def test_a_rank_that_left_nothing_behind_ends_without_the_note(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    result = run_rank(make_wrapper(job), TORCHRUN, "bash", "-c", "echo bye; (sleep 0.2 &); exit 0")
    assert LEFT_BEHIND_NOTE not in result.stdout
    assert rank_log(job).read_text() == "bye\n"


# A beat this long that a descriptor or stream held until the next beat is told from a busy machine's delay.
LONG_BEAT_SECONDS = 60


def test_nothing_the_wrapper_started_holds_an_inherited_descriptor_after_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mpiexec's proxy passes the rank a descriptor of its own (the PMI socket) and waits for every holder to close
    # it before it ends: the watcher's sleep, left behind, held it for up to a beat after the rank's end.
    monkeypatch.setattr(events, "BEAT_SECONDS", LONG_BEAT_SECONDS)
    job = new_job(tmp_path)
    reader, writer = os.pipe()
    process = subprocess.Popen(
        **{**rank_command(make_wrapper(job), TORCHRUN, ("bash", "-c", "sleep 0.5")), "pass_fds": (writer,)}
    )
    os.close(writer)
    process.communicate(timeout=20)
    wrapper_ended = time.monotonic()
    readable, _, _ = select.select([reader], [], [], LONG_BEAT_SECONDS + 1)
    closed_after = time.monotonic() - wrapper_ended
    assert readable and os.read(reader, 1) == b""
    os.close(reader)
    assert closed_after < LONG_BEAT_SECONDS / 3, f"the descriptor was held {closed_after:.1f} s after the wrapper ended"


def test_a_closed_launcher_stream_does_not_change_the_exit_code(tmp_path: Path) -> None:
    # The launcher (the reader of the wrapper's stdout) is gone when the rank ends: the wrapper still exits with
    # the rank's own code, not SIGPIPE's.
    job = new_job(tmp_path)
    reader, writer = os.pipe()
    process = subprocess.Popen(
        **{**rank_command(make_wrapper(job), TORCHRUN, ("bash", "-c", "sleep 0.5; exit 3")), "stdout": writer, "stderr": subprocess.DEVNULL}
    )
    os.close(writer)
    os.read(reader, 4096)  # the start line
    os.close(reader)
    assert process.wait(timeout=20) == 3
    assert status_of(job)["code"] == 3


def test_each_rank_has_its_own_log(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    wrapper = make_wrapper(job)
    for rank in (0, 1):
        run_rank(wrapper, {**MINIMAL, "RANK": str(rank)}, "bash", "-c", 'echo "I am $RANK"')
    assert [rank_log(job, rank).read_text() for rank in (0, 1)] == ["I am 0\n", "I am 1\n"]


# --- signals ---


def test_sigterm_is_passed_to_the_rank_and_recorded_as_stopped(tmp_path: Path, started: Callable) -> None:
    job = new_job(tmp_path)
    process, pid = started(make_wrapper(job), TORCHRUN, "exec sleep 30")
    assert tuple(status_of(job)) == ("rank", "node", "host", "started")  # running: no end yet
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=10)
    assert process.returncode == 143
    assert {key: status_of(job)[key] for key in ("code", "signal", "stopped")} == {
        "code": 143,
        "signal": 15,
        "stopped": True,
    }
    assert not alive(pid)


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_stop_signals_reach_the_rank_as_sigterm_and_the_wrapper_waits_for_its_end(
    tmp_path: Path, started: Callable, sent: signal.Signals
) -> None:
    job = new_job(tmp_path)
    got = tmp_path / "got"
    # The rank cleans up for a moment after SIGTERM, then exits 7: the wrapper records that, not the interrupted wait.
    trap = f"trap 'echo TERM > \"{got}\"; kill $!; sleep 0.3; echo cleaned; exit 7' TERM"
    process, pid = started(make_wrapper(job), TORCHRUN, "sleep 30 & wait", prepare=trap)
    process.send_signal(sent)
    out, _ = process.communicate(timeout=10)
    assert process.returncode == 7
    assert got.read_text() == "TERM\n"
    assert launcher_stream(out, RANK) == "cleaned\n"
    assert {key: status_of(job)[key] for key in ("code", "signal", "stopped")} == {
        "code": 7,
        "signal": None,
        "stopped": True,
    }
    assert not alive(pid)


def test_recorded_status_is_the_rank_s_own_even_when_it_ends_at_once(tmp_path: Path, started: Callable) -> None:
    job = new_job(tmp_path)
    wrapper = make_wrapper(job)
    for _ in range(30):  # it loses the race about one time in ten to three
        process, _ = started(wrapper, TORCHRUN, "exec sleep 30")
        process.send_signal(signal.SIGHUP)  # passed on as SIGTERM: the rank dies of signal 15 at once
        process.communicate(timeout=10)
        assert (process.returncode, status_of(job)["signal"]) == (143, 15)


def test_sigkill_of_the_wrapper_kills_the_rank(tmp_path: Path, started: Callable) -> None:
    job = new_job(tmp_path)
    process, pid = started(make_wrapper(job), TORCHRUN, "exec sleep 30")
    assert alive(pid)
    process.kill()
    process.communicate(timeout=10)  # returns once the rank (and its log's tee) closed the output
    wait_for(lambda: not alive(pid), timeout=5)
    assert tuple(status_of(job)) == ("rank", "node", "host", "started")  # start recorded, no end


# --- quoting of the paths and fallbacks ---


def test_job_dir_with_shell_characters(tmp_path: Path) -> None:
    job = new_job(tmp_path / "a$HOME`b`")
    assert run_rank(make_wrapper(job), MINIMAL, "true").returncode == 0
    assert status_of(job)["code"] == 0


def test_empty_master_addr_fallback_is_empty(tmp_path: Path) -> None:
    node = NodeDefaults(node="node2", node_index=1, slots=4, master_addr="", master_port=29500)
    _, env = rank_view(make_wrapper(new_job(tmp_path), node=node), MINIMAL)
    assert env["MASTER_ADDR"] == ""


def test_placeholders_in_names_each_placeholder_in_order() -> None:
    assert placeholders_in(["--out={output_dir}/x", "{job_id}{data_dir}", "{foo}", "{ job_id }"]) == [
        "output_dir",
        "job_id",
        "data_dir",
    ]


# --- the watcher: beats on the launcher's stream, a stack dump of a rank without progress ---

BEAT_LINE = re.compile(re.escape(RANK_BEAT) + r" (\S+) (\d+\.\d\d)(?: (\d+))?")


def watched_wrapper(job: JobPaths, stack_dump_after: int) -> Path:
    path = Path(job.job_dir) / "rank.sh"
    path.write_text(render_rank_wrapper(NODE, job, ENV, stack_dump_after=stack_dump_after))
    return path


def beats_in(stream_text: str) -> list[tuple[str, float]]:
    """(state, CPU seconds) of every beat among the lines a rank's wrapper passed to the launcher."""
    return [(match.group(1), float(match.group(2))) for match in map(BEAT_LINE.fullmatch, stream_text.splitlines()) if match]


def busy_shares(stream_text: str) -> list[int | None]:
    """The busy percent of every beat (None on the first, which has nothing to compare with)."""
    matches = [match for match in map(BEAT_LINE.fullmatch, stream_text.splitlines()) if match]
    return [None if match.group(3) is None else int(match.group(3)) for match in matches]


@pytest.mark.parametrize("stack_dump_after", [0, 30])
def test_the_wrapper_always_watches_the_rank_and_is_valid_bash(tmp_path: Path, stack_dump_after: int) -> None:
    wrapper = watched_wrapper(new_job(tmp_path), stack_dump_after)
    script = wrapper.read_text()
    assert "watch_rank() {" in script
    assert "\nwatch_rank {out}>&- {err}>&- </dev/null &\n" in script
    assert f"'{RANK_BEAT}'" in script
    assert f"while sleep {BEAT_SECONDS} " in script
    assert "trap '[ -z \"$nap\" ] || kill \"$nap\" 2>/dev/null; exit 0' TERM" in script
    result = subprocess.run(["bash", "-n", str(wrapper)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_stack_dump_is_in_the_wrapper_only_when_asked_for(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    assert "py-spy" not in make_wrapper(job).read_text()  # the default: no dump
    assert "py-spy" not in watched_wrapper(job, 0).read_text()
    script = watched_wrapper(job, 30).read_text()
    assert 'py-spy dump --pid "$child" --nonblocking' in script
    assert '[ "$idle" -ge 30 ]' in script
    assert '"$job_dir/logs/stack-rank-$RANK.txt"' in script


def test_a_busy_then_sleeping_rank_beats_its_cpu_and_gets_its_stacks_dumped(tmp_path: Path) -> None:
    """Busy for 6 s, then asleep until its stacks are dumped (after 5 s without progress: by py-spy, or the note that
    it could not) and two beats more: the beats (every 5 s) say R then S, the CPU seconds grow then stay flat.
    The sleep waits for the dump, not for a time: on a loaded machine a beat comes later than every 5 s (it reads
    every process's stat), and CI once saw only two in a fixed 16 s."""
    job = new_job(tmp_path)
    dump = Path(job.job_dir) / "logs" / f"stack-rank-{RANK}.txt"
    program = (
        "import os, time\nstart = time.monotonic()\nwhile time.monotonic() - start < 6:\n    pass\n"
        f"while not os.path.exists({str(dump)!r}) and time.monotonic() - start < 120:\n    time.sleep(0.2)\n"
        f"time.sleep(2 * {BEAT_SECONDS})\n"
    )
    command = (sys.executable, "-c", program)
    result = subprocess.run(**rank_command(watched_wrapper(job, 5), TORCHRUN, command), timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    beats = beats_in(launcher_stream(result.stdout, RANK))
    assert len(beats) >= 3, result.stdout
    states, cpu = [state for state, _ in beats], [seconds for _, seconds in beats]
    assert states[0] == "R" and states[-1] == "S", beats
    # CPU seconds, not ticks: some at the first beat (all of them on an idle machine, a few tenths beside other
    # work), never more than the rank's 6 s of busy loop and its start.
    assert 0.1 <= cpu[0] <= cpu[-1] <= 8.0, beats
    assert cpu[1] > cpu[0], beats  # still busy for a second after it
    assert cpu == sorted(cpu), beats
    assert cpu[-1] - cpu[-2] < 0.1, beats  # asleep: flat
    busy = busy_shares(launcher_stream(result.stdout, RANK))
    assert busy[0] is None, busy  # nothing to compare the first beat with
    # About 1 s of busy loop in the 5 s since the first beat: about 20 % on an idle machine, less when other work
    # shares the CPU (the loop's second is wall-clock time), never all of it.
    assert 1 <= busy[1] <= 40, busy
    assert busy[-1] <= 5, busy  # asleep
    assert RANK_BEAT not in rank_log(job).read_text(), "the beats go to the launcher's stream only"
    assert dump.is_file()
    text = dump.read_text()
    assert "no stack dump: py-spy failed or is not installed" in text or ("Thread" in text and "<module>" in text), text
    assert status_of(job)["code"] == 0


def test_a_stopped_rank_beats_state_t_and_is_continued_to_stop(tmp_path: Path, started: Callable) -> None:
    job = new_job(tmp_path)
    process, pid = started(watched_wrapper(job, 0), TORCHRUN, "exec sleep 30")
    os.kill(pid, signal.SIGSTOP)
    assert process.stdout is not None
    beat = next(line for line in process.stdout if RANK_BEAT in line)
    assert BEAT_LINE.search(beat) is not None and BEAT_LINE.search(beat).group(1) == "T", beat
    process.send_signal(signal.SIGTERM)  # passed on as SIGTERM, then SIGCONT so the frozen rank can act on it
    process.communicate(timeout=15)
    assert process.returncode == 143
    assert {key: status_of(job)[key] for key in ("code", "signal", "stopped")} == {"code": 143, "signal": 15, "stopped": True}


def test_the_watcher_does_not_hold_the_rank_s_output_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "BEAT_SECONDS", LONG_BEAT_SECONDS)
    job = new_job(tmp_path)
    start = time.monotonic()
    process = subprocess.Popen(**rank_command(watched_wrapper(job, 0), TORCHRUN, ("sleep", "1")))
    assert process.stdout is not None
    ended_at = next(time.monotonic() for line in process.stdout if RANK_ENDED in line) - start
    process.communicate(timeout=15)
    closed_at = time.monotonic() - start
    assert process.returncode == 0
    assert ended_at < LONG_BEAT_SECONDS / 3, f"the end marker came {ended_at:.1f} s after the start of a 1 s rank"
    assert closed_at < LONG_BEAT_SECONDS / 3, f"the launcher's stream closed {closed_at:.1f} s after the start of a 1 s rank"


# --- the workload's requirements layer, first on PYTHONPATH and PATH ---

LAYER = "/opt/w/envs/abc/site"
LAYER_PYTHONPATH_LINE = f'export PYTHONPATH={LAYER}"${{PYTHONPATH:+:$PYTHONPATH}}"'
LAYER_PATH_LINE = f'export PATH={LAYER}/bin":$PATH"'


def layer_wrapper(job: JobPaths, python_path: list[str], env: Mapping[str, str] = ENV, *, env_script: str = "") -> Path:
    path = Path(job.job_dir) / "rank.sh"
    path.write_text(render_rank_wrapper(NODE, job, env, env_script=env_script, python_path=python_path))
    return path


def layer_lines(script: str) -> list[str]:
    """The lines of ``script`` that set PYTHONPATH or PATH, but the exit guard's."""
    return [
        line
        for line in script.splitlines()
        if line.startswith(("export PYTHONPATH=", "export PATH=")) and f"/{EXIT_GUARD_DIR}\"" not in line
    ]


def guard_lines(script: str) -> list[str]:
    """The lines of ``script`` that put the exit guard on PYTHONPATH."""
    return [line for line in script.splitlines() if line.startswith("export PYTHONPATH=") and line not in layer_lines(script)]


def evaluated(lines: list[str], environment: Mapping[str, str]) -> tuple[str, str]:
    """PYTHONPATH and PATH after bash ran ``lines`` under ``set -u`` in ``environment``."""
    script = "\n".join(["set -u", *lines, 'printf "%s\\n%s\\n" "$PYTHONPATH" "$PATH"'])
    result = subprocess.run(
        ["bash", "-c", script], env=dict(environment), capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    python_path, path = result.stdout.splitlines()
    return python_path, path


def new_layer(tmp_path: Path, name: str = "site") -> Path:
    """A layer directory with a module ``layer_probe`` and a console script ``layer-tool`` in its bin."""
    site = tmp_path / "layers" / name
    (site / "bin").mkdir(parents=True)
    (site / "layer_probe.py").write_text(f"WHERE = {name!r}\n")
    tool = site / "bin" / "layer-tool"
    tool.write_text(f"#!/bin/sh\necho layer-tool of {name}\n")
    tool.chmod(0o755)
    return site


def test_without_python_path_the_script_leaves_pythonpath_and_path_alone(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    guard = shlex.quote(exit_guard_dir(job.job_dir))
    for script in (make_wrapper(job).read_text(), layer_wrapper(job, []).read_text()):
        assert guard_lines(script) == [f'export PYTHONPATH={guard}"${{PYTHONPATH:+:$PYTHONPATH}}"']
        assert not layer_lines(script)


def test_python_path_is_first_on_pythonpath_and_its_bin_first_on_path(tmp_path: Path) -> None:
    script = layer_wrapper(new_job(tmp_path), [LAYER]).read_text()
    assert layer_lines(script) == [LAYER_PYTHONPATH_LINE, LAYER_PATH_LINE]


def test_python_path_is_set_after_set_u_and_before_the_contract(tmp_path: Path) -> None:
    lines = layer_wrapper(new_job(tmp_path), [LAYER]).read_text().splitlines()
    set_u = lines.index("set -u")
    python_path = lines.index(LAYER_PYTHONPATH_LINE)
    path = lines.index(LAYER_PATH_LINE)
    first_contract = min(index for index, line in enumerate(lines) if line.startswith(f"export {CONTRACT[0].name}="))
    assert set_u < python_path < first_contract
    assert set_u < path < first_contract


def test_several_python_path_directories_keep_their_order(tmp_path: Path) -> None:
    script = layer_wrapper(new_job(tmp_path), ["/opt/a/site", "/opt/b/site"]).read_text()
    assert layer_lines(script) == [
        'export PYTHONPATH=/opt/a/site:/opt/b/site"${PYTHONPATH:+:$PYTHONPATH}"',
        'export PATH=/opt/a/site/bin:/opt/b/site/bin":$PATH"',
    ]


@pytest.mark.parametrize("directory", ["opt/w/site", "site", "./site", "~/site", "", "/opt/a:b/site", "/opt/a/site:"])
def test_a_relative_python_path_or_one_with_a_colon_is_refused(tmp_path: Path, directory: str) -> None:
    with pytest.raises(ContractError, match="python_path"):
        render_rank_wrapper(NODE, new_job(tmp_path), ENV, python_path=["/opt/w/site", directory])


@pytest.mark.parametrize("python_path", [[LAYER], ["/opt/my env/site", "/opt/a$HOME`id`'q'/site"]])
def test_the_script_with_python_path_is_valid_bash(tmp_path: Path, python_path: list[str]) -> None:
    wrapper = layer_wrapper(new_job(tmp_path), python_path)
    result = subprocess.run(["bash", "-n", str(wrapper)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_layer_lines_in_bash_without_pythonpath(tmp_path: Path) -> None:
    lines = layer_lines(layer_wrapper(new_job(tmp_path), [LAYER]).read_text())
    python_path, path = evaluated(lines, {"PATH": "/usr/bin:/bin"})
    assert python_path == LAYER  # no empty entry (the working directory) after it
    assert path == f"{LAYER}/bin:/usr/bin:/bin"


def test_the_layer_lines_in_bash_with_pythonpath(tmp_path: Path) -> None:
    lines = layer_lines(layer_wrapper(new_job(tmp_path), [LAYER]).read_text())
    python_path, path = evaluated(lines, {"PATH": "/usr/bin:/bin", "PYTHONPATH": "/image/lib:/more"})
    assert python_path == f"{LAYER}:/image/lib:/more"
    assert path == f"{LAYER}/bin:/usr/bin:/bin"


def test_the_layer_lines_in_bash_with_an_empty_pythonpath(tmp_path: Path) -> None:
    lines = layer_lines(layer_wrapper(new_job(tmp_path), [LAYER]).read_text())
    python_path, path = evaluated(lines, {"PATH": "/usr/bin", "PYTHONPATH": ""})
    assert python_path == LAYER
    assert path == f"{LAYER}/bin:/usr/bin"


def test_the_layer_lines_in_bash_with_shell_characters_in_the_directory(tmp_path: Path) -> None:
    directory = "/opt/my env/a$HOME`id`'q'/site"
    lines = layer_lines(layer_wrapper(new_job(tmp_path), [directory]).read_text())
    python_path, path = evaluated(lines, {"PATH": "/usr/bin", "PYTHONPATH": "/image/lib"})
    assert python_path == f"{directory}:/image/lib"
    assert path == f"{directory}/bin:/usr/bin"


def test_a_rank_imports_from_the_layer_and_runs_its_programs(tmp_path: Path) -> None:
    layer = new_layer(tmp_path)
    job = new_job(tmp_path)
    wrapper = layer_wrapper(job, [str(layer)])
    env = rank_view(wrapper, {**TORCHRUN, "PYTHONPATH": "/image/lib"})[1]
    assert env["PYTHONPATH"] == f"{exit_guard_dir(job.job_dir)}:{layer}:/image/lib"
    assert env["PATH"] == f"{layer}/bin:{os.environ['PATH']}"
    program = "import layer_probe; print(layer_probe.WHERE)"
    result = run_rank(wrapper, TORCHRUN, sys.executable, "-c", program)
    assert result.returncode == 0, result.stderr
    assert launcher_stream(result.stdout, RANK) == "site\n"
    result = run_rank(wrapper, TORCHRUN, "layer-tool")
    assert result.returncode == 0, result.stderr
    assert launcher_stream(result.stdout, RANK) == "layer-tool of site\n"


def test_the_layer_comes_before_what_the_env_script_puts_on_pythonpath(tmp_path: Path) -> None:
    env_script = tmp_path / "vars.sh"
    env_script.write_text("export PYTHONPATH=/from/vars${PYTHONPATH:+:$PYTHONPATH}\n")
    job = new_job(tmp_path)
    wrapper = layer_wrapper(job, [LAYER], env_script=str(env_script))
    env = rank_view(wrapper, {**TORCHRUN, "PYTHONPATH": "/image/lib"})[1]
    assert env["PYTHONPATH"] == f"{exit_guard_dir(job.job_dir)}:{LAYER}:/from/vars:/image/lib"


def test_the_layer_stays_first_when_the_node_env_sets_pythonpath(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    wrapper = layer_wrapper(job, [LAYER], {**ENV, "PYTHONPATH": "/from/launcher_env"})
    env = rank_view(wrapper, TORCHRUN)[1]
    assert env["PYTHONPATH"].split(":")[:2] == [exit_guard_dir(job.job_dir), LAYER]


def test_a_rank_that_aborts_leaves_its_python_stacks_in_its_log(tmp_path: Path) -> None:
    job = new_job(tmp_path)
    script = "import os\ndef last_call():\n    os.abort()\nlast_call()\n"
    result = run_rank(make_wrapper(job), TORCHRUN, sys.executable, "-c", script)
    assert result.returncode == 128 + 6
    log = rank_log(job).read_text()
    assert "Fatal Python error: Aborted" in log
    assert 'in last_call' in log, log


def test_the_rank_knows_the_wrapper_as_its_parent(tmp_path: Path) -> None:
    # The exit guard records the world of the wrapper's own child only (rank_exit_guard.record_world).
    job = new_job(tmp_path)
    check = f"import os; print(os.environ[{WRAPPER_PID_VARIABLE!r}] == str(os.getppid()))"
    result = run_rank(make_wrapper(job), TORCHRUN, sys.executable, "-c", check)
    assert result.returncode == 0, result.stderr
    assert launcher_stream(result.stdout) == "True\n"
