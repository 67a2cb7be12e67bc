"""Data-parallel training of a small MLP on scikit-learn's digits data set: the collection's default workload.

PyTorch DistributedDataParallel with the gloo backend on CPU; no network access needed
(``sklearn.datasets.load_digits`` ships with sklearn). It relies only on the launch contract
every rank gets from the collection, whatever the launcher: RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT (env:// rendezvous), OUTPUT_DIR, CHECKPOINT_DIR and RESUME_FROM.
Without them it runs as a single process (rank 0 of 1) on 127.0.0.1.

It also prints the optional progress events, one JSON object per line on stdout: "step"
(rank 0, each epoch's first step: epoch, step, loss), "epoch" (rank 0, after each epoch: epoch, loss,
samples_per_s) and "result" (rank 0, at the end:
test_accuracy, epochs, world_size). Rank 0 writes ``model.pt`` to OUTPUT_DIR and
``checkpoint-epochNNN.pt`` to CHECKPOINT_DIR after every epoch; given RESUME_FROM, every rank
loads that checkpoint and training continues at the next epoch.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

DEFAULT_MASTER_PORT = "29500"
# How long a rank waits for the others to join, and for a collective: ranks of one job start minutes apart on a
# loaded or cold node (importing torch and scikit-learn). A rank that died or stalled is named and stopped by the
# collection's own watch long before this.
INIT_TIMEOUT = timedelta(seconds=600)


@dataclass(frozen=True)
class DistEnv:
    rank: int
    world_size: int
    local_rank: int


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="DDP training of an MLP on the sklearn digits."
    )
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument(
        "--batch-size", type=int, default=32, help="per-rank batch size"
    )
    parser.add_argument("--lr", type=float, default=0.005, help="Adam learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", type=Path, default=Path(os.environ.get("OUTPUT_DIR") or "outputs"))
    parser.add_argument(
        "--checkpoint-dir", type=Path, default=Path(os.environ.get("CHECKPOINT_DIR") or "checkpoints")
    )
    parser.add_argument("--resume-from", default=os.environ.get("RESUME_FROM", ""))
    parser.add_argument("--test-fraction", type=float, default=0.2)
    return parser.parse_args(argv)


def emit(event: str, **fields: Any) -> None:
    """Write one JSON line to stdout and flush it immediately."""
    record = {"event": event, **fields, "time": time.time()}
    print(json.dumps(record), flush=True)


def detect_dist_env(env: Mapping[str, str] | None = None) -> DistEnv:
    """Rank, world size and local rank from the standard variables (one process when they are unset)."""
    env = os.environ if env is None else env
    if "RANK" not in env:
        return DistEnv(rank=0, world_size=1, local_rank=0)
    return DistEnv(
        rank=int(env["RANK"]),
        world_size=int(env["WORLD_SIZE"]),
        local_rank=int(env.get("LOCAL_RANK", "0")),
    )


def init_distributed(denv: DistEnv) -> None:
    """Join the gloo process group through env:// with an explicit rank and size."""
    if "MASTER_ADDR" not in os.environ:
        if denv.world_size > 1:
            raise RuntimeError(
                "MASTER_ADDR must be set when running more than one rank"
            )
        os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ.setdefault("MASTER_PORT", DEFAULT_MASTER_PORT)
    dist.init_process_group(
        "gloo",
        init_method="env://",
        rank=denv.rank,
        world_size=denv.world_size,
        timeout=INIT_TIMEOUT,
    )


def configure_threads() -> None:
    threads = os.environ.get("OMP_NUM_THREADS")
    torch.set_num_threads(int(threads) if threads else 1)


def load_data(seed: int, test_fraction: float) -> tuple[TensorDataset, TensorDataset]:
    """Fixed, stratified train/test split of the digits with pixels scaled to [0, 1]."""
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data / 16.0,
        digits.target,
        test_size=test_fraction,
        random_state=seed,
        stratify=digits.target,
    )

    def to_dataset(x: Any, y: Any) -> TensorDataset:
        return TensorDataset(
            torch.as_tensor(x, dtype=torch.float32),
            torch.as_tensor(y, dtype=torch.long),
        )

    return to_dataset(x_train, y_train), to_dataset(x_test, y_test)


def build_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def train_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    loss_fn: nn.Module,
    epoch: int,
    is_main: bool,
) -> tuple[float, int]:
    """One pass over this rank's shard; returns (sum of sample losses, sample count). The main rank reports the
    epoch's first step ("step" event)."""
    model.train()
    loss_sum = 0.0
    count = 0
    for step, (inputs, targets) in enumerate(loader, start=1):
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        loss_sum += loss.item() * len(targets)
        count += len(targets)
        if is_main and step == 1:
            emit("step", epoch=epoch, step=step, loss=loss.item())
    return loss_sum, count


def global_mean_loss(loss_sum: float, count: int) -> tuple[float, int]:
    """All-reduce the per-rank loss sums and counts; returns (mean loss, total samples)."""
    totals = torch.tensor([loss_sum, float(count)], dtype=torch.float64)
    dist.all_reduce(totals, op=dist.ReduceOp.SUM)
    total_count = int(totals[1].item())
    return totals[0].item() / max(total_count, 1), total_count


@torch.no_grad()
def evaluate(model: nn.Module, data: TensorDataset) -> float:
    model.eval()
    inputs, targets = data.tensors
    predictions = model(inputs).argmax(dim=1)
    return (predictions == targets).float().mean().item()


def save_atomically(obj: Any, path: Path) -> None:
    """torch.save to a hidden temporary name, then rename: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def save_checkpoint(
    args: argparse.Namespace, model: nn.Module, optimizer: torch.optim.Optimizer, epoch: int
) -> None:
    state = model.state_dict()
    save_atomically(state, args.output_dir / "model.pt")
    save_atomically(
        {"epoch": epoch, "model": state, "optimizer": optimizer.state_dict()},
        args.checkpoint_dir / f"checkpoint-epoch{epoch:03d}.pt",
    )


def resume(args: argparse.Namespace, model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Load --resume-from into the model and optimizer; returns the first epoch still to train."""
    if not args.resume_from:
        return 1
    checkpoint = torch.load(args.resume_from, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    print(f"resumed from {args.resume_from} at epoch {checkpoint['epoch']}", flush=True)
    return int(checkpoint["epoch"]) + 1


def run(args: argparse.Namespace, denv: DistEnv) -> None:
    is_main = denv.rank == 0
    torch.manual_seed(args.seed)
    train_set, test_set = load_data(args.seed, args.test_fraction)
    sampler = DistributedSampler(
        train_set,
        num_replicas=denv.world_size,
        rank=denv.rank,
        shuffle=True,
        seed=args.seed,
    )
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    model = build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    first_epoch = resume(args, model, optimizer)
    ddp_model = DistributedDataParallel(model)
    loss_fn = nn.CrossEntropyLoss()
    if is_main:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        args.checkpoint_dir.mkdir(parents=True, exist_ok=True)

    for epoch in range(first_epoch, args.epochs + 1):
        sampler.set_epoch(epoch)
        started = time.perf_counter()
        loss_sum, count = train_epoch(ddp_model, loader, optimizer, loss_fn, epoch, is_main)
        mean_loss, total = global_mean_loss(loss_sum, count)
        elapsed = time.perf_counter() - started
        if is_main:
            emit("epoch", epoch=epoch, loss=mean_loss, samples_per_s=total / elapsed)
            save_checkpoint(args, model, optimizer, epoch)

    if is_main:
        accuracy = evaluate(model, test_set)
        emit(
            "result",
            test_accuracy=accuracy,
            epochs=args.epochs,
            world_size=denv.world_size,
        )
    dist.barrier()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_threads()
    denv = detect_dist_env()
    init_distributed(denv)
    print(f"rank {denv.rank} of {denv.world_size} on {socket.gethostname()}", flush=True)
    try:
        run(args, denv)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    exit_code = main()
    # Every rank has reported "done" and rank 0's files are closed. Leave without running the
    # interpreter's and the C++ libraries' exit-time destructors: a gloo pair whose peer exited
    # first can throw from a background thread there and abort (exit 134) a rank that finished.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)
