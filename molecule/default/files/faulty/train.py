"""Test workload that goes wrong on purpose, after every rank has joined the process group.

--mode exit: rank 1 exits with code 3 (the others wait at a barrier until they are stopped).
--mode hang: every rank sleeps, so the launcher's timeout must end the job.
--mode linger: every rank succeeds, but rank 1 leaves a process behind that holds its output for 40 s (a
  server or a data loader a script forgot): the job must still succeed, once that process is gone.
The launcher must report the run as failed and say why, naming ranks and nodes. It relies on the
standard launch contract only (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), whatever the launcher.
"""

import argparse
import os
import subprocess
import sys
import time

import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["exit", "hang", "linger"], required=True)
mode = parser.parse_args().mode

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} of {dist.get_world_size()} joined", flush=True)
if mode == "hang":
    time.sleep(3600)
if mode == "linger":
    if int(os.environ["RANK"]) == 1:
        subprocess.Popen(["sleep", "40"])  # inherits the rank's stdout and stderr
    dist.barrier()
    sys.exit(0)
if int(os.environ["RANK"]) == 1:
    sys.exit(3)
dist.barrier()
