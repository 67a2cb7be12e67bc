"""``multinode-training`` (also ``python -m multinode_training``): run, submit and look after training jobs.

    multinode-training run INVENTORY [-e VAR=VALUE ...]     submit a job and follow it to its end
    multinode-training submit INVENTORY [-e VAR=VALUE ...]  submit a job and return at once
    multinode-training plan INVENTORY [-e VAR=VALUE ...]    what a job would run, nothing changed
    multinode-training list                                 the runs, newest first
    multinode-training show|logs|watch|cancel|report [RUN]  one run: results, log, follow, stop, report.html
    multinode-training attach [RUN]                         take over a job nobody follows: follow, collect it

RUN is a run directory, or the name of one in ``--runs-dir`` (default ``runs``); ``latest`` (the default) is the
job started last. ``-e`` takes what ansible-playbook's does: ``VAR=VALUE`` words, a JSON object, or ``@FILE`` (YAML
or JSON), which keeps a secret such as a token off every command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import yaml

from multinode_training.api import FOLLOWING_FILE, LIVE_LOG, SUMMARY_FILE, RunNotFoundError, nobody_follows, plan
from multinode_training.jobs import Job, list_runs, new_lines, submit
from multinode_training.trackers import record_run
from multinode_training.show import describe, runs_table

POLL_SECONDS = 0.5
RUN_COMMANDS = ("show", "logs", "watch", "cancel", "attach", "report")


def run_dir_of(run: str, runs_dir: str) -> Path:
    """The run directory ``run`` names: a path to one, or a name in ``runs_dir``."""
    given = Path(run).expanduser()
    if given.is_dir():
        return given.resolve()
    return (Path(runs_dir).expanduser() / run).resolve()


def watch(run_dir: Path, out: TextIO | None = None, poll: float = POLL_SECONDS) -> str:
    """Print the job's live log (every rank's lines, prefixed with rank and node) as it grows, until its summary
    exists; then print its status and return it. ``out`` defaults to the current ``sys.stdout``."""
    out = out or sys.stdout
    summary_file = run_dir / SUMMARY_FILE
    offset = 0
    while True:
        ended = summary_file.exists()
        lines, offset = new_lines(run_dir / LIVE_LOG, offset)
        out.write("".join(f"{line}\n" for line in lines))
        out.flush()
        if ended:
            summary = json.loads(summary_file.read_text())
            reasons = "; ".join(summary.get("failure_reasons") or [])
            out.write(f"job {summary['job_id']}: {summary['status']}" + (f" ({reasons})" if reasons else "") + "\n")
            out.flush()
            return str(summary["status"])
        time.sleep(poll)


def extra_vars(given: list[str]) -> dict[str, Any]:
    """``-e`` values as ansible-playbook takes them: ``VAR=VALUE`` words (strings), a JSON object, or ``@FILE``, a
    YAML or JSON file of them (where a secret such as a token stays off every command line)."""
    variables: dict[str, Any] = {}
    for text in given:
        if text.startswith("@"):
            variables.update(variables_file(Path(text[1:]).expanduser()))
            continue
        if text.lstrip().startswith("{"):
            variables.update(json.loads(text))
            continue
        for word in text.split():
            name, equals, value = word.partition("=")
            if not equals or not name:
                raise ValueError(f"-e {word!r}: give VAR=VALUE or a JSON object")
            variables[name] = value
    return variables


def variables_file(path: Path) -> dict[str, Any]:
    """The variables a ``-e @FILE`` file holds (YAML, JSON included); ValueError naming it when it holds none."""
    try:
        found = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"-e @{path}: {error}") from error
    if not isinstance(found, dict):
        raise ValueError(f"-e @{path}: the file holds no mapping of variable names to values")
    return found


def parser_of() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="multinode-training", description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", default="runs", help="where the runs are (default: ./runs)")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("run", "submit a job and follow it to its end"),
        ("submit", "submit a job and return at once"),
        ("plan", "what a job would run (check mode: nothing changes)"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("inventory")
        command.add_argument("-e", "--extra-vars", action="append", default=[], help="VAR=VALUE, a JSON object, or @FILE (YAML or JSON)")
        if name != "plan":
            command.add_argument(
                "--no-provision", action="store_true", help="a provisioned cluster: the job only (playbooks/launch.yml)"
            )
            command.add_argument(
                "--beside",
                action="store_true",
                help="run beside the jobs on its nodes, without waiting, when ports and cores allow (implies --no-provision)",
            )
        command.add_argument("--runs-dir", default=argparse.SUPPRESS)
    commands.add_parser("list", help="the runs, newest first").add_argument("--runs-dir", default=argparse.SUPPRESS)
    for name, text in (
        ("show", "a run's results"),
        ("logs", "a run's live log"),
        ("watch", "follow a run's log until it ends"),
        ("cancel", "stop a queued or running job (one nobody follows any more: stopped, then collected)"),
        ("attach", "take over a job nobody follows any more: follow it to its end, collect it, write its summary"),
        ("report", "write a run's report.html and TensorBoard files (and log it to MLflow)"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("run", nargs="?", default="latest", help="run directory or name (default: latest)")
        command.add_argument("--runs-dir", default=argparse.SUPPRESS)
        if name == "report":
            command.add_argument(
                "--mlflow-tracking-uri",
                default=os.environ.get("MLFLOW_TRACKING_URI", ""),
                help="also log the run to MLflow (default: $MLFLOW_TRACKING_URI; e.g. sqlite:///mlflow.db)",
            )
        if name == "logs":
            command.add_argument("-f", "--follow", action="store_true", help="go on until the job ends")
            command.add_argument("--rank", type=int, help="only this rank's lines")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = parser_of()
    args = parser.parse_args(argv)
    try:
        if args.command in RUN_COMMANDS:
            return run_command(parser, args)
        if args.command == "list":
            print(runs_table(list_runs(args.runs_dir), sys.stdout.isatty()))
            return 0
        variables = extra_vars(args.extra_vars)
        if args.command == "plan":
            shown = plan(args.inventory, extravars=variables)
            shown_keys = ("hosts", "world_size", "ranks_per_node", "launch_commands", "restart_policy", "changed")
            print(json.dumps({key: getattr(shown, key) for key in shown_keys}, indent=2))
            return 0
        job = submit(
            args.inventory,
            extravars=variables,
            runs_dir=args.runs_dir,
            provision=not (args.no_provision or args.beside),
            beside=args.beside,
        )
        if args.command == "submit":
            print(f"submitted {job.id} ({job.status()}): multinode-training logs -f {job.run_dir}")
            return 0
        return follow_to_the_end(job)
    except (ValueError, RuntimeError) as error:
        print(f"multinode-training {args.command}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say, and no traceback when Python flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """show, logs, watch or cancel of one run."""
    run_dir = run_dir_of(args.run, args.runs_dir)
    try:
        job = Job.load(run_dir)
    except RunNotFoundError as error:
        parser.error(str(error))
    if args.command == "show":
        print(describe(job))
        return 0
    if args.command == "report":
        if job.summary is None:
            print(f"{job.id} has no summary yet: a report is written once it has ended", file=sys.stderr)
            return 1
        recorded = record_run(run_dir, mlflow_tracking_uri=args.mlflow_tracking_uri)
        for name, what in recorded.items():
            print(f"{name}: {what}")
        return 1 if recorded["report"].startswith("not written") else 0
    if args.command == "logs":
        for line in job.logs(rank=args.rank, follow=args.follow):
            print(line, flush=True)
        return 0
    if args.command == "cancel":
        orphaned = nobody_follows(run_dir) and (run_dir / FOLLOWING_FILE).exists()
        if not job.cancel():
            print(f"{run_dir.name} has already ended")
            return 1
        if not orphaned:
            print(f"asked {run_dir.name} to stop; `multinode-training watch {run_dir}` follows it to the end")
            return 0
        print(f"stopped {run_dir.name} on its launcher node; nobody followed it, so this collects it", flush=True)
        return attach_and_describe(job)
    if args.command == "attach":
        print(f"taking {run_dir.name} over (`multinode-training logs -f {run_dir}` shows its log)", flush=True)
        return attach_and_describe(job)
    return 0 if watch(run_dir) == "succeeded" else 1


def attach_and_describe(job: Job) -> int:
    """Take the job over to its end and print its results; 0 when it succeeded."""
    run = job.attach()
    print(describe(job))
    return 0 if run.status == "succeeded" else 1


def follow_to_the_end(job: Job) -> int:
    """Print the job's log until it ends, then its results; a KeyboardInterrupt stops the job and goes on."""
    print(f"submitted {job.id}: {job.run_dir}", flush=True)
    asked = False
    while True:
        try:
            for line in job.logs(follow=True):
                print(line, flush=True)
            break
        except KeyboardInterrupt:
            if asked or not job.cancel():
                print(f"left {job.id} {job.status()}: multinode-training watch {job.run_dir}", file=sys.stderr)
                raise
            asked = True
            print(f"asked {job.id} to stop (Ctrl-C again leaves it as it is)", file=sys.stderr, flush=True)
    run = job.wait()
    print(describe(job))
    return 0 if run.status == "succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
