"""Eager model calls: memory growth and per-call cost of the cached trace.

Run from the repository root::

    python benchmarks/bench_eager.py

An MLP 32-64-10 (Sequential, float32) is called eagerly, ``model(x)`` with a
batch of 8, 50 times to warm up, then 2,000 times. Reported:

* RSS growth over the 2,000 calls (VmRSS from ``/proc/self/status``, KiB, after
  ``gc.collect()``; ``resource.getrusage`` peak where /proc is missing), per call,
  and the number of cached traces and of the model's call records. Target:
  growth < 1 MiB in all (issue 6).
* Time per ``model(x)`` against calling the compiled ``Function`` of the same
  graph directly (the reference, measured in this process): the ratio is what
  the eager wrapper (signature key, cache lookup) costs on top.
"""

from __future__ import annotations

import gc
import resource
import time

import numpy as np

import kerasflow as kf
from kerasflow import backend as K

K.set_device("cpu")


def rss_kib() -> int:
    """Resident set size in KiB (peak RSS where /proc is unavailable)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def per_call_us(fn, n=2000) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n // 5):
            fn()
        best = min(best, (time.perf_counter() - t0) / (n // 5))
    return best * 1e6


def main() -> None:
    model = kf.Sequential([kf.layers.Dense(64, activation="relu", input_shape=(32,)),
                           kf.layers.Dense(10)])
    x = np.random.default_rng(0).random((8, 32), np.float32)
    for _ in range(50):
        model(x)
    gc.collect()
    before = rss_kib()
    for _ in range(2000):
        model(x)
    gc.collect()
    growth = rss_kib() - before
    print(f"RSS growth over 2,000 eager model(x) calls: {growth} KiB "
          f"({growth / 2000:.3f} KiB per call; target < 1024 KiB in all)")
    traces = len(getattr(model, "_eager_traces", ())) or "none (no cache)"
    print(f"cached traces: {traces}, model call records: "
          f"{len(model._calls)}")

    ph = K.placeholder("float32", (None, 32))
    direct = K.Function([ph], model(ph))
    t_model = per_call_us(lambda: model(x))
    t_direct = per_call_us(lambda: direct(x))
    print(f"model(x): {t_model:.1f} us per call; Function directly: "
          f"{t_direct:.1f} us; ratio direct/model = {t_direct / t_model:.2f}")


if __name__ == "__main__":
    main()
