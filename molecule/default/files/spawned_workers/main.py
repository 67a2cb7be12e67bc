"""Ranks that spawn their own workers, as public scripts do, to hold the world verdict to what the workers formed.

Default: pytorch/examples' ImageNet script's multi-node pattern (--multiprocessing-distributed): one rank per node
spawns WORKERS workers, and worker i of node rank r joins one world of nodes x WORKERS as rank r x WORKERS + i, over
a tcp:// address on the launcher node. --local: the DDP tutorial's mp.spawn, its workers meeting on localhost, run
as is on every node: each node's workers form a world of their own. Run under mpiexec: under torchrun a tcp://
rendezvous of spawned workers waits forever (torchrun's agent store, docs/SCRIPTS.md).
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORKERS = 2


def worker(local_rank: int, node_rank: int, nodes: int, address: str) -> None:
    dist.init_process_group("gloo", init_method=address, world_size=nodes * WORKERS, rank=node_rank * WORKERS + local_rank)
    total = torch.ones(1)
    dist.all_reduce(total)
    print(f"worker {dist.get_rank()} of {dist.get_world_size()}: {int(total.item())} workers met", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local", action="store_true")
    args = parser.parse_args()
    if args.local:
        mp.spawn(worker, args=(0, 1, "tcp://127.0.0.1:29911"), nprocs=WORKERS)
    else:
        url = f"tcp://{os.environ['MASTER_ADDR']}:{int(os.environ['MASTER_PORT']) + 1}"
        mp.spawn(worker, args=(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), url), nprocs=WORKERS)
