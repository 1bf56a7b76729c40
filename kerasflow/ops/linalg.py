"""``kerasflow.ops.linalg``: Keras 3's ``keras.ops.linalg``.

``inv``, ``det``, ``solve``, ``cholesky``, ``eigh``, ``qr`` and ``svd`` are
backend primitives with gradients; ``norm`` (elementwise ops and reductions;
matrix 2-norms and nuclear norms by SVD), ``cholesky_inverse``,
``solve_triangular`` and ``slogdet``/``logdet`` are composed from them
(differentiable); ``eig``, ``lstsq``, ``lu_factor``, ``pinv`` and
``matrix_rank`` are numpy's LAPACK results (no gradient); ``jvp`` gives
forward-mode products from two reverse passes.

Inputs are float (..., m, n) matrices; functions without a gradient still run
in graphs (one node each). Source: Keras 3's ``keras.ops.linalg`` (numpy
backend), NumPy/SciPy semantics.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.ops import linalg as _linalg
from kerasflow.backend.ops.npcall import host, numpy_call, register_kernel
from kerasflow.ops.common import dtype_of, is_sym, rank, tensor, to_float

__all__ = ["cholesky", "cholesky_inverse", "det", "eig", "eigh", "inv", "jvp",
           "logdet", "lstsq", "lu_factor", "matrix_rank", "norm", "pinv", "qr",
           "slogdet", "solve", "solve_triangular", "svd"]

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
    n = rank(x)
    if axis is None:
        axis = tuple(range(n)) if n == 2 else None
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
    n = rank(x)
    r, c = (int(a) % n for a in axis)
    if ord in (1, -1, np.inf, -np.inf):
        # Column sums (ord +-1) or row sums (ord +-inf) of |x|, then max/min.
        summed_axis, pick_axis = (r, c) if ord in (1, -1) else (c, r)
        sums = K.sum(K.abs(x), axis=summed_axis, keepdims=True)
        pick = K.max if ord > 0 else K.min
        out = pick(sums, axis=pick_axis, keepdims=True)
    elif ord in (2, -2, "nuc"):
        rest = [a for a in range(n) if a not in (r, c)]
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


def cholesky(a, upper=False):
    """The Cholesky factor of symmetric positive-definite ``a``: lower ``L``
    with ``a = L L^T`` (``upper``: ``L^T``). Differentiable."""
    low = _linalg.cholesky(to_float(a))
    return K.transpose_last(low) if upper else low


def solve_triangular(a, b, lower=False):
    """``x`` with ``a x = b`` reading only ``a``'s lower (``lower``) or upper
    triangle; ``b`` (..., n, k) or (..., n). Differentiable (a solve of the
    masked triangle)."""
    a, b = to_float(a), tensor(b)
    b = K.cast(b, dtype_of(a).name) if dtype_of(b) != dtype_of(a) else b
    t = K.tril(a) if lower else K.triu(a)
    if rank(b) == rank(a) - 1:
        return K.squeeze(K.solve(t, K.expand_dims(b, -1)), -1)
    return K.solve(t, b)


def cholesky_inverse(a, upper=False):
    """The inverse of ``L L^T`` given its Cholesky factor ``a`` (``upper``:
    ``a = L^T``). Differentiable."""
    a = to_float(a)
    n = a.shape[-1]
    eye = np.eye(n, dtype=dtype_of(a))
    inv_chol = solve_triangular(a, eye, lower=not upper)
    if upper:
        return K.matmul(inv_chol, K.transpose_last(inv_chol))
    return K.matmul(K.transpose_last(inv_chol), inv_chol)


def eigh(x):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric ``x``.
    Differentiable for distinct eigenvalues."""
    return _linalg.eigh(to_float(x))


def eig(x):
    """(eigenvalues, eigenvectors) of a general square ``x``: complex arrays
    (``numpy.linalg.eig``; eager, no gradient)."""
    x = to_float(x)
    return numpy_call("linalg.eig", x, num_outputs=2)


def qr(x, mode="reduced"):
    """(Q, R) with ``x = Q R`` (``mode`` 'reduced' or 'complete');
    differentiable for reduced mode with m >= n.

    Raises:
        ValueError: another mode.
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"`mode` argument value not supported. Expected one of "
                         f"{{'reduced', 'complete'}}. Received: mode={mode}")
    return _linalg.qr(to_float(x), mode=mode)


def svd(x, full_matrices=True, compute_uv=True):
    """(U, S, V^H) with ``x = U diag(S) V^H``, or the singular values alone
    (``compute_uv=False``); differentiable through ``S``."""
    u, s, vh = _linalg.svd(to_float(x), full_matrices=bool(full_matrices))
    return s if not compute_uv else (u, s, vh)


def pinv(x, rcond=None):
    """The Moore-Penrose pseudo-inverse (``numpy.linalg.pinv``; no gradient)."""
    kw = {} if rcond is None else {"rcond": float(rcond)}
    return numpy_call("linalg.pinv", to_float(x), **kw)


def matrix_rank(x, tol=None):
    """The rank by SVD (int32; no gradient).

    Raises:
        ValueError: rank < 2 input.
    """
    x = tensor(x)
    if rank(x) < 2:
        raise ValueError(f"Expected input to have rank >= 2. Received input with "
                         f"shape {tuple(x.shape)}.")
    kw = {} if tol is None else {"tol": float(tol)}
    return K.cast(numpy_call("linalg.matrix_rank", x, **kw), "int32")


@register_kernel("lstsq")
def _lstsq(xp, a, b, rcond=None):
    return xp.linalg.lstsq(a, b, rcond=rcond)[0]


def lstsq(a, b, rcond=None):
    """The least-squares solution ``x`` of ``a x = b`` (``numpy.linalg.lstsq``;
    no gradient)."""
    return numpy_call("kf.lstsq", to_float(a), to_float(b), rcond=rcond)


@register_kernel("lu_factor")
def _lu_factor(xp, a):
    a = np.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = np.array(a, copy=True).reshape((-1, m, n))
    piv = np.zeros((lu.shape[0], k), np.int32)
    for b in range(lu.shape[0]):  # LAPACK getrf: partial pivoting, row swaps
        t = lu[b]
        for j in range(k):
            p = j + int(np.argmax(np.abs(t[j:, j])))
            piv[b, j] = p
            if p != j:
                t[[j, p]] = t[[p, j]]
            if t[j, j] != 0:
                t[j + 1:, j] /= t[j, j]
            t[j + 1:, j + 1:] -= np.outer(t[j + 1:, j], t[j, j + 1:])
    return lu.reshape(a.shape), piv.reshape(a.shape[:-2] + (k,))


def lu_factor(x):
    """(LU, pivots) of ``x`` as LAPACK's getrf / ``scipy.linalg.lu_factor``:
    unit-lower L below the diagonal and U on and above it in one matrix, and
    the row swapped with each row (int32). No gradient."""
    return numpy_call("kf.lu_factor", to_float(x), num_outputs=2)


def slogdet(x):
    """(sign, log|det|) of square ``x``; ``log|det|`` is differentiable."""
    x = to_float(x)
    return K.sign(K.det(x)), _linalg.log_abs_det(x)


def logdet(x):
    """``log(det(x))`` of a matrix with positive determinant (NaN for a
    negative one), via ``slogdet``. Differentiable."""
    sign, lad = slogdet(x)
    return K.where(K.greater(sign, 0), lad, K.zeros_like(lad) + np.nan)


def jvp(fun, primals, tangents, has_aux=False):
    """Forward-mode product ``(fun(*primals), J(primals) @ tangents)``,
    computed on the graph backend by two reverse passes: ``u -> J^T u``, then
    the gradient of ``<J^T u, t>`` w.r.t. ``u`` (eager: concrete primals).

    Args:
        fun: function of tensors returning a tensor (or ``(out, aux)`` with
            ``has_aux``).
        primals, tangents: sequences of float arrays of matching shapes.

    Returns:
        ``(out, tangent_out)``, or ``(out, tangent_out, aux)`` with ``has_aux``.

    Raises:
        ValueError: symbolic primals.
    """
    if any(is_sym(p) for p in primals):
        raise ValueError("jvp runs on concrete primals (arrays) here. Received "
                         "symbolic tensors.")
    prims = [host(p) for p in primals]
    phs = [K.placeholder(p.dtype.name, p.shape) for p in prims]
    result = fun(*phs)
    out, aux = (result if has_aux else (result, None))
    u = K.placeholder(np.dtype(out.dtype).name, tuple(out.shape))
    grads = K.gradients(K.sum(out * u), phs)
    inner = K.add_n([K.sum(g * host(t).astype(np.dtype(g.dtype)))
                     for g, t in zip(grads, tangents) if g is not None])
    tangent_out = K.gradients(inner, [u])[0]
    fetch = [out, tangent_out if tangent_out is not None else K.zeros_like(out)]
    if has_aux:
        fetch.append(aux)
    values = K.Function(phs + [u], fetch)(*prims, np.zeros(
        tuple(out.shape), np.dtype(out.dtype)))
    return tuple(values)
