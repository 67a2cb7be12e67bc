"""A user's DDP script as many are written, to hold the run's verdict to how the script ended.

The model lives in a module-level variable, so its gloo process group is still held when the interpreter ends (the
case the rank exit guard exists for). Every rank trains a few steps, then ends the way --ending says: the status
Python gives that ending is the rank's, whatever the guard does. --alone trains without any process group, each
rank its own copy, as a trainer whose node count defaults to 1 does: every rank exits 0, yet no world formed.
It relies on the standard launch contract only (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist

ENDINGS = ["raise SystemExit(main())", "exit(3)", "sys.exit(3)", "uncaught exception", "os._exit(3)", "normal end"]

parser = argparse.ArgumentParser()
parser.add_argument("--ending", choices=ENDINGS, default="normal end")
parser.add_argument("--alone", action="store_true")
args = parser.parse_args()

MODEL = torch.nn.Linear(16, 1)
if not args.alone:
    dist.init_process_group("gloo")
    MODEL = torch.nn.parallel.DistributedDataParallel(MODEL)
OPTIMIZER = torch.optim.SGD(MODEL.parameters(), lr=0.01)
for _step in range(20):
    OPTIMIZER.zero_grad()
    loss = MODEL(torch.randn(32, 16)).pow(2).mean()
    loss.backward()
    OPTIMIZER.step()
print(f"rank {os.environ['RANK']} trained (loss {loss.item():.4f}), ending with {args.ending}", flush=True)


def main() -> int:
    return 3


if args.ending == "raise SystemExit(main())":
    raise SystemExit(main())
if args.ending == "exit(3)":
    exit(3)  # the site module's builtin, as scripts use it
if args.ending == "sys.exit(3)":
    sys.exit(3)
if args.ending == "uncaught exception":
    raise RuntimeError("the loss diverged")
if args.ending == "os._exit(3)":
    os._exit(3)
