"""Minimal DistributedDataParallel example on synthetic data (CPU, gloo).

Launch it with torchrun (or any launcher that sets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT), e.g.::

    torchrun --standalone --nproc-per-node 3 train.py

Every rank builds the same synthetic regression problem from a fixed seed,
trains its shard of it with a DistributedSampler, and rank 0 prints the loss
of every epoch and writes the trained weights to ``model.pt`` in the current
directory.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

SEED = 0
NUM_SAMPLES = 2048
NUM_FEATURES = 16
EPOCHS = 5
BATCH_SIZE = 64
LEARNING_RATE = 0.01


def make_dataset(seed: int = SEED) -> TensorDataset:
    """A noisy non-linear regression problem, identical on every rank."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(NUM_SAMPLES, NUM_FEATURES, generator=generator)
    weights = torch.randn(NUM_FEATURES, 1, generator=generator) / NUM_FEATURES**0.5
    noise = 0.1 * torch.randn(NUM_SAMPLES, 1, generator=generator)
    targets = torch.tanh(inputs @ weights) + noise
    return TensorDataset(inputs, targets)


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(NUM_FEATURES, 64),
        nn.ReLU(),
        nn.Linear(64, 1),
    )


def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    loss_fn: nn.Module,
) -> float:
    """Train on this rank's shard; return the mean loss over all ranks."""
    model.train()
    total = torch.zeros(2)
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += torch.tensor([loss.item() * len(targets), len(targets)])
    dist.all_reduce(total)
    return (total[0] / total[1]).item()


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(SEED)

    dataset = make_dataset()
    sampler = DistributedSampler(dataset, shuffle=True, seed=SEED)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=sampler)

    model = DistributedDataParallel(build_model())
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.MSELoss()

    for epoch in range(1, EPOCHS + 1):
        sampler.set_epoch(epoch)
        loss = train_one_epoch(model, loader, optimizer, loss_fn)
        if rank == 0:
            print(f"epoch {epoch} loss {loss:.4f}", flush=True)

    if rank == 0:
        torch.save(model.module.state_dict(), "model.pt")
        print("saved model.pt", flush=True)

    # No dist.destroy_process_group() here, as in many scripts: a gloo group left open can abort the finished rank
    # at interpreter exit (pytorch/pytorch#117762). The rank wrapper's exit guard leaves it for the script
    # (docs/SCRIPTS.md, "A known PyTorch exit race, handled"); this example is one of the scripts that rely on it.


if __name__ == "__main__":
    main()
