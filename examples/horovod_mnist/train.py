"""A digits classifier trained with Horovod's PyTorch API, in the style of Horovod's own MNIST examples.

MNIST-style: scikit-learn's digits (8x8 images, 10 classes, shipped offline with scikit-learn). Launch it
with horovodrun (launcher_type=horovodrun starts it across the inventory's nodes), e.g. on one machine::

    horovodrun -np 2 -H localhost:2 --gloo python3 train.py

``hvd.init()`` reads the rank from horovodrun; every rank trains its shard of the training set with a
``hvd.DistributedOptimizer`` (gradients averaged by allreduce), the parameters and the optimizer state are
broadcast from rank 0 first. Rank 0 prints each epoch's mean loss over all ranks and the test accuracy (also
as the collection's optional JSON progress events) and saves the weights to ``$OUTPUT_DIR/model.pt``.
"""

from __future__ import annotations

import argparse
import json
import os

import horovod.torch as hvd
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

SEED = 0


def datasets() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The digits split the same way on every rank, as 1x8x8 images scaled to [0, 1]."""
    images, labels = load_digits(return_X_y=True)
    train_x, test_x, train_y, test_y = train_test_split(images / 16.0, labels, test_size=0.25, random_state=SEED)
    return _images(train_x), torch.tensor(train_y), _images(test_x), torch.tensor(test_y)


def _images(array) -> torch.Tensor:
    return torch.tensor(array, dtype=torch.float32).reshape(-1, 1, 8, 8)


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=3e-3, help="per rank; scaled by the number of ranks")
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    torch.manual_seed(SEED)
    train_x, train_y, test_x, test_y = datasets()
    model = build_model()
    optimizer = hvd.DistributedOptimizer(
        torch.optim.Adam(model.parameters(), lr=args.lr * size), named_parameters=model.named_parameters()
    )
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    shard_x, shard_y = train_x[rank::size], train_y[rank::size]
    loss_fn = nn.CrossEntropyLoss()
    # The same number of steps on every rank: each step's allreduce needs every rank.
    steps = len(train_x) // size // args.batch_size

    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(shard_x), generator=torch.Generator().manual_seed(SEED + epoch))
        total = torch.zeros(2)
        for step in range(steps):
            batch = order[step * args.batch_size : (step + 1) * args.batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(shard_x[batch]), shard_y[batch])
            loss.backward()
            optimizer.step()
            total += torch.tensor([loss.item() * len(batch), len(batch)])
        total = hvd.allreduce(total, op=hvd.Sum, name="epoch_loss")
        if rank == 0:
            print(json.dumps({"event": "epoch", "epoch": epoch, "loss": (total[0] / total[1]).item()}), flush=True)

    with torch.no_grad():
        accuracy = (model(test_x).argmax(dim=1) == test_y).float().mean().item()
    if rank == 0:
        print(f"test accuracy {accuracy:.4f} (Horovod, {size} ranks)", flush=True)
        print(json.dumps({"event": "result", "test_accuracy": accuracy}), flush=True)
        torch.save(model.state_dict(), os.path.join(os.environ.get("OUTPUT_DIR", "."), "model.pt"))


if __name__ == "__main__":
    main()
