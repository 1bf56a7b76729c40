"""The MNIST MLP of ``mnist_mlp.py`` trained with ``MirroredStrategy``: two
replica actors on this machine, each computing the gradients of half of every
global batch, summed by a shared-memory allreduce.

Run: python examples/mnist_mirrored.py [--replicas 2] [--epochs 10] [--data DIR]
Starts a quiet local Ray (or joins $RAY_ADDRESS). The only change from the
single-process script is ``with strategy.scope():``; ``batch_size`` is the
global batch. Reaches about 98% test accuracy.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kerasflow as kf


def build_model(dropout=0.2):
    return kf.Sequential([
        kf.layers.Dense(512, activation="relu", input_shape=(784,)),
        kf.layers.Dropout(dropout),
        kf.layers.Dense(512, activation="relu"),
        kf.layers.Dropout(dropout),
        kf.layers.Dense(10, activation="softmax"),
    ])


def main(replicas=2, epochs=10, batch_size=128, data=None, verbose=1, seed=0):
    np.random.seed(seed)
    kf.backend.set_random_seed(seed)
    (x_train, y_train), (x_test, y_test) = kf.datasets.mnist.load_data(path=data)
    x_train = x_train.reshape(-1, 784).astype("float32") / 255.0
    x_test = x_test.reshape(-1, 784).astype("float32") / 255.0

    strategy = kf.distribute.MirroredStrategy(num_replicas=replicas)
    print(f"{strategy.num_replicas_in_sync} replicas in sync")
    with strategy.scope():
        model = build_model()
        model.compile(optimizer=kf.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        start = time.perf_counter()
        model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs,
                  validation_split=0.1, verbose=verbose)
        seconds = time.perf_counter() - start
    # Leaving the scope stopped the replicas; the model holds their weights.
    loss, acc = model.evaluate(x_test, y_test, batch_size=1024, verbose=0)
    share = strategy.comm_seconds / max(strategy.comm_seconds
                                        + strategy.compute_seconds, 1e-9)
    print(f"test loss {loss:.4f} - test accuracy {acc:.4f} - training {seconds:.1f} s"
          f" - allreduce {100 * share:.1f}% of replica step time")
    return acc


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--data", default=None, help="folder with the 4 IDX files")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args()
    main(args.replicas, args.epochs, args.batch_size, args.data, args.verbose)
