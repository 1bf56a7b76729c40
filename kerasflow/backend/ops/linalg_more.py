"""Matrix factorizations with registered gradients: ``cholesky`` (Murray,
2016, "Differentiation of the Cholesky decomposition", as TF's rule),
``eigh`` (eigenvalues and eigenvectors of symmetric matrices; Giles, 2008),
``qr`` (reduced, m >= n; TF's rule after Walter & Lehmann, 2018), ``svd``
(the singular values' gradient ``U diag(g) V^T``) and ``log_abs_det`` (the
log of ``|det|``, the gradient ``inv(a)^T``).

Kernels are numpy's (batched over leading axes); shapes (..., n, n).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.linalg import inv, matmul, transpose_last
from kerasflow.backend.ops.arraymath import tril
from kerasflow.backend.ops.linalg import solve
from kerasflow.backend.ops.math import add, divide, multiply, subtract, where
from kerasflow.backend.ops.shape import expand_dims
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["cholesky", "eigh", "log_abs_det", "qr", "svd"]


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



def _matrix(a, *_, **__):
    if a.shape is not None and len(a.shape) < 2:
        raise ValueError(f"expects matrices (..., m, n). Received: {I.fmt(a)}.")
    if a.dtype.kind != "f":
        raise TypeError(f"expects a float input. Received: {I.fmt(a)}.")
    return a.shape, a.dtype


def _qr_infer(a, mode="reduced"):
    shape, dtype = _matrix(a)
    if shape is None:
        return [(None, dtype), (None, dtype)]
    m, n = shape[-2:]
    k = m if mode == "complete" or None in (m, n) else min(m, n)
    return [(shape[:-2] + (m, k), dtype), (shape[:-2] + (k, n), dtype)]


@register_op("Qr", _qr_infer, num_outputs=2)
def _qr(xp, a, mode="reduced"):
    q, r = xp.linalg.qr(a, mode=mode)
    return q, r


def _times_r_inv_t(x, r):
    """``x R^{-T}`` for square upper-triangular ``r``."""
    return transpose_last(solve(r, transpose_last(x)))


@register_gradient("Qr")
def _qr_grad(node, gq, gr):
    a = node.inputs[0]
    q, r = node.outputs
    m, n = a.shape[-2:]
    if m is None or n is None or m < n or (node.attrs["mode"] == "complete" and m != n):
        raise NotImplementedError(f"The gradient of qr is implemented for reduced "
                                  f"mode with m >= n. Received: shape={a.shape}, "
                                  f"mode={node.attrs['mode']!r}.")
    gq = multiply(q, 0.0) if gq is None else gq
    gr = multiply(r, 0.0) if gr is None else gr
    qdq = matmul(transpose_last(q), gq)
    rdr = matmul(r, transpose_last(gr))
    low = tril(subtract(add(qdq, rdr), add(transpose_last(qdq), transpose_last(rdr))),
               -1)
    grad_a = matmul(q, add(gr, _times_r_inv_t(low, r)))
    grad_b = _times_r_inv_t(subtract(gq, matmul(q, qdq)), r)
    return (add(grad_a, grad_b),)


def qr(a, mode="reduced"):
    """(Q, R) with ``a = Q R`` (numpy's LAPACK result) for float ``a`` (..., m,
    n). Differentiable in reduced mode with m >= n (and complete with m = n).

    Raises:
        ValueError: rank < 2. NotImplementedError: (gradient) other shapes.
    """
    return apply("Qr", a, mode=mode)


def _svd_infer(a, full_matrices=True):
    shape, dtype = _matrix(a)
    if shape is None:
        return [(None, dtype)] * 3
    m, n = shape[-2:]
    k = None if None in (m, n) else min(m, n)
    b = shape[:-2]
    mu, nv = (m, n) if full_matrices else (k, k)
    return [(b + (m, mu), dtype), (b + (k,), dtype), (b + (nv, n), dtype)]


@register_op("Svd", _svd_infer, num_outputs=3)
def _svd(xp, a, full_matrices=True):
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _unused(g):
    """Whether an output's gradient is the zeros autodiff gives unused outputs."""
    return g is None or getattr(getattr(g, "node", None), "op", None) == "ZerosLike"


@register_gradient("Svd")
def _svd_grad(node, gu, gs, gvh):
    if not (_unused(gu) and _unused(gvh)):
        raise NotImplementedError("The gradient of svd is implemented for the "
                                  "singular values only (not through U or V).")
    u, _, vh = node.outputs
    k = node.outputs[1].shape[-1]
    uk = u if u.shape[-1] == k else apply("StridedSlice", u, key=(
        ("e",), ("s", None, None, None), ("s", None, k, None)))
    vk = vh if vh.shape[-2] == k else apply("StridedSlice", vh, key=(
        ("e",), ("s", None, k, None), ("s", None, None, None)))
    return (matmul(multiply(uk, expand_dims(gs, -2)), vk),)


def svd(a, full_matrices=True):
    """(U, S, V^H) with ``a = U diag(S) V^H`` for float ``a`` (..., m, n).
    Differentiable through the singular values ``S``.

    Raises:
        ValueError: rank < 2. NotImplementedError: (gradient) through U or V.
    """
    return apply("Svd", a, full_matrices=bool(full_matrices))
