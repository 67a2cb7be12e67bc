"""train(), plan() and check(): the collection's playbooks run through ansible-runner's Python API."""

from __future__ import annotations

import datetime
import functools
import importlib.util
import json
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import yaml

from multinode_training.records import Failure, PhaseChanged, PlanShown, ProgressReader, Record, Translator
from multinode_training.summary import Summary

# Seconds between two reads of the running job's progress file.
POLL_SECONDS = 0.25
# The run directory's files the job_wait action writes (plugins/plugin_utils/follow.py).
PROGRESS_FILE = "progress.jsonl"
LIVE_LOG = "live.log"
CANCEL_FILE = "cancel"
# The collection's run_schema.SUMMARY_FILE (this package does not import the collection; a test holds them equal).
SUMMARY_FILE = "summary.json"
# ansible-runner's private data directory of the run's playbook, kept in the run directory (artifacts: stdout, events).
RUNNER_DIR = "runner"
# A submitted job's state, kept by its follower (jobs.py).
JOB_FILE = "job.json"
# The submitted job's follower process (jobs.py).
FOLLOWER_PID = "follower.pid"
# Who follows the running job and how to reach its launcher node (the run_start action writes it).
FOLLOWING_FILE = "following.json"
# What a process taking over a job nobody follows needs: the job's own settings and how far its logs were read.
FOLLOW_STATE = "follow.json"
FOLLOW_OFFSETS = "follow-offsets.json"
# What makes a directory a run: any of these in it.
RUN_MARKERS = (JOB_FILE, SUMMARY_FILE, PROGRESS_FILE, LIVE_LOG, RUNNER_DIR)
COLLECTION_PARTS = ("ansible_collections", "multinode", "training")


@dataclass(frozen=True)
class Run:
    """A finished run: ``status`` is the job's (summary.json) when it got that far, else the playbook's."""

    status: str
    rc: int
    dir: Path | None
    summary: Summary | None
    task_counts: dict[str, dict[str, int]]

    @classmethod
    def load(cls, run: str | os.PathLike[str]) -> Run:
        """A finished run from its directory: RunNotFoundError when it is none or has no summary (yet)."""
        run_dir = run_dir_at(run)
        summary = read_json(run_dir / SUMMARY_FILE)
        if not isinstance(summary, dict):
            raise RunNotFoundError(f"no finished run at {run_dir}: no readable {SUMMARY_FILE}")
        # A run of train() or ansible-playbook has no job file: its summary is all there is.
        record = read_json(run_dir / JOB_FILE) or {}
        rc = record.get("rc", 0 if summary["status"] == "succeeded" else 2)
        return cls(str(summary["status"]), int(rc), run_dir, cast(Summary, summary), dict(record.get("task_counts") or {}))


@dataclass(frozen=True)
class Plan:
    """What train() would do, from a check-mode run that changed nothing."""

    hosts: list[str]
    ranks_per_node: dict[str, int]
    world_size: int
    tuning: dict[str, Any]
    hostfile: str
    launch_commands: list[list[str]]
    launch_script: str
    changed: int
    task_counts: dict[str, dict[str, int]]
    # max_restarts, restart_on, stall_timeout, node_timeout, lost_node, spares (the restart policy it would run with)
    restart_policy: dict[str, Any]
    # file, key, path, packages, replaced, built (whether the layer must be built), shipped_to; {} without requirements
    requirements: dict[str, Any]
    # The job object the run would build and every path reads (its id, launcher, script, restart policy, places on
    # the nodes...: plugins/module_utils/job.py), secret environment values as ***
    job: dict[str, Any]


class PlanError(RuntimeError):
    """The check-mode run failed (bad input, unreachable node) or showed no plan."""


@dataclass(frozen=True)
class Health:
    """The health check's verdict (playbooks/check.yml): ``status`` passed or failed, ``findings`` what failed the
    gate (naming the node and the measure), every node's figures, health.json and the page beside it."""

    status: str
    findings: list[str]
    nodes: dict[str, dict[str, Any]]
    path: Path
    page: Path


class CheckError(RuntimeError):
    """The health check could not judge the nodes (bad input, unreachable node): no health.json was written."""


def find_collection(collection_dir: str | os.PathLike[str] | None = None) -> Path:
    """The collection to run: given, else this checkout (an editable install), else a configured collections path."""
    if collection_dir is not None:
        return Path(collection_dir).resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "galaxy.yml").exists() and (checkout / "playbooks" / "train.yml").exists():
        return checkout
    from ansible.config.manager import ConfigManager  # noqa: PLC0415 (only needed without a checkout)

    for root in ConfigManager().get_config_value("COLLECTIONS_PATHS"):
        candidate = Path(root).expanduser().joinpath(*COLLECTION_PARTS)
        if (candidate / "playbooks" / "train.yml").exists():
            return candidate
    raise FileNotFoundError("multinode.training is neither this checkout nor in a configured collections path")


def runner_env(ansible_config: str | Path | None) -> dict[str, str]:
    """The environment of an ansible-runner call: this interpreter's ansible (a venv need not be activated), no
    colours, and ``ansible_config`` when there is one."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {"ANSIBLE_NOCOLOR": "1", "PATH": path}
    if ansible_config:
        env["ANSIBLE_CONFIG"] = str(ansible_config)
    return env


def read_json(path: Path) -> Any:
    """The JSON value in ``path``, or None when it is missing or not JSON (yet: it may be being written)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def private_dir(path: Path) -> Path:
    """``path`` (a run directory, the queue), created when missing, readable by its owner only (0700) whatever the
    umask and whoever created it first (the collection's run_start makes a run directory the same way)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """``path`` created empty, or emptied, readable and writable by its owner only (0600) whatever the umask."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    path.chmod(0o600)
    return path


def masking(extravars: Mapping[str, Any], collection: Path) -> Callable[[Any], Any]:
    """What shows a record of the run (an ansible-runner event, a job file) without the secret values of the job's
    environments: the collection's secret_env rule, with the names and the values the extra variables give."""
    secrets = _collection_module(collection, "secret_env")
    added = tuple(extravars.get("launcher_secret_env_names") or ())
    values = tuple(secrets.secret_values(dict(extravars), added))
    return lambda record: secrets.masked(record, added, values)


@dataclass
class _Session:
    """One playbook run through ansible-runner: its records reach ``on_record`` on the caller's thread."""

    on_record: Callable[[Record], None]
    translate: Translator = field(default_factory=Translator)
    # Set by run(): what masks an event before it is kept (ansible-runner's job_events) or translated.
    mask: Callable[[Any], Any] = field(default=lambda event: event)
    events: queue.SimpleQueue[dict[str, Any]] = field(default_factory=queue.SimpleQueue)
    hard_stop: threading.Event = field(default_factory=threading.Event)

    def run(  # pylint: disable=too-many-arguments
        self,
        playbook: str,
        inventory: str | os.PathLike[str] | list[str],
        extravars: Mapping[str, Any],
        *,
        check: bool,
        collection_dir: Path,
        progress: ProgressReader | None = None,
        on_interrupt: Callable[[], None] | None = None,
        artifacts_dir: Path | None = None,
        ansible_config: str | None = None,
    ) -> Any:
        """Run ``playbook`` over ``inventory`` (a path, or the list of sources an earlier run used); between events,
        read ``progress``. A KeyboardInterrupt calls ``on_interrupt`` (and the run goes on, so the job ends cleanly);
        a second one stops ansible-playbook at once. ansible-runner's artifacts (stdout, job events) stay in
        ``artifacts_dir``/artifacts when given, each event with the secret values of the job's environments masked.
        ``ansible_config`` (else the collection's ansible.cfg) configures it.

        The extra variables reach ansible-playbook as a file, ``-e @<private data dir>/env/extravars`` (mode 0600),
        never on its command line: the private data directory is a new temporary one (0700), outside the run
        directory, removed when the playbook has ended (an earlier run's env/extravars there would make
        ansible-runner pass the new ones on the command line)."""
        self.mask = masking(extravars, collection_dir)
        config = collection_dir / "ansible.cfg"
        env = runner_env(ansible_config or (config if config.exists() else None))
        sources = (
            [str(Path(source).resolve()) for source in inventory]
            if isinstance(inventory, list)
            else str(Path(inventory).resolve())
        )
        if artifacts_dir is not None:
            private_dir(artifacts_dir)
        # Imported where a playbook runs: the run's summary (trackers, on the controller) reads this module too.
        import ansible_runner  # noqa: PLC0415

        with tempfile.TemporaryDirectory(prefix="multinode-runner-") as private:
            thread, runner = ansible_runner.run_async(
                private_data_dir=private,
                artifact_dir=str(artifacts_dir / "artifacts") if artifacts_dir is not None else None,
                project_dir=str(collection_dir),
                playbook=f"playbooks/{playbook}",
                inventory=sources,
                extravars=dict(extravars),
                envvars=env,
                cmdline="--check" if check else None,
                event_handler=self._queue,
                cancel_callback=self.hard_stop.is_set,
                quiet=True,
            )
            interrupted = False
            while thread.is_alive() or not self.events.empty():
                try:
                    self._deliver(progress)
                    thread.join(POLL_SECONDS)
                except KeyboardInterrupt:
                    if interrupted or on_interrupt is None:
                        self.hard_stop.set()
                    else:
                        interrupted = True
                        on_interrupt()
            self._deliver(progress)
        return runner

    def _queue(self, event: dict[str, Any]) -> bool:
        # ansible-runner keeps the very event it passed here (job_events/): masked in place.
        event.update(self.mask(event))
        self.events.put(event)
        return True

    def _deliver(self, progress: ProgressReader | None) -> None:
        while not self.events.empty():
            for record in self.translate(self.events.get()):
                self.on_record(record)
        for record in progress() if progress is not None else []:
            self.on_record(record)


def job_id_for(extravars: Mapping[str, Any], collection: Path) -> str:
    """The job's id by the collection's own formula (its module_utils/job_id.py, the launcher role's too):
    ``launcher_job_id`` when given, else the time and ``launcher_job_name``, or the launcher (the launcher role's
    default when the job names none: its argument spec's)."""
    formula = _collection_module(collection, "job_id").job_id
    launcher = extravars.get("launcher_type") or role_option_default(collection, "launcher", "launcher_type")
    return str(formula(str(extravars.get("launcher_job_id") or ""), str(extravars.get("launcher_job_name") or ""), str(launcher)))


@functools.cache
def _collection_module(collection: Path, name: str) -> ModuleType:
    """A module of the collection's module_utils that imports none of its others, loaded from its file."""
    path = collection / "plugins" / "module_utils" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"multinode_training._collection_{name}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def role_option_default(collection: Path, role: str, option: str) -> Any:
    """An option's default as the role's argument spec (main) gives it: the one place a default is written."""
    specs = yaml.safe_load((collection / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return specs["argument_specs"]["main"]["options"][option].get("default")


def train(
    inventory: str | os.PathLike[str],
    *,
    extravars: Mapping[str, Any] | None = None,
    on_event: Callable[[Record], None] | None = None,
    runs_dir: str | os.PathLike[str] = "runs",
    collection_dir: str | os.PathLike[str] | None = None,
) -> Run:
    """Provision the inventory's nodes and run the training job (playbooks/train.yml); ``runs_dir`` is relative
    to the current directory, as for ansible-playbook.

    ``on_event`` gets the run's records on the calling thread while it runs: phase changes, failures, ranks
    starting, each epoch a rank reports, the job's events. A KeyboardInterrupt (or :func:`cancel` from elsewhere)
    stops the job on every node once it runs; the summary is still written and says ``cancelled``. A second
    KeyboardInterrupt stops ansible-playbook at once (status ``cancelled``, possibly no summary).
    """
    collection = find_collection(collection_dir)
    job_id = job_id_for(extravars or {}, collection)
    runs = Path(runs_dir).expanduser().resolve()
    run_dir = private_dir(runs / job_id)
    variables = {**(extravars or {}), "launcher_job_id": job_id, "launcher_runs_dir": str(runs)}
    deliver = on_event or (lambda record: None)
    wanted = threading.Event()
    started = time.time()

    def on_record(record: Record) -> None:
        # A cancel asked for before the job started is passed on once it runs (the job clears old requests).
        if wanted.is_set() and isinstance(record, PhaseChanged) and record.phase == "train":
            cancel(run_dir)
        deliver(record)

    def on_interrupt() -> None:
        wanted.set()
        if session.translate.phase in ("train", "collect"):
            cancel(run_dir)

    session = _Session(on_record)
    runner = session.run(
        "train.yml",
        inventory,
        variables,
        check=False,
        collection_dir=collection,
        progress=ProgressReader(run_dir / PROGRESS_FILE, not_before=started),
        on_interrupt=on_interrupt,
        artifacts_dir=run_dir / RUNNER_DIR,
    )
    summary_file = run_dir / SUMMARY_FILE
    summary = cast(Summary, json.loads(summary_file.read_text())) if summary_file.exists() else None
    if summary:
        status = summary["status"]
    else:
        status = "cancelled" if session.hard_stop.is_set() else ("failed" if runner.rc else str(runner.status))
    return Run(
        status=status,
        rc=int(runner.rc or 0),
        dir=run_dir if summary else None,
        summary=summary,
        task_counts=session.translate.totals(),
    )


class RunNotFoundError(LookupError):
    """No run at the path given: neither a run directory nor a job of it."""


def run_dir_at(run: str | os.PathLike[str]) -> Path:
    """The run directory ``run`` is (a path, ``runs/latest`` too); RunNotFoundError when it is none."""
    run_dir = Path(run).expanduser().resolve()
    if not run_dir.is_dir() or not any((run_dir / name).exists() for name in RUN_MARKERS):
        raise RunNotFoundError(f"no run at {run_dir}")
    return run_dir


def cancel(run: str | os.PathLike[str]) -> bool:
    """Ask the job of ``run`` (a run directory, or ``runs/latest``) to stop on every node.

    The job_wait action of the run sees the request within a second; the job's summary then says ``cancelled``.
    Returns False when the run has already ended (its summary exists) and there is nothing to stop. Raises
    RunNotFoundError, and creates nothing, when ``run`` is no run.
    """
    run_dir = run_dir_at(run)
    if (run_dir / SUMMARY_FILE).exists():
        return False
    (run_dir / CANCEL_FILE).touch()
    if nobody_follows(run_dir):
        stop_on_launcher_node(run_dir)
    return True


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs. A process that has ended but was not reaped yet (a zombie: the follower of a job
    this process submitted, after a crash) has ended: one of this process's children is reaped here."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:  # not a child of this process
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not zombie(pid)


def zombie(pid: int) -> bool:
    """Whether ``pid`` has ended and waits for its parent (Linux's /proc; False where it cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state follows the command name, which is in parentheses and may hold spaces or parentheses itself.
    return stat[stat.rindex(")") + 2 :].startswith("Z")


def recorded_pid(path: Path) -> int | None:
    """The process id a file records (``pid`` of a JSON object, or the file's text), if it records one."""
    value = read_json(path)
    pid = value.get("pid") if isinstance(value, dict) else value
    return pid if isinstance(pid, int) else None


def nobody_follows(run_dir: Path) -> bool:
    """Whether the job runs on its nodes with no process on the controller following it: the ansible-playbook that
    started it (FOLLOWING_FILE) has gone, and so has a submitted job's follower."""
    following, follower = recorded_pid(run_dir / FOLLOWING_FILE), recorded_pid(run_dir / FOLLOWER_PID)
    if following is None or process_alive(following):
        return False
    return follower is None or not process_alive(follower)


def current_launcher_node(run_dir: Path) -> str | None:
    """The launcher node of the job's last attempt, from its handover (the first of its nodes): a restart after the
    launcher node was lost moved that role; None when the run has no handover yet."""
    try:
        hosts = json.loads((run_dir / FOLLOW_STATE).read_text())["handover"]["vars"]["launcher_job_hosts"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return hosts[0] if isinstance(hosts, list) and hosts and isinstance(hosts[0], str) else None


def stop_on_launcher_node(run_dir: Path) -> None:
    """Write the job's ``stop`` file on its launcher node (its launch script stops every rank), over the cluster's own
    inventory and configuration as the run recorded them; RuntimeError when the node could not be reached."""
    following = json.loads((run_dir / FOLLOWING_FILE).read_text())
    launcher_host = current_launcher_node(run_dir) or following["launcher_host"]
    stop_file = f"{following['job_dir'].rstrip('/')}/stop"
    env = runner_env(following.get("ansible_config"))
    import ansible_runner  # noqa: PLC0415 (see _Session.run)

    with tempfile.TemporaryDirectory(prefix="multinode-stop-") as private:
        runner = ansible_runner.run(
            private_data_dir=private,
            inventory=following["inventory"],
            host_pattern=launcher_host,
            module="ansible.builtin.file",
            module_args=f"path={stop_file} state=touch mode=0644",
            # How the job's own run reached its nodes (ansible_user, a port given with -e).
            extravars=dict(following.get("extra_vars") or {}),
            cmdline="--become" if following.get("become") else None,
            envvars=env,
            quiet=True,
        )
        if runner.rc != 0:
            raise RuntimeError(
                f"nobody follows {run_dir.name} and its launcher node {launcher_host} could not be"
                f" reached to stop it (rc {runner.rc}): {runner.stdout.read()[-500:]}"
            )


def plan(
    inventory: str | os.PathLike[str],
    *,
    extravars: Mapping[str, Any] | None = None,
    collection_dir: str | os.PathLike[str] | None = None,
) -> Plan:
    """The dry run: everything validated, nothing changed on any node (check mode), the job's plan returned."""
    shown: list[dict[str, Any]] = []
    failures: list[str] = []

    def keep_plan(record: Record) -> None:
        if isinstance(record, PlanShown):
            shown.append(record.plan)
        elif isinstance(record, Failure):
            failures.append(f"{record.host}: {record.task}: {record.reason}")

    session = _Session(keep_plan)
    runner = session.run(
        "train.yml", inventory, extravars or {}, check=True, collection_dir=find_collection(collection_dir)
    )
    if runner.rc != 0 or not shown:
        raise PlanError(
            f"the check run {'failed' if runner.rc else 'showed no plan'} (rc {runner.rc}): " + "; ".join(failures)
        )
    found = shown[-1]
    totals = session.translate.totals()
    return Plan(
        hosts=list(found["hosts"]),
        ranks_per_node={host: int(slots) for host, slots in found["ranks_per_node"].items()},
        world_size=int(found["world_size"]),
        tuning=dict(found["tuning"]),
        hostfile=str(found["hostfile"]),
        launch_commands=[list(map(str, argv)) for argv in found["launch_commands"]],
        launch_script=str(found["launch_script"]),
        changed=sum(counts.get("changed", 0) for counts in totals.values()),
        task_counts=totals,
        restart_policy=dict(found.get("restart_policy") or {}),
        requirements=dict(found.get("requirements") or {}),
        job=dict(found.get("job") or {}),
    )


def check(
    inventory: str | os.PathLike[str],
    *,
    extravars: Mapping[str, Any] | None = None,
    runs_dir: str | os.PathLike[str] = "runs",
    collection_dir: str | os.PathLike[str] | None = None,
) -> Health:
    """Measure every node and link of the inventory's provisioned cluster (playbooks/check.yml) and judge them.

    A node that fails the gate is in ``findings`` (``status`` failed), not an exception; health.json and
    health.html go to ``runs_dir``/health-<time>/, and a check that passed is cached there for the jobs that
    follow (``health_max_age``). Raises :class:`CheckError` when no verdict was reached.
    """
    runs = Path(runs_dir).expanduser().resolve()
    report = runs / f"health-{datetime.datetime.now(datetime.UTC):%Y%m%d-%H%M%S}" / "health.json"
    variables = {
        **(extravars or {}),
        "health_mode": "warn",
        "health_report": str(report),
        "health_cache": str(runs / "health-cache.json"),
    }
    failures: list[str] = []

    def keep_failure(record: Record) -> None:
        if isinstance(record, Failure):
            failures.append(f"{record.host}: {record.task}: {record.reason}")

    runner = _Session(keep_failure).run(
        "check.yml", inventory, variables, check=False, collection_dir=find_collection(collection_dir)
    )
    if runner.rc != 0 or not report.exists():
        raise CheckError(f"the health check reached no verdict (rc {runner.rc}): " + "; ".join(failures))
    verdict = json.loads(report.read_text())
    return Health(
        status=str(verdict["status"]),
        findings=list(verdict.get("findings") or []),
        nodes=dict(verdict.get("nodes") or {}),
        path=report,
        page=report.with_suffix(".html"),
    )
