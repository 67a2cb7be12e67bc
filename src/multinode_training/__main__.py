"""``python -m multinode_training watch|cancel [RUN]``: follow or stop a running job from another terminal.

RUN is a run directory, or the name of one in ``--runs-dir`` (default ``runs``); ``latest`` (the default)
is the job started last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from multinode_training.api import LIVE_LOG, SUMMARY_FILE, cancel

POLL_SECONDS = 0.5


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
        offset = _print_new(run_dir / LIVE_LOG, offset, out)
        if ended:
            summary = json.loads(summary_file.read_text())
            reasons = "; ".join(summary.get("failure_reasons") or [])
            out.write(f"job {summary['job_id']}: {summary['status']}" + (f" ({reasons})" if reasons else "") + "\n")
            out.flush()
            return str(summary["status"])
        time.sleep(poll)


def _print_new(path: Path, offset: int, out: TextIO) -> int:
    try:
        with path.open("rb") as log:
            log.seek(offset)
            data = log.read()
    except OSError:
        return offset
    complete = data[: data.rfind(b"\n") + 1]
    out.write(complete.decode("utf-8", errors="replace"))
    out.flush()
    return offset + len(complete)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multinode_training", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("watch", "cancel"), help="follow the job's logs until it ends, or stop it")
    parser.add_argument("run", nargs="?", default="latest", help="run directory or name in --runs-dir (default: latest)")
    parser.add_argument("--runs-dir", default="runs", help="where the runs are (default: ./runs)")
    args = parser.parse_intermixed_args(argv)
    run_dir = run_dir_of(args.run, args.runs_dir)
    if not run_dir.is_dir():
        parser.error(f"no run at {run_dir}")
    if args.command == "cancel":
        if not cancel(run_dir):
            print(f"{run_dir.name} has already ended")
            return 1
        print(f"asked {run_dir.name} to stop; `python -m multinode_training watch {run_dir}` follows it to the end")
        return 0
    try:
        return 0 if watch(run_dir) == "succeeded" else 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
