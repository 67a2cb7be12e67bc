"""Test workload: every rank joins the process group, then rank 1 exits with code 3.

The launcher must report the run as failed and name rank 1 and its node.
"""

import datetime
import json
import os
import socket
import sys
import time

import torch.distributed as dist

rank = int(os.environ.get("RANK", os.environ.get("PMI_RANK", "0")))
world_size = int(os.environ.get("WORLD_SIZE", os.environ.get("PMI_SIZE", "1")))
dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=30))
event = {"event": "joined", "rank": rank, "world_size": world_size, "host": socket.gethostname(), "time": time.time()}
print(json.dumps(event), flush=True)
if rank == 1:
    sys.exit(3)
dist.barrier()
