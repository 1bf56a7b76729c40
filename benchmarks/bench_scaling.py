"""MNIST-MLP ``fit`` throughput: one process against ``MirroredStrategy``.

Trains 784-512-512-10 (ReLU, softmax cross-entropy, Adam, float32) with a global
batch of 256 on synthetic data of MNIST's shape, for one warm-up epoch and one
timed epoch each, in the same run: one process (BLAS on every core), then
``MirroredStrategy(num_replicas=N)`` (N single-threaded replica actors, shared
memory allreduce, ``steps_per_execution`` K), plus one process restricted to
one BLAS thread (a subprocess) as a contention-proof reference. Prints samples/s, the ratio
strategy / one process (target >= 1.0 on a 2-core machine), and the share of
the replicas' step time spent in the allreduce.

Run: python benchmarks/bench_scaling.py [--samples 30000] [--replicas 2] [--spe 16]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

BATCH = 256


def data(n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, 784).astype("float32"), rng.randint(0, 10, n)


def model_fn(spe=None):
    import kerasflow as kf
    np.random.seed(0)
    model = kf.Sequential([
        kf.layers.Dense(512, activation="relu", input_shape=(784,)),
        kf.layers.Dense(512, activation="relu"),
        kf.layers.Dense(10)])
    model.compile(optimizer=kf.optimizers.Adam(1e-3),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=spe)
    return model


def timed_fit(model, x, y):
    model.fit(x[:BATCH * 8], y[:BATCH * 8], batch_size=BATCH, epochs=1, verbose=0)
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=True)
    return len(x) / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--spe", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--single-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    import kerasflow as kf
    x, y = data(args.samples)
    if args.single_only:
        print(max(timed_fit(model_fn(), x, y) for _ in range(args.repeats)))
        return
    # The same single process with one BLAS thread (as each replica has), in a
    # subprocess because BLAS reads its thread count at import.
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    one_thread = float(subprocess.run(
        [sys.executable, __file__, "--single-only", "--samples", str(args.samples),
         "--repeats", str(args.repeats)], env=env, capture_output=True, text=True,
        check=True).stdout.split()[-1])
    single, mirrored, shares = [], [], []
    strategy = kf.distribute.MirroredStrategy(num_replicas=args.replicas)
    for _ in range(args.repeats):  # interleaved, so load drifts hit both
        single.append(timed_fit(model_fn(), x, y))
        with strategy.scope():
            model = model_fn(args.spe)
            c0, m0 = strategy.comm_seconds, strategy.compute_seconds
            mirrored.append(timed_fit(model, x, y))
            comm = strategy.comm_seconds - c0
            shares.append(comm / (comm + strategy.compute_seconds - m0))
    s, m = max(single), max(mirrored)
    print(f"| setup | samples/s (best of {args.repeats}) | all runs |")
    print("|---|---|---|")
    print(f"| one process | {s:,.0f} | {', '.join(f'{v:,.0f}' for v in single)} |")
    print(f"| one process, 1 BLAS thread | {one_thread:,.0f} | - |")
    print(f"| MirroredStrategy({args.replicas}), K={args.spe} | {m:,.0f} | "
          f"{', '.join(f'{v:,.0f}' for v in mirrored)} |")
    print(f"\nratio mirrored / one process: {m / s:.2f} (target >= 1.0); "
          f"mirrored / one process on 1 BLAS thread: {m / one_thread:.2f}")
    print(f"allreduce share of replica 0's step time: "
          f"{', '.join(f'{100 * v:.1f}%' for v in shares)}")


if __name__ == "__main__":
    main()
