"""MNIST MLP trained with ``ParameterServerStrategy`` in three consistency
modes -- synchronous (staleness=0), bounded delay (staleness=4) and
asynchronous (staleness=None) -- printing test accuracy and wall time of each
(Li et al., OSDI 2014: workers push gradients to server shards and pull the
new weights; tau bounds how far a worker may run ahead).

Run: python examples/mnist_parameter_server.py [--modes sync,4,async]
     [--epochs 3] [--workers 2] [--ps 2] [--slow 0.0] [--data DIR]
Starts a quiet local Ray (or joins $RAY_ADDRESS). ``--slow S`` makes worker 1
sleep S seconds per task (a straggler on purpose) so the modes differ in
speed. ``batch_size`` is the global batch: each worker computes half of it.
Measured on a loaded 2-core VM: 3 epochs of a 256-256 MLP gave sync 97.50%,
tau=4 96.84%, async 97.06%; this 512-512 dropout MLP reaches 97.55% async
after 4 epochs (92 s).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kerasflow as kf
from kerasflow.distribute.parameter_server.stragglers import slow_workers


def build_model(dropout=0.2):
    return kf.Sequential([
        kf.layers.Dense(512, activation="relu", input_shape=(784,)),
        kf.layers.Dropout(dropout),
        kf.layers.Dense(512, activation="relu"),
        kf.layers.Dropout(dropout),
        kf.layers.Dense(10, activation="softmax"),
    ])


def _staleness(mode):
    if mode in ("async", "none", None):
        return None
    return 0 if mode == "sync" else int(mode)


def run_mode(mode, data, epochs=3, batch_size=128, workers=2, ps=2, slow=0.0,
             verbose=0, seed=0):
    """Trains one model in ``mode`` ("sync", "async" or an int tau); returns
    ``(test accuracy, wall seconds, idle share)``."""
    (x_train, y_train), (x_test, y_test) = data
    np.random.seed(seed)
    kf.backend.set_random_seed(seed)
    strategy = kf.distribute.ParameterServerStrategy(
        num_ps=ps, num_workers=workers, staleness=_staleness(mode))
    if slow:
        slow_workers(strategy, {1: slow})
    with strategy.scope():
        model = build_model()
        # Async: every push is an optimizer step on a worker's half batch.
        model.compile(optimizer=kf.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        start = time.perf_counter()
        model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs,
                  verbose=verbose)
        seconds = time.perf_counter() - start
    _, acc = model.evaluate(x_test, y_test, batch_size=1024, verbose=0)
    return acc, seconds, strategy.stats()["idle_share"]


def main(modes=("sync", "4", "async"), epochs=3, batch_size=128, workers=2, ps=2,
         slow=0.0, data=None, verbose=0):
    (x_train, y_train), (x_test, y_test) = kf.datasets.mnist.load_data(path=data)
    x_train = x_train.reshape(-1, 784).astype("float32") / 255.0
    x_test = x_test.reshape(-1, 784).astype("float32") / 255.0
    results = {}
    for mode in modes:
        acc, seconds, idle = run_mode(mode, ((x_train, y_train), (x_test, y_test)),
                                      epochs, batch_size, workers, ps, slow, verbose)
        results[mode] = acc
        print(f"{mode:>5}: test accuracy {acc:.4f} - wall {seconds:.1f} s - "
              f"workers idle {100 * idle:.1f}%", flush=True)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="sync,4,async")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ps", type=int, default=2)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--data", default=None, help="folder with the 4 IDX files")
    parser.add_argument("--verbose", type=int, default=0)
    args = parser.parse_args()
    main(args.modes.split(","), args.epochs, args.batch_size, args.workers, args.ps,
         args.slow, args.data, args.verbose)
