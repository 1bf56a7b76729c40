"""MNIST-MLP ``fit`` throughput: one process against ``MirroredStrategy``.

Trains 784-512-512-10 (ReLU, softmax cross-entropy, Adam, float32) with a global
batch of 256 on synthetic data of MNIST's shape (``--model convnet``: a small
two-conv-layer MNIST convnet instead). Each repeat times one epoch of
one process (BLAS on every core) and one epoch of ``MirroredStrategy(N)``
(N single-threaded replica actors, shared-memory allreduce,
``steps_per_execution`` K, the optimizer sharded ZeRO-1 style unless
``--no-shard``), interleaved so load drifts hit both. One-time costs
stay outside the timed region: every timed ``fit`` follows a short warm-up
``fit`` on the same arrays (compilation, actor start, the data shipped to the
replicas once -- the replicas find the arrays by content afterwards).

Prints the load before and after, samples/s per run and their medians, the
ratio mirrored / one process (target >= 1.0 on a 2-core machine), and replica
0's per-step split: compute (forward + backward), apply (optimizer), copies
into the allreduce buffer, allreduce (waiting for the slower rank included)
and outside (driver round trips, pulls: wall time per step minus the rest).

Run: python benchmarks/bench_scaling.py [--samples 30000] [--replicas 2]
         [--spe 64] [--repeats 5] [--one-thread] [--no-shard] [--model convnet]
(RAY_ADDRESS=local keeps it off any Ray cluster another process started.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

BATCH = 256


MODEL = "mlp"


def data(n, seed=0):
    rng = np.random.RandomState(seed)
    shape = (n, 784) if MODEL == "mlp" else (n, 28, 28, 1)
    return rng.rand(*shape).astype("float32"), rng.randint(0, 10, n)


def model_fn(spe=None):
    import kerasflow as kf
    np.random.seed(0)
    L = kf.layers
    if MODEL == "mlp":
        layers = [L.Dense(512, activation="relu", input_shape=(784,)),
                  L.Dense(512, activation="relu"), L.Dense(10)]
    else:  # a small MNIST convnet
        layers = [L.Conv2D(16, 3, activation="relu", input_shape=(28, 28, 1)),
                  L.MaxPooling2D(2), L.Conv2D(32, 3, activation="relu"),
                  L.MaxPooling2D(2), L.Flatten(), L.Dense(64, activation="relu"),
                  L.Dense(10)]
    model = kf.Sequential(layers)
    model.compile(optimizer=kf.optimizers.Adam(1e-3),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=spe)
    return model


def timed_fit(model, x, y, before=None):
    # Warm-up on the same arrays: compiled plans, actors, shipped data.
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, steps_per_epoch=4)
    if before is not None:
        before()
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=True)
    return len(x) / (time.perf_counter() - start), time.perf_counter() - start


def load():
    return "load %.2f %.2f %.2f" % os.getloadavg()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--spe", type=int, default=64)
    ap.add_argument("--no-shard", action="store_true",
                    help="every replica applies the whole optimizer (no ZeRO-1)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--one-thread", action="store_true",
                    help="also time one process on one BLAS thread (a subprocess)")
    ap.add_argument("--model", choices=("mlp", "convnet"), default="mlp")
    ap.add_argument("--single-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global MODEL
    MODEL = args.model
    import kerasflow as kf
    x, y = data(args.samples)
    if args.single_only:
        print(max(timed_fit(model_fn(), x, y)[0] for _ in range(args.repeats)))
        return
    print(f"before: {load()} ({os.cpu_count()} cores)")
    one_thread = None
    if args.one_thread:  # BLAS reads its thread count at import: a subprocess
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        one_thread = float(subprocess.run(
            [sys.executable, __file__, "--single-only", "--samples", str(args.samples),
             "--model", args.model,
             "--repeats", "2"], env=env, capture_output=True, text=True,
            check=True).stdout.split()[-1])
    single, mirrored, splits = [], [], []
    strategy = kf.distribute.MirroredStrategy(num_replicas=args.replicas)
    strategy.shard_optimizer = not args.no_shard
    keys = ("compute", "apply", "copies", "allreduce")
    with strategy.scope():
        for _ in range(args.repeats):  # interleaved, so load drifts hit both
            single.append(_single(kf, x, y))
            model = model_fn(args.spe)
            marks = {}
            rate, wall = timed_fit(model, x, y, before=lambda: marks.update(
                strategy.step_seconds))
            mirrored.append(rate)
            sec = strategy.step_seconds
            steps = sec["steps"] - marks["steps"]
            per = {k: 1e3 * (sec[k] - marks[k]) / steps for k in keys}
            per["outside"] = 1e3 * wall / steps - sum(per.values())
            splits.append(per)
            threads = strategy.worker_group.execute("threads")
            sharded = strategy.optimizer_sharded
    print(f"after:  {load()}; replica threads (OMP_NUM_THREADS): {threads}; "
          f"optimizer sharded (ZeRO-1): {sharded}")
    s, m = statistics.median(single), statistics.median(mirrored)
    print(f"\n| setup | samples/s (median of {args.repeats}) | all runs |")
    print("|---|---|---|")
    print(f"| one process | {s:,.0f} | {', '.join(f'{v:,.0f}' for v in single)} |")
    if one_thread is not None:
        print(f"| one process, 1 BLAS thread | {one_thread:,.0f} | - |")
    print(f"| MirroredStrategy({args.replicas}), K={args.spe} | {m:,.0f} | "
          f"{', '.join(f'{v:,.0f}' for v in mirrored)} |")
    print(f"\nratio mirrored / one process: {m / s:.2f} (median; target >= 1.0); "
          f"per run: {', '.join(f'{b / a:.2f}' for a, b in zip(single, mirrored))}")
    if one_thread is not None:
        print(f"ratio mirrored / one process on 1 BLAS thread: {m / one_thread:.2f}")
    print(f"one process: {1e3 * BATCH / s:.2f} ms per step of {BATCH} (median)")
    cols = list(keys) + ["outside"]
    print("\nreplica 0, ms per step | " + " | ".join(cols) + " | total")
    for per in splits:
        print("  " + " | ".join(f"{per[k]:.2f}" for k in cols)
              + f" | {sum(per.values()):.2f}")
    med = {k: statistics.median(p[k] for p in splits) for k in cols}
    print("  median: " + " | ".join(f"{med[k]:.2f}" for k in cols)
          + f" | {sum(med.values()):.2f}")


def _single(kf, x, y):
    # One process, outside the strategy: the default strategy's scope.
    with kf.distribute.OneDeviceStrategy("/cpu:0").scope():
        return timed_fit(model_fn(), x, y)[0]


if __name__ == "__main__":
    main()
