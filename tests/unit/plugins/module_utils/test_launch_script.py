# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Golden launch scripts for a 3-host example, and the scripts run against fake ssh and launchers."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import HostEntry
from ansible_collections.multinode.training.plugins.module_utils.launch import (
    LAUNCHERS,
    REGISTRY,
    LaunchError,
    LaunchSpec,
    build,
)
from ansible_collections.multinode.training.plugins.module_utils.launch_script import (
    NUL_TEXT,
    SSH_MULTIPLEXING,
    SSH_MUX_DIR_MAX,
    SSH_MUX_LOG,
    ReadyCheck,
    render_launch_script,
)
from ansible_collections.multinode.training.plugins.module_utils.run_report import parse_events

HOSTS = [
    HostEntry(name="node1", address="10.0.0.1", slots=2),
    HostEntry(name="node2", address="10.0.0.2", slots=2),
    HostEntry(name="node3", address="10.0.0.3", slots=2),
]
SPEC = LaunchSpec(
    launcher="torchrun",
    hosts=HOSTS,
    launcher_address="10.0.0.1",
    iface="eth1",
    hostfile_path="/work/jobs/job-1/hostfile",
    ssh_port=2222,
    job_id="job-1",
    command=["bash", "/work/jobs/job-1/rank.sh", "python3", "train.py", "--epochs", "15"],
    omp_num_threads=8,
    env={"KMP_BLOCKTIME": "1"},
)
DIRS = {"job_dir": "/work/jobs/job-1", "work_dir": "/work/jobs/job-1/work"}
GOLDEN = Path(__file__).parent / "fixtures" / "launch_script"

MPIRUN_COMMAND = """\
mpirun \\
  -np 6 \\
  --hostfile /work/jobs/job-1/hostfile \\
  --map-by ppr:2:node \\
  --mca btl_tcp_if_include eth1 \\
  --mca oob_tcp_if_include eth1 \\
  --mca plm_rsh_agent ssh \\
  --mca plm_rsh_args '-p 2222' \\
  -x OMP_NUM_THREADS=8 \\
  -x I_MPI_HYDRA_IFACE=eth1 \\
  -x FI_TCP_IFACE=eth1 \\
  -x FI_SOCKETS_IFACE=eth1 \\
  -x CCL_KVS_IFACE=eth1 \\
  -x GLOO_SOCKET_IFNAME=eth1 \\
  -x NCCL_SOCKET_IFNAME=eth1 \\
  -x MASTER_ADDR=10.0.0.1 \\
  -x MASTER_PORT=29500 \\
  -x KMP_BLOCKTIME=1 \\
  bash /work/jobs/job-1/rank.sh python3 train.py --epochs 15 >"$logs/mpirun.log" 2>&1 </dev/null &
launcher=$!
"""


def spec(**changes) -> LaunchSpec:
    return dataclasses.replace(SPEC, **changes)


ONE_PER_HOST = [dataclasses.replace(host, slots=1) for host in HOSTS]


def render(**changes) -> str:
    return render_launch_script(spec(**changes), **DIRS)


# ---------------------------------------------------------------- golden scripts


@pytest.mark.parametrize("launcher", ["torchrun", "mpiexec"])
def test_golden(launcher):
    assert render(launcher=launcher) == (GOLDEN / f"{launcher}.sh").read_text()


def test_mpirun_writes_its_own_log_and_launcher_exit():
    script = render(launcher="mpirun")
    assert "its output goes to $logs/mpirun.log.\n" + MPIRUN_COMMAND in script
    assert 'event launch \', "launcher": "mpirun"\'\n' in script


@pytest.mark.parametrize(
    "changes",
    [{"launcher": launcher} for launcher in LAUNCHERS if not REGISTRY[launcher].one_rank_per_node]
    + [{"launcher": launcher, "hosts": ONE_PER_HOST} for launcher in LAUNCHERS if REGISTRY[launcher].one_rank_per_node]
    + [{"rdzv": "static"}, {"launcher": "ipexrun", "ipex_version": "2.0"}, {"command": ["echo", "a b", "it's"]}],
)
def test_every_script_is_valid_bash(changes):
    check = subprocess.run(["bash", "-n"], input=render(**changes), capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


# ---------------------------------------------------------------- quoting and names


def test_quotes_an_argument_with_spaces_for_the_local_and_the_remote_shell():
    script = render(command=["echo", "a b"])
    assert "--no-python echo '\"'\"'a b'\"'\"'' >\"$logs/node1.log\"" in script
    assert "  echo 'a b' >\"$logs/mpiexec.log\"" in render(launcher="mpiexec", command=["echo", "a b"])


def test_quotes_the_directories():
    script = render_launch_script(SPEC, job_dir="/work/my jobs/job-1", work_dir="/work/my code")
    assert "cd '/work/my code' || exit\nlogs='/work/my jobs/job-1/logs'\n" in script
    assert "-- 10.0.0.1 'cd '\"'\"'/work/my code'\"'\"' && echo $$ " in script


def test_job_id_cannot_break_out_of_the_comment():
    script = render(job_id="job-1\nrm -rf /")
    assert "# Job job-1 rm -rf /: torchrun across 3 nodes.\n" in script


def with_second_host_named(name: str) -> list[HostEntry]:
    return [HOSTS[0], HostEntry(name=name, address="10.0.0.2", slots=2), HOSTS[2]]


@pytest.mark.parametrize("name", ["node 2", 'node"2', "node$2", "", "node/2"])
def test_unusable_node_name(name):
    with pytest.raises(LaunchError, match="cannot name a log file"):
        render(hosts=with_second_host_named(name))


def test_node_names_must_stay_unique():
    with pytest.raises(LaunchError, match="node names are not unique: node1, node1, node3"):
        render(hosts=with_second_host_named("node1"))


def test_build_errors_propagate():
    with pytest.raises(LaunchError, match="the host list is empty"):
        render(hosts=[])


# ---------------------------------------------------------------- running the scripts

# ssh [-p PORT] [-o OPT] -- ADDRESS COMMAND...: run COMMAND through a shell, as sshd does, with the job
# directory (all "nodes" are this machine) renamed per address, so each node has its own agent.pid.
# The SSH check (`true`) of 10.0.0.9 is refused, as a host whose key changed is.
FAKE_SSH = r"""#!/bin/bash
while [ "$1" != -- ]; do shift 2; done
address=$2; shift 2
command="$*"
if [ "$address" = 10.0.0.9 ] && [ "$command" = true ]; then
  echo "Host key for [$address]:2222 has changed and you have requested strict checking." >&2
  echo "Host key verification failed." >&2
  exit 255
fi
mkdir -p "$JOB-$address/work"
exec bash -c "${command//$JOB\//$JOB-$address/}"
"""
# Prints its working directory and arguments in one write (cat, not the shell's builtins, which write line by
# line): agents started at once (srun's, one per node) share one log, where lines written one by one interleave. On 10.0.0.2 it fails with 3 after FAIL_AFTER seconds,
# elsewhere runs until SIGTERM (exit 143), as torchrun agents whose ranks wait on a dead peer do.
FAKE_LAUNCHER = """\
#!/bin/bash
said=$(pwd; printf '<%s>\\n' "$@")
cat <<<"$said"
case " $* " in *" 10.0.0.2 "*) sleep "${FAIL_AFTER:-0}"; exit 3 ;; esac
[ -n "${HANG:-}" ] || exit 0
trap 'echo stopped; exit 143' TERM
sleep 60 & wait
"""


def run_script(
    tmp_path: Path,
    script: str,
    launcher: str,
    *,
    launcher_dir: Path | None = None,
    env: dict[str, str] | None = None,
    fake: str = FAKE_LAUNCHER,
) -> tuple[int, Path, float]:
    """Run ``script`` with the fake ssh and launcher (``fake``) on PATH; returns its exit code, logs and seconds."""
    bin_dir, work_dir, logs = tmp_path / "bin", tmp_path / "job" / "work", tmp_path / "job" / "logs"
    launcher_dir = launcher_dir or bin_dir
    for directory in (bin_dir, launcher_dir, work_dir, logs):
        directory.mkdir(parents=True, exist_ok=True)
    for path, text in ((bin_dir / "ssh", FAKE_SSH), (launcher_dir / launcher, fake)):
        path.write_text(text)
        path.chmod(0o755)
    path = tmp_path / "launch.sh"
    path.write_text(script)
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "JOB": str(tmp_path / "job"), **(env or {})}
    started = time.monotonic()
    done = subprocess.run(["bash", str(path)], cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)
    return done.returncode, logs, time.monotonic() - started


def render_in(tmp_path: Path, changes: dict, **options) -> str:
    return render_launch_script(
        spec(**changes), job_dir=str(tmp_path / "job"), work_dir=str(tmp_path / "job" / "work"), **options
    )


def kinds_of(logs: Path) -> list[str]:
    return [event["event"] for event in parse_events((logs / "launcher.log").read_text())]


def test_torchrun_script_runs_each_agent_and_reports_each_node(tmp_path):
    script = render_in(tmp_path, {"command": ["echo", "a b", "it's"]})
    code, logs, _ = run_script(tmp_path, script, "torchrun")

    assert code == 3
    events = parse_events((logs / "launcher.log").read_text())
    assert kinds_of(logs)[:4] == ["launch", "ssh_check", "ssh_check", "ssh_check"]
    assert events[0]["launcher"] == "torchrun"
    exits = {event["node"]: (event["code"], event["after_abort"]) for event in events if event["event"] == "node_exit"}
    assert exits["node2"] == (3, False)
    lines = (logs / "node2.log").read_text().splitlines()
    assert lines[0] == str(tmp_path / "job-10.0.0.2" / "work")
    assert lines[-3:] == ["<echo>", "<a b>", "<it's>"]
    assert "<10.0.0.2>" in lines


def test_the_first_failing_agent_stops_the_others_at_once(tmp_path):
    code, logs, seconds = run_script(tmp_path, render_in(tmp_path, {}), "torchrun", env={"HANG": "1", "FAIL_AFTER": "1"})

    assert code == 3
    # The fake agents sleep 60 s unless stopped: half of that tells a stop from a busy machine.
    assert seconds < 30, "the other agents were not stopped"
    events = parse_events((logs / "launcher.log").read_text())
    assert [event["event"] for event in events if event["event"] in ("node_exit", "abort")][:2] == ["node_exit", "abort"]
    stopped = {event["node"]: event for event in events if event["event"] == "node_exit" and event["node"] != "node2"}
    assert {node: (event["code"], event["after_abort"]) for node, event in stopped.items()} == {
        "node1": (143, True),
        "node3": (143, True),
    }
    assert (logs / "node1.log").read_text().splitlines()[-1] == "stopped"


def test_a_refused_ssh_check_stops_the_job_before_any_rank(tmp_path):
    hosts = [HOSTS[0], HostEntry(name="node9", address="10.0.0.9", slots=2)]
    code, logs, _ = run_script(tmp_path, render_in(tmp_path, {"hosts": hosts}), "torchrun")

    assert code == 255
    events = parse_events((logs / "launcher.log").read_text())
    assert kinds_of(logs)[-1] == "launcher_exit"
    assert {(e["node"], e["code"]) for e in events if e["event"] == "ssh_check"} == {("node1", 0), ("node9", 255)}
    assert "Host key verification failed." in (logs / "ssh-node9.log").read_text()
    assert not (logs / "node1.log").exists(), "an agent started although a node refused SSH"


def ready_files(tmp_path: Path, tokens: dict[str, str]) -> None:
    """The launcher node's own ready file (the job directory) and each address's (the fake ssh's per-address copy)."""
    for where, token in tokens.items():
        job_dir = tmp_path / ("job" if where == "launcher" else f"job-{where}")
        job_dir.mkdir(parents=True, exist_ok=True)
        (job_dir / "ready").write_text(token + "\n")


def test_the_launch_waits_for_each_nodes_set_up_of_this_launch(tmp_path):
    # A timeout this long that a launch that waited it out is told from a busy machine's delay.
    ready = ReadyCheck(path=str(tmp_path / "job" / "ready"), timeout=120)
    # node2 still holds an earlier run's token; its set-up writes this launch's a second later.
    ready_files(tmp_path, {"launcher": "job-1-1-b", "10.0.0.1": "job-1-1-b", "10.0.0.2": "job-1-1-a", "10.0.0.3": "job-1-1-b"})
    late = subprocess.Popen(["bash", "-c", f"sleep 1; echo job-1-1-b >{tmp_path / 'job-10.0.0.2' / 'ready'}"])
    try:
        code, logs, seconds = run_script(tmp_path, render_in(tmp_path, {}, ready=ready), "torchrun")
    finally:
        late.wait()

    assert code == 3  # the fake agent of 10.0.0.2 fails: every agent started
    events = parse_events((logs / "launcher.log").read_text())
    checks = {event["node"]: event for event in events if event["event"] == "ssh_check"}
    assert {node: event["code"] for node, event in checks.items()} == {"node1": 0, "node2": 0, "node3": 0}
    assert checks["node2"]["time"] - events[0]["time"] >= 0.9, "node2's check did not wait for its set-up"
    assert seconds < 60, "the launch waited out its timeout"


def test_a_node_whose_set_up_does_not_finish_stops_the_launch_before_any_rank(tmp_path):
    ready = ReadyCheck(path=str(tmp_path / "job" / "ready"), timeout=1)
    ready_files(tmp_path, {"launcher": "job-1-2-b", "10.0.0.1": "job-1-2-b", "10.0.0.3": "job-1-2-b"})
    code, logs, _ = run_script(tmp_path, render_in(tmp_path, {}, ready=ready), "torchrun")

    assert code == 255
    events = parse_events((logs / "launcher.log").read_text())
    assert {(e["node"], e["code"]) for e in events if e["event"] == "ssh_check"} == {("node1", 0), ("node2", 3), ("node3", 0)}
    assert "the job's set-up on this node did not finish within 1 s" in (logs / "ssh-node2.log").read_text()
    assert not (logs / "node1.log").exists(), "an agent started although a node was not set up"


def test_a_node_whose_set_up_failed_stops_the_launch_at_once(tmp_path):
    ready = ReadyCheck(path=str(tmp_path / "job" / "ready"), timeout=120)
    ready_files(tmp_path, {"launcher": "job-1-3-b", "10.0.0.1": "job-1-3-b", "10.0.0.2": "failed job-1-3-b", "10.0.0.3": "job-1-3-b"})
    code, logs, seconds = run_script(tmp_path, render_in(tmp_path, {}, ready=ready), "torchrun")

    assert code == 255
    assert seconds < 60, "the launch waited out its timeout for a node whose set-up had failed"
    assert (logs / "ssh-node2.log").read_text() == "the job's set-up on this node failed\n"


def test_an_earlier_launchs_failure_is_not_this_ones(tmp_path):
    ready = ReadyCheck(path=str(tmp_path / "job" / "ready"), timeout=1)
    ready_files(tmp_path, {"launcher": "job-1-4-b", "10.0.0.1": "job-1-4-b", "10.0.0.2": "failed job-1-4-a", "10.0.0.3": "job-1-4-b"})
    code, logs, _ = run_script(tmp_path, render_in(tmp_path, {}, ready=ready), "torchrun")

    assert code == 255
    assert "did not finish within 1 s" in (logs / "ssh-node2.log").read_text()


def test_without_a_ready_check_the_ssh_check_asks_only_for_ssh():
    assert "ready" not in render()
    assert "ready_token=$(cat /work/jobs/job-1/ready" in render_launch_script(SPEC, **DIRS, ready=ReadyCheck("/work/jobs/job-1/ready", 60))


def test_stages_the_checkpoint_to_the_nodes_that_lack_it(tmp_path):
    checkpoint = tmp_path / "job" / "checkpoints" / "epoch-3"
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.pt").write_text("weights")
    hosts = [HOSTS[0], HOSTS[2]]
    script = render_in(tmp_path, {"hosts": hosts}, stage_paths=[str(checkpoint)])
    run_script(tmp_path, script, "torchrun")

    copied = tmp_path / "job-10.0.0.3" / "checkpoints" / "epoch-3" / "state.pt"
    assert copied.read_text() == "weights"
    events = parse_events((logs_of(tmp_path) / "launcher.log").read_text())
    assert [(e["node"], e["code"]) for e in events if e["event"] == "staged"] == [("node3", 0)]


def logs_of(tmp_path: Path) -> Path:
    return tmp_path / "job" / "logs"


def test_single_launcher_script_reports_its_exit_code(tmp_path):
    mpirun = spec(launcher="mpirun", command=["echo", "a b"], hosts=[HOSTS[0], HOSTS[2]])
    script = render_launch_script(mpirun, job_dir=str(tmp_path / "job"), work_dir=str(tmp_path / "job" / "work"))
    code, logs, _ = run_script(tmp_path, script, "mpirun")

    assert code == 0
    events = parse_events((logs / "launcher.log").read_text())
    assert [(e["event"], e.get("code")) for e in events if e["event"] != "ssh_check"] == [
        ("launch", None),
        ("launcher_exit", 0),
    ]
    lines = (logs / "mpirun.log").read_text().splitlines()
    assert lines[0] == str(tmp_path / "job" / "work")
    assert lines[1:] == [f"<{word}>" for word in build(mpirun)[0][1:]]


def test_a_signal_to_the_script_reaches_the_launcher(tmp_path):
    run_script(tmp_path, "exit 0\n", "mpirun")  # lays out the fake programs
    (tmp_path / "launch.sh").write_text(render_in(tmp_path, {"launcher": "mpirun", "hosts": [HOSTS[0]]}))
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "JOB": str(tmp_path / "job"), "HANG": "1"}
    process = subprocess.Popen(["bash", str(tmp_path / "launch.sh")], cwd=tmp_path, env=env)
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 143
    assert (logs_of(tmp_path) / "mpirun.log").read_text().splitlines()[-1] == "stopped"


@pytest.mark.parametrize("launcher, program", [("torchrun", "torchrun"), ("mpirun", "mpirun")])
def test_a_stop_file_cancels_the_job_on_every_node(tmp_path, launcher, program):
    run_script(tmp_path, "exit 0\n", program)  # lays out the fake programs
    hosts = [HOSTS[0], HOSTS[2]]
    (tmp_path / "launch.sh").write_text(render_in(tmp_path, {"launcher": launcher, "hosts": hosts}))
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "JOB": str(tmp_path / "job"), "HANG": "1"}
    process = subprocess.Popen(["bash", str(tmp_path / "launch.sh")], cwd=tmp_path, env=env)
    time.sleep(1.5)
    (tmp_path / "job" / "stop").touch()
    assert process.wait(timeout=10) == 143
    kinds = kinds_of(logs_of(tmp_path))
    assert "cancel" in kinds
    assert kinds[-1] == "launcher_exit"
    assert int((tmp_path / "job" / "launch.pid").read_text()) == process.pid


def test_a_watcher_leaves_with_the_script(tmp_path):
    """The stop watcher of a script that ended does not linger (host mode has no container to end it)."""
    code, _, _ = run_script(tmp_path, render_in(tmp_path, {"launcher": "mpirun", "hosts": [HOSTS[0]]}), "mpirun")
    assert code == 0
    time.sleep(1.5)
    lingering = subprocess.run(["pgrep", "-f", str(tmp_path / "job" / "stop")], capture_output=True, text=True, check=False)
    assert lingering.stdout == ""


@pytest.mark.parametrize("launcher, program", [("torchrun", "torchrun"), ("mpiexec", "mpiexec.hydra")])
@pytest.mark.parametrize("with_env_script, expected_code", [(True, 0), (False, 127)])
def test_env_script_is_sourced_locally_and_by_every_remote_shell(
    tmp_path, launcher, program, with_env_script, expected_code
):
    """The launcher program is only on the PATH the environment script sets, as on a host-mode node."""
    env_dir = tmp_path / "env dir"
    env_dir.mkdir()
    (env_dir / "env.sh").write_text(f'export PATH="{env_dir / "bin"}:$PATH"\n')
    script = render_in(
        tmp_path,
        {"launcher": launcher, "hosts": [HOSTS[0], HOSTS[2]]},
        env_script=str(env_dir / "env.sh") if with_env_script else "",
    )
    code, logs, _ = run_script(tmp_path, script, program, launcher_dir=env_dir / "bin")

    assert code == expected_code
    events = parse_events((logs / "launcher.log").read_text())
    exit_codes = [event["code"] for event in events if event["event"] in ("node_exit", "launcher_exit")]
    assert exit_codes[0] == expected_code


# ---------------------------------------------------------------- slurm (fake sbatch, srun and scancel)

# sbatch --parsable --wait ... --output=LOG ... BATCH: prints job id 42, runs the batch script with its output to LOG,
# exits with its code; a scancel (the file $JOB/scancelled) ends it as Slurm ends a cancelled job.
FAKE_SBATCH = r"""#!/bin/bash
batch="${@: -1}"
echo 42
for option in "$@"; do case "$option" in --output=*) out=${option#--output=} ;; esac; done
out=${out//%j/42}
bash "$batch" >"$out" 2>&1 &
child=$!
while kill -0 "$child" 2>/dev/null; do
  if [ -e "$JOB/scancelled" ]; then pkill -TERM -P "$child"; kill "$child"; exit 143; fi
  sleep 0.1
done
wait "$child"
"""
# srun ... bash -c NODE_SCRIPT: the node script once per node of $NODES as Slurm names it; the first failure's code.
FAKE_SRUN = r"""#!/bin/bash
script="${@: -1}"
pids=()
for node in $NODES; do SLURMD_NODENAME=$node bash -c "$script" & pids+=($!); done
status=0
for pid in "${pids[@]}"; do wait "$pid" || { code=$?; [ "$status" -ne 0 ] || status=$code; }; done
exit "$status"
"""
FAKE_SCANCEL = '#!/bin/bash\necho "$@" >"$JOB/scancelled"\n'


def slurm_job(
    tmp_path: Path, nodes: str = "node1 node3", changes: dict | None = None, fake: str = FAKE_LAUNCHER, **env: str
) -> subprocess.Popen:
    """The slurm launch script of node1 and node3 (with ``changes`` to the spec) started with the fake Slurm commands
    and ``fake`` as torchrun; ``env`` for the fakes."""
    run_script(tmp_path, "exit 0\n", "torchrun", fake=fake)  # lays out ssh and the fake torchrun
    for name, text in (("sbatch", FAKE_SBATCH), ("srun", FAKE_SRUN), ("scancel", FAKE_SCANCEL)):
        (tmp_path / "bin" / name).write_text(text)
        (tmp_path / "bin" / name).chmod(0o755)
    job = {"launcher": "slurm", "hosts": [HOSTS[0], HOSTS[2]], **(changes or {})}
    (tmp_path / "launch.sh").write_text(render_in(tmp_path, job))
    environment = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "JOB": str(tmp_path / "job"), "NODES": nodes, **env}
    return subprocess.Popen(["bash", str(tmp_path / "launch.sh")], cwd=tmp_path / "job" / "work", env=environment)


def test_slurm_job_asks_one_task_per_node_of_the_job():
    script = render(launcher="slurm")
    assert (
        "\nsbatch --parsable --wait --job-name=job-1 --nodes=3 --nodelist=node1,node2,node3 --ntasks-per-node=1"
        " --output=/work/jobs/job-1/logs/slurm-%j.log --chdir=/work/jobs/job-1/work /work/jobs/job-1/slurm.sbatch >"
    ) in script
    assert "\n  'exec srun --kill-on-bad-exit=1 bash -c '\"'\"'cd /work/jobs/job-1/work || exit\n" in script


def test_slurm_job_runs_each_nodes_torchrun_agent_and_records_the_job_id(tmp_path):
    assert slurm_job(tmp_path).wait(timeout=20) == 0
    output = (logs_of(tmp_path) / "slurm-42.log").read_text()
    # Each node's own agent: torchrun's --local-addr is that node's address.
    assert "<--local-addr>\n<10.0.0.1>" in output and "<--local-addr>\n<10.0.0.3>" in output
    assert (tmp_path / "job" / "slurm.jobid").read_text() == "42\n"
    events = parse_events((logs_of(tmp_path) / "launcher.log").read_text())
    assert [(e["event"], e.get("code")) for e in events if e["event"] != "ssh_check"] == [
        ("launch", None),
        ("launcher_exit", 0),
    ]


def test_slurm_job_on_a_node_outside_the_job_fails(tmp_path):
    assert slurm_job(tmp_path, nodes="node1 node2").wait(timeout=20) == 2
    assert "node node2 is not a node of this job" in (logs_of(tmp_path) / "slurm-42.log").read_text()


def test_a_signal_to_the_slurm_script_cancels_the_job(tmp_path):
    process = slurm_job(tmp_path, HANG="1")
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 143
    assert (tmp_path / "job" / "scancelled").read_text() == "42\n"
    assert kinds_of(logs_of(tmp_path))[-1] == "launcher_exit"


# ---------------------------------------------------------------- hostile values (issue 39)

# Script arguments and environment values that would split, expand or end a generated script early (the Slurm batch
# script's here-document ended at a line MULTINODE_EOF) if any layer left them unquoted: each must reach the program
# as one argument, or one variable, exactly as given, and nothing of them may run.
HOSTILE = [
    "a\nMULTINODE_EOF\ntouch pwned",
    "MULTINODE_EOF",
    "\nMULTINODE_EOF\n",
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    '"; touch pwned; "',
    "; touch pwned #",
    "&& touch pwned",
    "| touch pwned",
    ">pwned",
    "a b\tc",
    "it's",
    "\\",
    "a\\\nb",
    "${HOME} $0 $1 $$ $ssh_mux_dir",
    "*",
    "~",
    "!x",
    "#x",
    "-x",
    "--",
    "\n",
    "",
    "é 中",
    "%s %j %C \\n",
]
# Stands in for the launcher (or, for tensorflow's worker, the program itself): one JSON line of its arguments and of
# the HOSTILE_* variables it was given.
ARGV_DUMP = """#!/usr/bin/env python3
import json, os, sys
env = {name: value for name, value in os.environ.items() if name.startswith("HOSTILE_")}
print(json.dumps({"args": sys.argv[1:], "env": env}))
"""


def hostile_changes(launcher: str) -> dict:
    hosts = ONE_PER_HOST if REGISTRY[launcher].one_rank_per_node else HOSTS
    return {
        "launcher": launcher,
        "hosts": [hosts[0], hosts[2]],
        "command": ["hostile-program", *HOSTILE],
        "env": {f"HOSTILE_{index}": value for index, value in enumerate(HOSTILE)},
    }


def seen_by_the_program(argv: list[str]) -> tuple[str, dict]:
    """The program ``argv`` runs (after ``env NAME=VALUE ...``) and what ARGV_DUMP prints as that program."""
    env, words = {}, argv
    if argv[0] == "env":
        words = argv[1:]
        while "=" in words[0]:
            name, _, value = words[0].partition("=")
            env[name] = value
            words = words[1:]
    return words[0], {"args": words[1:], "env": {name: value for name, value in env.items() if name.startswith("HOSTILE_")}}


def dumped(*logs: Path) -> list[dict]:
    return [json.loads(line) for log in logs for line in log.read_text().splitlines()]


SSH_LAUNCHERS = [name for name, entry in REGISTRY.items() if entry.scheduler == "none" and not entry.shell_joined]


@pytest.mark.parametrize("launcher", SSH_LAUNCHERS)
def test_every_ssh_launcher_carries_hostile_values_verbatim(tmp_path, launcher):
    changes = hostile_changes(launcher)
    programs, expected = zip(*map(seen_by_the_program, build(spec(**changes))))
    code, logs, _ = run_script(tmp_path, render_in(tmp_path, changes), programs[0], fake=ARGV_DUMP)

    assert code == 0
    outputs = [logs / "node1.log", logs / "node3.log"] if REGISTRY[launcher].node_agent else [logs / f"{launcher}.log"]
    assert dumped(*outputs) == list(expected)
    assert not list(tmp_path.rglob("pwned"))


def test_slurm_carries_hostile_values_verbatim(tmp_path):
    changes = hostile_changes("slurm")
    _, expected = zip(*map(seen_by_the_program, build(spec(**changes))))

    assert slurm_job(tmp_path, changes=changes, fake=ARGV_DUMP).wait(timeout=20) == 0
    assert sorted(map(json.dumps, dumped(logs_of(tmp_path) / "slurm-42.log"))) == sorted(map(json.dumps, expected))
    assert not list(tmp_path.rglob("pwned"))


@pytest.mark.parametrize("launcher", [name for name, entry in REGISTRY.items() if entry.shell_joined])
def test_launchers_that_join_words_for_a_shell_refuse_hostile_values(launcher):
    with pytest.raises(LaunchError, match="joins the program's words with spaces and runs them through a shell"):
        render(**hostile_changes(launcher))


def test_a_nul_character_is_refused():
    with pytest.raises(LaunchError, match=f"{NUL_TEXT}: 'a\\\\x00b'"):
        render(command=["echo", "a\0b"])


# ---------------------------------------------------------------- node addresses


def with_second_host_at(address: str) -> list[HostEntry]:
    return [HOSTS[0], HostEntry(name="node2", address=address, slots=2), HOSTS[2]]


@pytest.mark.parametrize("address", ["10.0.0.2", "fe80::2", "fe80::2%eth1", "node-2.example.com", "node_2"])
def test_addresses_ssh_takes_as_a_destination(address):
    assert f"-- {address} " in render(hosts=with_second_host_at(address))


@pytest.mark.parametrize("address", ["-oProxyCommand=x", "a b", "a;b", "", "admin@node2", "$(touch pwned)", "node2\n"])
def test_an_address_that_is_no_address_is_refused(address):
    with pytest.raises(LaunchError, match=f"node node2: {re.escape(repr(address))} cannot be the address SSH connects to"):
        render(hosts=with_second_host_at(address))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_no_ssh_destination_can_be_read_as_an_option(launcher):
    """Every ssh of the script ends its options with --, so an address starting with - would still be an address."""
    hosts = ONE_PER_HOST if REGISTRY[launcher].one_rank_per_node else HOSTS
    script = render_launch_script(spec(launcher=launcher, hosts=hosts), **DIRS, stage_paths=["/work/checkpoints/3"])
    calls = re.findall(r"\bssh (.*?) -- ", script)
    assert len(calls) == script.count("ssh -p") > 0
    assert set(calls) <= {f"-p 2222 {SSH_MULTIPLEXING}", f"-p 2222 {SSH_MULTIPLEXING} -o ConnectTimeout=5"}


# ---------------------------------------------------------------- the SSH multiplexing sockets' directory

# In front of the fake ssh: records, for every call, the directory of its ControlPath as it is then (mode, owner,
# path), or "none" for a call without multiplexing.
MUX_RECORDER = r"""#!/bin/bash
dir=
for word in "$@"; do case "$word" in ControlPath=*) dir=${word#ControlPath=} ;; esac; done
if [ -n "$dir" ]; then stat -c '%a %u %n' "${dir%/*}" >>"$MUX_LOG"; else echo none >>"$MUX_LOG"; fi
exec "${0%/*}/fake-ssh" "$@"
"""


def run_recording_mux(tmp_path: Path, **env: str) -> tuple[int, list[str]]:
    """The torchrun script of node1 and node3 run with MUX_RECORDER in front of the fake ssh; its exit code and what
    the recorder saw."""
    run_script(tmp_path, "exit 0\n", "torchrun")  # lays out the fake programs
    bin_dir = tmp_path / "bin"
    (bin_dir / "ssh").rename(bin_dir / "fake-ssh")
    (bin_dir / "ssh").write_text(MUX_RECORDER)
    (bin_dir / "ssh").chmod(0o755)
    (tmp_path / "launch.sh").write_text(render_in(tmp_path, {"hosts": [HOSTS[0], HOSTS[2]]}))
    mux_log = tmp_path / "mux.log"
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "JOB": str(tmp_path / "job"), "MUX_LOG": str(mux_log), **env}
    done = subprocess.run(["bash", str(tmp_path / "launch.sh")], cwd=tmp_path, env=environment, capture_output=True, check=False)
    return done.returncode, mux_log.read_text().splitlines()


def test_the_ssh_sockets_live_in_a_fresh_directory_of_mode_0700_removed_at_the_end(tmp_path):
    code, seen = run_recording_mux(tmp_path)

    assert code == 0
    assert len(seen) == 4  # each node's check and agent
    assert {line.rsplit(" ", 1)[0] for line in seen} == {f"700 {os.getuid()}"}
    (directory,) = {line.rsplit(" ", 1)[1] for line in seen}
    assert re.fullmatch(r"/tmp/multinode-ssh\.[A-Za-z0-9]{10}", directory)
    assert len(directory) <= SSH_MUX_DIR_MAX
    assert not Path(directory).exists(), "the script left its sockets' directory behind"
    assert (tmp_path / "job" / "logs" / SSH_MUX_LOG).read_text() == f"{directory} 700 {os.getuid()}\n"


@pytest.mark.parametrize("tmpdir", ["long", "/nonexistent/multinode"])
def test_without_a_usable_directory_ssh_runs_without_multiplexing(tmp_path, tmpdir):
    """A socket path past the Unix limit would make ssh fail, and a directory that cannot be made holds no socket."""
    directory = tmp_path / ("x" * SSH_MUX_DIR_MAX) if tmpdir == "long" else Path(tmpdir)
    if tmpdir == "long":
        directory.mkdir()
    code, seen = run_recording_mux(tmp_path, TMPDIR=str(directory))

    assert code == 0
    assert seen == ["none"] * 4
    assert tmpdir != "long" or not list(directory.iterdir())
    assert (tmp_path / "job" / "logs" / SSH_MUX_LOG).read_text().startswith("none: no private directory")
