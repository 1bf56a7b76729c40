"""Stragglers on purpose, for tests, benchmarks and examples -- not for
production training.

Bounded-delay consistency (Li et al., OSDI 2014, §3.5) only shows with
workers of different speeds. :func:`slow_workers` makes a
``ParameterServerStrategy`` start :class:`DelayedPSWorker` actors, whose
batches arrive late, as from a slow input pipeline or a slower machine:

    strategy = slow_workers(kf.distribute.ParameterServerStrategy(
        num_workers=2, staleness=2), {1: 0.02})   # worker 1: +20 ms a task
"""

from __future__ import annotations

import functools
import time

import numpy as np

from kerasflow.distribute.parameter_server.worker import PSWorker

__all__ = ["DelayedPSWorker", "slow_workers"]


class DelayedPSWorker(PSWorker):
    """A ``PSWorker`` that sleeps in every task, after taking its rows and
    before computing (the sleep counts as busy time, not idle).

    Args:
        rank, world: as ``PSWorker``.
        delay: seconds per task; a pair ``(lo, hi)`` sleeps a uniform random
            time in it (seeded by rank); a dict ``{rank: seconds or (lo, hi)}``
            applies per rank (ranks not named do not sleep).
    """

    def __init__(self, rank, world, delay=0.0):
        super().__init__(rank, world)
        if isinstance(delay, dict):
            delay = delay.get(rank, 0.0)
        self.delay = tuple(delay) if isinstance(delay, (tuple, list)) else \
            float(delay or 0.0)
        self._rng = np.random.default_rng(1_000 + rank)

    def rows(self, *args):
        out = super().rows(*args)
        time.sleep(self._rng.uniform(*self.delay) if isinstance(self.delay, tuple)
                   else self.delay)
        return out


def slow_workers(strategy, delay):
    """Makes ``strategy`` (a ``ParameterServerStrategy``, before its actors
    start) run :class:`DelayedPSWorker` workers with ``delay``; returns it.

    Raises:
        ValueError: the strategy's workers are running already.
    """
    if strategy._workers is not None:
        raise ValueError("slow_workers expects a strategy whose workers have not "
                         "started. Received: a strategy with running workers; "
                         "call strategy.close() first.")
    strategy._worker_factory = functools.partial(DelayedPSWorker, delay=delay)
    return strategy
