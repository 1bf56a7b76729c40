"""Python's arithmetic operators as backend ops, one mixin for every kind of
tensor: symbolic tensors (``graph.py``) and the eager tape's arrays
(``tape_array.py``)."""

from __future__ import annotations

__all__ = ["ArithmeticOps"]


def _ops():
    from kerasflow.backend import ops  # noqa: PLC0415  (cycle: ops build tensors)

    return ops


class ArithmeticOps:
    """Python's arithmetic operators as backend ops (``a + b`` is ``ops.add``),
    shared by symbolic tensors and the eager tape's arrays; resolved lazily to
    avoid an import cycle with ``ops``."""

    __slots__ = ()

    def __add__(self, o):
        return _ops().add(self, o)

    def __radd__(self, o):
        return _ops().add(o, self)

    def __sub__(self, o):
        return _ops().subtract(self, o)

    def __rsub__(self, o):
        return _ops().subtract(o, self)

    def __mul__(self, o):
        return _ops().multiply(self, o)

    def __rmul__(self, o):
        return _ops().multiply(o, self)

    def __truediv__(self, o):
        return _ops().divide(self, o)

    def __rtruediv__(self, o):
        return _ops().divide(o, self)

    def __pow__(self, o):
        return _ops().power(self, o)

    def __matmul__(self, o):
        return _ops().matmul(self, o)

    def __rmatmul__(self, o):
        return _ops().matmul(o, self)

    def __neg__(self):
        return _ops().negative(self)
