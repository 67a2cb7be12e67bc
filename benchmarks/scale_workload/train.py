#!/usr/bin/env python3
"""The scale benchmark's rank: join the job, check the launch contract, exit 0. No training.

Each rank reads what the rank wrapper gives every rank (RANK, WORLD_SIZE, LOCAL_RANK, ...; see
docs/SCRIPTS.md "Bring your own script"), checks it is consistent and prints one line; rank 0 also
prints the result event the run summary records. Nothing imports torch, so under mpiexec the
launch latency is the launcher machinery's alone.
"""

from __future__ import annotations

import json
import os
import socket
import sys

CONTRACT = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


def read_contract() -> dict[str, str]:
    missing = [name for name in CONTRACT if not os.environ.get(name)]
    if missing:
        raise SystemExit(f"missing from the rank's environment: {', '.join(missing)}")
    return {name: os.environ[name] for name in CONTRACT}


def check(contract: dict[str, str]) -> None:
    rank, world_size = int(contract["RANK"]), int(contract["WORLD_SIZE"])
    local_rank, local_world_size = int(contract["LOCAL_RANK"]), int(contract["LOCAL_WORLD_SIZE"])
    if not 0 <= rank < world_size or not 0 <= local_rank < local_world_size:
        raise SystemExit(f"inconsistent ranks: {contract}")


def main() -> None:
    contract = read_contract()
    check(contract)
    print(f"rank {contract['RANK']}/{contract['WORLD_SIZE']} on {socket.gethostname()} joined", flush=True)
    if contract["RANK"] == "0":
        print(json.dumps({"event": "result", "world_size": int(contract["WORLD_SIZE"])}), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
