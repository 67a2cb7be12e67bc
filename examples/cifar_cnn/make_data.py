#!/usr/bin/env python3
"""Write a small synthetic image data set in CIFAR-10's binary layout.

Usage::

    python3 make_data.py OUT_DIR [--train N] [--test M] [--batches K] [--seed S]

creates ``OUT_DIR/cifar-10-batches-bin/`` with ``data_batch_1.bin`` ...
``data_batch_K.bin``, ``test_batch.bin`` and ``batches.meta.txt``, exactly
like the real CIFAR-10 "binary version": every record is one label byte
followed by 3072 pixel bytes (1024 red, 1024 green, 1024 blue, each a
row-major 32x32 plane).

The ten classes are simple patterns (stripes, checkerboard, filled shapes,
...) drawn in random colours at a random position and size, with pixel noise,
so that a small CNN can learn them in a few epochs.  The output depends only
on the arguments: the same seed gives the same bytes on every run, and files
that already hold those bytes are left untouched.

Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path

SIZE = 32
PIXELS = SIZE * SIZE
RECORD_BYTES = 1 + 3 * PIXELS
NOISE = 24  # pixel noise is uniform in [-NOISE, NOISE]

CLASS_NAMES = (
    "horizontal_stripes",
    "vertical_stripes",
    "diagonal_stripes",
    "checkerboard",
    "square",
    "disk",
    "ring",
    "plus",
    "cross",
    "triangle",
)

Mask = Callable[[int, int], bool]
Color = tuple[int, int, int]


def uniform_int(rng: random.Random, low: int, high: int) -> int:
    """An integer in [low, high], drawn only via ``rng.random()``.

    ``random.randint`` is avoided on purpose: ``random()`` is the one method
    whose output Python guarantees to be reproducible across versions.
    """
    return low + int(rng.random() * (high - low + 1))


def stripes_mask(rng: random.Random, direction: str) -> Mask:
    half_period = uniform_int(rng, 2, 4)
    phase = uniform_int(rng, 0, 2 * half_period - 1)

    def coordinate(x: int, y: int) -> int:
        if direction == "horizontal":
            return y
        if direction == "vertical":
            return x
        return x + y

    return lambda x, y: ((coordinate(x, y) + phase) // half_period) % 2 == 0


def checkerboard_mask(rng: random.Random) -> Mask:
    cell = uniform_int(rng, 3, 5)
    dx, dy = uniform_int(rng, 0, cell - 1), uniform_int(rng, 0, cell - 1)
    return lambda x, y: ((x + dx) // cell + (y + dy) // cell) % 2 == 0


def shape_mask(rng: random.Random, shape: str) -> Mask:
    """A single shape of random size centred near the middle of the image."""
    cx = 15.5 + uniform_int(rng, -6, 6)
    cy = 15.5 + uniform_int(rng, -6, 6)
    radius = uniform_int(rng, 6, 9)
    thickness = uniform_int(rng, 2, 3)

    def mask(x: int, y: int) -> bool:
        dx, dy = x - cx, y - cy
        if shape == "square":
            return abs(dx) <= radius and abs(dy) <= radius
        if shape == "disk":
            return dx * dx + dy * dy <= radius * radius
        if shape == "ring":
            distance = (dx * dx + dy * dy) ** 0.5
            return radius - thickness <= distance <= radius
        if shape == "plus":
            inside = abs(dx) <= radius and abs(dy) <= radius
            return inside and (abs(dx) <= thickness or abs(dy) <= thickness)
        if shape == "cross":
            inside = abs(dx) <= radius and abs(dy) <= radius
            return inside and (abs(dx - dy) <= thickness or abs(dx + dy) <= thickness)
        if shape == "triangle":  # apex up, base at the bottom
            return -radius <= dy <= radius and abs(dx) <= (dy + radius) / 2
        raise ValueError(f"unknown shape {shape!r}")

    return mask


def class_mask(rng: random.Random, label: int) -> Mask:
    name = CLASS_NAMES[label]
    if name.endswith("_stripes"):
        return stripes_mask(rng, name.removesuffix("_stripes"))
    if name == "checkerboard":
        return checkerboard_mask(rng)
    return shape_mask(rng, name)


def random_color(rng: random.Random, low: int, high: int) -> Color:
    return (
        uniform_int(rng, low, high),
        uniform_int(rng, low, high),
        uniform_int(rng, low, high),
    )


def random_colors(rng: random.Random) -> tuple[Color, Color]:
    """A dark background and a bright foreground colour."""
    return random_color(rng, 0, 100), random_color(rng, 155, 255)


def render_image(rng: random.Random, label: int) -> bytes:
    """One CIFAR-10 record: the label byte, then the R, G and B planes."""
    mask = class_mask(rng, label)
    background, foreground = random_colors(rng)
    planes = [bytearray(PIXELS) for _plane in range(3)]
    for y in range(SIZE):
        for x in range(SIZE):
            color = foreground if mask(x, y) else background
            index = y * SIZE + x
            for channel in range(3):
                noise = uniform_int(rng, -NOISE, NOISE)
                planes[channel][index] = min(255, max(0, color[channel] + noise))
    return bytes([label]) + b"".join(bytes(plane) for plane in planes)


def balanced_labels(rng: random.Random, count: int) -> list[int]:
    """``count`` labels, as equal per class as possible, in random order."""
    labels = [i % len(CLASS_NAMES) for i in range(count)]
    for i in range(count - 1, 0, -1):  # Fisher-Yates with rng.random() only
        j = uniform_int(rng, 0, i)
        labels[i], labels[j] = labels[j], labels[i]
    return labels


def render_split(rng: random.Random, count: int) -> list[bytes]:
    return [render_image(rng, label) for label in balanced_labels(rng, count)]


def split_evenly(records: list[bytes], parts: int) -> list[list[bytes]]:
    size, extra = divmod(len(records), parts)
    chunks, start = [], 0
    for part in range(parts):
        end = start + size + (1 if part < extra else 0)
        chunks.append(records[start:end])
        start = end
    return chunks


def write_if_changed(path: Path, content: bytes) -> bool:
    """Write ``content`` atomically unless ``path`` already holds it."""
    if path.is_file() and path.read_bytes() == content:
        return False
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(content)
    os.replace(temporary, path)
    return True


def remove_stale_batches(target: Path, keep: set[str]) -> list[str]:
    """Delete ``data_batch_*.bin`` left over from a run with more ``--batches``."""
    stale = sorted(p for p in target.glob("data_batch_*.bin") if p.name not in keep)
    for path in stale:
        path.unlink()
    return [path.name for path in stale]


def build_files(
    train_count: int, test_count: int, batches: int, seed: int
) -> dict[str, bytes]:
    """File name -> content for the whole data set."""
    rng = random.Random(seed)
    files: dict[str, bytes] = {}
    train_records = render_split(rng, train_count)
    for number, chunk in enumerate(split_evenly(train_records, batches), start=1):
        files[f"data_batch_{number}.bin"] = b"".join(chunk)
    files["test_batch.bin"] = b"".join(render_split(rng, test_count))
    files["batches.meta.txt"] = ("\n".join(CLASS_NAMES) + "\n").encode()
    return files


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("out_dir", type=Path, help="directory to write into")
    parser.add_argument("--train", type=int, default=1500, help="training images")
    parser.add_argument("--test", type=int, default=300, help="test images")
    parser.add_argument("--batches", type=int, default=3, help="training batch files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.train < 0 or args.test < 0 or args.batches < 1:
        parser.error("--train and --test must be >= 0 and --batches >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    target = args.out_dir / "cifar-10-batches-bin"
    target.mkdir(parents=True, exist_ok=True)
    files = build_files(args.train, args.test, args.batches, args.seed)
    written = [
        name for name, data in files.items() if write_if_changed(target / name, data)
    ]
    removed = remove_stale_batches(target, set(files))
    if written:
        print(f"wrote {', '.join(written)} in {target}")
    if removed:
        print(f"removed stale {', '.join(removed)} from {target}")
    if not written and not removed:
        print(f"{target} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
