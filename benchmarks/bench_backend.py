"""Backend micro-benchmarks: per-node dispatch cost and an MLP training step.

Run from the repository root::

    python benchmarks/bench_backend.py            # both benchmarks (< 60 s)
    python benchmarks/bench_backend.py --only a   # dispatch overhead only
    python benchmarks/bench_backend.py --only b   # MLP only
    python benchmarks/bench_backend.py --only b --profile   # + per-node times

(a) Dispatch overhead: a compiled ``Function`` running a chain of 1,000
    elementwise ops (``x = x * 1.0001 + 0.5``, repeated) on a 16-element float32
    vector, against the same numpy ufuncs called with the same operands in a plain
    Python loop. The difference per kernel node is what the framework adds.
    Target: total <= 3 us per node.

(b) MLP 784-512-512-10, batch 128, float32, relu, mean sparse softmax
    cross-entropy; loss and the gradients of all six weights in one ``Function``,
    against the same math hand-written in numpy (in place where natural).
    Gradients are checked to agree before timing. Reported: ms per step, FLOP
    counts, GFLOP/s, and numpy/kerasflow time ratio (target >= 0.95, i.e.
    kerasflow at most ~5% slower).

Everything runs on the CPU (numpy): the device is set to 'cpu'.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from itertools import pairwise

import numpy as np

import kerasflow.backend as K

K.set_device("cpu")  # both sides on numpy, whatever KERASFLOW_DEVICE says
_clock = time.perf_counter


def _unique_nodes(fn):
    """The nodes a compiled Function runs, in order, each once.

    ``fn._lines`` has one entry per generated line; a ``del`` line (freeing dead
    intermediates) carries the node it follows.
    """
    return list({id(n): n for n in fn._lines}.values())


def _kernel_nodes(fn) -> int:
    """Graph nodes (kernel calls and variable reads) run per call."""
    return len(_unique_nodes(fn))


def _profile_nodes(fn, call, steps=300, top=25):
    """Per-node kernel time inside ``fn`` (min and median over ``steps`` calls).

    Wraps each kernel bound in the generated code (globals ``k<node id>``, an
    implementation detail of ``Function``) with a timer: ~0.1 us added per node.
    Minima are the robust figure on a loaded machine.
    """
    env = fn._run.__globals__
    times, label, saved = {}, {}, {}
    for node in _unique_nodes(fn):
        key = f"k{node.id}"
        if key not in env:
            continue  # variable reads
        kernel = saved[key] = env[key]
        rec = times[node.id] = []
        label[node.id] = (f"{node.op}" + "".join(
            f" {k}" for k, v in node.attrs.items() if v is True) + " " +
            ", ".join(str(t.shape) for t in node.inputs))

        def timed(*args, _k=kernel, _rec=rec):
            t0 = _clock()
            out = _k(*args)
            _rec.append(_clock() - t0)
            return out

        env[key] = timed
    try:
        for _ in range(10):
            call()
        for rec in times.values():
            rec.clear()
        for _ in range(steps):
            call()
    finally:
        env.update(saved)
    rows = sorted(times.items(), key=lambda kv: -min(kv[1]))
    total = sum(min(v) for v in times.values())
    print(f"  per-node kernel time (us, min / median of {steps} steps; sum of "
          f"minima {total * 1e3:.3f} ms):")
    for node_id, rec in rows[:top]:
        print(f"    {min(rec) * 1e6:8.1f} {statistics.median(rec) * 1e6:8.1f}   "
              f"{label[node_id]}")
    if len(rows) > top:
        rest = sum(min(v) for _, v in rows[top:])
        print(f"    {rest * 1e6:8.1f}            ({len(rows) - top} more nodes)")


def _interleaved(fns, repeats, inner, budget_s=None, min_repeats=3):
    """Time each callable ``inner`` times per repeat, interleaving the callables.

    Returns one list of per-call seconds (one entry per repeat) per callable.
    Interleaving spreads machine noise (frequency, other processes) evenly; the
    best-of is the figure least disturbed by other load on a shared machine.
    Stops early (after ``min_repeats``) once ``budget_s`` seconds are spent, so a
    heavily loaded machine cannot stretch the run without bound.
    """
    out = [[] for _ in fns]
    start = _clock()
    for r in range(repeats):
        if budget_s is not None and r >= min_repeats and _clock() - start > budget_s:
            break
        order = list(enumerate(fns))
        if r % 2:
            order.reverse()  # neither callable always goes first
        for i, f in order:
            t0 = _clock()
            for _ in range(inner):
                f()
            out[i].append((_clock() - t0) / inner)
    return out


def _fmt_stats(ts, scale, unit):
    return (f"best {min(ts) * scale:8.3f} {unit}   "
            f"median {statistics.median(ts) * scale:8.3f} {unit}")


# ---------------------------------------------------------------------------------
# (a) per-node dispatch overhead
# ---------------------------------------------------------------------------------
def bench_dispatch(n_ops=1000, size=16, repeats=15, inner=100):
    print(f"== (a) dispatch overhead: chain of {n_ops} elementwise ops on "
          f"{size}-element float32 ==")
    x = K.placeholder("float32", (size,), name="x")
    y = x
    for i in range(n_ops):
        y = y * 1.0001 if i % 2 == 0 else y + 0.5
    fn = K.Function([x], y, name="chain")
    nodes = _kernel_nodes(fn)

    # The same ufuncs with the very operands the compiled plan uses (0-d float32
    # constants), called in a plain Python loop.
    ufuncs = {"Mul": np.multiply, "Add": np.add}
    plan = [(ufuncs[n.op], np.asarray(n.inputs[1].node.attrs["value"]))
            for n in _unique_nodes(fn)]

    def raw():
        v = xv
        for f, c in plan:
            v = f(v, c)
        return v

    xv = np.linspace(-1.0, 1.0, size, dtype=np.float32)
    got, want = fn(xv), raw()
    assert np.allclose(got, want, rtol=1e-6), "chain results differ"

    def run_fn():
        return fn(xv)

    for _ in range(20):  # warm-up
        run_fn(), raw()
    t_kf, t_np = _interleaved([run_fn, raw], repeats, inner, budget_s=8.0)
    kf_node = min(t_kf) / nodes * 1e6
    np_node = min(t_np) / nodes * 1e6
    print(f"  kernel nodes                 : {nodes}   (fn.num_nodes = "
          f"{fn.num_nodes})")
    print(f"  kerasflow Function call      : {_fmt_stats(t_kf, 1e6, 'us')}")
    print(f"  raw numpy ufunc loop         : {_fmt_stats(t_np, 1e6, 'us')}")
    print(f"  kerasflow per node (best-of) : {kf_node:6.3f} us/node   "
          f"(target <= 3.0: {'PASS' if kf_node <= 3.0 else 'FAIL'})")
    print(f"  raw numpy per op             : {np_node:6.3f} us/op")
    print(f"  overhead per node            : {kf_node - np_node:6.3f} us/node "
          f"(kerasflow - raw numpy)")
    print()
    return kf_node, kf_node - np_node


# ---------------------------------------------------------------------------------
# (b) MLP forward + backward
# ---------------------------------------------------------------------------------
def _init_params(rng, sizes):
    params = []
    for fan_in, fan_out in pairwise(sizes):
        lim = np.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-lim, lim, (fan_in, fan_out)).astype(np.float32))
        params.append((0.1 * rng.standard_normal(fan_out)).astype(np.float32))
    return params


def numpy_step(x, labels, W1, b1, W2, b2, W3, b3):
    """Loss and (dW1, db1, dW2, db2, dW3, db3) of the MLP, hand-written numpy."""
    n = x.shape[0]
    rows = np.arange(n)
    # forward (bias add and relu in place)
    h1 = x @ W1
    h1 += b1
    np.maximum(h1, 0.0, out=h1)
    h2 = h1 @ W2
    h2 += b2
    np.maximum(h2, 0.0, out=h2)
    z = h2 @ W3
    z += b3
    # stable log-softmax cross-entropy, mean over the batch
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = np.float32(np.log(s[:, 0]).sum() - z[rows, labels].sum()) / np.float32(n)
    # backward: dlogits = (softmax - onehot) / n
    e /= s
    e[rows, labels] -= 1.0
    e *= np.float32(1.0 / n)
    dW3 = h2.T @ e
    db3 = e.sum(axis=0)
    dh2 = e @ W3.T
    dh2 *= h2 > 0
    dW2 = h1.T @ dh2
    db2 = dh2.sum(axis=0)
    dh1 = dh2 @ W2.T
    dh1 *= h1 > 0
    dW1 = x.T @ dh1
    db1 = dh1.sum(axis=0)
    return loss, (dW1, db1, dW2, db2, dW3, db3)


def _mlp_flops(batch, sizes):
    """(forward, backward) FLOPs counting 2*m*k*n per matmul only.

    Backward: a weight gradient per layer, an input gradient for every layer but
    the first (the input needs none).
    """
    fwd = sum(2 * batch * k * n for k, n in pairwise(sizes))
    bwd = fwd + sum(2 * batch * k * n for k, n in pairwise(sizes[1:]))
    return fwd, bwd


def bench_mlp(batch=128, sizes=(784, 512, 512, 10), repeats=120, inner=5,
              profile=False):
    print(f"== (b) MLP {'-'.join(map(str, sizes))}, batch {batch}, float32, "
          f"forward + backward ==")
    rng = np.random.default_rng(0)
    params = _init_params(rng, sizes)
    xv = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    yv = rng.integers(0, sizes[-1], batch).astype(np.int64)

    x = K.placeholder("float32", (None, sizes[0]), name="x")
    labels = K.placeholder("int64", (None,), name="labels")
    W1, b1, W2, b2, W3, b3 = weights = [K.Variable(p) for p in params]
    h1 = K.relu(K.matmul(x, W1) + b1)
    h2 = K.relu(K.matmul(h1, W2) + b2)
    logits = K.matmul(h2, W3) + b3
    loss = K.mean(K.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grads = K.gradients(loss, weights)
    fn = K.Function([x, labels], [loss] + grads, name="mlp_step")

    # correctness first
    kf = fn(xv, yv)
    ref_loss, ref_grads = numpy_step(xv, yv, *params)
    names = ["W1", "b1", "W2", "b2", "W3", "b3"]
    ok = np.allclose(kf[0], ref_loss, rtol=1e-4)
    worst = []
    for nm, g, r in zip(names, kf[1:], ref_grads):
        same = g.shape == r.shape and g.dtype == r.dtype and np.allclose(
            g, r, rtol=1e-4, atol=1e-7)
        ok &= same
        worst.append(f"{nm} {np.max(np.abs(g - r)):.1e}")
    print(f"  gradient check (allclose rtol=1e-4, atol=1e-7): "
          f"{'OK' if ok else 'MISMATCH'}   loss {float(kf[0]):.6f} vs "
          f"{float(ref_loss):.6f}; max|diff| {', '.join(worst)}")
    if not ok:
        raise SystemExit("kerasflow gradients differ from the numpy reference")

    A = np.ascontiguousarray(xv)
    B = params[0]

    def run_kf():
        return fn(xv, yv)

    def run_np():
        return numpy_step(xv, yv, *params)

    def run_mm():
        return A @ B

    for _ in range(10):  # warm-up (BLAS threads, allocator)
        run_kf(), run_np(), run_mm()
    t_kf, t_np = _interleaved([run_kf, run_np], repeats, inner, budget_s=25.0)
    (t_mm,) = _interleaved([run_mm], repeats, inner * 4, budget_s=5.0)

    fwd, bwd = _mlp_flops(batch, sizes)
    total = fwd + bwd
    mm = 2 * batch * sizes[0] * sizes[1]
    kf_s, np_s = statistics.median(t_kf), statistics.median(t_np)
    print(f"  kernel nodes                 : {_kernel_nodes(fn)}   "
          f"({len(t_kf)} x {inner} steps timed per side)")
    print(f"  FLOPs/step (matmuls)         : forward {fwd / 1e6:.1f} M + backward "
          f"{bwd / 1e6:.1f} M = {total / 1e6:.1f} M")
    print(f"  kerasflow Function           : {_fmt_stats(t_kf, 1e3, 'ms')}   "
          f"{total / min(t_kf) / 1e9:6.1f} GFLOP/s (best)")
    print(f"  hand-written numpy           : {_fmt_stats(t_np, 1e3, 'ms')}   "
          f"{total / min(t_np) / 1e9:6.1f} GFLOP/s (best)")
    print(f"  numpy BLAS 128x784 @ 784x512 : {_fmt_stats(t_mm, 1e3, 'ms')}   "
          f"{mm / min(t_mm) / 1e9:6.1f} GFLOP/s (best)")
    ratio_med = np_s / kf_s
    ratio_best = min(t_np) / min(t_kf)
    # Each kerasflow block runs right after a numpy block: the median of the
    # per-pair ratios cancels slow drifts in machine load.
    ratio_pair = statistics.median(n / k for n, k in zip(t_np, t_kf))
    print(f"  ratio numpy/kerasflow        : best-of {ratio_best:.3f}   median "
          f"{ratio_med:.3f}   paired median {ratio_pair:.3f}")
    print(f"  target >= 0.95 (best-of)     : "
          f"{'PASS' if ratio_best >= 0.95 else 'FAIL'}")
    if profile:
        _profile_nodes(fn, run_kf)
    print()
    return ratio_best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", choices=["a", "b"], help="run one benchmark")
    p.add_argument("--profile", action="store_true",
                   help="(b): also print the time of each node of the Function")
    args = p.parse_args(argv)
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, {platform.machine()}")
    print()
    t0 = _clock()
    if args.only in (None, "a"):
        bench_dispatch()
    if args.only in (None, "b"):
        bench_mlp(profile=args.profile)
    print(f"total benchmark time: {_clock() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
