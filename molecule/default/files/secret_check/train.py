"""A job that needs a secret in its environment: every rank joins the world and checks it got HF_TOKEN.

The expected value is given by its SHA-256 (argv[1]), never by itself; a rank without it exits 4.
"""

import hashlib
import os
import sys

import torch.distributed as dist

dist.init_process_group("gloo")
got = hashlib.sha256(os.environ.get("HF_TOKEN", "").encode()).hexdigest() == sys.argv[1]
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: HF_TOKEN {'given' if got else 'MISSING'}", flush=True)
dist.barrier()
dist.destroy_process_group()
sys.exit(0 if got else 4)
