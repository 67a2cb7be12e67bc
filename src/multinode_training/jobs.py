"""Jobs, not calls: ``submit()`` returns at once and a detached follower on the controller runs the job.

The follower (``python -m multinode_training.follower RUN_DIR``, its own session: it outlives the process that submitted
the job) waits for its turn on the cluster, runs playbooks/train.yml through ansible-runner (its artifacts kept in
``RUN_DIR/runner``) and keeps the job's state in ``RUN_DIR/job.json``. Any process on the controller re-attaches to
a run by its directory: :class:`Job` reads that file, the live log and the summary.

Jobs that share a node take turns, first submitted first: each waits in the queue on the controller
(``~/.cache/multinode-training/queue/``, state ``queued``) until every job submitted before it on any of its nodes
has ended, so two jobs never share the nodes' rendezvous port or start half. A node is known by its address
(``ansible_host``, else its inventory name) and SSH port, whatever inventory file names it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from multinode_training.api import (
    CANCEL_FILE,
    FOLLOW_OFFSETS,
    FOLLOW_STATE,
    FOLLOWER_PID,
    FOLLOWING_FILE,
    JOB_FILE,
    LIVE_LOG,
    PROGRESS_FILE,
    RUNNER_DIR,
    SUMMARY_FILE,
    Run,
    RunNotFoundError,
    _Session,
    cancel,
    find_collection,
    job_id_for,
    masking,
    nobody_follows,
    private_dir,
    private_file,
    process_alive,
    read_json,
    recorded_pid,
    run_dir_at,
    runner_env,
)
from multinode_training.records import Failure, PhaseChanged, Record
from multinode_training.summary import Summary

QUEUED = "queued"
# The state of a job by the phase its playbook is in.
PHASE_STATES = {"provision": "provisioning", "launch": "launching", "train": "running", "collect": "collecting"}
# Final states: a summary's status, or how a job without one ended.
FINAL_STATES = ("succeeded", "failed", "cancelled", "timed_out", "lost")
# The task that judges the job's inputs (roles/cluster/tasks/main.yml): its failure is an invalid job.
PREFLIGHT_TASK = "Judge every input of the run before any node changes"
# The task that finds another job still running on the nodes (roles/cluster/tasks/main.yml).
BUSY_TASK = "Check no job is still running on the nodes"
QUEUE_ROOT = Path("~/.cache/multinode-training/queue")
# The inventory groups whose hosts a job uses (the playbooks' hosts).
NODE_GROUPS = ("launcher", "workers", "spares")
FOLLOWER_LOG = "follower.log"
POLL_SECONDS = 0.5


class JobError(RuntimeError):
    """A job ended without running (no summary): ``reasons`` are the failed tasks, host and reason."""

    def __init__(self, job_id: str, reasons: list[str]) -> None:
        super().__init__(f"job {job_id}: " + ("; ".join(reasons) or "ended without a summary"))
        self.job_id = job_id
        self.reasons = reasons


class InvalidJobError(JobError):
    """The preflight refused the job's inputs; nothing changed on any node."""


class ProvisioningError(JobError):
    """Provisioning the nodes failed before the job started."""


class ClusterBusyError(JobError):
    """Another job still ran on the nodes (started outside this controller's queue); nothing changed on any node."""


def submit(
    inventory: str | os.PathLike[str],
    *,
    extravars: Mapping[str, Any] | None = None,
    runs_dir: str | os.PathLike[str] = "runs",
    collection_dir: str | os.PathLike[str] | None = None,
    provision: bool | None = None,
    beside: bool = False,
) -> Job:
    """Queue the job of ``inventory`` (playbooks/train.yml with ``extravars``) and return its handle at once.

    Provisioning, the launch and the training go on in a detached follower; a job id already queued or running is
    refused (InvalidJobError). ``provision=False`` runs playbooks/launch.yml instead, for a cluster provisioned
    before: the job only, after the check that each node still holds its provisioning (a node that drifted is named).
    ``beside=True`` does not wait for the jobs on its nodes: it runs beside them (``launcher_beside``) when their
    ports and the nodes' cores allow, and is refused before any node changes when they do not. It is a job only (no
    provisioning, which would restart the workers under the running jobs), as the command line's ``--beside`` is;
    ``provision=True`` with it is refused. The jobs submitted after it still wait for it.
    """
    inventory_path = Path(inventory).expanduser().resolve()
    if not inventory_path.exists():
        raise InvalidJobError("-", [f"no inventory at {inventory_path}"])
    if provision is None:
        provision = not beside
    if beside and provision:
        raise InvalidJobError(
            "-", ["beside=True runs the job only (playbooks/launch.yml), on provisioned nodes: leave provision out"]
        )
    collection = find_collection(collection_dir)
    job_id = job_id_for(extravars or {}, collection)
    runs = Path(runs_dir).expanduser().resolve()
    run_dir = runs / job_id
    earlier = read_job_file(run_dir)
    if earlier and Job(run_dir).status() not in FINAL_STATES:
        raise InvalidJobError(job_id, [f"a job with this id is {earlier['state']} in {run_dir}"])
    nodes = inventory_nodes(inventory_path, collection)
    private_dir(run_dir)
    # An earlier run of the same id must not answer for this one (the launcher clears the rest when the job starts).
    stale_files = (CANCEL_FILE, FOLLOWER_PID, SUMMARY_FILE, LIVE_LOG, PROGRESS_FILE, FOLLOWING_FILE, FOLLOW_STATE, FOLLOW_OFFSETS)
    for stale in stale_files:
        (run_dir / stale).unlink(missing_ok=True)
    variables = {
        **(extravars or {}),
        "launcher_job_id": job_id,
        "launcher_runs_dir": str(runs),
        **({"launcher_beside": True} if beside else {}),
    }
    write_job_file(
        run_dir,
        {
            "job_id": job_id,
            "state": QUEUED,
            "submitted_at": time.time(),
            "inventory": str(inventory_path),
            # As shown: the follower is given them whole on its standard input, never in a file.
            "extravars": masking(variables, collection)(variables),
            "beside": beside,
            "collection_dir": str(collection),
            "playbook": "train.yml" if provision else "launch.yml",
            "nodes": nodes,
        },
    )
    enqueue(QUEUE_ROOT.expanduser(), run_dir, nodes)
    with private_file(run_dir / FOLLOWER_LOG).open("ab") as log:
        # The follower outlives this call: no with block.
        follower = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, "-m", "multinode_training.follower", str(run_dir)],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    # The job's extra variables, secrets included, through a pipe: in no file and on no command line.
    with follower.stdin as given:  # type: ignore[union-attr]
        given.write(json.dumps(variables, default=str).encode())
    # Beside job.json, which only the follower writes from now on.
    private_file(run_dir / FOLLOWER_PID).write_text(f"{follower.pid}\n")
    return Job(run_dir)


@dataclass(frozen=True)
class Job:
    """A handle to a run, submitted by this process or another one; ``run_dir`` is its directory."""

    run_dir: Path

    @classmethod
    def load(cls, run: str | os.PathLike[str]) -> Job:
        """The job of a run directory (RunNotFoundError when it is none)."""
        return cls(run_dir_at(run))

    @property
    def id(self) -> str:
        return self.run_dir.name

    @property
    def summary(self) -> Summary | None:
        """summary.json once the job wrote it."""
        summary = read_json(self.run_dir / SUMMARY_FILE)
        return cast(Summary, summary) if isinstance(summary, dict) else None

    def status(self) -> str:
        """queued, provisioning, launching, running, collecting, or how it ended (succeeded, failed, cancelled,
        timed_out; lost when its follower died before the job ended)."""
        summary = self.summary
        record = read_job_file(self.run_dir)
        if record is None:
            # A run of train() or ansible-playbook: its summary, else whether its playbook has ended (train() keeps
            # ansible-runner's artifacts, whose status file is written at the end) or has gone.
            if summary:
                return str(summary["status"])
            if any((self.run_dir / RUNNER_DIR / "artifacts").glob("*/status")):
                return "failed"
            if nobody_follows(self.run_dir):
                return "cancelled" if (self.run_dir / CANCEL_FILE).exists() else "lost"
            return "running"
        state = str(record["state"])
        if state in FINAL_STATES or self.follower_alive():
            return state
        # The follower ended between the summary and its last word, or died (after a stop was asked: cancelled).
        if summary and state == PHASE_STATES["collect"]:
            return str(summary["status"])
        return "cancelled" if (self.run_dir / CANCEL_FILE).exists() else "lost"

    def follower_alive(self) -> bool:
        """Whether the follower is running (or just being started: its pid is not written yet)."""
        pid = recorded_pid(self.run_dir / FOLLOWER_PID)
        if pid is None:
            return not (self.run_dir / FOLLOWER_PID).exists()
        return process_alive(pid)

    def wait(self, timeout: float | None = None, poll: float = POLL_SECONDS) -> Run:
        """Wait for the job to end; its Run. Raises InvalidJobError or ProvisioningError when it ended without a
        summary because of its inputs or the provisioning, TimeoutError after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (status := self.status()) not in FINAL_STATES:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {self.id} is still {status} after {timeout} s")
            time.sleep(poll)
        if self.summary is not None:
            return Run.load(self.run_dir)
        record = read_job_file(self.run_dir) or {}
        if status != "cancelled":
            raise job_error(self.id, record)
        # Cancelled while it waited in the queue: it never ran.
        return Run(status, int(record.get("rc") or 0), None, None, {})

    def logs(self, rank: int | None = None, follow: bool = False, poll: float = POLL_SECONDS) -> Iterator[str]:
        """The job's live log, line by line (every rank's lines behind ``[rank N node]``, the job's own behind
        ``[job]``); only rank ``rank``'s lines when given. With ``follow``, goes on until the job has ended."""
        prefix = None if rank is None else f"[rank {rank} "
        offset = 0
        while True:
            ended = self.status() in FINAL_STATES
            lines, offset = new_lines(self.run_dir / LIVE_LOG, offset)
            yield from (line for line in lines if prefix is None or line.startswith(prefix))
            if ended or not follow:
                return
            time.sleep(poll)

    def cancel(self) -> bool:
        """Stop the job: a queued one leaves the queue, a running one stops on every node (its summary then says
        cancelled); one that nobody follows any more (its follower or ansible-playbook has gone) is stopped on its
        launcher node directly, and :meth:`attach` then collects it. False when it has already ended."""
        if self.summary is not None or self.status() in set(FINAL_STATES) - {"lost"}:
            return False
        return cancel(self.run_dir)

    def attach(self, collection_dir: str | os.PathLike[str] | None = None) -> Run:
        """Take the job over when nobody follows it any more (its follower and the ansible-playbook that ran it have
        gone: a closed laptop, a killed shell): follow it on its nodes to its end from where they stopped reading,
        collect its logs and outputs and write its summary (playbooks/attach.yml, over the inventory the job ran
        with); its Run. Nothing starts on any node. A job with a summary is returned as it is; JobError when a live
        process still follows it (wait() for it) or it never started on its nodes."""
        if self.summary is not None:
            return Run.load(self.run_dir)
        following = read_json(self.run_dir / FOLLOWING_FILE)
        if not isinstance(following, dict):
            raise JobError(self.id, [f"it never started on its nodes (no {FOLLOWING_FILE}): there is nothing to take over"])
        if not nobody_follows(self.run_dir):
            raise JobError(self.id, ["a live process still follows it: wait() for it instead"])
        return take_over(self.run_dir, following, find_collection(collection_dir))


def take_over(run_dir: Path, following: Mapping[str, Any], collection: Path) -> Run:
    """Run playbooks/attach.yml for the job of ``run_dir`` over the inventory, configuration and extra variables
    ``following`` (its following.json) records, this process following it (job.json of a submitted job says so); its
    Run. The launcher's own variables are left out: the job's handover (follow.json) sets them as the job ran."""
    given = following.get("extra_vars") or {}
    extravars = {name: value for name, value in given.items() if not str(name).startswith("launcher_")}
    submitted = read_job_file(run_dir) is not None
    if submitted:
        private_file(run_dir / FOLLOWER_PID).write_text(f"{os.getpid()}\n")
        update_job_file(run_dir, state=PHASE_STATES["train"], taken_over_at=time.time())
    failures: list[str] = []

    def keep_failures(record: Record) -> None:
        if isinstance(record, Failure):
            failures.append(f"{record.host}: {record.task}: {record.reason}")

    session = _Session(keep_failures)
    runner = session.run(
        "attach.yml",
        [str(source) for source in following["inventory"]],
        {**extravars, "launcher_job_id": run_dir.name, "launcher_runs_dir": str(run_dir.parent)},
        check=False,
        collection_dir=collection,
        artifacts_dir=run_dir / RUNNER_DIR,
        ansible_config=str(following.get("ansible_config") or "") or None,
    )
    summary = read_json(run_dir / SUMMARY_FILE)
    if submitted:
        final = str(summary["status"]) if isinstance(summary, dict) else "failed"
        update_job_file(run_dir, state=final, rc=int(runner.rc or 0), ended_at=time.time(), failures=failures)
    if not isinstance(summary, dict):
        raise JobError(run_dir.name, failures or [f"the take-over ended without a summary (rc {runner.rc})"])
    return Run.load(run_dir)


def list_runs(runs_dir: str | os.PathLike[str] = "runs") -> list[Job]:
    """Every run in ``runs_dir`` (submitted or not), newest first."""
    runs = Path(runs_dir).expanduser().resolve()
    if not runs.is_dir():
        return []
    found = []
    for entry in runs.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            with contextlib.suppress(RunNotFoundError):
                found.append(Job.load(entry))
    return sorted(found, key=lambda job: (started_at(job), job.id), reverse=True)


def started_at(job: Job) -> float:
    """When the job was submitted (or its directory last changed, for a run of train())."""
    record = read_job_file(job.run_dir)
    return float(record["submitted_at"]) if record else job.run_dir.stat().st_mtime


def job_error(job_id: str, record: Mapping[str, Any]) -> JobError:
    """The typed error of a job that ended without a summary."""
    reasons = list(record.get("failures") or [])
    if any(PREFLIGHT_TASK in reason for reason in reasons):
        return InvalidJobError(job_id, reasons)
    if any(BUSY_TASK in reason for reason in reasons):
        return ClusterBusyError(job_id, reasons)
    if record.get("failed_phase") == "provision":
        return ProvisioningError(job_id, reasons)
    return JobError(job_id, reasons)


# ---------------------------------------------------------------- the follower


def follow(run_dir: Path, extravars: Mapping[str, Any] | None = None) -> int:
    """Run the submitted job of ``run_dir`` when its turn comes, keeping job.json up to date; the playbook's rc.
    ``extravars`` are the job's extra variables as submitted (job.json keeps them with their secrets masked)."""
    record = read_job_file(run_dir)
    if record is None:
        raise RunNotFoundError(f"no submitted job in {run_dir}")
    with queue_turn(QUEUE_ROOT.expanduser(), run_dir, record["nodes"], bool(record.get("beside"))) as turn:
        if not turn:
            update_job_file(run_dir, state="cancelled", ended_at=time.time())
            return 0
        update_job_file(run_dir, state=PHASE_STATES["provision"], started_at=time.time())
        session = _Session(FollowerRecords(run_dir).on_record)
        try:
            runner = session.run(
                str(record.get("playbook") or "train.yml"),
                record["inventory"],
                record["extravars"] if extravars is None else extravars,
                check=False,
                collection_dir=Path(record["collection_dir"]),
                artifacts_dir=run_dir / RUNNER_DIR,
            )
        except Exception as error:
            update_job_file(run_dir, state="failed", ended_at=time.time(), failures=[f"the follower failed: {error}"])
            raise
        # Recorded before the turn is given up: the next job on these nodes starts after this one's end, by the
        # records too (it had started 0.14 s before this end was written, in a CI run of the queue's test).
        summary = read_json(run_dir / SUMMARY_FILE)
        final = str(summary["status"]) if summary else "failed"
        update_job_file(
            run_dir, state=final, rc=int(runner.rc or 0), ended_at=time.time(), task_counts=session.translate.totals()
        )
    return int(runner.rc or 0)


@dataclass
class FollowerRecords:
    """What the follower keeps of the run's records: the state by phase, the failures, and a cancel asked for
    before the job ran (the launcher clears old requests when the job starts: it is passed on once it trains)."""

    run_dir: Path
    phase: str = "provision"
    cancel_wanted: bool = False

    def on_record(self, record: Record) -> None:
        self.cancel_wanted = self.cancel_wanted or (self.run_dir / CANCEL_FILE).exists()
        if isinstance(record, PhaseChanged):
            self.phase = record.phase
            update_job_file(self.run_dir, state=PHASE_STATES.get(record.phase, record.phase))
            if record.phase == "train" and self.cancel_wanted:
                (self.run_dir / CANCEL_FILE).touch()
        elif isinstance(record, Failure):
            failures = list((read_job_file(self.run_dir) or {}).get("failures") or [])
            failures.append(f"{record.host}: {record.task}: {record.reason}")
            update_job_file(self.run_dir, failures=failures, failed_phase=self.phase)


# ---------------------------------------------------------------- the queue


def inventory_nodes(inventory: Path, collection: Path) -> list[str]:
    """The nodes the inventory's launcher, workers and spares groups name, each as ``address:port`` (``ansible_host``,
    else the inventory name; ``ansible_port``, else 22): the queue's key, shared by every inventory naming a node.
    The inventory is read as the playbooks read it (ansible-inventory with the collection's ansible.cfg)."""
    config = collection / "ansible.cfg"
    listed = subprocess.run(
        ["ansible-inventory", "-i", str(inventory), "--list"],
        # An inventory it cannot parse is an error here, not a warning and an empty inventory.
        env={**os.environ, **runner_env(config if config.is_file() else None), "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if listed.returncode != 0:
        raise InvalidJobError("-", [f"ansible-inventory cannot read {inventory}: {listed.stderr.strip()[-600:]}"])
    groups = json.loads(listed.stdout)
    hostvars = groups.get("_meta", {}).get("hostvars", {})
    names = {name for group in NODE_GROUPS for name in group_hosts(groups, group)}
    return sorted(
        f"{hostvars.get(name, {}).get('ansible_host', name)}:{hostvars.get(name, {}).get('ansible_port', 22)}"
        for name in names
    ) or [f"inventory {inventory}"]


def group_hosts(groups: Mapping[str, Any], group: str) -> set[str]:
    """The hosts of ``group`` in ansible-inventory's --list output, its child groups' included."""
    entry = groups.get(group) or {}
    found = set(entry.get("hosts") or [])
    for child in entry.get("children") or []:
        found |= group_hosts(groups, child)
    return found


def enqueue(queue: Path, run_dir: Path, nodes: list[str]) -> Path:
    """The job's ticket in ``queue`` (its owner's only, as the queue is): named by the time it was taken, holding the
    run directory and its nodes."""
    private_dir(queue)
    ticket = queue / f"{time.time_ns():020d}-{run_dir.name}"
    # Written whole, then named: a reader never finds half a ticket (and would not take it for a stale one).
    partial = queue / f".{ticket.name.replace('-', '.')}.{os.getpid()}"
    private_file(partial).write_text(json.dumps({"run_dir": str(run_dir), "nodes": nodes}))
    partial.rename(ticket)
    return ticket


def read_ticket(ticket: Path) -> tuple[Path, set[str]] | None:
    """The run directory and the nodes a ticket holds; None for a ticket that is not one (any more)."""
    held = read_json(ticket)
    if not isinstance(held, dict):
        return None
    return Path(held["run_dir"]), set(held.get("nodes") or [])


def ticket_of(queue: Path, run_dir: Path) -> Path | None:
    for ticket in sorted(queue.glob("*-*")):
        held = read_ticket(ticket)
        if held and held[0] == run_dir:
            return ticket
    return None


def ahead_of(queue: Path, ticket: Path, nodes: set[str]) -> list[Path]:
    """The tickets before ``ticket`` that share one of its ``nodes`` and whose jobs have not ended (the tickets of
    ended jobs are removed)."""
    waiting = []
    for other in sorted(queue.glob("*-*")):
        if other.name >= ticket.name:
            break
        held = read_ticket(other)
        if held is None or not held[0].is_dir() or Job(held[0]).status() in FINAL_STATES:
            other.unlink(missing_ok=True)
        elif nodes & held[1]:
            waiting.append(other)
    return waiting


@contextlib.contextmanager
def queue_turn(queue: Path, run_dir: Path, nodes: list[str], beside: bool = False) -> Iterator[bool]:
    """Wait until no job submitted before this one on any of its nodes is left (``beside``: no wait, the job runs
    beside them); False when the job was cancelled while it waited. The ticket stays until the job has ended, so the
    jobs after it wait for that."""
    ticket = ticket_of(queue, run_dir) or enqueue(queue, run_dir, nodes)
    try:
        while not beside and ahead_of(queue, ticket, set(nodes)):
            if (run_dir / CANCEL_FILE).exists():
                yield False
                return
            time.sleep(POLL_SECONDS)
        yield not (run_dir / CANCEL_FILE).exists()
    finally:
        ticket.unlink(missing_ok=True)


# ---------------------------------------------------------------- files


def read_job_file(run_dir: Path) -> dict[str, Any] | None:
    return read_json(run_dir / JOB_FILE)


def write_job_file(run_dir: Path, record: Mapping[str, Any]) -> None:
    """job.json, replaced atomically (a reader never sees half of it)."""
    temporary = run_dir / f".{JOB_FILE}.{os.getpid()}"
    # It names the job's inventory and its extra variables: only its owner reads it.
    private_file(temporary).write_text(json.dumps(record, indent=2, default=str) + "\n")
    temporary.replace(run_dir / JOB_FILE)


def update_job_file(run_dir: Path, **changes: Any) -> None:
    """job.json with ``changes`` (only the follower writes it once the job is submitted)."""
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    write_job_file(run_dir, {**(read_job_file(run_dir) or {}), **changes, "updated": stamp})


def new_lines(path: Path, offset: int) -> tuple[list[str], int]:
    """The complete lines of ``path`` after byte ``offset``, and the offset after them."""
    try:
        with path.open("rb") as log:
            log.seek(offset)
            data = log.read()
    except OSError:
        return [], offset
    complete = data[: data.rfind(b"\n") + 1]
    return complete.decode("utf-8", errors="replace").splitlines(), offset + len(complete)
