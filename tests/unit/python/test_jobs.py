"""submit(), Job and the queue, run for real: a detached follower runs a stand-in train.yml through ansible-runner.

The stand-in collection plays the parts the follower reads: the provisioning play, then the launch play whose
``run_container.yml`` task file is the training phase. That phase writes the live log, waits until the job's hold is
over, the test releases it (``release``) or a cancel is asked for (as the job_wait action does), and writes summary.json
like the launcher role. A test that needs a job to stay running until it has looked gives it ``hold=HELD`` and releases
it: no test depends on how fast this machine is. Failures are stand-in
tasks named like the real preflight and provisioning tasks. The real playbooks run on the sim cluster (README).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from multinode_training import api, jobs
from multinode_training.__main__ import extra_vars, main
from multinode_training.api import RunNotFoundError
from multinode_training.jobs import FINAL_STATES, ClusterBusyError, InvalidJobError, Job, ProvisioningError, list_runs, submit

REPO = Path(__file__).resolve().parents[3]

TRAIN = """
- name: Provision the nodes
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Judge every input of the run before any node changes
      ansible.builtin.assert:
        that: not (refuse | default(false) | bool)
        fail_msg: launcher_timeout must be a whole number > 0
    - name: Check no job is still running on the nodes
      ansible.builtin.assert:
        that: not (busy | default(false) | bool)
        fail_msg: job other is still running on node1 (launch.sh)
    - name: Install the Docker engine
      ansible.builtin.assert:
        that: not (break_provisioning | default(false) | bool)
        fail_msg: the engine did not start
- name: Launch, wait, collect
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Train
      ansible.builtin.include_tasks: run_container.yml
"""

RUN_CONTAINER = """
- name: The ranks' lines
  ansible.builtin.shell: |
    mkdir -p {{ run_dir }}
    printf '[job] rank 0 started on node1\\n[rank 0 node1] epoch 1\\n[rank 1 node2] epoch 1\\n' >> {{ run_dir }}/live.log
  changed_when: true
- name: Train until the hold is over, the test releases the job or a cancel is asked for
  ansible.builtin.shell: |
    end=$(( $(date +%s) + {{ hold | default(1) | int }} ))
    until [ -e cancel ] || [ -e release ] || [ "$(date +%s)" -ge "$end" ]; do sleep 0.1; done
    if [ -e cancel ]; then echo cancelled; fi
  args:
    chdir: "{{ run_dir }}"
  register: trained
  changed_when: true
- name: The summary
  ansible.builtin.copy:
    dest: "{{ run_dir }}/summary.json"
    content: "{{ {'job_id': launcher_job_id, 'status': 'cancelled' if 'cancelled' in trained.stdout else 'succeeded',
                 'failure_reasons': [], 'started': started} | to_json }}"
    mode: "0644"
  vars:
    started: "{{ now(utc=true).timestamp() }}"
"""


# playbooks/attach.yml's part: the summary of the job taken over, cancelled when its launch script was stopped.
ATTACH = """
- name: Follow, collect and judge the job
  hosts: all
  gather_facts: false
  vars:
    run_dir: "{{ launcher_runs_dir }}/{{ launcher_job_id }}"
    following: "{{ lookup('ansible.builtin.file', run_dir ~ '/following.json') | from_json }}"
  tasks:
    - name: Fail when the job cannot be taken over
      ansible.builtin.assert:
        that: not (refuse_attach | default(false) | bool)
        fail_msg: no follow.json
    - name: The summary
      ansible.builtin.copy:
        dest: "{{ run_dir }}/summary.json"
        content: "{{ {'job_id': launcher_job_id, 'failure_reasons': [], 'phases': {'train': 1.0}, 'launcher': 'torchrun',
                     'nodes': ['node1'], 'world_size': 1, 'rank_exit_codes': {'0': 0}, 'test_accuracy': none,
                     'provision_changed': 0,
                     'status': 'cancelled' if (following.job_dir ~ '/stop') is exists else 'succeeded'} | to_json }}"
        mode: "0644"
"""


def stand_in_collection(collection: Path) -> Path:
    """A stand-in collection: train.yml, launch.yml and attach.yml, and what the API reads of a collection."""
    (collection / "playbooks").mkdir(parents=True)
    (collection / "playbooks" / "train.yml").write_text(textwrap.dedent(TRAIN))
    launch_play = TRAIN[TRAIN.index("- name: Launch, wait, collect") :]
    (collection / "playbooks" / "launch.yml").write_text(textwrap.dedent(launch_play))
    (collection / "playbooks" / "attach.yml").write_text(textwrap.dedent(ATTACH))
    (collection / "playbooks" / "run_container.yml").write_text(
        textwrap.dedent(RUN_CONTAINER).replace("{{ run_dir }}", "{{ launcher_runs_dir }}/{{ launcher_job_id }}")
    )
    # What the API reads of a collection besides its playbooks: the job id formula, the launcher's default and which
    # environment values are secret.
    for part in ("plugins/module_utils/job_id.py", "roles/launcher/meta/argument_specs.yml",
                 "plugins/module_utils/secret_env.py"):
        (collection / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / part, collection / part)
    return collection


@pytest.fixture(name="cluster")
def cluster_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A stand-in collection, an inventory of localhost, a runs directory and a queue of their own."""
    collection = stand_in_collection(tmp_path / "collection")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    monkeypatch.setattr(jobs, "QUEUE_ROOT", tmp_path / "queue")
    return {"collection": collection, "inventory": inventory, "runs": tmp_path / "runs"}


def submitted(cluster: dict[str, Path], job_id: str, **variables: object) -> Job:
    return submit(
        cluster["inventory"],
        extravars={"launcher_job_id": job_id, **variables},
        runs_dir=cluster["runs"],
        collection_dir=cluster["collection"],
    )


# A hold no test outlasts: the job runs until the test releases it.
HELD = 900
# How long a test waits for what must happen (a deadline, not a measure: the suite runs beside two molecule scenarios
# on two cores).
PATIENCE = 300


def release(*held: Job) -> None:
    """Let jobs submitted with ``hold=HELD`` end."""
    for job in held:
        (job.run_dir / "release").write_text("")


def wait_for(job: Job, wanted: str, timeout: float = PATIENCE) -> list[str]:
    """The states seen until ``wanted``."""
    seen = [job.status()]
    deadline = time.monotonic() + timeout
    while seen[-1] != wanted:
        assert time.monotonic() < deadline, f"{job.id} never {wanted}: {seen}"
        assert seen[-1] not in FINAL_STATES, f"{job.id} ended {seen[-1]}, not {wanted}: {seen}"
        time.sleep(0.1)
        if (state := job.status()) != seen[-1]:
            seen.append(state)
    return seen


def test_submit_returns_at_once_and_the_job_runs_to_its_end_in_the_background(cluster: dict[str, Path]) -> None:
    job = submitted(cluster, "job-a", hold=HELD)
    assert job.status() not in FINAL_STATES, "submit returned while the job waits to be released"
    states = wait_for(job, "running")
    release(job)
    run = job.wait(timeout=PATIENCE)
    assert run.status == "succeeded" and run.summary and run.summary["job_id"] == "job-a"
    assert states[0] == "queued" and "provisioning" in states
    assert list(job.logs()) == ["[job] rank 0 started on node1", "[rank 0 node1] epoch 1", "[rank 1 node2] epoch 1"]
    assert list(job.logs(rank=1)) == ["[rank 1 node2] epoch 1"]
    # ansible-runner's artifacts stay in the run directory: what the playbook printed can be read afterwards.
    stdout = next((job.run_dir / "runner" / "artifacts").glob("*/stdout"))
    assert "Judge every input of the run" in stdout.read_text()
    assert [listed.id for listed in list_runs(cluster["runs"])] == ["job-a"]


def test_two_jobs_submitted_at_once_run_one_after_the_other(cluster: dict[str, Path]) -> None:
    first = submitted(cluster, "job-1", hold=HELD)
    second = submitted(cluster, "job-2", hold=0)
    wait_for(first, "running")
    assert second.status() == "queued"
    release(first)
    assert first.wait(timeout=PATIENCE).status == "succeeded"
    assert second.wait(timeout=PATIENCE).status == "succeeded"
    assert read_started(second) >= read_ended(first)
    assert [job.id for job in list_runs(cluster["runs"])] == ["job-2", "job-1"]


def test_jobs_of_two_inventories_naming_one_node_take_turns_and_other_nodes_do_not_wait(
    cluster: dict[str, Path], tmp_path: Path
) -> None:
    """The queue is per node (its address and port), whatever inventory file names it."""

    def inventory(name: str, address: str) -> Path:
        path = tmp_path / f"{name}.yml"
        path.write_text(f"launcher:\n  hosts:\n    node1: {{ansible_host: {address}}}\nworkers:\n  hosts: {{}}\n")
        return path

    def submitted_on(inventory_path: Path, job_id: str, hold: int) -> Job:
        extravars = {"launcher_job_id": job_id, "hold": hold}
        return submit(inventory_path, extravars=extravars, runs_dir=cluster["runs"], collection_dir=cluster["collection"])

    first = submitted_on(inventory("team_a", "192.0.2.10"), "job-a", HELD)
    same_node = submitted_on(inventory("team_b", "192.0.2.10"), "job-b", 0)
    other_node = submitted_on(inventory("team_c", "192.0.2.11"), "job-c", 0)
    assert json.loads((first.run_dir / "job.json").read_text())["nodes"] == ["192.0.2.10:22"]
    wait_for(first, "running")
    assert same_node.status() == "queued"
    assert other_node.wait(timeout=PATIENCE).status == "succeeded"
    assert first.status() == "running", "the job on another node ran beside the first, not after it"
    release(first)
    assert first.wait(timeout=PATIENCE).status == "succeeded"
    assert same_node.wait(timeout=PATIENCE).status == "succeeded"
    assert read_started(same_node) >= read_ended(first)


def read_started(job: Job) -> float:
    return float(json.loads((job.run_dir / "job.json").read_text())["started_at"])


def read_ended(job: Job) -> float:
    return float(json.loads((job.run_dir / "job.json").read_text())["ended_at"])


def test_an_inventory_ansible_cannot_read_is_refused_at_submit(cluster: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("launcher: [this is not an inventory\n")
    with pytest.raises(InvalidJobError, match="ansible-inventory cannot read"):
        submit(broken, extravars={"launcher_job_id": "job-x"}, runs_dir=cluster["runs"], collection_dir=cluster["collection"])
    assert not (cluster["runs"] / "job-x").exists()


def test_a_queued_job_cancelled_never_runs(cluster: dict[str, Path]) -> None:
    first = submitted(cluster, "job-long", hold=HELD)
    second = submitted(cluster, "job-never")
    wait_for(first, "running")
    assert second.cancel()
    assert second.wait(timeout=PATIENCE).status == "cancelled"
    assert second.summary is None and not (second.run_dir / "runner").exists()
    release(first)
    assert first.wait(timeout=PATIENCE).status == "succeeded"
    assert not second.cancel(), "an ended job has nothing to stop"


def test_a_running_job_is_cancelled_from_another_process_after_the_submitter_died(cluster: dict[str, Path]) -> None:
    code = textwrap.dedent(f"""
        import os, signal
        from multinode_training import jobs
        jobs.QUEUE_ROOT = jobs.Path({str(jobs.QUEUE_ROOT)!r})
        job = jobs.submit({str(cluster['inventory'])!r}, extravars={{"launcher_job_id": "job-orphan", "hold": {HELD}}},
                          runs_dir={str(cluster['runs'])!r}, collection_dir={str(cluster['collection'])!r})
        os.kill(os.getpid(), signal.SIGKILL)
        """)
    killed = subprocess.run([sys.executable, "-c", code], check=False, timeout=PATIENCE)
    assert killed.returncode == -9
    job = Job.load(cluster["runs"] / "job-orphan")
    wait_for(job, "running")
    assert main(["cancel", str(job.run_dir)]) == 0
    run = job.wait(timeout=PATIENCE)
    assert run.status == "cancelled" and run.summary and run.summary["status"] == "cancelled"


@pytest.mark.parametrize(
    ("variables", "error", "reason"),
    [
        ({"refuse": True}, InvalidJobError, "launcher_timeout must be a whole number > 0"),
        ({"break_provisioning": True}, ProvisioningError, "the engine did not start"),
        ({"busy": True}, ClusterBusyError, "job other is still running on node1"),
    ],
)
def test_a_job_that_never_ran_raises_its_typed_error(
    cluster: dict[str, Path], variables: dict[str, object], error: type, reason: str
) -> None:
    job = submitted(cluster, "job-bad", **variables)
    with pytest.raises(error, match=reason) as raised:
        job.wait(timeout=PATIENCE)
    assert raised.value.job_id == "job-bad"
    assert job.status() == "failed"


def test_a_job_id_queued_or_running_is_not_submitted_twice(cluster: dict[str, Path]) -> None:
    job = submitted(cluster, "job-once", hold=HELD)
    with pytest.raises(InvalidJobError, match="a job with this id is"):
        submitted(cluster, "job-once")
    release(job)
    assert job.wait(timeout=PATIENCE).status == "succeeded"
    assert submitted(cluster, "job-once").wait(timeout=PATIENCE).status == "succeeded", "an ended one may run again"


def test_a_job_whose_follower_died_is_lost(cluster: dict[str, Path]) -> None:
    run_dir = cluster["runs"] / "job-gone"
    run_dir.mkdir(parents=True)
    (run_dir / "job.json").write_text(json.dumps({"job_id": "job-gone", "state": "running", "submitted_at": 1.0}))
    (run_dir / "follower.pid").write_text("999999999\n")
    assert Job.load(run_dir).status() == "lost"


def test_a_job_whose_follower_died_after_a_stop_was_asked_is_cancelled(cluster: dict[str, Path]) -> None:
    run_dir = cluster["runs"] / "job-stopped"
    run_dir.mkdir(parents=True)
    (run_dir / "job.json").write_text(json.dumps({"job_id": "job-stopped", "state": "running", "submitted_at": 1.0}))
    (run_dir / "follower.pid").write_text("999999999\n")
    (run_dir / "cancel").write_text("")
    assert Job.load(run_dir).status() == "cancelled"


def test_a_run_of_train_without_a_job_file_is_listed_by_its_summary(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "20261127-141148-torchrun"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps({"job_id": run_dir.name, "status": "failed"}))
    (tmp_path / "runs" / "not-a-run").mkdir()
    (tmp_path / "runs" / "latest").symlink_to(run_dir.name)
    assert [(job.id, job.status()) for job in list_runs(tmp_path / "runs")] == [(run_dir.name, "failed")]


def test_loading_no_run_raises_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(RunNotFoundError):
        Job.load(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()


@pytest.mark.parametrize(
    ("given", "variables"),
    [
        (["launcher_type=mpiexec"], {"launcher_type": "mpiexec"}),
        (["a=1 b=two"], {"a": "1", "b": "two"}),
        (['{"launcher_script_args": ["--epochs", 3]}'], {"launcher_script_args": ["--epochs", 3]}),
        (["a=1", '{"a": 2}'], {"a": 2}),
    ],
)
def test_extra_vars_are_read_as_ansible_playbook_reads_them(given: list[str], variables: dict[str, object]) -> None:
    assert extra_vars(given) == variables


@pytest.mark.parametrize("given", [["novalue"], ["=value"]])
def test_an_extra_var_without_a_name_or_value_is_refused(given: list[str]) -> None:
    with pytest.raises(ValueError, match="VAR=VALUE"):
        extra_vars(given)


@pytest.mark.parametrize("text", ["launcher_env:\n  HF_TOKEN: s3cr3t-value\nhold: 3\n", '{"launcher_env": {"HF_TOKEN": "s3cr3t-value"}, "hold": 3}'])
def test_extra_vars_are_read_from_a_file_as_ansible_playbook_reads_them(tmp_path: Path, text: str) -> None:
    (tmp_path / "secrets.yml").write_text(text)
    variables = extra_vars(["a=1", f"@{tmp_path / 'secrets.yml'}"])
    assert variables == {"a": "1", "launcher_env": {"HF_TOKEN": "s3cr3t-value"}, "hold": 3}


@pytest.mark.parametrize(("text", "error"), [(None, "No such file"), ("- a list\n", "no mapping"), ("a: [\n", "while parsing")])
def test_an_extra_vars_file_that_holds_none_is_refused_naming_it(tmp_path: Path, text: str | None, error: str) -> None:
    if text is not None:
        (tmp_path / "vars.yml").write_text(text)
    with pytest.raises(ValueError, match=f"-e @{tmp_path / 'vars.yml'}: .*{error}"):
        extra_vars([f"@{tmp_path / 'vars.yml'}"])


def test_the_job_file_is_read_by_its_owner_only(cluster: dict[str, Path]) -> None:
    job = submitted(cluster, "job-private", token="s3cret")
    assert (job.run_dir / "job.json").stat().st_mode & 0o777 == 0o600
    assert job.wait(timeout=PATIENCE).status == "succeeded"


SECRET = "s3cr3t-value"
# A stand-in of the launcher role's part: a fact holding the job's environment (as launcher_tuning does), and a
# check that the playbook was given the secret itself (by its hash: the playbook file names no secret either).
SECRET_TASKS = f"""
- name: Work out this node's tuning (it holds the job's environment)
  ansible.builtin.set_fact:
    stand_in_tuning:
      env: "{{{{ launcher_env }}}}"
- name: The job is given the secret itself
  ansible.builtin.assert:
    that: launcher_env.HF_TOKEN | hash('sha1') == '{hashlib.sha1(SECRET.encode()).hexdigest()}'
"""


def cmdlines_holding(secret: bytes) -> list[str]:
    """The command lines of the processes running now that hold ``secret``. Listed by name, not globbed: pathlib's glob
    stats each match, and a process that ends between the listing and the stat raised ProcessLookupError (ESRCH)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        path = Path("/proc", pid, "cmdline")
        with contextlib.suppress(OSError):
            if secret in path.read_bytes():
                found.append(path.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return found


def files_holding(secret: bytes, *roots: Path) -> list[Path]:
    return [path for root in roots for path in root.rglob("*") if path.is_file() and secret in path.read_bytes()]


def test_a_secret_of_the_job_s_environment_is_on_no_command_line_and_in_no_file_of_the_run(
    cluster: dict[str, Path]
) -> None:
    run_container = cluster["collection"] / "playbooks" / "run_container.yml"
    run_container.write_text(textwrap.dedent(SECRET_TASKS) + run_container.read_text())
    job = submitted(cluster, "job-secret", hold=3, launcher_env={"HF_TOKEN": SECRET, "OMP_PROC_BIND": "close"})
    seen: list[str] = []
    while job.status() not in FINAL_STATES:
        seen += cmdlines_holding(SECRET.encode())
        time.sleep(0.1)
    assert job.wait(timeout=PATIENCE).status == "succeeded", "the playbook was given the secret itself"
    assert not seen, "no process (ansible-playbook, the follower) had it on its command line"
    assert not files_holding(SECRET.encode(), cluster["runs"], jobs.QUEUE_ROOT)
    record = json.loads((job.run_dir / "job.json").read_text())
    assert record["extravars"]["launcher_env"] == {"HF_TOKEN": "***", "OMP_PROC_BIND": "close"}
    events = "".join(path.read_text() for path in (job.run_dir / "runner").rglob("job_events/*.json"))
    assert '"stand_in_tuning": {"env": {"HF_TOKEN": "***", "OMP_PROC_BIND": "close"}}' in events
    # ansible-playbook read them from ansible-runner's private data directory, outside the run directory (gone now).
    (command,) = [json.loads(path.read_text())["command"] for path in (job.run_dir / "runner").rglob("artifacts/*/command")]
    extravars = command[command.index("-e") + 1]
    assert extravars.startswith("@") and extravars.endswith("/env/extravars") and not Path(extravars[1:]).exists()
    assert not extravars[1:].startswith(str(cluster["runs"]))


def test_a_run_directory_the_queue_and_their_files_are_their_owner_s_only(cluster: dict[str, Path]) -> None:
    os.umask(umask := os.umask(0))
    try:
        job = submitted(cluster, "job-private-modes", hold=HELD)
        ticket = jobs.ticket_of(jobs.QUEUE_ROOT, job.run_dir)
        assert ticket is not None and ticket.stat().st_mode & 0o777 == 0o600
        assert jobs.QUEUE_ROOT.stat().st_mode & 0o777 == 0o700
        release(job)
        assert job.wait(timeout=PATIENCE).status == "succeeded"
    finally:
        os.umask(umask)
    assert job.run_dir.stat().st_mode & 0o777 == 0o700
    # What the package writes (the stand-in playbook writes the rest; the collection's own tests hold those).
    modes = {name: (job.run_dir / name).stat().st_mode & 0o777 for name in ("job.json", "follower.pid", "follower.log")}
    assert modes == dict.fromkeys(modes, 0o600)
    assert (job.run_dir / "runner").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize(("artifacts", "status"), [(False, "running"), (True, "failed")])
def test_a_run_of_train_without_a_summary_is_running_until_its_playbook_ended(
    tmp_path: Path, artifacts: bool, status: str
) -> None:
    run_dir = tmp_path / "job-t"
    (run_dir / "runner" / "artifacts" / "ident").mkdir(parents=True)
    if artifacts:
        (run_dir / "runner" / "artifacts" / "ident" / "status").write_text("failed")
    assert Job.load(run_dir).status() == status


def test_a_job_for_a_provisioned_cluster_runs_launch_yml_only(cluster: dict[str, Path]) -> None:
    job = submit(
        cluster["inventory"],
        extravars={"launcher_job_id": "job-warm"},
        runs_dir=cluster["runs"],
        collection_dir=cluster["collection"],
        provision=False,
    )
    assert job.wait(timeout=PATIENCE).status == "succeeded"
    stdout = next((job.run_dir / "runner" / "artifacts").glob("*/stdout")).read_text()
    assert "Launch, wait, collect" in stdout and "Judge every input" not in stdout


def test_a_job_beside_does_not_wait_and_the_next_one_waits_for_it(cluster: dict[str, Path]) -> None:
    first = submitted(cluster, "job-1", hold=HELD)
    wait_for(first, "running")
    beside = submit(
        cluster["inventory"],
        extravars={"launcher_job_id": "job-beside", "hold": HELD},
        runs_dir=cluster["runs"],
        collection_dir=cluster["collection"],
        beside=True,
    )
    after = submitted(cluster, "job-after", hold=0)
    wait_for(beside, "running")
    assert first.status() == "running", "the job beside runs while the first does"
    beside_record = json.loads((beside.run_dir / "job.json").read_text())
    # As the README writes it, beside=True alone: the job only, launch.yml.
    assert beside_record["extravars"]["launcher_beside"] is True and beside_record["playbook"] == "launch.yml"
    assert after.status() == "queued"
    release(first, beside)
    assert all(job.wait(timeout=PATIENCE).status == "succeeded" for job in (first, beside, after))
    assert read_started(after) >= max(read_ended(first), read_ended(beside))


def test_a_job_beside_with_provisioning_is_refused_creating_nothing(cluster: dict[str, Path]) -> None:
    with pytest.raises(InvalidJobError, match="beside=True runs the job only"):
        submit(cluster["inventory"], extravars={"launcher_job_id": "job-x"}, runs_dir=cluster["runs"],
               collection_dir=cluster["collection"], provision=True, beside=True)
    assert not (cluster["runs"] / "job-x").exists()


def orphaned_run(tmp_path: Path, pid: int) -> Path:
    """A run whose ansible-playbook (``pid``) followed a job on localhost, as the run_start action records it."""
    run_dir = tmp_path / "runs" / "job-orphan"
    run_dir.mkdir(parents=True)
    (run_dir / "live.log").write_text("[job] rank 0 started on node1\n")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(f"node1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    following = {
        "pid": pid,
        "inventory": [str(inventory)],
        "ansible_config": "",
        "become": False,
        "launcher_host": "node1",
        "job_dir": str(tmp_path / "job"),
    }
    (run_dir / "following.json").write_text(json.dumps(following))
    (tmp_path / "job").mkdir()
    return run_dir


def gone_pid() -> int:
    ended = subprocess.Popen(["true"])  # pylint: disable=consider-using-with
    ended.wait()
    return ended.pid


@pytest.fixture(name="stand_in")
def stand_in_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in collection, found by the API in place of this repository."""
    collection = stand_in_collection(tmp_path / "collection")
    monkeypatch.setattr(jobs, "find_collection", lambda _given=None: collection)
    return collection


def test_a_job_nobody_follows_is_stopped_on_its_launcher_node_then_collected(
    tmp_path: Path, stand_in: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = orphaned_run(tmp_path, gone_pid())
    job = Job.load(run_dir)
    assert job.status() == "lost"
    assert main(["cancel", str(run_dir)]) == 1, "its results: cancelled"
    assert (tmp_path / "job" / "stop").exists(), "the launch script's stop file, written on the launcher node"
    assert "nobody followed it, so this collects it" in capsys.readouterr().out
    assert job.status() == "cancelled"
    assert job.summary is not None and job.summary["status"] == "cancelled"


def test_a_job_nobody_follows_is_taken_over_to_its_summary(
    tmp_path: Path, stand_in: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = orphaned_run(tmp_path, gone_pid())
    assert main(["show", str(run_dir)]) == 0
    assert f"nobody follows it: `multinode-training attach {run_dir}` collects it" in capsys.readouterr().out
    run = Job.load(run_dir).attach()
    assert (run.status, run.dir) == ("succeeded", run_dir)
    assert Job.load(run_dir).status() == "succeeded"
    # Taken over once: a second call returns the summary without running anything.
    (stand_in / "playbooks" / "attach.yml").unlink()
    assert Job.load(run_dir).attach().status == "succeeded"


def test_a_take_over_runs_with_the_job_s_own_extra_variables_but_the_launcher_s(tmp_path: Path, stand_in: Path) -> None:
    run_dir = orphaned_run(tmp_path, gone_pid())
    following = json.loads((run_dir / "following.json").read_text())
    following["extra_vars"] = {"cluster_runtime": "host", "launcher_max_restarts": 3}
    (run_dir / "following.json").write_text(json.dumps(following))
    (stand_in / "playbooks" / "attach.yml").write_text(
        textwrap.dedent(ATTACH).replace("not (refuse_attach | default(false) | bool)",
                                        "cluster_runtime == 'host' and launcher_max_restarts is not defined")
    )
    assert Job.load(run_dir).attach().status == "succeeded"


def test_a_submitted_job_taken_over_says_how_it_ended(tmp_path: Path, stand_in: Path) -> None:
    run_dir = orphaned_run(tmp_path, gone_pid())
    jobs.write_job_file(run_dir, {"job_id": run_dir.name, "state": "running", "submitted_at": time.time()})
    (run_dir / "follower.pid").write_text(f"{gone_pid()}\n")
    job = Job.load(run_dir)
    assert job.status() == "lost"
    assert job.attach().status == "succeeded"
    record = jobs.read_job_file(run_dir) or {}
    assert (record["state"], record["rc"], job.status()) == ("succeeded", 0, "succeeded")
    assert int((run_dir / "follower.pid").read_text()) == os.getpid(), "the process that took it over followed it"


def test_a_job_still_followed_or_never_started_is_not_taken_over(tmp_path: Path, stand_in: Path) -> None:
    run_dir = orphaned_run(tmp_path, os.getpid())
    with pytest.raises(jobs.JobError, match="a live process still follows it"):
        Job.load(run_dir).attach()
    (run_dir / "following.json").unlink()
    with pytest.raises(jobs.JobError, match="never started on its nodes"):
        Job.load(run_dir).attach()
    assert not (run_dir / "summary.json").exists()


def test_a_failed_take_over_names_its_failure(tmp_path: Path, stand_in: Path) -> None:
    run_dir = orphaned_run(tmp_path, gone_pid())
    jobs.write_job_file(run_dir, {"job_id": run_dir.name, "state": "running", "extravars": {}})
    (stand_in / "playbooks" / "attach.yml").write_text(textwrap.dedent(ATTACH).replace("refuse_attach | default(false)", "true"))
    with pytest.raises(jobs.JobError, match="Fail when the job cannot be taken over: no follow.json"):
        Job.load(run_dir).attach()
    assert (jobs.read_job_file(run_dir) or {})["state"] == "failed"


def test_a_job_still_followed_is_only_asked_to_stop(tmp_path: Path) -> None:
    run_dir = orphaned_run(tmp_path, os.getpid())
    assert Job.load(run_dir).status() == "running"
    assert Job.load(run_dir).cancel()
    assert (run_dir / "cancel").exists() and not (tmp_path / "job" / "stop").exists()


def test_an_unreachable_launcher_node_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = orphaned_run(tmp_path, gone_pid())
    following = json.loads((run_dir / "following.json").read_text())
    (tmp_path / "hosts.ini").write_text("node1 ansible_host=127.0.0.1 ansible_port=9 ansible_connection=ssh\n")
    (run_dir / "following.json").write_text(json.dumps(following))
    assert main(["cancel", str(run_dir)]) == 1
    assert "its launcher node node1 could not be reached to stop it" in capsys.readouterr().err


def test_the_command_line_submits_follows_and_lists_a_job(
    cluster: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's `multinode-training submit / logs -f / list` (the stand-in collection plays the playbooks)."""
    monkeypatch.setattr(jobs, "find_collection", lambda _given=None: cluster["collection"])
    runs = ["--runs-dir", str(cluster["runs"])]
    assert main(["submit", str(cluster["inventory"]), "-e", "launcher_job_id=cli-job", *runs]) == 0
    assert "submitted cli-job" in capsys.readouterr().out
    assert main(["logs", "-f", "cli-job", *runs]) == 0
    assert capsys.readouterr().out.splitlines() == ["[job] rank 0 started on node1", "[rank 0 node1] epoch 1", "[rank 1 node2] epoch 1"]
    assert Job.load(cluster["runs"] / "cli-job").wait(timeout=PATIENCE).status == "succeeded"
    assert main(["list", *runs]) == 0
    listed = capsys.readouterr().out
    assert "cli-job" in listed and "succeeded" in listed


def test_the_typed_errors_name_the_roles_tasks() -> None:
    """The tasks whose failure makes an InvalidJobError or a ClusterBusyError are the cluster role's."""
    tasks = (REPO / "roles" / "cluster" / "tasks" / "main.yml").read_text(encoding="utf-8")
    assert f"- name: {jobs.PREFLIGHT_TASK}\n" in tasks and f"- name: {jobs.BUSY_TASK}\n" in tasks


def test_a_follower_that_died_under_the_submitting_process_makes_the_job_lost(cluster: dict[str, Path]) -> None:
    """The notebook that submitted the job still runs, so its dead follower stays a zombie until reaped: the job is
    lost, not running for ever."""
    job = submitted(cluster, "job-follower-died", hold=HELD)
    wait_for(job, "running")
    follower = int((job.run_dir / "follower.pid").read_text())
    os.kill(follower, signal.SIGKILL)
    assert wait_for(job, "lost")[-1] == "lost"
    release(job)  # its playbook, orphaned, ends


def test_an_ended_process_not_reaped_yet_is_not_alive() -> None:
    """A child of this process and a child of another one, each ended and waiting for its parent."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])  # pylint: disable=consider-using-with
    parent = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, "-c", "import os, sys, time\npid = os.fork()\nif pid == 0: os._exit(0)\nprint(pid, flush=True)\ntime.sleep(30)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        deadline = time.monotonic() + PATIENCE
        while not (api.zombie(child.pid) and api.zombie(grandchild)):
            assert time.monotonic() < deadline, "the processes did not end"
            time.sleep(0.05)
        assert not api.process_alive(child.pid), "this process's own ended child"
        assert not api.process_alive(grandchild), "another process's ended child"
        assert api.process_alive(parent.pid)
    finally:
        parent.kill()
        parent.wait()


def test_the_launcher_node_of_the_last_attempt_is_the_handovers_first_node(tmp_path: Path) -> None:
    # A restart moved the launcher node's role to node2 (node1 lost): a stop goes there, not to following.json's node1.
    assert api.current_launcher_node(tmp_path) is None, "no handover yet"
    (tmp_path / api.FOLLOW_STATE).write_text(json.dumps({"handover": {"vars": {"launcher_job_hosts": ["node2", "node3"]}}}))
    assert api.current_launcher_node(tmp_path) == "node2"
    for broken in ("{", json.dumps({"handover": {}}), json.dumps({"handover": {"vars": {"launcher_job_hosts": []}}})):
        (tmp_path / api.FOLLOW_STATE).write_text(broken)
        assert api.current_launcher_node(tmp_path) is None
