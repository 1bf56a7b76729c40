"""First-step latency of the bench MLP: fusion off, fusion with a cold numba
cache, fusion with a warm cache (each in a fresh process, as a user sees it).

Run: PYTHONPATH=. python benchmarks/bench_first_step.py
The cold cache is a fresh temporary ``NUMBA_CACHE_DIR`` + ``KERASFLOW_CACHE_DIR``;
the warm run reuses them. Prints the time of the first ``train_on_batch``
(graph build + compile + one step) and of the import.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import time
t0 = time.perf_counter()
import numpy as np
import kerasflow as kf
t1 = time.perf_counter()
model = kf.Sequential([
    kf.layers.Dense(512, activation="relu", input_shape=(784,)),
    kf.layers.Dense(512, activation="relu"),
    kf.layers.Dense(10),
])
model.compile(optimizer=kf.optimizers.Adam(1e-3),
              loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
x = np.random.rand(128, 784).astype("float32")
y = np.random.randint(0, 10, 128)
t2 = time.perf_counter()
model.train_on_batch(x, y)
t3 = time.perf_counter()
model.train_on_batch(x, y)
t4 = time.perf_counter()
print(f"{t1 - t0:.3f} {t3 - t2:.3f} {t4 - t3:.4f}")
"""


def run(env):
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return [float(v) for v in out]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                   KERASFLOW_CACHE_DIR=os.path.join(tmp, "kf"))
        rows = [("fusion off", run(dict(env, KERASFLOW_FUSION="0"))),
                ("fusion, cold cache", run(env)),
                ("fusion, warm cache", run(env)),
                ("fusion, warm cache", run(env))]
    print(f"{'':20s} {'import':>8s} {'1st step':>9s} {'2nd step':>9s}")
    for name, (imp, first, second) in rows:
        print(f"{name:20s} {imp:7.2f}s {first:8.2f}s {second * 1e3:7.1f}ms")


if __name__ == "__main__":
    main()
