"""Estimator overheads, measured against references in the same process.

1. Training throughput: ``DNNClassifier.train`` (784-256-128-10, Adagrad 0.05,
   batch 128) vs the same network and optimizer in ``Model.fit`` on the same
   batches (no shuffling in either). Target: >= 0.9x fit's steps/s.
2. Checkpoint save: ``utils.checkpoint.save_checkpoint`` (npz + JSON metadata, temp
   file, fsync, rename, index) of a 10 M-parameter model vs a raw ``np.savez``
   of the same arrays to a file (target: <= 1.5x), and vs ``np.savez`` followed
   by ``fsync`` (the durability the checkpoint pays for).

Run: PYTHONPATH=. python benchmarks/bench_estimator.py [--steps 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

BATCH, HIDDEN = 128, [256, 128]


def _data(steps, seed=0):
    rng = np.random.RandomState(seed)
    n = steps * BATCH
    return rng.rand(n, 784).astype("float32"), rng.randint(0, 10, n).astype("int64")


def bench_fit(x, y):
    import kerasflow as kf

    np.random.seed(0)
    model = kf.Sequential([kf.layers.Dense(HIDDEN[0], activation="relu",
                                           input_shape=(784,)),
                           kf.layers.Dense(HIDDEN[1], activation="relu"),
                           kf.layers.Dense(10)])
    model.compile(optimizer=kf.optimizers.Adagrad(0.05),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x[:BATCH * 4], y[:BATCH * 4], batch_size=BATCH, epochs=1, verbose=0,
              shuffle=False)
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    return len(x) // BATCH / (time.perf_counter() - start)


def bench_estimator(x, y):
    import kerasflow as kf

    fc = kf.feature_column
    est = kf.estimator.DNNClassifier(
        HIDDEN, [fc.numeric_column("x", shape=[784])], n_classes=10,
        model_dir=tempfile.mkdtemp(prefix="bench_est_"),
        config=kf.estimator.RunConfig(save_checkpoints_steps=10 ** 9,
                                      save_summary_steps=0,
                                      log_step_count_steps=10 ** 9))
    fn = kf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=BATCH,
                                            num_epochs=1, shuffle=False)
    warm = kf.estimator.inputs.numpy_input_fn({"x": x[:BATCH * 4]}, y[:BATCH * 4],
                                              batch_size=BATCH, shuffle=False)
    est.train(warm)  # builds and compiles the graph once
    steps = len(x) // BATCH
    start = time.perf_counter()
    est.train(fn)  # includes restoring from and writing one checkpoint
    return steps / (time.perf_counter() - start)


def bench_checkpoint(params=10_000_000, repeats=3):
    from kerasflow import backend as K
    from kerasflow.utils import checkpoint

    rng = np.random.RandomState(0)
    shapes = [(2000, 2000), (2000, 2000), (2000,), (1000, 1000)]
    sizes = [int(np.prod(s)) for s in shapes]
    shapes.append((params - sum(sizes),))
    variables = [K.Variable(rng.rand(*s).astype("float32"), name=f"v{i}")
                 for i, s in enumerate(shapes)]
    arrays = [v.numpy() for v in variables]
    d = tempfile.mkdtemp(prefix="bench_ckpt_")
    raw, synced, ours = [], [], []
    for r in range(repeats):
        start = time.perf_counter()
        np.savez(os.path.join(d, f"raw{r}.npz"), *arrays)
        raw.append(time.perf_counter() - start)
        start = time.perf_counter()
        with open(os.path.join(d, f"sync{r}.npz"), "wb") as f:
            np.savez(f, *arrays)
            f.flush()
            os.fsync(f.fileno())
        synced.append(time.perf_counter() - start)
        os.remove(os.path.join(d, f"sync{r}.npz"))
        start = time.perf_counter()
        checkpoint.save_checkpoint(
            os.path.join(d, f"model.ckpt-{r + 1}"),
            {v.name: v.numpy() for v in variables}, max_to_keep=2)
        ours.append(time.perf_counter() - start)
        os.remove(os.path.join(d, f"raw{r}.npz"))
    return min(raw), min(synced), min(ours)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    x, y = _data(a.steps)
    fit, est = [], []
    for _ in range(a.repeats):  # interleaved, best of each
        fit.append(bench_fit(x, y))
        est.append(bench_estimator(x, y))
    f, e = max(fit), max(est)
    print(f"Model.fit              : {f:8.1f} steps/s")
    print(f"DNNClassifier.train    : {e:8.1f} steps/s   ratio {e / f:.2f}x "
          f"(target >= 0.9x)")
    raw, synced, ours = bench_checkpoint(repeats=a.repeats)
    print(f"np.savez 10M params    : {raw * 1e3:8.1f} ms")
    print(f"np.savez + fsync       : {synced * 1e3:8.1f} ms")
    print(f"save_checkpoint 10M    : {ours * 1e3:8.1f} ms   ratio {ours / raw:.2f}x "
          f"vs np.savez (target <= 1.5x), {ours / synced:.2f}x vs np.savez + fsync")


if __name__ == "__main__":
    main()
