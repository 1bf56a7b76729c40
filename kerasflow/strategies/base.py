"""``Strategy``: how a compiled training step runs on a batch (tf.distribute).

The training loop exists once and calls ``strategy.run_train_step(step, batch)``
for every batch; strategies differ only in where the step runs. The default one
runs it in this process on numpy or cupy.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["Strategy", "DefaultStrategy", "get_strategy"]

_current = threading.local()


class Strategy:
    """Base class. ``scope()`` makes it the strategy ``fit`` uses inside the
    ``with`` block, as in tf.distribute."""

    num_replicas_in_sync = 1

    def run_train_step(self, step, batch):
        """Runs ``step`` (a compiled ``Function``) on ``batch``, a list of arrays
        in the step's input order; returns its outputs."""
        raise NotImplementedError

    @contextlib.contextmanager
    def scope(self):
        """Context in which ``fit`` and ``evaluate`` run through this strategy."""
        prev = getattr(_current, "strategy", None)
        _current.strategy = self
        try:
            yield self
        finally:
            _current.strategy = prev


class DefaultStrategy(Strategy):
    """One replica, in process: the step is called directly."""

    def run_train_step(self, step, batch):
        return step(*batch)


_DEFAULT = DefaultStrategy()


def get_strategy() -> Strategy:
    """The strategy of the innermost ``scope()``, else the default one."""
    return getattr(_current, "strategy", None) or _DEFAULT
