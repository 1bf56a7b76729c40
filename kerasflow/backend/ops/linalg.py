"""Linear algebra: matmul (batched, with broadcasting over leading dims),
tensordot built on it, inverse, determinant and solve, and the matrix
factorizations with registered gradients: ``cholesky`` (Murray, 2016,
"Differentiation of the Cholesky decomposition", as TF's rule), ``eigh``
(eigenvalues and eigenvectors of symmetric matrices; Giles, 2008), ``qr``
(reduced, m >= n; TF's rule after Walter & Lehmann, 2018), ``svd`` (the
singular values' gradient ``U diag(g) V^T``) and ``log_abs_det`` (the log of
``|det|``, the gradient ``inv(a)^T``).

Factorization kernels are numpy's (batched over leading axes); shapes
(..., n, n).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.arraymath import tril
from kerasflow.backend.ops.gemm import matmul_into
from kerasflow.backend.ops.math import add, divide, multiply, subtract, where
from kerasflow.backend.ops.shape import expand_dims, reshape, transpose
from kerasflow.backend.registry import apply, register_gradient, register_op

# cholesky, eigh, log_abs_det, qr and svd are registered here too; kerasflow.ops
# exports them (Keras 3's names), the backend namespace does not.
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
    # The array's own swapaxes: a third of xp.swapaxes's Python wrapper cost.
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
    if xp is np:
        return matmul_into(a, b, out)   # never wakes BLAS's threads (gemm.py)
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


# -- factorizations ------------------------------------------------------------------
def _float(a):
    if a.dtype.kind != "f":
        raise TypeError(f"expects a float input. Received: {I.fmt(a)}.")


def _square(a, *_, **__):
    """``_square_infer`` of float matrices, square where both sizes are known."""
    if a.shape is None or len(a.shape) < 2 or None not in a.shape[-2:]:
        _square_infer(a)
    _float(a)
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
    _float(a)
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
