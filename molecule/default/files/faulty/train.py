"""Test workload that goes wrong on purpose, after every rank has joined the process group.

--mode exit: rank 1 exits with code 3 (the others fail at the barrier or are stopped).
--mode hang: every rank sleeps, so the launcher's timeout must end the job.
The launcher must report the run as failed and say why, naming ranks and nodes.
"""

import argparse
import datetime
import json
import os
import socket
import sys
import time

import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["exit", "hang"], required=True)
mode = parser.parse_known_args()[0].mode

rank = int(os.environ.get("RANK", os.environ.get("PMI_RANK", "0")))
world_size = int(os.environ.get("WORLD_SIZE", os.environ.get("PMI_SIZE", "1")))
dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=30))
event = {"event": "joined", "rank": rank, "world_size": world_size, "host": socket.gethostname(), "time": time.time()}
print(json.dumps(event), flush=True)
if mode == "hang":
    time.sleep(3600)
if rank == 1:
    sys.exit(3)
dist.barrier()
