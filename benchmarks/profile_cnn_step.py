"""Per-op profile of one training step of the MNIST convnet (``bench_cnn.py``).

Wraps every kernel of the compiled ``train_step`` plan with a timer, runs
``--steps`` batches through ``model.fit`` and prints, per op type and per
node, the median time per step, the bytes the kernel reads and writes, its
FLOPs (GEMM-like ops only) and the GFLOP/s it reaches. Then times bare
``np.matmul`` on the im2col GEMM shapes of the two convolutions (forward,
input gradient and filter gradient), which is what the BLAS gives here: the
floor a conv kernel built on one GEMM can approach.

``--ab`` instead trains two copies of the model in one process, interleaved
epoch by epoch: one whose plan uses the fused conv / pooling kernels
(``kerasflow.backend.ops.conv_fast``) and one with the numpy kernels for those
ops (every other fusion on in both), and prints samples/s of each and their
ratio; interleaving in one process keeps a busy machine fair to both.

Run: python benchmarks/profile_cnn_step.py [--steps 30] [--threads N]
     [--no-fusion] [--numpy-conv] [--top 25] [--cpu-clock] [--ab --rounds 5]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time


def _threads_from_argv():
    if "--threads" in sys.argv:
        n = sys.argv[sys.argv.index("--threads") + 1]
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = n


_threads_from_argv()

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cnn import BATCH, build_kerasflow, data  # noqa: E402

_TIMES: dict = collections.defaultdict(list)
# --cpu-clock: process CPU time instead of wall time; with --threads 1 it
# measures the work itself, little disturbed by other processes on a busy
# machine (the per-op ratios, not the wall-clock throughput).
CLOCK = (time.process_time if "--cpu-clock" in sys.argv else time.perf_counter)
_INFO: dict = {}


def _flops(node, args, out):
    """FLOPs of the GEMM-like ops (2 per multiply-add); 0 for the others."""
    op = node.op
    if op in ("MatMul", "BatchMatMul"):
        a, b = args[0], args[1]
        ta, tb = node.attrs.get("transpose_a"), node.attrs.get("transpose_b")
        m = a.shape[-1] if ta else a.shape[-2]
        k = a.shape[-2] if ta else a.shape[-1]
        n = b.shape[-2] if tb else b.shape[-1]
        return 2 * m * k * n
    if op == "Conv2DTranspose":  # x (N, h, w, Cin) against (kh, kw, Cout, Cin)
        return 2 * args[0].size * int(np.prod(args[1].shape[:3]))
    if op.startswith("Conv2D"):
        kshape = getattr(args[1], "shape", None)
        y = out if op == "Conv2D" else args[2]
        if kshape is None or not hasattr(y, "shape"):
            return 0
        return 2 * y.size * int(np.prod(kshape[:-1]))
    return 0


def _nbytes(values):
    total = 0
    for v in values if isinstance(values, (tuple, list)) else (values,):
        total += getattr(v, "nbytes", 0)
    return total


def _wrap(node, kernel):
    key = node.uid

    def timed(*args):
        t = CLOCK()
        out = kernel(*args)
        _TIMES[key].append(CLOCK() - t)
        if key not in _INFO:
            shapes = [tuple(getattr(a, "shape", ())) for a in args]
            _INFO[key] = (node.op, node.name, shapes, _flops(node, args, out),
                          _nbytes(args) + _nbytes(out))
        return out

    return timed


def instrument():
    """Makes every Function named 'train_step' time its kernels."""
    import importlib

    F = importlib.import_module("kerasflow.backend.function")

    original = F.Function._compile

    def _compile(self):
        run, lines = original(self)
        if self.name == "train_step":
            env = run.__globals__
            for node in dict.fromkeys(lines):
                k = f"k{node.id}"
                if k in env:
                    env[k] = _wrap(node, env[k])
        return run, lines

    F.Function._compile = _compile


def gemm_floor(repeats=20):
    """np.matmul on the convnet's im2col GEMM shapes (forward, dX, dW)."""
    n = BATCH
    shapes = {
        # (rows, k) @ (k, cols)
        "conv1 fwd  (N*26*26, 9) @ (9, 32)": (n * 26 * 26, 9, 32),
        "conv2 fwd  (N*24*24, 288) @ (288, 64)": (n * 24 * 24, 288, 64),
        "conv2 dX   (N*24*24, 64) @ (64, 288)": (n * 24 * 24, 64, 288),
        "conv2 dW   (288, N*24*24) @ (N*24*24, 64)": (288, n * 24 * 24, 64),
        "conv1 dW   (9, N*26*26) @ (N*26*26, 32)": (9, n * 26 * 26, 32),
        "dense fwd  (N, 9216) @ (9216, 128)": (n, 9216, 128),
    }
    rng = np.random.default_rng(0)
    rows = []
    for name, (m, k, c) in shapes.items():
        if name.split()[1] == "dW":
            a = rng.random((k, m), dtype=np.float32).T  # a transposed view
        else:
            a = rng.random((m, k), dtype=np.float32)
        b = rng.random((k, c), dtype=np.float32)
        np.matmul(a, b)
        ts = []
        for _ in range(repeats):
            t = CLOCK()
            np.matmul(a, b)
            ts.append(CLOCK() - t)
        ms = 1e3 * float(np.median(ts))
        rows.append((name, ms, 2 * m * k * c / (ms * 1e-3) / 1e9))
    return rows


_CONV_OPS = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool",
             "MaxPoolGrad")


def _conv_factories():
    """The fusion registry and its conv / pooling entries (conv_fast's)."""
    from kerasflow.backend import fusion
    from kerasflow.backend.ops import conv_fast  # noqa: F401  (registers them)

    return fusion, {op: fusion._FACTORIES[op] for op in _CONV_OPS}


def ab(steps, rounds):
    """Samples/s with and without the fused conv kernels, interleaved."""
    fusion, saved = _conv_factories()
    ops = _CONV_OPS
    x, y = data(BATCH * steps)
    models = {}
    for name in ("numpy conv", "fused conv"):
        for op in ops:
            if name == "numpy conv":
                fusion._FACTORIES.pop(op, None)
            else:
                fusion._FACTORIES[op] = saved[op]
        models[name] = build_kerasflow(True)
        # The first fit compiles the step with the factories now registered.
        models[name].fit(x[:BATCH * 2], y[:BATCH * 2], batch_size=BATCH,
                         epochs=1, verbose=0)
    fusion._FACTORIES.update(saved)
    rates = {name: [] for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            t = time.perf_counter()
            model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
            rates[name].append(len(x) / (time.perf_counter() - t))
    print(f"interleaved A/B, {rounds} rounds of {steps} steps, load "
          f"{os.getloadavg()[0]:.2f}")
    for name, r in rates.items():
        print(f"  {name:12s} median {np.median(r):7,.0f} samples/s  best "
              f"{max(r):7,.0f}")
    ratios = [b / a for a, b in zip(rates["numpy conv"], rates["fused conv"])]
    print(f"  fused / numpy per round: median {np.median(ratios):.2f}x "
          f"({', '.join(f'{v:.2f}' for v in ratios)})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-fusion", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--ab", action="store_true")
    parser.add_argument("--cpu-clock", action="store_true")
    parser.add_argument("--numpy-conv", action="store_true",
                        help="the numpy conv / pooling kernels (the 'before')")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import kerasflow as kf

    if args.ab:
        return ab(args.steps, args.rounds)

    if args.no_fusion:
        kf.backend.set_fusion(False)
    if args.numpy_conv:
        fusion, _ = _conv_factories()
        for op in _CONV_OPS:
            fusion._FACTORIES.pop(op)
    instrument()
    x, y = data(BATCH * args.steps)
    model = build_kerasflow(True)
    model.fit(x[:BATCH * 2], y[:BATCH * 2], batch_size=BATCH, epochs=1, verbose=0)
    _TIMES.clear()
    t = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    wall = (time.perf_counter() - t) / args.steps
    per_node = {k: float(np.median(v)) for k, v in _TIMES.items()}
    total = sum(per_node.values())
    by_op = collections.defaultdict(lambda: [0.0, 0, 0, 0])
    for k, t in per_node.items():
        op, _, _, fl, nb = _INFO[k]
        row = by_op[op]
        row[0] += t
        row[1] += 1
        row[2] += fl
        row[3] += nb
    print(f"MNIST CNN train step, batch {BATCH}: {1e3 * wall:.1f} ms/step wall "
          f"({BATCH / wall:,.0f} samples/s), kernels {1e3 * total:.1f} ms "
          f"(median per node over {args.steps} steps), load "
          f"{os.getloadavg()[0]:.2f}")
    print(f"\n{'op':28s} {'n':>3s} {'ms':>7s} {'%':>5s} {'MB':>7s} "
          f"{'GFLOP':>6s} {'GFLOP/s':>7s}")
    for op, (t, n, fl, nb) in sorted(by_op.items(), key=lambda r: -r[1][0]):
        gfs = f"{fl / t / 1e9:7.1f}" if fl else " " * 7
        print(f"{op:28s} {n:3d} {1e3 * t:7.2f} {100 * t / total:5.1f} "
              f"{nb / 1e6:7.1f} {fl / 1e9:6.2f} {gfs}")
    print(f"\ntop {args.top} nodes")
    for k, t in sorted(per_node.items(), key=lambda r: -r[1])[:args.top]:
        op, name, shapes, fl, nb = _INFO[k]
        gfs = f" {fl / t / 1e9:6.1f} GFLOP/s" if fl else ""
        print(f"  {1e3 * t:7.2f} ms  {op:24s} {nb / 1e6:6.1f} MB{gfs}  "
              f"{name[:40]} {shapes}")
    print("\nnp.matmul on the im2col GEMM shapes (float32, median ms):")
    for name, ms, gf in gemm_floor():
        print(f"  {name:44s} {ms:7.2f} ms {gf:6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
