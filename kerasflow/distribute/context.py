"""The current strategy and replica context, per thread (tf.distribute's
``distribution_strategy_context``).

One thread-local holds both: ``Strategy.scope()`` enters the ``"strategy"``
slot, ``strategy.run`` enters the ``"replica"`` slot for the duration of
``fn``. This module imports nothing of the package: ``distribute_lib``
registers the default strategy here when it is imported.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["current", "entered", "get_strategy", "has_strategy", "register_default"]

_state = threading.local()
_default = {"strategy": None}


def register_default(strategy) -> None:
    """Makes ``strategy`` what ``get_strategy()`` returns outside any scope."""
    _default["strategy"] = strategy


@contextlib.contextmanager
def entered(slot: str, value):
    """Sets this thread's ``slot`` ("strategy" or "replica") to ``value``
    inside the ``with`` block, restoring the previous value on exit (nested
    scopes unwind in order)."""
    prev = getattr(_state, slot, None)
    setattr(_state, slot, value)
    try:
        yield value
    finally:
        setattr(_state, slot, prev)


def current(slot: str):
    """This thread's value of ``slot``, or None outside any ``entered``."""
    return getattr(_state, slot, None)


def get_strategy():
    """The strategy of the innermost ``scope()``, else the default one."""
    return current("strategy") or _default["strategy"]


def has_strategy() -> bool:
    """True inside a strategy's ``scope()`` (tf.distribute.has_strategy)."""
    return current("strategy") is not None
