"""``kerasflow.ops.linalg``: Keras 3's ``keras.ops.linalg`` names over the
backend ops: ``inv``, ``det``, ``solve`` (gradients registered) and ``norm``
(composed from elementwise ops and reductions)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

__all__ = ["det", "inv", "norm", "solve"]

det, inv, solve = K.det, K.inv, K.solve


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002  (numpy's name)
    """Vector or matrix norm (``numpy.linalg.norm``).

    Args:
        x: float tensor.
        ord: vectors: None/2, 1, inf, -inf or a positive number p; matrices
            (a 2-tuple ``axis``, or a rank-2 ``x`` with axis None): None/'fro'.
        axis: None (all of a vector or the last two of a matrix, as numpy for
            rank <= 2), an int or a 2-tuple.

    Raises:
        NotImplementedError: other matrix orders (nuclear, spectral, 1, inf).
    """
    rank = len(x.shape)
    if axis is None:
        axis = tuple(range(rank)) if rank == 2 else None
    matrix = isinstance(axis, tuple) and len(axis) == 2
    if matrix or (axis is None and ord in (None, "fro")):
        if ord not in (None, "fro"):
            raise NotImplementedError(f"norm supports ord=None/'fro' for "
                                      f"matrices. Received: ord={ord!r}.")
        return K.sqrt(K.sum(K.square(x), axis=axis, keepdims=keepdims))
    if ord in (None, 2):
        return K.sqrt(K.sum(K.square(x), axis=axis, keepdims=keepdims))
    if ord == 1:
        return K.sum(K.abs(x), axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return K.max(K.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return K.min(K.abs(x), axis=axis, keepdims=keepdims)
    p = float(ord)
    return K.power(K.sum(K.power(K.abs(x), p), axis=axis, keepdims=keepdims),
                   1.0 / p)
