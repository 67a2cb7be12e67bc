# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Golden launch scripts for a 3-host example, and the scripts run against fake ssh and launchers."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import HostEntry
from ansible_collections.multinode.training.plugins.module_utils.launch import LAUNCHERS, LaunchError, LaunchSpec, build
from ansible_collections.multinode.training.plugins.module_utils.launch_script import render_launch_script
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
DIRS = {"job_dir": "/work/jobs/job-1", "code_dir": "/work/code"}

TORCHRUN_SCRIPT = """\
#!/bin/bash
# Written by the multinode.training.launch_script module; local changes are overwritten.
# Job job-1: torchrun across 3 nodes.
set -u
cd /work/code || exit
logs=/work/jobs/job-1/logs
event() { printf '{"event": "%s", "time": %s%s}\\n' "$1" "$(date +%s.%N)" "${2:-}" >>"$logs/launcher.log"; }
event launch ', "launcher": "torchrun"'

# One torchrun agent per node over SSH; each node's output goes to $logs/<node>.log.
declare -A pids
ssh -p 2222 10.0.0.1 'cd /work/code && exec env OMP_NUM_THREADS=8 I_MPI_HYDRA_IFACE=eth1 FI_TCP_IFACE=eth1 FI_SOCKETS_IFACE=eth1 CCL_KVS_IFACE=eth1 GLOO_SOCKET_IFNAME=eth1 NCCL_SOCKET_IFNAME=eth1 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 KMP_BLOCKTIME=1 torchrun --nnodes 3 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 10.0.0.1:29400 --rdzv-id job-1 --local-addr 10.0.0.1 --max-restarts 0 --no-python bash /work/jobs/job-1/rank.sh python3 train.py --epochs 15' >"$logs/node1.log" 2>&1 </dev/null &
pids[node1]=$!
ssh -p 2222 10.0.0.2 'cd /work/code && exec env OMP_NUM_THREADS=8 I_MPI_HYDRA_IFACE=eth1 FI_TCP_IFACE=eth1 FI_SOCKETS_IFACE=eth1 CCL_KVS_IFACE=eth1 GLOO_SOCKET_IFNAME=eth1 NCCL_SOCKET_IFNAME=eth1 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 KMP_BLOCKTIME=1 torchrun --nnodes 3 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 10.0.0.1:29400 --rdzv-id job-1 --local-addr 10.0.0.2 --max-restarts 0 --no-python bash /work/jobs/job-1/rank.sh python3 train.py --epochs 15' >"$logs/node2.log" 2>&1 </dev/null &
pids[node2]=$!
ssh -p 2222 10.0.0.3 'cd /work/code && exec env OMP_NUM_THREADS=8 I_MPI_HYDRA_IFACE=eth1 FI_TCP_IFACE=eth1 FI_SOCKETS_IFACE=eth1 CCL_KVS_IFACE=eth1 GLOO_SOCKET_IFNAME=eth1 NCCL_SOCKET_IFNAME=eth1 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 KMP_BLOCKTIME=1 torchrun --nnodes 3 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 10.0.0.1:29400 --rdzv-id job-1 --local-addr 10.0.0.3 --max-restarts 0 --no-python bash /work/jobs/job-1/rank.sh python3 train.py --epochs 15' >"$logs/node3.log" 2>&1 </dev/null &
pids[node3]=$!

# Wait for every agent, in host order; the script exits with the first non-zero code.
status=0
for node in node1 node2 node3; do
  wait "${pids[$node]}"
  code=$?
  event node_exit ", \\"node\\": \\"$node\\", \\"code\\": $code"
  [ "$status" -ne 0 ] || status=$code
done
exit "$status"
"""

MPIEXEC_SCRIPT = """\
#!/bin/bash
# Written by the multinode.training.launch_script module; local changes are overwritten.
# Job job-1: mpiexec across 3 nodes.
set -u
cd /work/code || exit
logs=/work/jobs/job-1/logs
event() { printf '{"event": "%s", "time": %s%s}\\n' "$1" "$(date +%s.%N)" "${2:-}" >>"$logs/launcher.log"; }
event launch ', "launcher": "mpiexec"'

# mpiexec starts every rank itself; its output goes to $logs/mpiexec.log.
mpiexec.hydra \\
  -n 6 \\
  -ppn 2 \\
  -f /work/jobs/job-1/hostfile \\
  -iface eth1 \\
  -prepend-rank \\
  -genv OMP_NUM_THREADS 8 \\
  -genv I_MPI_HYDRA_IFACE eth1 \\
  -genv FI_TCP_IFACE eth1 \\
  -genv FI_SOCKETS_IFACE eth1 \\
  -genv CCL_KVS_IFACE eth1 \\
  -genv GLOO_SOCKET_IFNAME eth1 \\
  -genv NCCL_SOCKET_IFNAME eth1 \\
  -genv MASTER_ADDR 10.0.0.1 \\
  -genv MASTER_PORT 29500 \\
  -genv KMP_BLOCKTIME 1 \\
  -genv I_MPI_PERHOST 2 \\
  bash /work/jobs/job-1/rank.sh python3 train.py --epochs 15 >"$logs/mpiexec.log" 2>&1 </dev/null
code=$?
event launcher_exit ", \\"code\\": $code"
exit "$code"
"""

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
  bash /work/jobs/job-1/rank.sh python3 train.py --epochs 15 >"$logs/mpirun.log" 2>&1 </dev/null
code=$?
event launcher_exit ", \\"code\\": $code"
exit "$code"
"""


def spec(**changes) -> LaunchSpec:
    return dataclasses.replace(SPEC, **changes)


def render(**changes) -> str:
    return render_launch_script(spec(**changes), **DIRS)


# ---------------------------------------------------------------- golden scripts


def test_torchrun_golden():
    assert render() == TORCHRUN_SCRIPT


def test_mpiexec_golden():
    assert render(launcher="mpiexec") == MPIEXEC_SCRIPT


def test_mpirun_writes_its_own_log_and_launcher_exit():
    script = render(launcher="mpirun")
    assert script.endswith("# mpirun starts every rank itself; its output goes to $logs/mpirun.log.\n" + MPIRUN_COMMAND)
    assert 'event launch \', "launcher": "mpirun"\'\n' in script


@pytest.mark.parametrize(
    "changes",
    [{"launcher": launcher} for launcher in LAUNCHERS]
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
    script = render_launch_script(SPEC, job_dir="/work/my jobs/job-1", code_dir="/work/my code")
    assert "cd '/work/my code' || exit\nlogs='/work/my jobs/job-1/logs'\n" in script
    assert "ssh -p 2222 10.0.0.1 'cd '\"'\"'/work/my code'\"'\"' && exec env " in script


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

FAKE_SSH = """\
#!/bin/bash
# ssh -p PORT ADDRESS COMMAND...: run COMMAND through a shell, as sshd does.
shift 3
exec bash -c "$*"
"""
# Prints its working directory and arguments; fails with 3 on 10.0.0.2.
FAKE_LAUNCHER = """\
#!/bin/bash
pwd
printf '<%s>\\n' "$@"
case " $* " in *" 10.0.0.2 "*) exit 3 ;; esac
"""


def run_script(tmp_path: Path, script: str, launcher: str, launcher_dir: Path | None = None) -> tuple[int, Path]:
    """Run ``script`` with a fake ssh and launcher on PATH (the launcher in ``launcher_dir`` when given)."""
    bin_dir, code_dir, logs = tmp_path / "bin", tmp_path / "code", tmp_path / "job" / "logs"
    launcher_dir = launcher_dir or bin_dir
    for directory in (bin_dir, launcher_dir, code_dir, logs):
        directory.mkdir(parents=True, exist_ok=True)
    for path, text in ((bin_dir / "ssh", FAKE_SSH), (launcher_dir / launcher, FAKE_LAUNCHER)):
        path.write_text(text)
        path.chmod(0o755)
    path = tmp_path / "launch.sh"
    path.write_text(script)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run(["bash", str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    return done.returncode, logs


def test_torchrun_script_runs_each_agent_and_reports_each_node(tmp_path):
    command = ["echo", "a b", "it's"]
    script = render_launch_script(spec(command=command), job_dir=str(tmp_path / "job"), code_dir=str(tmp_path / "code"))
    code, logs = run_script(tmp_path, script, "torchrun")

    assert code == 3
    events = parse_events((logs / "launcher.log").read_text())
    assert [event["event"] for event in events] == ["launch", "node_exit", "node_exit", "node_exit"]
    assert events[0]["launcher"] == "torchrun"
    assert [(event["node"], event["code"]) for event in events[1:]] == [("node1", 0), ("node2", 3), ("node3", 0)]
    lines = (logs / "node2.log").read_text().splitlines()
    assert lines[0] == str(tmp_path / "code")
    assert lines[-3:] == ["<echo>", "<a b>", "<it's>"]
    assert "<10.0.0.2>" in lines


def test_single_launcher_script_reports_its_exit_code(tmp_path):
    mpirun = spec(launcher="mpirun", command=["echo", "a b"])
    script = render_launch_script(mpirun, job_dir=str(tmp_path / "job"), code_dir=str(tmp_path / "code"))
    code, logs = run_script(tmp_path, script, "mpirun")

    assert code == 0
    events = parse_events((logs / "launcher.log").read_text())
    assert [(event["event"], event.get("launcher"), event.get("code")) for event in events] == [
        ("launch", "mpirun", None),
        ("launcher_exit", None, 0),
    ]
    lines = (logs / "mpirun.log").read_text().splitlines()
    assert lines[0] == str(tmp_path / "code")
    assert lines[1:] == [f"<{word}>" for word in build(mpirun)[0][1:]]
    assert lines[-2:] == ["<echo>", "<a b>"]



@pytest.mark.parametrize("launcher, program", [("torchrun", "torchrun"), ("mpiexec", "mpiexec.hydra")])
@pytest.mark.parametrize("with_env_script, expected_code", [(True, 0), (False, 127)])
def test_env_script_is_sourced_locally_and_by_every_remote_shell(
    tmp_path, launcher, program, with_env_script, expected_code
):
    """The launcher program is only on the PATH the environment script sets, as on a host-mode node."""
    env_dir = tmp_path / "env dir"
    env_dir.mkdir()
    (env_dir / "env.sh").write_text(f'export PATH="{env_dir / "bin"}:$PATH"\n')
    script = render_launch_script(
        spec(launcher=launcher, hosts=[HOSTS[0], HOSTS[2]]),
        job_dir=str(tmp_path / "job"),
        code_dir=str(tmp_path / "code"),
        env_script=str(env_dir / "env.sh") if with_env_script else "",
    )
    code, logs = run_script(tmp_path, script, program, launcher_dir=env_dir / "bin")

    assert code == expected_code
    exit_codes = [event["code"] for event in parse_events((logs / "launcher.log").read_text()) if "code" in event]
    assert exit_codes == [expected_code] * (2 if launcher == "torchrun" else 1)
