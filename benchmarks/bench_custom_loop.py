"""A training loop written from scratch against ``fit``: time per epoch, ratio.

Run from the repository root (the MNIST files under $KERASFLOW_DATA_DIR)::

    KERASFLOW_DATA_DIR=/work/shared/data python benchmarks/bench_custom_loop.py \
        [--samples N] [--epochs N] [--batch-size N] [--threads N]

The model and loop are those of keras.io's "Writing a training loop from
scratch": 784-64-64-10 MLP (relu), SparseCategoricalCrossentropy from logits,
Adam(1e-3), batch 32, on ``--samples`` MNIST training images (default 10,000).
The custom loop is ``kf.GradientTape`` + ``optimizer.apply_gradients`` + a
``SparseCategoricalAccuracy`` update per batch; ``fit`` runs the same model,
batch size and metric with ``verbose=0`` and ``shuffle=False``. Each is timed
over ``--epochs`` epochs after one warm-up epoch (traces and compiled
functions built), alternating the two, best epoch of each. Printed: seconds
per epoch of each and the ratio loop / fit (target: <= 2). ``--threads 1``
(BLAS threads, set before numpy loads) is steadier on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _threads_from_argv():
    """``--threads N`` must act before numpy loads OpenBLAS: read it first."""
    if "--threads" in sys.argv:
        n = sys.argv[sys.argv.index("--threads") + 1]
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = n


_threads_from_argv()

import numpy as np  # noqa: E402

import kerasflow as kf  # noqa: E402


def build(seed):
    np.random.seed(seed)
    inputs = kf.Input((784,))
    x = kf.layers.Dense(64, activation="relu")(inputs)
    x = kf.layers.Dense(64, activation="relu")(x)
    return kf.Model(inputs, kf.layers.Dense(10)(x))


def custom_epoch(model, optimizer, loss_fn, metric, x, y, batch_size):
    metric.reset_state()
    for start in range(0, len(x), batch_size):
        xb, yb = x[start:start + batch_size], y[start:start + batch_size]
        with kf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        metric.update_state(yb, logits)
    return float(loss), float(metric.result())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads (default: all)")
    args = parser.parse_args()
    (x, y), _ = kf.datasets.mnist.load_data()
    x = x[:args.samples].reshape(-1, 784).astype("float32") / 255.0
    y = y[:args.samples].astype("int64")

    loop_model, fit_model = build(0), build(0)
    optimizer = kf.optimizers.Adam(1e-3)
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    metric = kf.metrics.SparseCategoricalAccuracy()
    fit_model.compile(kf.optimizers.Adam(1e-3),
                      kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[kf.metrics.SparseCategoricalAccuracy()])

    custom_epoch(loop_model, optimizer, loss_fn, metric, x, y, args.batch_size)
    fit_model.fit(x, y, batch_size=args.batch_size, epochs=1, verbose=0,
                  shuffle=False)
    loop_t, fit_t = [], []
    for _ in range(args.epochs):
        t = time.perf_counter()
        loss, acc = custom_epoch(loop_model, optimizer, loss_fn, metric, x, y,
                                 args.batch_size)
        loop_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        hist = fit_model.fit(x, y, batch_size=args.batch_size, epochs=1,
                             verbose=0, shuffle=False)
        fit_t.append(time.perf_counter() - t)
    print(f"samples={args.samples} batch_size={args.batch_size} "
          f"epochs timed={args.epochs} (best of each)")
    print(f"custom loop: {min(loop_t):.3f} s/epoch  (last loss {loss:.4f}, "
          f"accuracy {acc:.4f})")
    print(f"fit:         {min(fit_t):.3f} s/epoch  (last loss "
          f"{hist.history['loss'][-1]:.4f}, accuracy "
          f"{hist.history['sparse_categorical_accuracy'][-1]:.4f})")
    print(f"ratio custom loop / fit: {min(loop_t) / min(fit_t):.2f}")


if __name__ == "__main__":
    main()
