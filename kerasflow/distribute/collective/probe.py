"""A diagnostic worker that validates and times the collective in place
(the ``nccl-tests`` idea): one instance per rank inside a :class:`WorkerGroup`.

Used by ``tests/distribute/test_collective.py`` and
``benchmarks/bench_allreduce.py``; also handy to check a real cluster's
transports before training.
"""

from __future__ import annotations

import time

import numpy as np

from kerasflow.distribute.collective.plan import CollectiveMember
from kerasflow.distribute.collective.shm import ShmAllreduce

__all__ = ["CollectiveProbe", "probe_data", "shm_rank_main"]


def probe_data(rank, size, dtype, seed=0):
    """The buffer rank ``rank`` contributes: seeded normal values, shape
    ``(size,)``, so the driver can recompute the expected sum."""
    rng = np.random.default_rng([seed, rank])
    return rng.standard_normal(size).astype(dtype)


def shm_rank_main(name, rank, world, size, dtype, calls, timeout, absent_from, out):
    """Body of one rank's process in shared-memory tests and benchmarks (no Ray).

    Joins the group ``name`` as ``ShmAllreduce(name, rank, world, size, dtype,
    timeout)`` and runs ``calls`` rounds of a SUM then a MEAN allreduce of
    ``probe_data(rank, size, dtype, seed=round)``; from round ``absent_from``
    on (None: never) the rank sleeps past the deadline instead (a rank that
    never arrives). Puts one tuple on the queue ``out``: ``(rank, sum, mean,
    None, seconds)`` with the last round's results, or ``(rank, None, None,
    (error type name, message), seconds)``; ``seconds`` runs from the end of
    the constructor to the end (or the error).
    """
    coll = t0 = None
    try:
        coll = ShmAllreduce(name, rank, world, size, dtype, timeout=timeout)
        t0 = time.monotonic()
        total = mean = None
        for i in range(calls):
            if absent_from is not None and i >= absent_from:
                time.sleep(timeout * 3)
                break
            total = coll.allreduce(probe_data(rank, size, dtype, i), "SUM", step=i)
            mean = coll.allreduce(probe_data(rank, size, dtype, i), "MEAN", step=i)
        out.put((rank, total, mean, None, time.monotonic() - t0))
    except Exception as e:  # noqa: BLE001 - reported to the parent process
        took = None if t0 is None else time.monotonic() - t0
        out.put((rank, None, None, (type(e).__name__, str(e)), took))
    finally:
        if coll is not None:
            coll.close()


class CollectiveProbe(CollectiveMember):
    """Worker object: ``open_collective`` / ``connect_collective`` build the
    group (see ``WorkerGroup.setup_collective``), ``check`` returns one
    allreduce result, ``time_allreduce`` times a loop of them."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.progress = 0

    @property
    def plan(self):
        return self.endpoint.plan

    def check(self, op="SUM", seed=0, steps=1, skip_steps=()):
        """Allreduces ``probe_data`` ``steps`` times (fresh copy each time) and
        returns the last result. ``skip_steps``: steps at which this rank
        sleeps past the deadline instead of joining (failure injection)."""
        p = self.plan
        out = None
        for step in range(steps):
            if step in skip_steps:
                time.sleep(p["timeout"] * 3)
            out = probe_data(self.rank, p["size"], p["dtype"], seed)
            self.coll.allreduce(out, op, step=step)
            self.progress += 1
        return out

    def time_allreduce(self, iters, warmup=2):
        """Seconds per allreduce, one entry per timed iteration."""
        p = self.plan
        buf = probe_data(self.rank, p["size"], p["dtype"])
        times = []
        for i in range(warmup + iters):
            t0 = time.perf_counter()
            self.coll.allreduce(buf, "SUM", step=i)
            if i >= warmup:
                times.append(time.perf_counter() - t0)
            buf *= 0.5  # keep values bounded across iterations
            self.progress += 1
        return times

    def stall(self, seconds):
        """Sleeps without progress (stuck-replica injection)."""
        time.sleep(seconds)
        return True
