"""``TapeArray``: an array that remembers, for a ``GradientTape``, how it was made.

While an eager ``GradientTape`` records, a layer called on arrays and every
backend op given a ``TapeArray`` return ``TapeArray``s: plain numpy arrays
(printing, ``float()``, metrics and numpy code see ordinary values) that also
point at the ``TapeRecord`` that produced them. Python operators (``a + b``,
``2 * a``, ``a @ w``) go through the backend's ops, so they stay on the tape;
numpy functions (``np.exp(a)``) return plain arrays, off the tape.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from kerasflow.backend.graph import in_tracing
from kerasflow.backend.operators import ArithmeticOps

__all__ = ["TapeArray", "TapeRecord", "active_tapes", "recording", "tape_state"]

tape_state = threading.local()  # .tapes: the GradientTapes recording now
_seq = itertools.count()


def active_tapes() -> tuple:
    """The tapes recording eagerly in this thread (innermost last), or ().

    None while a step is traced: there the tape is symbolic (the graph records).
    """
    tapes = getattr(tape_state, "tapes", None)
    if not tapes or getattr(tape_state, "paused", 0) or in_tracing():
        return ()
    return tuple(tapes)


def recording() -> bool:
    """True while some ``GradientTape`` records in this thread."""
    return bool(active_tapes())


class TapeRecord:
    """One recorded computation: ``backward(upstream)`` gives input gradients.

    Attributes:
        inputs: the arrays it read (``TapeArray``s link to earlier records).
        specs: (shape, dtype) per output.
        tapes: ids of the tapes that recorded it.
        seq: creation order; reverse order is a reverse topological order.
        vjp: ``vjp(record, upstream) -> (input grads, {id(Variable): (var, g)})``.
    """

    __slots__ = ("inputs", "specs", "tapes", "seq", "vjp", "state")

    def __init__(self, inputs, specs, vjp, state=None):
        self.inputs, self.specs, self.vjp, self.state = inputs, specs, vjp, state
        self.tapes = frozenset(id(t) for t in active_tapes())
        self.seq = next(_seq)


class TapeArray(ArithmeticOps, np.ndarray):
    """A numpy array produced on a recording ``GradientTape`` (see module)."""

    def __array_finalize__(self, obj):
        # Views and copies made by numpy are off the tape.
        self._tape_rec = None
        self._tape_idx = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = tuple(x.view(np.ndarray) if isinstance(x, TapeArray) else x
                      for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, TapeArray)
                                  else x for x in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)

    def __repr__(self):
        return repr(self.view(np.ndarray))

    def __reduce__(self):  # pickles as the plain array
        return self.view(np.ndarray).__reduce__()

    # Operators through the backend ops (ArithmeticOps), so they are recorded.
    # ``loss += penalty`` must stay on the tape: never in place.
    __iadd__ = ArithmeticOps.__add__
    __isub__ = ArithmeticOps.__sub__
    __imul__ = ArithmeticOps.__mul__
    __itruediv__ = ArithmeticOps.__truediv__


def wrap(value, record, index):
    """``value`` as a ``TapeArray`` output ``index`` of ``record``."""
    out = np.asarray(value).view(TapeArray)
    out._tape_rec, out._tape_idx = record, index
    return out

