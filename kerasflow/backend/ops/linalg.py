"""Linear algebra: matmul (batched, with broadcasting over leading dims) and
tensordot built on it."""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.shape import reshape, transpose
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["det", "inv", "matmul", "solve", "tensordot", "transpose_last"]


def _matmul_infer(a, b, transpose_a=False, transpose_b=False):
    if a.shape is None or b.shape is None:
        return None, I.result_dtype(a, b)
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ValueError(
            f"matmul expects inputs of rank >= 2. Received: a.shape={a.shape}, "
            f"b.shape={b.shape}. Reshape vectors to (1, n) or (n, 1)."
        )
    m, ka = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    kb, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(
            f"matmul needs the inner dimensions to match. Received: "
            f"a.shape={a.shape}, b.shape={b.shape} (inner {ka} vs {kb})."
        )
    if a.dtype != b.dtype:
        raise TypeError(
            f"matmul needs inputs of one dtype. Received: a.dtype={a.dtype.name}, "
            f"b.dtype={b.dtype.name}."
        )
    batch = I.broadcast_dims(a.shape[:-2], b.shape[:-2])
    return tuple(batch) + (m, n), a.dtype


@register_op("MatMul", _matmul_infer, writes_out=True)
def _matmul(xp, a, b, transpose_a=False, transpose_b=False, out=None):
    if transpose_a:
        a = xp.swapaxes(a, -1, -2)
    if transpose_b:
        b = xp.swapaxes(b, -1, -2)
    return xp.matmul(a, b, out=out)


@register_gradient("MatMul")
def _matmul_grad(node, g):
    a, b = node.inputs
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    # The four transpose cases of TF's MatMul gradient; no explicit transposes
    # are materialized, BLAS reads the operands transposed.
    if not ta and not tb:
        return matmul(g, b, transpose_b=True), matmul(a, g, transpose_a=True)
    if not ta and tb:
        return matmul(g, b), matmul(g, a, transpose_a=True)
    if ta and not tb:
        return matmul(b, g, transpose_b=True), matmul(a, g)
    return (matmul(b, g, transpose_a=True, transpose_b=True),
            matmul(g, a, transpose_a=True, transpose_b=True))


def matmul(a, b, transpose_a=False, transpose_b=False):
    """Matrix product ``a @ b`` over the last two axes, broadcasting batch axes.

    Args:
        a: tensor of shape (..., m, k) (or (..., k, m) with ``transpose_a``).
        b: tensor of shape (..., k, n) (or (..., n, k) with ``transpose_b``); the
            same dtype as ``a``.

    Returns:
        Tensor of shape (broadcast(...), m, n).

    Raises:
        ValueError: rank below 2 or inner dimensions that differ, naming both
            shapes, when the op is created.
        TypeError: differing dtypes.
    """
    return apply("MatMul", a, b, transpose_a=bool(transpose_a),
                 transpose_b=bool(transpose_b))


def _axes_pair(axes, ra, rb):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(ra, rb):
            raise ValueError(f"tensordot axes={n} must be in [0, {min(ra, rb)}].")
        return list(range(ra - n, ra)), list(range(n))
    if len(axes) != 2:
        raise ValueError(f"tensordot axes must be an int or a pair of axis lists. "
                         f"Received: axes={axes!r}.")
    a_axes, b_axes = ([int(v)] if np.ndim(v) == 0 else [int(u) for u in v]
                      for v in axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot contracts as many axes of each side. "
                         f"Received: axes={axes!r}.")
    return [v % ra for v in a_axes], [v % rb for v in b_axes]


def tensordot(a, b, axes=2):
    """Sums products over ``axes`` of ``a`` and ``b`` (``numpy.tensordot``).

    Computed as one matmul of ``a`` (contracted axes moved last, flattened)
    by ``b`` (contracted axes first); the gradient follows from those ops.

    Args:
        a, b: tensors or arrays of the same float dtype; the contracted
            dimensions must be known and match. ``a`` may have one unknown
            free dimension (a batch), ``b`` none.
        axes: an int n (the last n axes of ``a`` with the first n of ``b``) or
            a pair of axis lists.

    Returns:
        Shape ``a``'s free dims + ``b``'s free dims.

    Raises:
        ValueError: mismatched contracted dims, unknown ranks, or more unknown
            free dimensions than one (naming the shapes).
    """
    sa, sb = getattr(a, "shape", None), getattr(b, "shape", None)
    if sa is None or sb is None:
        raise ValueError("tensordot needs tensors of known rank.")
    sa, sb = tuple(sa), tuple(sb)
    a_axes, b_axes = _axes_pair(axes, len(sa), len(sb))
    a_free = [i for i in range(len(sa)) if i not in a_axes]
    b_free = [i for i in range(len(sb)) if i not in b_axes]
    contracted = [sa[i] for i in a_axes]
    if any(d is None for d in contracted) or contracted != [sb[i] for i in b_axes]:
        raise ValueError(f"tensordot contracts dims {contracted} of a (shape {sa}) "
                         f"with dims {[sb[i] for i in b_axes]} of b (shape {sb}); "
                         f"they must be known and equal.")
    a_out, b_out = [sa[i] for i in a_free], [sb[i] for i in b_free]
    if a_out.count(None) + b_out.count(None) > (1 if None not in b_out else 0):
        raise ValueError(f"tensordot supports one unknown free dimension, in a. "
                         f"Received shapes {sa} and {sb}.")
    k = int(np.prod(contracted, dtype=np.int64))
    a2 = reshape(transpose(a, a_free + a_axes), (-1, k))
    b2 = reshape(transpose(b, b_axes + b_free), (k, -1))
    out = matmul(a2, b2)
    return reshape(out, tuple(-1 if d is None else d for d in a_out + b_out))


# -- inverse, determinant, solve -----------------------------------------------------
def _square_infer(a):
    if a.shape is not None and (len(a.shape) < 2 or a.shape[-1] != a.shape[-2]):
        raise ValueError(f"expects square matrices (..., n, n). Received: "
                         f"{I.fmt(a)}.")
    return a.shape, a.dtype


@register_op("MatrixInverse", _square_infer)
def _inv(xp, a):
    return xp.linalg.inv(a)


@register_gradient("MatrixInverse")
def _inv_grad(node, g):
    # d(A^-1) = -A^-1 dA A^-1  =>  grad_A = -A^-T g A^-T.
    inv_t = transpose_last(node.outputs[0])
    return (-matmul(matmul(inv_t, g), inv_t),)


def inv(a):
    """The inverse of each square matrix of ``a`` (..., n, n).

    Raises:
        ValueError: non-square matrices. (Run time) numpy's LinAlgError for a
            singular one.
    """
    return apply("MatrixInverse", a)


@register_op("MatrixDeterminant", lambda a: (None if a.shape is None else
                                              _square_infer(a)[0][:-2], a.dtype))
def _det(xp, a):
    return xp.linalg.det(a)


@register_gradient("MatrixDeterminant")
def _det_grad(node, g):
    # d det(A) / dA = det(A) A^-T (Jacobi's formula).
    a, d = node.inputs[0], node.outputs[0]
    scale = apply("ExpandDims", apply("ExpandDims", g * d, axis=-1), axis=-1)
    return (scale * transpose_last(inv(a)),)


def det(a):
    """The determinant of each square matrix of ``a`` (..., n, n) -> (...)."""
    return apply("MatrixDeterminant", a)


def solve(a, b):
    """``x`` with ``a @ x = b``: ``a`` (..., n, n), ``b`` (..., n, k); as
    ``inv(a) @ b``, so its gradient is the inverse's and matmul's."""
    return matmul(inv(a), b)


def transpose_last(x):
    """``x`` with its last two axes swapped."""
    rank = len(x.shape)
    return transpose(x, tuple(range(rank - 2)) + (rank - 1, rank - 2))
