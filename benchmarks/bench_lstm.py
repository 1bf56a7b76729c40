"""LSTM training throughput: kerasflow ``fit`` vs ``torch.nn.LSTM`` on CPU.

LSTM(128) over sequences of 28 steps x 28 features (MNIST rows) -> Dense(10);
Adam, batch 128, float32, synthetic data. Runs are interleaved and the best of
each kept. Also times building + compiling a 500-step LSTM training step.

Run: python benchmarks/bench_lstm.py [--samples 7680] [--repeats 3] [--threads N]
PyTorch is used when importable (pip install torch==2.13.0).
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

BATCH, STEPS, FEATURES, UNITS = 128, 28, 28, 128


def data(n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, STEPS, FEATURES).astype("float32"), rng.randint(0, 10, n)


def build_kerasflow():
    import kerasflow as kf

    np.random.seed(0)
    model = kf.Sequential([kf.layers.LSTM(UNITS, input_shape=(STEPS, FEATURES)),
                           kf.layers.Dense(10)])
    model.compile(optimizer=kf.optimizers.Adam(1e-3),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def bench_kerasflow(model, x, y):
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=True)
    return len(x) / (time.perf_counter() - start)


def build_torch():
    try:
        import torch
    except ImportError:
        return None

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(FEATURES, UNITS, batch_first=True)
            self.head = torch.nn.Linear(UNITS, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    torch.manual_seed(0)
    model = Net()
    return model, torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)


def bench_torch(built, x, y):
    import torch

    model, opt = built
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


def compile_500_steps():
    import kerasflow as kf

    start = time.perf_counter()
    model = kf.Sequential([kf.layers.LSTM(32, input_shape=(500, 8)),
                           kf.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = np.zeros((1, 500, 8), "float32")
    model.train_on_batch(x, np.zeros((1, 1), "float32"))  # build, compile, 1 step
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7680)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS / torch threads for both sides (default: all)")
    args = parser.parse_args()
    x, y = data(args.samples)
    model = build_kerasflow()
    model.fit(x[:BATCH * 2], y[:BATCH * 2], batch_size=BATCH, epochs=1, verbose=0)
    if THREADS:
        try:
            import torch

            torch.set_num_threads(THREADS)
        except ImportError:
            pass
    built = build_torch()
    if built is not None:
        bench_torch(built, x[:BATCH * 2], y[:BATCH * 2])
    results = {"kerasflow": [], "torch": []}
    for _ in range(args.repeats):
        results["kerasflow"].append(bench_kerasflow(model, x, y))
        if built is not None:
            results["torch"].append(bench_torch(built, x, y))
    best = {k: max(v) for k, v in results.items() if v}
    print(f"LSTM({UNITS}) over {STEPS}x{FEATURES}, batch {BATCH}, Adam, float32, "
          f"{args.samples} samples, best of {args.repeats}")
    for k, v in best.items():
        print(f"  {k:10s} {v:10,.0f} samples/s  {1e3 * BATCH / v:7.1f} ms/step")
    if "torch" in best:
        import torch

        print(f"  kerasflow / torch {torch.__version__} "
              f"({torch.get_num_threads()} threads) = "
              f"{best['kerasflow'] / best['torch']:.2f}x")
    print(f"  500-step LSTM(32): build + compile + first step "
          f"{compile_500_steps():.2f} s")


if __name__ == "__main__":
    main()
