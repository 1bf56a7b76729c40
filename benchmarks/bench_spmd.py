"""One process per worker (TF_CONFIG, SPMD) against MirroredStrategy and one
process, on the same model and global batches.

MLP 784-512-512-10 (ReLU, Adam, float32), global batch 256, synthetic data of
MNIST's shape; every run is a fresh process (or two, for SPMD: one per
TF_CONFIG task on 127.0.0.1), one warm-up epoch then one timed epoch.
Rounds are interleaved (one process, MirroredStrategy(2), 2 SPMD processes;
again ...) and the median samples/s of each is printed with the ratios to one
process, next to the load average before and after.

Run: PYTHONPATH=. python benchmarks/bench_spmd.py [--samples 20480] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys

CHILD = r"""
import json, os, sys, time
import numpy as np
import kerasflow as kf
mode, n = sys.argv[1], int(sys.argv[2])
rng = np.random.RandomState(0)
x = rng.rand(n, 784).astype("float32"); y = rng.randint(0, 10, n)
if mode == "mirrored":
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
elif mode == "spmd":
    strategy = kf.distribute.MultiWorkerMirroredStrategy()
else:
    strategy = kf.distribute.get_strategy()
kf.utils.set_random_seed(0)
with strategy.scope():
    model = kf.Sequential([kf.layers.Dense(512, activation="relu", input_shape=(784,)),
                           kf.layers.Dense(512, activation="relu"), kf.layers.Dense(10)])
    model.compile("adam", kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=256, epochs=1, verbose=0)
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=256, epochs=1, verbose=0)
    print("RATE", n / (time.perf_counter() - t0), flush=True)
"""


def _ports(k):
    socks = [socket.socket() for _ in range(k)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _rate(out):
    return float([ln for ln in out.splitlines() if ln.startswith("RATE")][-1].split()[1])


def run(mode, samples):
    env = dict(os.environ)
    env.pop("TF_CONFIG", None)
    if mode != "spmd":
        out = subprocess.run([sys.executable, "-c", CHILD, mode, str(samples)], env=env,
                             capture_output=True, text=True, timeout=900, check=True)
        return _rate(out.stdout)
    addrs = [f"127.0.0.1:{p}" for p in _ports(2)]
    # Two processes share this host: each gets its share of the cores, as Ray
    # gives its actors (OMP_NUM_THREADS=1); unset, their BLAS pools oversubscribe
    # the cores (measured 9x slower on 2 cores).
    share = str(max(1, (os.cpu_count() or 2) // 2))
    env = dict(env, OMP_NUM_THREADS=share, OPENBLAS_NUM_THREADS=share,
               MKL_NUM_THREADS=share)
    procs = [subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(samples)], stdout=subprocess.PIPE,
        text=True, env=dict(env, TF_CONFIG=json.dumps(
            {"cluster": {"worker": addrs}, "task": {"type": "worker", "index": i}})))
        for i in range(2)]
    rates = [_rate(p.communicate(timeout=900)[0]) for p in procs]
    return min(rates)  # the job is as fast as its slowest process


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20480)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    modes = ("one", "mirrored", "spmd")
    rates = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in modes:
            rates[m].append(run(m, args.samples))
        print(f"round {r + 1}: " + ", ".join(f"{m} {rates[m][-1]:,.0f}" for m in modes),
              flush=True)
    base = statistics.median(rates["one"])
    for m in modes:
        med = statistics.median(rates[m])
        ratios = [a / b for a, b in zip(rates[m], rates["one"])]
        print(f"{m:9s} {med:9,.0f} samples/s   vs one process: median per-round ratio "
              f"{statistics.median(ratios):.2f} (medians {med / base:.2f})")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
