"""MLP training throughput: kerasflow ``fit`` vs hand-optimized numpy vs PyTorch.

Trains 784-512-512-10 (ReLU, softmax cross-entropy, Adam, float32, batch 128) for
one epoch of 60,000 samples (synthetic data of MNIST's shape; throughput does not
depend on the values) and prints samples/s of each, with ratios, in one process.

Run: PYTHONPATH=. python benchmarks/bench_mlp.py [--samples 60000] [--repeats 3]
PyTorch is used when importable (pip install torch==2.13.0). Runs are interleaved
(numpy, kerasflow, kerasflow with fusion off, torch; again ...) and the medians
over repeats are compared, so a load change on a shared machine hits all alike.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np

BATCH, SIZES = 128, (784, 512, 512, 10)
FLOPS_PER_SAMPLE = sum(2 * 3 * a * b for a, b in zip(SIZES, SIZES[1:]))


def data(n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, 784).astype("float32"), rng.randint(0, 10, n)


def bench_kerasflow(x, y, fusion=True):
    import kerasflow as kf

    kf.backend.set_fusion(fusion)
    np.random.seed(0)
    model = kf.Sequential([
        kf.layers.Dense(512, activation="relu", input_shape=(784,)),
        kf.layers.Dense(512, activation="relu"),
        kf.layers.Dense(10),
    ])
    model.compile(optimizer=kf.optimizers.Adam(1e-3),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x[:BATCH * 4], y[:BATCH * 4], batch_size=BATCH, epochs=1, verbose=0)
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=True)
    rate = len(x) / (time.perf_counter() - start)
    kf.backend.set_fusion(None)
    return rate


def bench_numpy(x, y, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
    """The same math hand-written in numpy: in-place Adam, fused softmax-CE grad."""
    rng = np.random.RandomState(0)
    params = []
    for a, b in zip(SIZES, SIZES[1:]):
        lim = np.sqrt(6.0 / (a + b))
        params += [rng.uniform(-lim, lim, (a, b)).astype("float32"),
                   np.zeros(b, "float32")]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    scratch = [np.empty_like(p) for p in params]
    n = len(x)
    start = time.perf_counter()
    perm = np.random.permutation(n)
    t = 0
    for i in range(0, n, BATCH):
        idx = np.sort(perm[i:i + BATCH])
        xb, yb = x[idx], y[idx]
        w1, b1_, w2, b2_, w3, b3 = params
        h1 = xb @ w1
        h1 += b1_
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ w2
        h2 += b2_
        np.maximum(h2, 0, out=h2)
        z = h2 @ w3
        z += b3
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        z[np.arange(len(yb)), yb] -= 1.0
        z /= len(yb)
        g3, gb3 = h2.T @ z, z.sum(0)
        d2 = z @ w3.T
        d2 *= h2 > 0
        g2, gb2 = h1.T @ d2, d2.sum(0)
        d1 = d2 @ w2.T
        d1 *= h1 > 0
        g1, gb1 = xb.T @ d1, d1.sum(0)
        t += 1
        # A Python float: a numpy float64 scalar would promote the update to
        # float64 (NEP 50) and halve its speed.
        lr_t = float(lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t))
        for p, g, mm, vv, tmp in zip(params, (g1, gb1, g2, gb2, g3, gb3), m, v,
                                     scratch):
            g = g.astype(np.float32, copy=False)
            # m += (1 - b1) (g - m); v += (1 - b2) (g^2 - v); p -= lr_t m / (√v + ε)
            np.subtract(g, mm, out=tmp)
            tmp *= 1 - b1
            mm += tmp
            np.multiply(g, g, out=tmp)
            tmp -= vv
            tmp *= 1 - b2
            vv += tmp
            np.sqrt(vv, out=tmp)
            tmp += eps
            np.divide(mm, tmp, out=tmp)
            tmp *= lr_t
            p -= tmp
    return n / (time.perf_counter() - start)


def bench_torch(x, y):
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
        torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
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
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    x, y = data(args.samples)
    runs = {"numpy": bench_numpy, "kerasflow": bench_kerasflow,
            "kf-nofusion": lambda a, b: bench_kerasflow(a, b, fusion=False),
            "torch": bench_torch}
    results = {k: [] for k in runs}
    for _ in range(args.repeats):
        for k, fn in runs.items():
            r = fn(x, y)
            if r is not None:
                results[k].append(r)
                print(f"  run: {k:12s} {r:10,.0f} samples/s", flush=True)
    med = {k: statistics.median(v) for k, v in results.items() if v}
    print(f"MLP 784-512-512-10, batch {BATCH}, Adam, float32, {args.samples} samples"
          f" ({FLOPS_PER_SAMPLE / 1e6:.2f} MFLOP per sample, fwd+bwd), median of "
          f"{args.repeats} interleaved runs")
    for k, v in med.items():
        print(f"  {k:12s} {v:10,.0f} samples/s  {v * FLOPS_PER_SAMPLE / 1e9:6.1f} "
              f"GFLOP/s   runs: {', '.join(f'{r:,.0f}' for r in results[k])}")
    print(f"  kerasflow / numpy  = {med['kerasflow'] / med['numpy']:.3f}"
          "  (target >= 1.0)")
    print(f"  kerasflow / kf-nofusion = {med['kerasflow'] / med['kf-nofusion']:.3f}")
    if "torch" in med:
        print(f"  kerasflow / torch  = {med['kerasflow'] / med['torch']:.3f}"
              "  (target >= 1.15)")
    import os

    print(f"  threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '-')}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS of this process: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
