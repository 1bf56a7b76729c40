"""Fused kernels alone: one Adam update of a 784x512 float32 variable, and
bias-add + ReLU on a 128x512 batch: kerasflow's numba kernel vs its numpy
kernel vs PyTorch's ``fused=True`` Adam / torch ops, interleaved in one process.

Run: python benchmarks/bench_fusion.py [--repeats 7] [--iters 200]
Prints medians over repeats (each repeat: A B C once each, in turn) and ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _time(fn, iters):
    fn()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters * 1e6


def adam_cases(shape=(784, 512)):
    import kerasflow as kf
    from kerasflow import backend as K
    from kerasflow.optimizers import kernels

    rng = np.random.RandomState(0)
    cases = {}
    for name, fusion in (("kerasflow numba", True), ("kerasflow numpy", False)):
        kf.backend.set_fusion(fusion)
        var = K.Variable(rng.randn(*shape).astype("float32"))
        m = K.Variable(np.zeros(shape, "float32"))
        v = K.Variable(np.zeros(shape, "float32"))
        g = K.placeholder("float32", shape)
        alpha = K.constant(np.float32(1e-3))
        op = kernels.apply_adam(var, g, alpha, m, v, beta_1=0.9, beta_2=0.999,
                                epsilon=1e-7)
        fn = K.Function([g], [], updates=[op])
        grad = rng.randn(*shape).astype("float32")
        cases[name] = (lambda f=fn, x=grad: f(x))
    kf.backend.set_fusion(None)
    try:
        import torch
    except ImportError:
        return cases
    p = torch.nn.Parameter(torch.randn(*shape))
    p.grad = torch.randn(*shape)
    opt = torch.optim.Adam([p], lr=1e-3, eps=1e-7, fused=True)
    cases["torch fused Adam"] = opt.step
    opt2 = torch.optim.Adam([torch.nn.Parameter(p.detach().clone())], lr=1e-3,
                            eps=1e-7, foreach=False)
    opt2.param_groups[0]["params"][0].grad = p.grad.clone()
    cases["torch Adam (for-loop)"] = opt2.step
    return cases


def relu_cases(shape=(128, 512)):
    import kerasflow as kf
    from kerasflow import backend as K

    rng = np.random.RandomState(0)
    x = rng.randn(*shape).astype("float32")
    b = rng.randn(shape[1]).astype("float32")
    cases = {}
    for name, fusion in (("kerasflow numba", True), ("kerasflow numpy", False)):
        kf.backend.set_fusion(fusion)
        ph = K.placeholder("float32", (None, shape[1]))
        bias = K.Variable(b)
        fn = K.Function([ph], [K.relu(ph + bias)])
        cases[name] = (lambda f=fn: f(x))
    kf.backend.set_fusion(None)
    try:
        import torch
    except ImportError:
        return cases
    xt, bt = torch.from_numpy(x), torch.from_numpy(b)
    cases["torch"] = lambda: torch.relu(xt + bt)
    return cases


def report(title, cases, repeats, iters):
    times = {k: [] for k in cases}
    for _ in range(repeats):
        for k, fn in cases.items():
            times[k].append(_time(fn, iters))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(title)
    base = med["kerasflow numba"]
    for k, v in med.items():
        print(f"  {k:24s} {v:9.1f} us   (numba is {v / base:5.2f}x faster)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iters", type=int, default=200)
    args = parser.parse_args()
    from kerasflow.backend import jit

    numba = jit.numba_module()
    print(f"numba {numba.__version__}, threads {jit.num_threads(numba)}, layer "
          f"{numba.config.THREADING_LAYER}")
    report("Adam update, 784x512 float32 (median per update)", adam_cases(),
           args.repeats, args.iters)
    report("bias-add + ReLU, 128x512 float32 (median per call)", relu_cases(),
           args.repeats, args.iters)


if __name__ == "__main__":
    main()
