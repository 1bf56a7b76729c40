"""Fused CPU kernels of ``LayerNorm`` and ``LayerNormGrad`` (numba).

Registered with the fusion registry (``register_fused_kernel``): in compiled
plans with fusion on, each op is one compiled loop over the rows of x (the
elements sharing the leading indices; the normalized trailing axes are one
row) instead of the numpy kernels' ~10 array passes and temporaries. A row is
small (64 floats in the transformer benchmark) and stays in cache: its mean
and variance take one pass, accumulated in float64 for float32 inputs too
(see ``_FORWARD``), y a second; the sqrt is taken once per row. Rows are
independent: one ``prange`` over them.

``dgamma`` and ``dbeta`` sum over rows. To keep them independent of the
thread count (``jit``'s rule: no reduction across ``prange`` iterations), the
rows are cut into fixed blocks of ``BLOCK`` rows, each block sums its rows
into its own row of a float64 (blocks, features) buffer, and the blocks are
then added in order.

Inputs and outputs as the numpy kernels of ``ops.normalization``: x
float32/float64 (..., *features), gamma and beta (*features) of x's dtype;
mean and inverse std of shape ``x.shape[:-k] + (1,) * k``. Values equal the
numpy kernels' up to float rounding (float64 row sums here, numpy's pairwise
sums in x's dtype there). Other array types, other dtypes (float16), empty
arrays or non-matching parameter shapes run the numpy kernels. Arrays of
``jit.PARALLEL_MIN`` elements or more run on all threads, smaller ones serially.
"""

from __future__ import annotations

import functools

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.registry import get_op

__all__ = []

# Rows per partial-sum block of dgamma/dbeta: fixed, so the sums do not depend
# on the thread count; 400 blocks for the transformer's 25,600 rows.
BLOCK = 64

# Row sums run in four float64 accumulators per statistic (one add chain each,
# combined in a fixed order): one chain would wait on the adder's latency at
# every element. The statistics take one pass over the row, on x - x[i, 0]
# (the shifted-data algorithm: var = mean(d^2) - mean(d)^2 cancels only as
# much as the row's spread around its first element, at most n times the
# variance, so float64 keeps ~14 digits); y is then computed in x's dtype from
# the stored mean and inverse std, as the numpy kernel computes it.
_FORWARD = '''
def ln_fwd(x, gamma, beta, eps, y, mean, inv):
    n = x.shape[1]
    n4 = n - n % 4
    for i in prange(x.shape[0]):
        k = np.float64(x[i, 0])
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        q0 = 0.0
        q1 = 0.0
        q2 = 0.0
        q3 = 0.0
        for j in range(0, n4, 4):
            d0 = x[i, j] - k
            d1 = x[i, j + 1] - k
            d2 = x[i, j + 2] - k
            d3 = x[i, j + 3] - k
            s0 += d0
            s1 += d1
            s2 += d2
            s3 += d3
            q0 += d0 * d0
            q1 += d1 * d1
            q2 += d2 * d2
            q3 += d3 * d3
        for j in range(n4, n):
            d0 = x[i, j] - k
            s0 += d0
            q0 += d0 * d0
        s = ((s0 + s1) + (s2 + s3)) / n
        var = ((q0 + q1) + (q2 + q3)) / n - s * s
        if var < 0.0:
            var = 0.0
        mean[i] = k + s
        inv[i] = 1.0 / np.sqrt(var + eps)
        m = mean[i]
        r = inv[i]
        for j in range(n):
            y[i, j] = (x[i, j] - m) * r * gamma[j] + beta[j]
'''

# Per row: xhat = (x - mean) inv and g = dy gamma (x's dtype, as numpy's
# kernel); the row means of g and g xhat accumulate in float64 ({T} is x's
# dtype); then dx = (g - mean(g) - xhat mean(g xhat)) inv and the row's terms
# of dbeta (dy) and dgamma (dy xhat) go into its block's partial sums.
_GRAD = '''
def ln_grad(x, gamma, mean, inv, gy, dx, pg, pb, block):
    rows = x.shape[0]
    n = x.shape[1]
    n4 = n - n % 4
    for b in prange(pg.shape[0]):
        for j in range(n):
            pg[b, j] = 0.0
            pb[b, j] = 0.0
        for i in range(b * block, min(rows, (b + 1) * block)):
            m = mean[i]
            r = inv[i]
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            t0 = 0.0
            t1 = 0.0
            t2 = 0.0
            t3 = 0.0
            for j in range(0, n4, 4):
                g0 = gy[i, j] * gamma[j]
                g1 = gy[i, j + 1] * gamma[j + 1]
                g2 = gy[i, j + 2] * gamma[j + 2]
                g3 = gy[i, j + 3] * gamma[j + 3]
                s0 += g0
                s1 += g1
                s2 += g2
                s3 += g3
                t0 += g0 * ((x[i, j] - m) * r)
                t1 += g1 * ((x[i, j + 1] - m) * r)
                t2 += g2 * ((x[i, j + 2] - m) * r)
                t3 += g3 * ((x[i, j + 3] - m) * r)
            for j in range(n4, n):
                g0 = gy[i, j] * gamma[j]
                s0 += g0
                t0 += g0 * ((x[i, j] - m) * r)
            m1 = {T}(((s0 + s1) + (s2 + s3)) / n)
            m2 = {T}(((t0 + t1) + (t2 + t3)) / n)
            for j in range(n):
                h = (x[i, j] - m) * r
                g = gy[i, j]
                pb[b, j] += g
                pg[b, j] += g * h
                dx[i, j] = (g * gamma[j] - m1 - h * m2) * r
'''


def _usable(x, *params):
    """Whether the fused kernels take these arrays (else the numpy kernel)."""
    if type(x) is not np.ndarray or x.dtype not in (np.float32, np.float64) \
            or x.size == 0:
        return False
    k = params[0].ndim
    return x.ndim >= k and all(
        type(p) is np.ndarray and p.dtype == x.dtype and p.shape == x.shape[x.ndim - k:]
        for p in params)


def _rows(a, n):
    return np.ascontiguousarray(a).reshape(-1, n)


def _stats_shape(x, k):
    return x.shape[:x.ndim - k] + (1,) * k


def _forward_factory(xp, attrs):
    if xp is not np or jit.numba_module() is None:
        return None
    kernels = jit.kernels(_FORWARD, "ln_fwd")
    default = functools.partial(get_op("LayerNorm").kernel, np, **attrs)
    eps = float(attrs["epsilon"])

    def run(x, gamma, beta):
        if not _usable(x, gamma, beta):
            return default(x, gamma, beta)
        n = gamma.size
        xr = _rows(x, n)
        y = np.empty(xr.shape, x.dtype)
        mean = np.empty(xr.shape[0], x.dtype)
        inv = np.empty(xr.shape[0], x.dtype)
        jit.launch(kernels, x.size, xr, _rows(gamma, n)[0], _rows(beta, n)[0], eps,
                   y, mean, inv)
        stats = _stats_shape(x, gamma.ndim)
        return y.reshape(x.shape), mean.reshape(stats), inv.reshape(stats)

    return run


def _grad_factory(xp, attrs):
    if xp is not np or jit.numba_module() is None:
        return None
    grads = {dt: jit.kernels(_GRAD.replace("{T}", f"np.{dt.__name__}"), "ln_grad")
             for dt in (np.float32, np.float64)}
    default = functools.partial(get_op("LayerNormGrad").kernel, np, **attrs)

    def run(x, gamma, mean, inv, gy):
        stats = _stats_shape(x, gamma.ndim) if type(x) is np.ndarray else None
        if not (_usable(x, gamma) and _usable(gy, gamma) and gy.shape == x.shape
                and all(type(s) is np.ndarray and s.dtype == x.dtype
                        and s.shape == stats for s in (mean, inv))):
            return default(x, gamma, mean, inv, gy)
        n = gamma.size
        xr = _rows(x, n)
        rows = xr.shape[0]
        blocks = -(-rows // BLOCK)
        dx = np.empty(xr.shape, x.dtype)
        pg = np.empty((blocks, n), np.float64)
        pb = np.empty((blocks, n), np.float64)
        jit.launch(grads[x.dtype.type], x.size, xr, _rows(gamma, n)[0],
                   _rows(mean, 1).reshape(-1), _rows(inv, 1).reshape(-1),
                   _rows(gy, n), dx, pg, pb, BLOCK)
        # Blocks added in order: the same sums for any thread count.
        dgamma = pg.sum(axis=0).astype(x.dtype).reshape(gamma.shape)
        dbeta = pb.sum(axis=0).astype(x.dtype).reshape(gamma.shape)
        return dx.reshape(x.shape), dgamma, dbeta

    return run


fusion.register_fused_kernel("LayerNorm", _forward_factory)
fusion.register_fused_kernel("LayerNormGrad", _grad_factory)
