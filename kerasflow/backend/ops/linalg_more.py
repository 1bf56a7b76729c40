"""Matrix factorizations with registered gradients: ``cholesky`` (Murray,
2016, "Differentiation of the Cholesky decomposition", as TF's rule),
``eigh`` (eigenvalues and eigenvectors of symmetric matrices; Giles, 2008)
and ``log_abs_det`` (the log of ``|det|``, the gradient ``inv(a)^T``).

Kernels are numpy's (batched over leading axes); shapes (..., n, n).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.linalg import inv, matmul, transpose_last
from kerasflow.backend.ops.math import add, divide, multiply, where
from kerasflow.backend.ops.shape import expand_dims
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["cholesky", "eigh", "log_abs_det"]


def _square(a, *_, **__):
    if a.shape is not None and (len(a.shape) < 2 or (
            None not in a.shape[-2:] and a.shape[-1] != a.shape[-2])):
        raise ValueError(f"expects square matrices (..., n, n). Received: "
                         f"{I.fmt(a)}.")
    if a.dtype.kind != "f":
        raise TypeError(f"expects a float input. Received: {I.fmt(a)}.")
    return a.shape, a.dtype


@register_op("Cholesky", _square)
def _cholesky(xp, a):
    return xp.linalg.cholesky(a)


@register_gradient("Cholesky")
def _cholesky_grad(node, g):
    low = node.outputs[0]
    n = low.shape[-1]
    l_inv = inv(low)
    # Lower triangle of L^T g with its diagonal halved.
    mask = (np.tril(np.ones((n, n))) - 0.5 * np.eye(n)).astype(low.dtype)
    middle = multiply(matmul(transpose_last(low), g), mask)
    grad = matmul(matmul(transpose_last(l_inv), middle), l_inv)
    return (multiply(add(grad, transpose_last(grad)), 0.5),)


def cholesky(a):
    """The lower Cholesky factor ``L`` (``a = L L^T``) of symmetric
    positive-definite float ``a`` (..., n, n); numpy reads its lower triangle.
    The gradient is symmetrized (for symmetric perturbations).

    Raises:
        ValueError: non-square input; numpy's LinAlgError for matrices that are
            not positive definite (at run time).
    """
    return apply("Cholesky", a)


def _eigh_infer(a):
    shape, dtype = _square(a)
    return [(None if shape is None else shape[:-1], dtype), (shape, dtype)]


@register_op("Eigh", _eigh_infer, num_outputs=2)
def _eigh(xp, a):
    w, v = xp.linalg.eigh(a)
    return w, v


@register_gradient("Eigh")
def _eigh_grad(node, gw, gv):
    # A = V diag(w) V^T: dA = V (diag(gw) + F o (V^T gv)) V^T, F_ij = 1/(w_j - w_i)
    # off the diagonal (distinct eigenvalues), then symmetrized.
    w, v = node.outputs
    n = v.shape[-1]
    inner = None
    if gw is not None:
        inner = multiply(expand_dims(gw, -1), np.eye(n, dtype=v.dtype))
    if gv is not None:
        diff = add(expand_dims(w, -2), multiply(expand_dims(w, -1), -1.0))
        off = np.eye(n, dtype=bool)
        safe = where(off, np.ones((n, n), v.dtype), diff)
        f = where(off, np.zeros((n, n), v.dtype), divide(1.0, safe))
        term = multiply(f, matmul(transpose_last(v), gv))
        inner = term if inner is None else add(inner, term)
    grad = matmul(matmul(v, inner), transpose_last(v))
    return (multiply(add(grad, transpose_last(grad)), 0.5),)


def eigh(a):
    """(eigenvalues ascending (..., n), eigenvectors as columns (..., n, n))
    of symmetric float ``a`` (numpy reads its lower triangle). The gradient
    assumes distinct eigenvalues and is symmetrized.

    Raises:
        ValueError: non-square input.
    """
    return apply("Eigh", a)


def _lad_infer(a):
    shape, dtype = _square(a)
    return (None if shape is None else shape[:-2]), dtype


@register_op("LogAbsDet", _lad_infer)
def _log_abs_det(xp, a):
    return xp.linalg.slogdet(a)[1]


@register_gradient("LogAbsDet")
def _log_abs_det_grad(node, g):
    a = node.inputs[0]
    return (multiply(expand_dims(expand_dims(g, -1), -1), transpose_last(inv(a))),)


def log_abs_det(a):
    """``log|det(a)|`` of float square ``a`` (..., n, n), computed by numpy's
    ``slogdet`` (no overflow); the gradient is ``inv(a)^T``."""
    return apply("LogAbsDet", a)

