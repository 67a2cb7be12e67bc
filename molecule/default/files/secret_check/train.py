"""A job that needs a secret in its environment: every rank joins the world and checks it got HF_TOKEN, and the
password of TRACKING_URI (a URL with a password in it, under a name that does not look secret).

The expected value is given by its SHA-256 (argv[1]), never by itself; a rank without either exits 4.
"""

import hashlib
import os
import sys
from urllib.parse import urlsplit

import torch.distributed as dist


def holds_the_secret(value: str) -> bool:
    return hashlib.sha256(value.encode()).hexdigest() == sys.argv[1]


dist.init_process_group("gloo")
got = holds_the_secret(os.environ.get("HF_TOKEN", "")) and holds_the_secret(
    urlsplit(os.environ.get("TRACKING_URI", "")).password or ""
)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: HF_TOKEN {'given' if got else 'MISSING'}", flush=True)
dist.barrier()
dist.destroy_process_group()
sys.exit(0 if got else 4)
