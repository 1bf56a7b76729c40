"""``kerasflow.ops.linalg``: Keras 3's ``keras.ops.linalg`` names over the
backend ops: ``inv``, ``det``, ``solve`` (gradients registered), ``norm``
(composed from elementwise ops and reductions; matrix 2-norms and nuclear
norms by SVD), and the factorizations of ``linalg_more``."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

from kerasflow.ops.linalg_more import *  # noqa: F403, E402
from kerasflow.ops.linalg_more import __all__ as _more  # noqa: E402

__all__ = sorted({"det", "inv", "norm", "solve"} | set(_more))

det, inv, solve = K.det, K.inv, K.solve


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002  (numpy's name)
    """Vector or matrix norm (``numpy.linalg.norm``).

    Args:
        x: float tensor.
        ord: vectors: None/2, 1, inf, -inf or a positive number p; matrices
            (a 2-tuple ``axis``, or a rank-2 ``x`` with axis None): None/'fro',
            1, -1, inf, -inf (differentiable), 2, -2, 'nuc' (singular values:
            no gradient).
        axis: None (all of a vector or the last two of a matrix, as numpy for
            rank <= 2), an int or a 2-tuple.

    Raises:
        ValueError: an unknown matrix order.
    """
    rank = len(x.shape)
    if axis is None:
        axis = tuple(range(rank)) if rank == 2 else None
    matrix = isinstance(axis, tuple) and len(axis) == 2
    if matrix and ord not in (None, "fro"):
        return _matrix_norm(x, ord, axis, keepdims)
    if matrix or (axis is None and ord in (None, "fro")):
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


def _matrix_norm(x, ord, axis, keepdims):  # noqa: A002
    """Matrix norms other than Frobenius over the 2-tuple ``axis``."""
    rank = len(x.shape)
    r, c = (int(a) % rank for a in axis)
    if ord in (1, -1, np.inf, -np.inf):
        # Column sums (ord +-1) or row sums (ord +-inf) of |x|, then max/min.
        summed_axis, pick_axis = (r, c) if ord in (1, -1) else (c, r)
        sums = K.sum(K.abs(x), axis=summed_axis, keepdims=True)
        pick = K.max if ord > 0 else K.min
        out = pick(sums, axis=pick_axis, keepdims=True)
    elif ord in (2, -2, "nuc"):
        rest = [a for a in range(rank) if a not in (r, c)]
        moved = K.transpose(x, tuple(rest + [r, c]))
        s = svd(moved, compute_uv=False)
        out = K.sum(s, axis=-1) if ord == "nuc" else (
            K.max(s, axis=-1) if ord == 2 else K.min(s, axis=-1))
        if keepdims:
            out = K.expand_dims(K.expand_dims(out, min(r, c)), max(r, c))
        return out
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices.")
    return out if keepdims else K.squeeze(K.squeeze(out, max(r, c)), min(r, c))
