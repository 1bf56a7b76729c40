"""Linear algebra: matmul (batched, with broadcasting over leading dims)."""

from __future__ import annotations

from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["matmul"]


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


@register_op("MatMul", _matmul_infer)
def _matmul(xp, a, b, transpose_a=False, transpose_b=False):
    if transpose_a:
        a = xp.swapaxes(a, -1, -2)
    if transpose_b:
        b = xp.swapaxes(b, -1, -2)
    return xp.matmul(a, b)


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
