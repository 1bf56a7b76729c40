"""CNN training throughput: kerasflow ``fit`` vs PyTorch CPU, in one process.

The classic Keras MNIST convnet (Conv2D 32 -> Conv2D 64 -> MaxPooling2D -> Dropout
-> Flatten -> Dense 128 -> Dropout -> Dense 10; Adam, batch 128, float32) on
synthetic data of MNIST's shape (throughput does not depend on the values).
``--no-dense`` drops the Dense 128 (the variant the issue measured at 0.36x).
Runs are interleaved (kerasflow, torch, kerasflow, ...) and the best of each is
kept, so a busy machine disturbs both sides alike.

Run: python benchmarks/bench_cnn.py [--samples 7680] [--repeats 3] [--no-dense]
     [--threads N]   (BLAS and torch threads; 1 is steadier on a busy machine)
PyTorch is used when importable (pip install torch==2.13.0); without it only
kerasflow's figure is printed.
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
        return int(n)
    return None


THREADS = _threads_from_argv()

import numpy as np  # noqa: E402

BATCH = 128


def data(n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, 28, 28, 1).astype("float32"), rng.randint(0, 10, n)


def build_kerasflow(dense):
    import kerasflow as kf

    L = kf.layers
    np.random.seed(0)
    model = kf.Sequential([
        L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        L.Conv2D(64, 3, activation="relu"), L.MaxPooling2D(2), L.Dropout(0.25),
        L.Flatten(), *([L.Dense(128, activation="relu"), L.Dropout(0.5)]
                       if dense else []),
        L.Dense(10)])
    model.compile(optimizer=kf.optimizers.Adam(1e-3),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def bench_kerasflow(model, x, y):
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=True)
    return len(x) / (time.perf_counter() - start)


def build_torch(dense):
    try:
        import torch
    except ImportError:
        return None
    nn = torch.nn
    torch.manual_seed(0)
    head = ([nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10)]
            if dense else [nn.Linear(9216, 10)])
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25),
                          nn.Flatten(), *head)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)


def bench_torch(built, x, y):
    import torch

    model, opt = built
    loss_fn = torch.nn.CrossEntropyLoss()
    # NCHW, as torch's convolutions expect.
    xt = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    yt = torch.from_numpy(y.astype(np.int64))
    n = len(x)
    start = time.perf_counter()
    perm = torch.randperm(n)
    for i in range(0, n, BATCH):
        idx = perm[i:i + BATCH]
        opt.zero_grad()
        loss = loss_fn(model(xt[idx]), yt[idx])
        loss.backward()
        opt.step()
    return n / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7680)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS / torch threads for both sides (default: all)")
    parser.add_argument("--no-dense", action="store_true")
    args = parser.parse_args()
    dense = not args.no_dense
    x, y = data(args.samples)
    model = build_kerasflow(dense)
    model.fit(x[:BATCH * 2], y[:BATCH * 2], batch_size=BATCH, epochs=1, verbose=0)
    if THREADS:
        try:
            import torch

            torch.set_num_threads(THREADS)
        except ImportError:
            pass
    built = build_torch(dense)
    if built is not None:
        bench_torch(built, x[:BATCH * 2], y[:BATCH * 2])
    results = {"kerasflow": [], "torch": []}
    for _ in range(args.repeats):
        results["kerasflow"].append(bench_kerasflow(model, x, y))
        if built is not None:
            results["torch"].append(bench_torch(built, x, y))
    best = {k: max(v) for k, v in results.items() if v}
    print(f"MNIST CNN{'' if dense else ' (no Dense 128)'}, batch {BATCH}, Adam, "
          f"float32, {args.samples} samples, best of {args.repeats}")
    for k, v in best.items():
        print(f"  {k:10s} {v:10,.0f} samples/s  {1e3 * BATCH / v:7.1f} ms/step")
    if "torch" in best:
        import torch

        print(f"  kerasflow / torch {torch.__version__} "
              f"({torch.get_num_threads()} threads) = "
              f"{best['kerasflow'] / best['torch']:.2f}x")


if __name__ == "__main__":
    main()
