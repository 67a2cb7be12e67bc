"""A script that needs a package the training image lacks (einops): requirements.txt beside it names it."""

import os

import einops
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
grid = einops.rearrange(torch.arange(6.0), "(a b) -> a b", a=2)
summed = grid * (rank + 1)
dist.all_reduce(summed)
assert torch.equal(summed, grid * (world * (world + 1) // 2)), summed
print(f"rank {rank} of {world}: einops {einops.__version__} from {os.path.dirname(einops.__file__)}", flush=True)
