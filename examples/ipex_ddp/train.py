"""Digits with Intel Extension for PyTorch and DistributedDataParallel, in the style of IPEX's CPU training examples.

The pattern of Intel's multi-node PyTorch guide: the rank comes from Intel MPI's PMI_RANK/PMI_SIZE (ipexrun starts
every rank with mpiexec.hydra), ``ipex.optimize`` prepares the model and its optimizer for the CPU, then
DistributedDataParallel wraps the optimized model. The guide's backend is ccl (torch-ccl), which is end of life and
not on PyPI; this example runs on gloo unless told otherwise. Launch it with ipexrun (launcher_type=ipexrun starts it
across the inventory's nodes), e.g. on one machine::

    ipexrun --nnodes 1 --nprocs-per-node 2 --ccl-worker-count 0 train.py

The data is scikit-learn's digits (8x8 images, 10 classes, shipped offline). Every rank trains its shard through a
DistributedSampler; rank 0 prints each epoch's mean loss over all ranks and the test accuracy (also as the
collection's optional JSON progress events) and saves the weights to ``$OUTPUT_DIR/model.pt``.
"""

from __future__ import annotations

import argparse
import json
import os

import intel_extension_for_pytorch as ipex
import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

SEED = 0


def digits() -> tuple[TensorDataset, TensorDataset]:
    """Train and test sets, split the same way on every rank, as 1x8x8 images scaled to [0, 1]."""
    images, labels = load_digits(return_X_y=True)
    train_x, test_x, train_y, test_y = train_test_split(images / 16.0, labels, test_size=0.25, random_state=SEED)

    def as_dataset(pixels, targets) -> TensorDataset:
        return TensorDataset(torch.tensor(pixels, dtype=torch.float32).view(-1, 1, 8, 8), torch.tensor(targets))

    return as_dataset(train_x, train_y), as_dataset(test_x, test_y)


def classifier() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 10),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--backend", default="gloo", help="gloo, mpi, or ccl where torch-ccl is installed")
    args = parser.parse_args()

    # As in IPEX's distributed examples: the rank from the MPI launcher's variables.
    os.environ.setdefault("RANK", os.environ.get("PMI_RANK", "0"))
    os.environ.setdefault("WORLD_SIZE", os.environ.get("PMI_SIZE", "1"))
    dist.init_process_group(backend=args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(SEED)
    train_set, test_set = digits()
    sampler = DistributedSampler(train_set, num_replicas=size, rank=rank, shuffle=True, seed=SEED)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    model = classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    model.train()
    model, optimizer = ipex.optimize(model, optimizer=optimizer)
    model = DistributedDataParallel(model)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        total = torch.zeros(2)
        for images, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            total += torch.tensor([loss.item() * len(labels), len(labels)])
        dist.all_reduce(total)
        if rank == 0:
            print(json.dumps({"event": "epoch", "epoch": epoch, "loss": (total[0] / total[1]).item()}), flush=True)

    model.eval()
    test_x, test_y = test_set.tensors
    with torch.no_grad():
        accuracy = (model(test_x).argmax(dim=1) == test_y).float().mean().item()
    if rank == 0:
        print(f"test accuracy {accuracy:.4f} (IPEX {ipex.__version__}, {size} ranks, {args.backend})", flush=True)
        print(json.dumps({"event": "result", "test_accuracy": accuracy}), flush=True)
        torch.save(model.module.state_dict(), os.path.join(os.environ.get("OUTPUT_DIR", "."), "model.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
