"""Allreduce between Ray actors on one node: each kerasflow transport, 2 and 3
ranks, 4 KB to 64 MB of float32, next to ``np.copyto`` bandwidth and, when
torch is importable, ``ray.util.collective``'s gloo, all in the same run.

Times are taken inside the actors (the collective in a loop, no driver in the
path); for each iteration the slowest rank counts. Bus bandwidth is
``busbw = 2 (N - 1) / N * bytes / t`` (nccl-tests' definition). Prints
median [min-max] ms, busbw GB/s, and the ratios busbw / copyto bandwidth and
shm / other transports.

Run: python benchmarks/bench_allreduce.py [--sizes 4K,1M,16M] [--ranks 2,3]
     [--transports shm,tcp] [--iters 20]
Starts a quiet local Ray (or joins $RAY_ADDRESS).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

UNITS = {"K": 1 << 10, "M": 1 << 20}


def parse_size(text):
    text = text.strip().upper()
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def fmt_size(n):
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def copyto_gbps(nbytes, repeats=7):
    """Memory copy bandwidth of np.copyto at this size (warm buffers)."""
    a = np.ones(nbytes // 4, np.float32)
    b = np.empty_like(a)
    np.copyto(b, a)
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best.append(time.perf_counter() - t0)
    return nbytes / np.median(best) / 1e9


def iters_for(nbytes, base):
    return max(5, min(base, int(base * (1 << 20) / max(nbytes, 1 << 20))))


def bench_kerasflow(transport, ranks, sizes, base_iters):
    from kerasflow.distribute.collective.probe import CollectiveProbe
    from kerasflow.distribute.runtime.worker_group import WorkerGroup

    rows = {}
    for nbytes in sizes:
        with WorkerGroup(CollectiveProbe, ranks, num_cpus=0.5, strategy="PACK",
                         timeout=120) as g:
            g.setup_collective(nbytes // 4, "float32", transport, timeout=60)
            times = np.max(g.execute("time_allreduce", iters_for(nbytes, base_iters)),
                           axis=0)
            g.execute("close")
        rows[nbytes] = times
    return rows


class _GlooProbe:
    def __init__(self, rank, world):
        self.rank, self.world = rank, world

    def init(self, name):
        import ray.util.collective as col
        col.init_collective_group(self.world, self.rank, "gloo", name)
        self.name = name
        return True

    def time_allreduce(self, nbytes, iters, warmup=2):
        import ray.util.collective as col
        buf = np.ones(nbytes // 4, np.float32)
        times = []
        for i in range(warmup + iters):
            t0 = time.perf_counter()
            col.allreduce(buf, self.name)
            if i >= warmup:
                times.append(time.perf_counter() - t0)
            buf *= 0.5
        return times


def bench_gloo(ranks, sizes, base_iters):
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    from kerasflow.distribute.runtime.worker_group import WorkerGroup

    rows = {}
    with WorkerGroup(_GlooProbe, ranks, num_cpus=0.5, strategy="PACK") as g:
        g.execute("init", f"kf-bench-{time.time_ns()}")
        for nbytes in sizes:
            rows[nbytes] = np.max(g.execute("time_allreduce", nbytes,
                                            iters_for(nbytes, base_iters)), axis=0)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4K,64K,1M,4M,16M,64M")
    ap.add_argument("--ranks", default="2,3")
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    from kerasflow.distribute.runtime.ray import init_ray
    init_ray()
    copy = {n: copyto_gbps(n) for n in sizes}
    for n_ranks in [int(r) for r in args.ranks.split(",")]:
        results = {t: bench_kerasflow(t, n_ranks, sizes, args.iters)
                   for t in args.transports.split(",")}
        gloo = bench_gloo(n_ranks, sizes, args.iters)
        if gloo is not None:
            results["gloo"] = gloo
        factor = 2 * (n_ranks - 1) / n_ranks
        print(f"\n## {n_ranks} ranks, float32, in-actor, slowest rank per iteration")
        print("| transport | " + " | ".join(fmt_size(n) for n in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for name, rows in results.items():
            cells = []
            for n in sizes:
                t = rows[n]
                med = float(np.median(t))
                cells.append(f"{med * 1e3:.3g} [{t.min() * 1e3:.3g}-{t.max() * 1e3:.3g}]"
                             f" · {factor * n / med / 1e9:.2f}")
            print(f"| {name} ms · busbw GB/s | " + " | ".join(cells) + " |")
        print("| np.copyto GB/s | " + " | ".join(f"{copy[n]:.2f}" for n in sizes)
              + " |")
        for name, rows in results.items():
            print(f"| {name} busbw / copyto | " + " | ".join(
                f"{factor * n / np.median(rows[n]) / 1e9 / copy[n]:.2f}"
                for n in sizes) + " |")
        if "shm" in results:
            for other in [k for k in results if k != "shm"]:
                print(f"| speed-up shm vs {other} | " + " | ".join(
                    f"{np.median(results[other][n]) / np.median(results['shm'][n]):.2f}x"
                    for n in sizes) + " |")
    if gloo is None:
        print("\n(gloo rows skipped: torch is not importable)")


if __name__ == "__main__":
    main()
