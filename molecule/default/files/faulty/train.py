"""Test workload that goes wrong on purpose, after every rank has joined the process group.

--mode exit: rank 1 exits with code 3 (the others wait at a barrier until they are stopped).
--mode hang: every rank sleeps, so the launcher's timeout must end the job.
The launcher must report the run as failed and say why, naming ranks and nodes. It relies on the
standard launch contract only (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), whatever the launcher.
"""

import argparse
import os
import sys
import time

import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["exit", "hang"], required=True)
mode = parser.parse_args().mode

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} of {dist.get_world_size()} joined", flush=True)
if mode == "hang":
    time.sleep(3600)
if int(os.environ["RANK"]) == 1:
    sys.exit(3)
dist.barrier()
