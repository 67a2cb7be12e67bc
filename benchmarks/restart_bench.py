#!/usr/bin/env python3
"""Benchmark: from a fault to the first epoch of the resumed job, on the provisioned 3-node sim cluster (issue 25).

A named CNN job (examples/cifar_cnn, a checkpoint every epoch) is launched with playbooks/launch.yml; once its second
checkpoint is on disk one fault is injected, on the sim's own containers only:

- ``worker_kill``: node3's worker container killed (``docker kill`` inside the node);
- ``stall``: node2's rank frozen with SIGSTOP (the stall watchdog must name it);
- ``node_stop``: node3's whole node container stopped (the job goes on without it after launcher_node_timeout);
  the node is started and provisioned again afterwards;
- ``launcher_stop``: node1's whole node container stopped (the launcher node), once node2 holds the replica of the
  checkpoint: node2 becomes the launcher node and the job resumes there from the newest checkpoint it holds; node1
  is started and provisioned again afterwards;
- ``launcher_cut``: node1's traffic dropped (iptables DROP inside its node container) once node2 holds the replica,
  until the run is over: a power loss as the others see it, where ``launcher_stop``'s ``docker stop`` closes the
  node's connections as its processes die; then the cut is lifted and node1 provisioned again;
- ``netcut``: node2's traffic on the sim network dropped for 20 s (an iptables DROP rule inside its node
  container, then removed): the job must either not notice or be restarted once, and succeed.

``healthy`` runs the same job without a fault (--healthy-runs times, default 10): none may restart (no false alarm).

Measured from the fault: when the failure was detected (the restart's ``detected_at``), when the resumed job trained
its first step (the ``step`` record progress.jsonl keeps for each attempt; for torchrun, the first "epoch 1 step 1/"
line in its agents' logs) and when it wrote its first checkpoint (its first finished epoch; the script prints the
epoch line right after writing it).
Beside it, on the same worker kill, torchrun's own elastic restart (``--nnodes 2:3 --max-restarts 3`` with the
c10d rendezvous), run by hand the way its documentation describes: one agent per node over the cluster's SSH,
from a launcher container on node1. Round robin, --repeats times (default 3); each fault's medians are over the runs of the newest commit that ran it
(this run's and earlier runs' of the same commit; --fresh forgets earlier runs). Writes
benchmarks/results/restart_bench.json and benchmarks/results/restart_bench.md, the section docs/BENCHMARKS.md embeds.

    make sim train                      # once: a provisioned sim cluster (inventories/sim)
    .venv/bin/python benchmarks/restart_bench.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import time
from typing import Any, Callable

from playbook_runs import ROOT, VENV_BIN, embed_in_readme

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS_JSON = RESULTS_DIR / "restart_bench.json"
RESULTS_MD = RESULTS_DIR / "restart_bench.md"
LOG_DIR = RESULTS_DIR / "restart_logs"
INVENTORY = ROOT / "inventories" / "sim" / "hosts.yml"
RUNS_DIR = ROOT / "runs"
DATA_DIR = RESULTS_DIR / "restart_data"
# The sim cluster of harness/sim_cluster.yml (cluster_name sim): node containers, their worker, the paths on them.
NODE = "mnt-sim-node{}"
WORKER = "sim-worker"
WORKDIR = "/opt/multinode/sim/work"
SSH_CLIENT_DIR = "/opt/multinode/sim/ssh/client"
SSH_PORT = 12345
ADDRESSES = ("172.30.77.11", "172.30.77.12", "172.30.77.13")
IMAGE = "multinode/training:latest"
EPOCHS = 8
FAULT_AFTER = 2  # the fault comes once this epoch's checkpoint is on disk
TIMEOUT_S = 900


def sh(*argv: str, check: bool = True) -> str:
    return subprocess.run(argv, check=check, capture_output=True, text=True).stdout


def node_exec(node: int, command: str, check: bool = True) -> str:
    return sh("docker", "exec", NODE.format(node), "bash", "-c", command, check=check)


def checkpoints(job_name: str, node: int = 1) -> dict[str, float]:
    """The job's checkpoint files on ``node`` (rank 0's: node1, or node2 after the launcher node was lost) and their
    modification times."""
    pattern = f"{WORKDIR}/checkpoints/{job_name}/*.pt"
    listing = f"import glob, json, os; print(json.dumps({{p: os.stat(p).st_mtime for p in glob.glob({pattern!r})}}))"
    return json.loads(node_exec(node, f"python3 -c {shlex.quote(listing)}") or "{}")


def wait_for_checkpoint(job_name: str, epoch: int, timeout: float = 300, node: int = 1) -> None:
    deadline = time.monotonic() + timeout
    path = f"{WORKDIR}/checkpoints/{job_name}/checkpoint-epoch{epoch:03d}.pt"
    while time.monotonic() < deadline:
        if subprocess.run(["docker", "exec", NODE.format(node), "test", "-e", path], check=False).returncode == 0:
            return
        time.sleep(0.3)
    raise TimeoutError(f"no {path} within {timeout} s")


def first_checkpoint_after(job_name: str, moment: float, timeout: float = 300, node: int = 1) -> tuple[float, int]:
    """When the first checkpoint written on ``node`` after ``moment`` appeared (the resumed job's first finished
    epoch), and that epoch."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        later = sorted((stamp, path) for path, stamp in checkpoints(job_name, node).items() if stamp > moment)
        if later:
            stamp, path = later[0]
            return stamp, int(path.rsplit("epoch", 1)[1].split(".")[0])
        time.sleep(0.5)
    raise TimeoutError(f"no checkpoint of {job_name} after the fault within {timeout} s")


def first_step_after(job_name: str, moment: float) -> float | None:
    """Seconds from ``moment`` to the first training step the controller recorded after it (progress.jsonl's
    ``step`` record: each attempt's first, as the follower saw it, at most its poll period late)."""
    lines = (RUNS_DIR / job_name / "progress.jsonl").read_text().splitlines()
    times = [
        record["time"] for record in map(json.loads, lines) if record.get("kind") == "step" and record["time"] > moment
    ]
    return round(min(times) - moment, 1) if times else None


def torchrun_first_step_after(base: str, moment: float, seen: int, timeout: float = 240) -> float | None:
    """Seconds from ``moment`` until the agents' logs under ``base`` (on node1) hold more than ``seen`` lines of the
    first step of epoch 1 (torchrun's restarted script starts over at epoch 1); None when none comes in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if torchrun_first_steps(base) > seen:
            return round(time.time() - moment, 1)
        time.sleep(0.3)
    return None


def torchrun_first_steps(base: str) -> int:
    """How many times rank 0 printed the first step of epoch 1 in the agents' logs under ``base``."""
    return int(node_exec(1, f"cat {base}/*.log 2>/dev/null | grep -c '^epoch 1 step 1/'", check=False).strip() or 0)


def playbook(name: str, playbook_path: str, extra_vars: dict[str, Any]) -> subprocess.Popen[bytes]:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    argv = [str(VENV_BIN / "ansible-playbook"), playbook_path, "-i", str(INVENTORY), "-e", json.dumps(extra_vars)]
    with open(LOG_DIR / f"{name}.log", "wb") as log:
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def job_vars(job_name: str, **extra: Any) -> dict[str, Any]:
    return {
        "workload_src": str(ROOT / "examples" / "cifar_cnn"),
        "workload_data_src": str(DATA_DIR),
        "launcher_job_name": job_name,
        "launcher_job_id": job_name,
        "launcher_script_args": ["--epochs", str(EPOCHS)],
        **extra,
    }


def clear_checkpoints(job_name: str) -> None:
    for node in (1, 2, 3):
        node_exec(node, f"rm -rf {WORKDIR}/checkpoints/{job_name}", check=False)


# ---------------------------------------------------------------- faults


def kill_worker() -> None:
    node_exec(3, f"docker kill {WORKER}")


def freeze_rank() -> None:
    node_exec(2, "pkill --signal STOP --full '^python3 train\\.py'")


def stop_node() -> None:
    sh("docker", "stop", "-t", "0", NODE.format(3))


def stop_launcher_node() -> None:
    sh("docker", "stop", "-t", "0", NODE.format(1))


NETCUT_SECONDS = 20
# What a node's network is cut with (inside its node container: its admin sshd, its worker and its job, all of it).
CUT_RULES = ("INPUT -i eth0 -j DROP", "OUTPUT -o eth0 -j DROP")


def cut_launcher_node() -> None:
    """Drop everything node1 (the launcher node) sends and receives, until the run is over: a power loss as the
    other nodes and the controller see it (no connection is closed, nothing answers)."""
    node_exec(1, " && ".join(f"iptables -I {rule}" for rule in CUT_RULES))


def mend_launcher_node() -> None:
    node_exec(1, "; ".join(f"iptables -D {rule}" for rule in CUT_RULES), check=False)


def cut_network() -> None:
    """Drop everything node2 sends and receives on the sim network for NETCUT_SECONDS, in the background."""
    add = " && ".join(f"iptables -I {rule}" for rule in CUT_RULES)
    remove = "; ".join(f"iptables -D {rule}" for rule in CUT_RULES)
    node_exec(2, f"{add} && (sleep {NETCUT_SECONDS}; {remove}) >/dev/null 2>&1 &")


def restore_node(node: int, fault: str) -> None:
    """Start ``node`` again (or lift its cut) and provision it (its Docker engine, sshd and worker; the CNN example
    stays the code)."""
    if fault == "launcher_cut":
        mend_launcher_node()
    else:
        sh("docker", "start", NODE.format(node))
    time.sleep(2)
    workload = {key: value for key, value in job_vars("").items() if key.startswith("workload_")}
    if playbook(f"restore-node{node}", "playbooks/provision.yml", workload).wait() != 0:
        raise RuntimeError(
            f"provisioning after the node stop failed; see benchmarks/results/restart_logs/restore-node{node}.log"
        )


FAULTS: dict[str, Callable[[], None]] = {
    "worker_kill": kill_worker,
    "stall": freeze_rank,
    "node_stop": stop_node,
    "launcher_stop": stop_launcher_node,
    "launcher_cut": cut_launcher_node,
    "netcut": cut_network,
}
# The node a fault stops (or cuts off), started and provisioned again after the run; the node rank 0 resumes on.
STOPPED_NODE = {"node_stop": 3, "launcher_stop": 1, "launcher_cut": 1}
RESUMED_ON = {"launcher_stop": 2, "launcher_cut": 2}


def product_run(fault: str, repeat: int) -> dict[str, Any]:
    """One job under the restart policy with ``fault`` injected after its second checkpoint."""
    job_name = f"bench-restart-{fault.replace('_', '-')}-{repeat}"
    clear_checkpoints(job_name)
    process = playbook(job_name, "playbooks/launch.yml", job_vars(job_name))
    resumed_on = RESUMED_ON.get(fault, 1)
    wait_for_checkpoint(job_name, FAULT_AFTER, node=resumed_on)  # on node2: its replica
    fault_at = time.time()  # when the fault was asked for: the kill lands before the command that sent it returns
    FAULTS[fault]()
    if fault == "netcut":
        time.sleep(NETCUT_SECONDS)  # the first epoch after the cut cannot end before the cut is lifted
    resumed_epoch_at, resumed_epoch = first_checkpoint_after(job_name, fault_at, node=resumed_on)
    rc = process.wait(timeout=TIMEOUT_S)
    if fault in STOPPED_NODE:
        restore_node(STOPPED_NODE[fault], fault)
    summary = json.loads((RUNS_DIR / job_name / "summary.json").read_text())
    restart = (summary.get("restarts") or [{}])[0]
    return {
        "fault": fault,
        "repeat": repeat,
        "commit": COMMIT,
        "rc": rc,
        "status": summary["status"],
        "restarts": len(summary.get("restarts") or []),
        "cause": restart.get("cause"),
        "world_size_after": summary["world_size"],
        "detected_s": round(float(restart["detected_at"]) - fault_at, 1) if restart.get("detected_at") else None,
        "resumed_epoch_s": round(resumed_epoch_at - fault_at, 1),
        "resumed_epoch": resumed_epoch,
        "first_step_s": first_step_after(job_name, fault_at),
    }


def healthy_run(repeat: int) -> dict[str, Any]:
    """The job without a fault: it must succeed with no restart."""
    job_name = f"bench-restart-healthy-{repeat}"
    clear_checkpoints(job_name)
    rc = playbook(job_name, "playbooks/launch.yml", job_vars(job_name)).wait(timeout=TIMEOUT_S)
    summary = json.loads((RUNS_DIR / job_name / "summary.json").read_text())
    return {
        "fault": "healthy",
        "repeat": repeat,
        "rc": rc,
        "status": summary["status"],
        "restarts": len(summary.get("restarts") or []),
        "causes": [restart["cause"] for restart in summary.get("restarts") or []],
        # Every rank's Python runs the job's exit guard (rank_exit_guard.py) since it landed.
        "exit_guard": True,
        "commit": COMMIT,
    }


def torchrun_elastic_run(repeat: int) -> dict[str, Any]:
    """torchrun's own elastic restart on the same worker kill: ``--nnodes 2:3 --max-restarts 3``, c10d rendezvous.

    The agents run in the worker containers (started over the cluster's SSH from a launcher container on node1,
    with the code and data a product run staged); node3's worker is killed after the second checkpoint. torchrun
    restarts the surviving workers into a new rendezvous of the two remaining nodes (after its last-call wait), and
    they start the script again with the environment they had: RESUME_FROM is fixed when the agent starts, so
    the script starts over at epoch 1 unless it finds its checkpoints itself.
    """
    job_name = f"bench-restart-torchrun-{repeat}"
    clear_checkpoints(job_name)
    base = f"{WORKDIR}/bench-torchrun"
    code = f"{WORKDIR}/code"
    agents = []
    for address in ADDRESSES:
        remote = (
            f"cd {shlex.quote(code)} && CHECKPOINT_DIR={WORKDIR}/checkpoints/{job_name} DATA_DIR={WORKDIR}/data"
            f" OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=eth0 PYTHONUNBUFFERED=1 exec torchrun --nnodes 2:3 --nproc-per-node 1"
            f" --rdzv-backend c10d --rdzv-endpoint {ADDRESSES[0]}:29400 --rdzv-id {job_name} --max-restarts 3"
            f" --local-addr {address} train.py --epochs {EPOCHS}"
        )
        agents.append(f"ssh -p {SSH_PORT} {address} {shlex.quote(remote)} >{base}/{address}.log 2>&1 &")
    script = "\n".join(["set -u", f"mkdir -p {base}", *agents, "wait"]) + "\n"
    node_exec(1, f"mkdir -p {base} && chown 1000:1000 {base} && cat >{base}/launch.sh <<'EOF'\n{script}EOF")
    launcher = subprocess.Popen(
        [
            "docker",
            "exec",
            NODE.format(1),
            "docker",
            "run",
            "--rm",
            "--network",
            "host",
            "--user",
            "1000:1000",
            "-v",
            f"{SSH_CLIENT_DIR}:/home/dev/.ssh:ro",
            "-v",
            f"{WORKDIR}:{WORKDIR}:rw",
            "--name",
            "bench-torchrun",
            IMAGE,
            "timeout",
            str(TIMEOUT_S),
            "bash",
            f"{base}/launch.sh",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_checkpoint(job_name, FAULT_AFTER)
    steps_before = torchrun_first_steps(base)
    fault_at = time.time()
    kill_worker()
    resumed_epoch_s: float | None = None
    resumed_epoch: int | None = None
    first_step_s: float | None = None
    rc: int | None = None
    try:
        first_step_s = torchrun_first_step_after(base, fault_at, steps_before)
        resumed_at, resumed_epoch = first_checkpoint_after(job_name, fault_at, timeout=240)
        resumed_epoch_s = round(resumed_at - fault_at, 1)
        rc = launcher.wait(timeout=TIMEOUT_S)
    except (TimeoutError, subprocess.TimeoutExpired):
        pass  # recorded as not resumed
    finally:
        # No torchrun agent of this run survives into the next one; node3's worker comes back.
        node_exec(1, "docker rm -f bench-torchrun", check=False)
        for node in (1, 2):
            node_exec(node, f"docker restart {WORKER}")
        node_exec(3, f"docker start {WORKER}")
        launcher.wait()
    return {
        "fault": "worker_kill (torchrun elastic)",
        "repeat": repeat,
        "commit": COMMIT,
        "rc": rc,
        "status": "succeeded" if rc == 0 else "failed",
        "resumed_epoch_s": resumed_epoch_s,
        "resumed_epoch": resumed_epoch,
        "first_step_s": first_step_s,
    }


# ---------------------------------------------------------------- report


COMMIT = subprocess.run(
    ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
).stdout.strip()


def newest_runs(results: list[dict[str, Any]], fault: str) -> list[dict[str, Any]]:
    """The runs of ``fault`` by the newest commit that ran it (runs recorded before commits were: one group)."""
    runs = [result for result in results if result["fault"] == fault]
    newest = runs[-1].get("commit") if runs else None
    return [run for run in runs if run.get("commit") == newest]


def median(values: list[float | None]) -> float | None:
    numbers = [value for value in values if value is not None]
    return round(statistics.median(numbers), 1) if numbers else None


def each_of(values: list[Any]) -> str:
    """Each run's figure, in order ("none" where it has none)."""
    return ", ".join("none" if value is None else str(value) for value in values)


def report(results: list[dict[str, Any]]) -> str:
    rows = [
        "| fault | detected (s after the fault) | first step after the fault (s, each run) | first epoch after the fault (s, each run) | it was epoch | runs succeeded | commit |",
        "|---|---|---|---|---|---|---|",
    ]
    for fault in [*FAULTS, "worker_kill (torchrun elastic)"]:
        runs = newest_runs(results, fault)
        if not runs:
            continue
        succeeded = sum(1 for run in runs if run["status"] == "succeeded")
        detected = median([run.get("detected_s") for run in runs])
        steps = [run.get("first_step_s") for run in runs]
        rows.append(
            f"| {fault} | {detected if detected is not None else '-'}"
            + (f" | {median(steps)} ({each_of(steps)})" if any(step is not None for step in steps) else " | -")
            + f" | {median([run['resumed_epoch_s'] for run in runs])} ({each_of([run['resumed_epoch_s'] for run in runs])})"
            f" | {each_of([run['resumed_epoch'] for run in runs])} | {succeeded} of {len(runs)} | {runs[0].get('commit') or '-'} |"
        )
    healthy = newest_runs(results, "healthy")
    if healthy:
        restarted = sum(1 for run in healthy if run["restarts"])
        succeeded = sum(1 for run in healthy if run["status"] == "succeeded")
        causes = sorted({cause for run in healthy for cause in run.get("causes") or []})
        rows += [
            "",
            f"Healthy runs (no fault) at {healthy[0].get('commit') or 'a commit before they were recorded'}:"
            f" {len(healthy)}, {succeeded} succeeded, {restarted} restarted"
            + (f" ({'; '.join(causes)})" if causes else "")
            + ".",
        ]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    intro = (
        f"`benchmarks/restart_bench.py` ({when}, this machine: 2 cores): the named CNN job of `examples/cifar_cnn`"
        f" ({EPOCHS} epochs, a checkpoint after each, about 4 s an epoch on 3 ranks), the fault once its"
        f" epoch-{FAULT_AFTER} checkpoint is on disk. Seconds from sending the fault to the restart's `detected_at`"
        " to the first training step the controller recorded after it (the example prints each epoch's first step and"
        " every 20th; `progress.jsonl` keeps each attempt's first, at most its 1-s poll late), and to the first"
        " checkpoint the resumed job wrote (its first finished epoch), medians over the runs of the newest"
        " commit that ran the fault (each run's figure in brackets). torchrun's own elastic restart (`--nnodes 2:3 --max-restarts 3`, c10d"
        " rendezvous, one agent per node over the cluster's SSH) ran on the same worker kill; it restarts the script"
        " from its start (RESUME_FROM is fixed when its agent starts), so its first epoch after the fault is epoch 1."
    )
    title = "### Keep training through failures (3-node sim cluster)"
    return "\n".join([title, "", intro, "", *rows]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--healthy-runs", type=int, default=10)
    parser.add_argument("--fresh", action="store_true", help="forget the results of earlier runs")
    parser.add_argument(
        "--faults", nargs="*", default=[*FAULTS, "torchrun", "healthy"], choices=[*FAULTS, "torchrun", "healthy"]
    )
    args = parser.parse_args()
    subprocess.run(
        [str(VENV_BIN / "python"), str(ROOT / "examples" / "cifar_cnn" / "make_data.py"), str(DATA_DIR)],
        check=True,
        capture_output=True,
    )
    # The CNN example and its data on every node (<workdir>/code, <workdir>/data): torchrun's run uses them as staged.
    if playbook(
        "setup", "playbooks/launch.yml", job_vars("bench-restart-setup", launcher_script_args=["--epochs", "1"])
    ).wait():
        raise RuntimeError("the setup job failed; see benchmarks/results/restart_logs/setup.log")
    results = []
    for repeat in range(1, args.repeats + 1):
        for fault in (fault for fault in args.faults if fault != "healthy"):
            result = torchrun_elastic_run(repeat) if fault == "torchrun" else product_run(fault, repeat)
            print(json.dumps(result), flush=True)
            results.append(result)
    for repeat in range(1, args.healthy_runs + 1 if "healthy" in args.faults else 1):
        results.append(healthy_run(repeat))
        print(json.dumps(results[-1]), flush=True)
    # Added to the results of earlier runs (--fresh starts over): the medians are over every run of a fault.
    if RESULTS_JSON.exists() and not args.fresh:
        results = json.loads(RESULTS_JSON.read_text())["results"] + results
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    RESULTS_JSON.write_text(json.dumps({"results": results}, indent=2) + "\n")
    RESULTS_MD.write_text(report(results))
    embed_in_readme(RESULTS_MD)
    print(RESULTS_MD.read_text())


if __name__ == "__main__":
    main()
