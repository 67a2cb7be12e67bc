"""A Keras classifier of handwritten digits trained with TensorFlow's MultiWorkerMirroredStrategy on CPU.

MNIST-style: scikit-learn's digits (8x8 images, 10 classes, shipped offline with scikit-learn), so
nothing is downloaded. Every worker reads the cluster from TF_CONFIG (launcher_type=tensorflow writes
it from the inventory: every node's worker, in rank order, and this one's index); worker 0 is the
chief. Run without TF_CONFIG it trains alone. The chief prints each epoch's loss and the test
accuracy (as the collection's optional JSON progress events too) and saves the weights to
``$OUTPUT_DIR/model.weights.h5`` (the working directory without OUTPUT_DIR).

    TF_CONFIG='{"cluster": {"worker": ["host1:29500", "host2:29500"]}, "task": {"type": "worker", "index": 0}}' \\
        python3 train.py --epochs 15
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile

# Keras 3 (tf.keras by default since TensorFlow 2.16) cannot train under MultiWorkerMirroredStrategy; Keras 2
# (the tf_keras package) can, as TensorFlow's multi-worker tutorial uses it. Set before TensorFlow is imported.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

SEED = 0


def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits split the same way on every worker, as 8x8x1 images scaled to [0, 1]."""
    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype("float32").reshape(-1, 8, 8, 1)
    return train_test_split(images, labels.astype("int64"), test_size=0.25, random_state=SEED)


def build_model() -> tf.keras.Model:
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Conv2D(16, 3, activation="relu", padding="same", input_shape=(8, 8, 1)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(3e-3),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class EpochReport(tf.keras.callbacks.Callback):
    """Each epoch's loss as it ends, as the collection's optional progress event (one JSON object a line)."""

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        print(json.dumps({"event": "epoch", "epoch": epoch + 1, "loss": (logs or {}).get("loss")}), flush=True)


def worker_index() -> int:
    """This worker's index in TF_CONFIG (0, the chief, when there is none)."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    return int(config.get("task", {}).get("index", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker")
    args = parser.parse_args()

    # First, before any other TensorFlow op: the strategy starts this worker's server and joins the others.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    workers = strategy.num_replicas_in_sync
    tf.keras.utils.set_random_seed(SEED)
    train_x, test_x, train_y, test_y = digits()
    global_batch = args.batch_size * workers
    # Each worker reads its own share of every global batch (tf.data's auto-sharding by data).
    train = tf.data.Dataset.from_tensor_slices((train_x, train_y)).shuffle(len(train_x), seed=SEED).batch(global_batch)
    test = tf.data.Dataset.from_tensor_slices((test_x, test_y)).batch(global_batch)

    with strategy.scope():
        model = build_model()
    chief = worker_index() == 0
    model.fit(train, epochs=args.epochs, verbose=0, callbacks=[EpochReport()] if chief else [])
    accuracy = model.evaluate(test, verbose=0)[1]
    if chief:
        print(f"test accuracy {accuracy:.4f} (MultiWorkerMirroredStrategy, {workers} workers)", flush=True)
        print(json.dumps({"event": "result", "test_accuracy": accuracy}), flush=True)
    # Saving runs collectives, so every worker saves: the chief where outputs are collected, the others to a
    # scratch directory they remove (TensorFlow's multi-worker saving pattern).
    output_dir = os.environ.get("OUTPUT_DIR", ".") if chief else tempfile.mkdtemp()
    model.save_weights(os.path.join(output_dir, "model.weights.h5"))
    if not chief:
        shutil.rmtree(output_dir)


if __name__ == "__main__":
    main()
