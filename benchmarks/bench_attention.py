"""``MultiHeadAttention`` forward + backward: kerasflow against PyTorch's
``nn.MultiheadAttention`` on the CPU, same shapes, same process.

Self-attention on (batch, seq, dim) float32 inputs with ``heads`` heads of
``dim / heads`` each (PyTorch's layout: its key_dim is dim / heads), the loss
``sum(out * w)``; one step is the forward pass and the gradients of every
weight and of the input. FLOPs per step: the four projections (2 x 4 x
B*T*D*D forward) and the two attention products (2 x 2 x B*T*T*D), times 3
for forward + backward. Rounds are interleaved (kerasflow, torch, again ...)
and the median of per-round ratios printed, with GFLOP/s of each.

Run: PYTHONPATH=. python benchmarks/bench_attention.py [--batch 32] [--seq 128]
     [--dim 256] [--heads 8] [--steps 20] [--rounds 5]
(PyTorch from ``pip install torch==2.13.0``.)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def flops(b, t, d):
    return 3 * (2 * 4 * b * t * d * d + 2 * 2 * b * t * t * d)


def bench_kerasflow(x, w, heads, steps):
    import kerasflow as kf
    from kerasflow import backend as K

    d = x.shape[-1]
    layer = kf.layers.MultiHeadAttention(num_heads=heads, key_dim=d // heads,
                                         name="mha")
    ph = K.placeholder("float32", (None,) + x.shape[1:])
    out = layer(ph, ph)
    loss = K.sum(out * K.constant(w))
    grads = K.gradients(loss, layer.trainable_weights + [ph])
    fn = K.Function([ph], [loss] + grads)
    fn(x)  # compile and warm up
    t0 = time.perf_counter()
    for _ in range(steps):
        fn(x)
    return (time.perf_counter() - t0) / steps


def bench_torch(x, w, heads, steps):
    import torch

    torch.manual_seed(0)
    d = x.shape[-1]
    mha = torch.nn.MultiheadAttention(d, heads, batch_first=True)
    xt = torch.from_numpy(x).requires_grad_(True)
    wt = torch.from_numpy(w)

    def step():
        mha.zero_grad()
        xt.grad = None
        out, _ = mha(xt, xt, xt, need_weights=False)
        (out * wt).sum().backward()
    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import os

    rng = np.random.RandomState(0)
    x = rng.standard_normal((args.batch, args.seq, args.dim)).astype("float32")
    w = rng.standard_normal(x.shape).astype("float32")
    f = flops(args.batch, args.seq, args.dim)
    print(f"load before: {os.getloadavg()[0]:.2f}; {f / 1e9:.2f} GFLOP per step")
    kf_t, torch_t = [], []
    for _ in range(args.rounds):
        kf_t.append(bench_kerasflow(x, w, args.heads, args.steps))
        torch_t.append(bench_torch(x, w, args.heads, args.steps))
    ratios = [t / k for k, t in zip(kf_t, torch_t)]
    for name, ts in (("kerasflow", kf_t), ("torch", torch_t)):
        med = statistics.median(ts)
        print(f"{name:10s} {med * 1e3:8.2f} ms/step  {f / med / 1e9:7.1f} GFLOP/s")
    print(f"kerasflow speed / torch speed (median of per-round ratios): "
          f"{statistics.median(ratios):.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
