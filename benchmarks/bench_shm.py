"""Micro-benchmark of the shared-memory allreduce: ``world`` processes (no Ray)
each time ``iters`` SUM allreduces of ``size`` float32 values.

    PYTHONPATH=. python benchmarks/bench_shm.py --world 2 --sizes 1000 1000000
    PYTHONPATH=. python benchmarks/bench_shm.py --baseline /tmp/old_shm.py

``--baseline FILE`` also runs the ``ShmAllreduce`` defined in FILE (e.g. an
older ``shm_collective.py`` from git), interleaved with the current one, so
both see the same machine load. Prints, per implementation and size, the
median over repetitions of rank 0's median microseconds per call. One-time
costs (process start, segment creation, page faults, 5 warm-up calls) are
outside the timed region; the 1-minute load average is printed before and
after, since numbers taken on a busy machine are not comparable.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing as mp
import os
import statistics
import time
import uuid

import numpy as np


def _load(path):
    if path is None:
        from kerasflow.distribute.collective.shm import ShmAllreduce
        return ShmAllreduce
    spec = importlib.util.spec_from_file_location("kf_shm_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ShmAllreduce


def _rank(path, name, rank, world, size, iters, out):
    cls = _load(path)
    coll = cls(name, rank, world, size, "float32", timeout=60)
    buf = np.ones(size, np.float32)
    for i in range(5):
        coll.allreduce(buf, "SUM", step=i)
        buf.fill(1.0)
    times = []
    for i in range(iters):
        t0 = time.perf_counter()
        coll.allreduce(buf, "SUM", step=i)
        times.append(time.perf_counter() - t0)
        buf.fill(1.0)
    coll.close()
    out.put((rank, statistics.median(times)))


def run(ctx, path, world, size, iters):
    """Rank 0's median seconds per allreduce for one group."""
    out = ctx.Queue()
    name = f"kf-bench-{uuid.uuid4().hex[:10]}"
    procs = [ctx.Process(target=_rank, args=(path, name, r, world, size, iters, out))
             for r in range(world)]
    for p in procs:
        p.start()
    got = dict(out.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return got[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 1_000_000])
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--baseline", default=None, help="file with an older ShmAllreduce")
    args = ap.parse_args()
    ctx = mp.get_context("forkserver")
    impls = {"current": None}
    if args.baseline:
        impls = {"baseline": args.baseline, "current": None}
    print(f"load before: {os.getloadavg()[0]:.2f}; world={args.world}, "
          f"iters={args.iters}, reps={args.reps}, cpus={os.cpu_count()}")
    for size in args.sizes:
        res = {k: [] for k in impls}
        for _ in range(args.reps):
            for k, path in impls.items():  # interleaved
                res[k].append(run(ctx, path, args.world, size, args.iters))
        for k, v in res.items():
            print(f"size={size:>9} {k:>8}: median {statistics.median(v) * 1e6:8.1f} us"
                  f" per allreduce (reps: "
                  f"{', '.join(f'{t * 1e6:.0f}' for t in v)})")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
