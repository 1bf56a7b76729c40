"""LSTM training throughput: kerasflow ``fit`` vs ``torch.nn.LSTM`` on CPU.

LSTM(128) over sequences of 28 steps x 28 features (MNIST rows) -> Dense(10);
Adam, batch 128, float32, synthetic data. Runs are interleaved and the best of
each kept. Also times building + compiling a 500-step LSTM training step.

``--fusion off`` compiles kerasflow's step without fusion (the numpy kernels
everywhere, as ``KERASFLOW_FUSION=0``). ``--ab`` instead trains two kerasflow
copies interleaved in one process, one with the fused LSTM kernels
(``kerasflow.backend.ops.rnn_fast``) and one with the numpy ``RNNLoop`` /
``RNNLoopGrad`` kernels (every other fusion on in both), and prints their
ratio per round: on a busy machine the ratio is the figure to trust.

Run: python benchmarks/bench_lstm.py [--samples 7680] [--repeats 3] [--threads N]
     [--fusion on|off] [--ab]
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


_RNN_OPS = ("RNNLoop", "RNNLoopGrad")


def ab(x, y, rounds):
    """Samples/s with the fused LSTM kernels and with the numpy ones, interleaved."""
    from kerasflow.backend import fusion
    from kerasflow.backend.ops import rnn_fast  # noqa: F401  (registers them)

    saved = {op: fusion._FACTORIES[op] for op in _RNN_OPS}
    models = {}
    for name in ("numpy rnn", "fused rnn"):
        for op in _RNN_OPS:
            if name == "numpy rnn":
                fusion._FACTORIES.pop(op, None)
            else:
                fusion._FACTORIES[op] = saved[op]
        models[name] = build_kerasflow()
        # The first fit compiles the step with the factories now registered.
        models[name].fit(x[:BATCH * 2], y[:BATCH * 2], batch_size=BATCH, epochs=1,
                         verbose=0)
    fusion._FACTORIES.update(saved)
    rates = {name: [] for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            rates[name].append(bench_kerasflow(model, x, y))
    print(f"interleaved A/B, {rounds} rounds of {len(x)} samples, load "
          f"{os.getloadavg()[0]:.2f}")
    for name, r in rates.items():
        print(f"  {name:10s} median {np.median(r):7,.0f} samples/s  best "
              f"{max(r):7,.0f}")
    ratios = [b / a for a, b in zip(rates["numpy rnn"], rates["fused rnn"])]
    print(f"  fused / numpy per round: median {np.median(ratios):.2f}x "
          f"({', '.join(f'{v:.2f}' for v in ratios)})")


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
    parser.add_argument("--fusion", choices=("on", "off"), default="on")
    parser.add_argument("--ab", action="store_true",
                        help="fused vs numpy LSTM kernels, interleaved")
    args = parser.parse_args()
    x, y = data(args.samples)
    if args.ab:
        return ab(x, y, args.repeats)
    if args.fusion == "off":
        import kerasflow as kf

        kf.backend.set_fusion(False)
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
