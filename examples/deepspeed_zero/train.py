"""A DeepSpeed ZeRO stage 2 example on CPU: an MLP classifier of scikit-learn's digits (shipped offline).

Launch it with the deepspeed launcher (or any launcher that sets RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT), e.g. on one machine::

    deepspeed --num_gpus 2 train.py          # DS_ACCELERATOR=cpu on a machine without GPUs

ZeRO stage 2 partitions the optimizer state and the gradients across the ranks; the
parameters stay whole on every rank. DeepSpeed picks its CPU accelerator and, without
oneCCL's bindings for PyTorch, the gloo backend. Every rank trains its shard of the
training set; rank 0 prints each epoch's mean loss over all ranks and the test accuracy,
and saves the weights to ``$OUTPUT_DIR/model.pt`` (``model.pt`` in the working
directory without OUTPUT_DIR).
"""

from __future__ import annotations

import argparse
import os

import deepspeed
import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

SEED = 0


def datasets() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The digits (8x8 images, 10 classes) split the same way on every rank, scaled to [0, 1]."""
    images, labels = load_digits(return_X_y=True)
    train_x, test_x, train_y, test_y = train_test_split(images / 16.0, labels, test_size=0.25, random_state=SEED)
    return _floats(train_x), torch.tensor(train_y), _floats(test_x), torch.tensor(test_y)


def _floats(array) -> torch.Tensor:
    return torch.tensor(array, dtype=torch.float32)


def build_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def ds_config(batch_per_rank: int, stage: int) -> dict:
    return {
        "train_micro_batch_size_per_gpu": batch_per_rank,
        "gradient_accumulation_steps": 1,
        "optimizer": {"type": "Adam", "params": {"lr": 3e-3, "torch_adam": True}},
        "zero_optimization": {"stage": stage},
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 1000000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--zero-stage", type=int, default=2, choices=[1, 2])
    args = parser.parse_args()

    deepspeed.init_distributed(dist_backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(SEED)
    train_x, train_y, test_x, test_y = datasets()
    model = build_model()
    # deepspeed.initialize returns (engine, optimizer, dataloader, lr scheduler); the engine does the steps.
    engine = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=ds_config(args.batch_size, args.zero_stage)
    )[0]
    shard_x, shard_y = train_x[rank::world], train_y[rank::world]
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(shard_x), generator=torch.Generator().manual_seed(SEED + epoch))
        # The same number of steps on every rank: ZeRO's collectives need every rank in each step.
        steps = len(train_x) // world // args.batch_size
        total = torch.zeros(2)
        for step in range(steps):
            batch = order[step * args.batch_size : (step + 1) * args.batch_size]
            loss = loss_fn(engine(shard_x[batch]), shard_y[batch])
            engine.backward(loss)
            engine.step()
            total += torch.tensor([loss.item() * len(batch), len(batch)])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch} loss {(total[0] / total[1]).item():.4f}", flush=True)

    with torch.no_grad():
        accuracy = (engine(test_x).argmax(dim=1) == test_y).float().mean().item()
    if rank == 0:
        print(f"test accuracy {accuracy:.4f} (ZeRO stage {args.zero_stage}, {world} ranks)", flush=True)
        output_dir = os.environ.get("OUTPUT_DIR", ".")
        torch.save(engine.module.state_dict(), os.path.join(output_dir, "model.pt"))
    dist.barrier()


if __name__ == "__main__":
    main()
