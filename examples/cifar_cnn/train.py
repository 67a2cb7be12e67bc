"""Train a small CNN on CIFAR-10-format data with DistributedDataParallel.

Launch it with torchrun (or any launcher that sets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT), e.g.::

    DATA_DIR=/data torchrun --standalone --nproc-per-node 3 train.py --epochs 6

The data directory holds the CIFAR-10 "binary version" files
(``data_batch_*.bin`` and ``test_batch.bin``), either directly or in a
``cifar-10-batches-bin/`` sub-directory; ``make_data.py`` writes a small
synthetic set in that layout.

Environment used (all optional except the data directory):

* ``DATA_DIR``        -- default for ``--data-dir``
* ``CHECKPOINT_DIR``  -- rank 0 writes ``checkpoint-epochNNN.pt`` here after
  every epoch (default ``./checkpoints``)
* ``RESUME_FROM``     -- checkpoint to continue from
* ``OUTPUT_DIR``      -- rank 0 writes the final ``model.pt`` here
  (default ``./outputs``)
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

RECORD_BYTES = 1 + 3 * 32 * 32
NUM_CLASSES = 10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="DDP training of a small CNN.")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=os.environ.get("DATA_DIR") or None,
        help="CIFAR-10 binary data (default: $DATA_DIR)",
    )
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.002, help="Adam learning rate")
    parser.add_argument("--log-every", type=int, default=20, help="rank 0 prints every this many steps (and the first)")
    args = parser.parse_args()
    if args.data_dir is None:
        parser.error("give --data-dir or set DATA_DIR")
    return args


def find_batches_dir(data_dir: Path) -> Path:
    """The directory holding the ``*.bin`` files."""
    for candidate in (data_dir / "cifar-10-batches-bin", data_dir):
        if (candidate / "test_batch.bin").is_file():
            return candidate
    raise FileNotFoundError(
        f"no CIFAR-10 binary files (test_batch.bin) under {data_dir}"
    )


def read_cifar_bin(paths: list[Path]) -> TensorDataset:
    """Images scaled to [-1, 1] as float tensors of shape (N, 3, 32, 32), and labels."""
    raw = bytearray()
    for path in paths:
        raw += path.read_bytes()
    if len(raw) % RECORD_BYTES:
        raise ValueError(f"{paths} is not a whole number of CIFAR-10 records")
    records = torch.frombuffer(raw, dtype=torch.uint8).view(-1, RECORD_BYTES)
    labels = records[:, 0].long()
    images = records[:, 1:].view(-1, 3, 32, 32).float() / 127.5 - 1.0
    return TensorDataset(images, labels)


def load_data(data_dir: Path) -> tuple[TensorDataset, TensorDataset]:
    batches_dir = find_batches_dir(data_dir)
    train_files = sorted(batches_dir.glob("data_batch_*.bin"))
    if not train_files:
        raise FileNotFoundError(f"no data_batch_*.bin in {batches_dir}")
    return read_cifar_bin(train_files), read_cifar_bin([batches_dir / "test_batch.bin"])


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 16 x 16
            nn.Conv2d(64, 128, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 8 x 8
        )
        self.classifier = nn.Linear(128 * 8 * 8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).flatten(1))


def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    loss_fn: nn.Module,
    epoch: int,
    log_every: int,
) -> float:
    """Train on this rank's shard; return the mean loss over all ranks. Rank 0 prints the
    epoch's first step and every ``log_every``-th."""
    model.train()
    total = torch.zeros(2)
    for step, (images, labels) in enumerate(loader, start=1):
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        total += torch.tensor([loss.item() * len(labels), len(labels)])
        if dist.get_rank() == 0 and (step == 1 or step % log_every == 0):
            print(f"epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}", flush=True)
    dist.all_reduce(total)
    return (total[0] / total[1]).item()


@torch.no_grad()
def evaluate(model: nn.Module, test_set: TensorDataset) -> float:
    """Accuracy on the whole test set; every rank scores every world_size-th image."""
    model.eval()
    images, labels = test_set.tensors
    rank, world_size = dist.get_rank(), dist.get_world_size()
    images, labels = images[rank::world_size], labels[rank::world_size]
    correct = (model(images).argmax(dim=1) == labels).sum()
    counts = torch.tensor([correct.item(), len(labels)], dtype=torch.float64)
    dist.all_reduce(counts)
    return (counts[0] / counts[1]).item()


def save_checkpoint(
    checkpoint_dir: Path,
    epoch: int,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
) -> Path:
    """Write the checkpoint under a hidden temporary name, then rename it into place."""
    path = checkpoint_dir / f"checkpoint-epoch{epoch:03d}.pt"
    temporary = checkpoint_dir / f".{path.name}.tmp"
    state = {
        "epoch": epoch,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
    }
    torch.save(state, temporary)
    os.replace(temporary, path)
    return path


def load_checkpoint(
    path: str, model: nn.Module, optimizer: torch.optim.Optimizer
) -> int:
    """Restore model and optimizer state; return the epoch the checkpoint ended."""
    state: dict[str, Any] = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["epoch"])


def main() -> None:
    args = parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)

    checkpoint_dir = Path(os.environ.get("CHECKPOINT_DIR") or "checkpoints")
    output_dir = Path(os.environ.get("OUTPUT_DIR") or "outputs")
    if rank == 0:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        output_dir.mkdir(parents=True, exist_ok=True)

    train_set, test_set = load_data(args.data_dir)
    sampler = DistributedSampler(train_set, shuffle=True, seed=0)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = SmallCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    start_epoch = 1
    resume_from = os.environ.get("RESUME_FROM")
    if resume_from:
        start_epoch = load_checkpoint(resume_from, model, optimizer) + 1
        if rank == 0:
            print(f"resumed from {resume_from} at epoch {start_epoch - 1}", flush=True)
    ddp_model = DistributedDataParallel(model)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(start_epoch, args.epochs + 1):
        sampler.set_epoch(epoch)
        started = time.perf_counter()
        loss = train_one_epoch(ddp_model, loader, optimizer, loss_fn, epoch, args.log_every)
        elapsed = time.perf_counter() - started
        if rank == 0:
            save_checkpoint(checkpoint_dir, epoch, model, optimizer)
            print(f"epoch {epoch} loss {loss:.4f} ({elapsed:.2f} s)", flush=True)

    accuracy = evaluate(model, test_set)
    if rank == 0:
        print(f"test accuracy {accuracy:.4f}", flush=True)
        torch.save(model.state_dict(), output_dir / "model.pt")
        print(f"saved {output_dir / 'model.pt'}", flush=True)

    # No dist.destroy_process_group() here, as in many scripts: a gloo group left open can abort the finished rank
    # at interpreter exit (pytorch/pytorch#117762). The rank wrapper's exit guard leaves it for the script
    # (docs/SCRIPTS.md, "A known PyTorch exit race, handled"); this example is one of the scripts that rely on it.


if __name__ == "__main__":
    main()
