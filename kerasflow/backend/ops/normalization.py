"""Fused normalization ops: batch normalization in training mode (TF's
``FusedBatchNorm``) and layer normalization over trailing axes.

``fused_batch_norm(x, gamma, beta, axes, epsilon)`` normalizes ``x`` with the
mean and (biased) variance over ``axes`` in one kernel and returns them too,
for the moving statistics. Its gradient is one kernel as well (Ioffe & Szegedy
2015, section 3): with ``xhat = (x - mean) / sqrt(var + eps)`` and N the
reduced count, ``dbeta = sum(dy)``, ``dgamma = sum(dy * xhat)`` and
``dx = gamma / sqrt(var + eps) / N * (N dy - dbeta - xhat dgamma)``: about 5
passes over x instead of the ~12 of the same formula built from primitives.

``fused_layer_norm(x, gamma, beta, axes, epsilon)`` normalizes each row of
``x`` over its trailing ``axes`` (Ba et al. 2016, "Layer Normalization") and
returns the row means and inverse standard deviations for its gradient, one
``LayerNormGrad`` op (per row, with ``g = dy * gamma``:
``dx = inv * (g - mean(g) - xhat * mean(g * xhat))``; ``dgamma``/``dbeta``
sum ``dy * xhat`` / ``dy`` over the rows), itself differentiable with graph
ops (second order). ``layer_norm_fast`` registers fused numba kernels of both.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops.math import add, multiply, negative, subtract
from kerasflow.backend.ops.reduction import mean as _mean
from kerasflow.backend.ops.reduction import sum as _sum
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["fused_batch_norm", "fused_layer_norm"]


def _keep_shape(shape, axes):
    return tuple(1 if a in axes else d for a, d in enumerate(shape))


def _infer(x, gamma, beta, axes, epsilon):
    if x.dtype.kind != "f":
        raise TypeError(f"fused_batch_norm expects a float x. Received: "
                        f"dtype={x.dtype.name}.")
    if x.shape is not None and any(not 0 <= a < len(x.shape) for a in axes):
        raise ValueError(f"fused_batch_norm axes {axes} out of range for x of "
                         f"rank {len(x.shape)}.")
    return [(x.shape, x.dtype), (gamma.shape, x.dtype), (gamma.shape, x.dtype)]


def _stats(xp, x, axes):
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = xp.multiply(centered, centered).mean(axis=axes, keepdims=True)
    return centered, mean, var


@register_op("FusedBatchNorm", _infer, num_outputs=3)
def _fused_batch_norm(xp, x, gamma, beta, axes, epsilon):
    centered, mean, var = _stats(xp, x, axes)
    keep = mean.shape
    scale = gamma.reshape(keep) / xp.sqrt(var + epsilon)
    centered *= scale
    centered += beta.reshape(keep)
    return centered, mean.reshape(gamma.shape), var.reshape(gamma.shape)


@register_gradient("FusedBatchNorm")
def _fused_batch_norm_grad(node, gy, g_mean, g_var):
    for g in (g_mean, g_var):
        if g.node.op != "ZerosLike":
            raise NotImplementedError(
                "fused_batch_norm: gradients through its mean/variance outputs "
                "are not implemented (they feed the moving statistics only).")
    x, gamma, _ = node.inputs
    _, mean, var = node.outputs
    return apply("FusedBatchNormGrad", x, gamma, mean, var, gy, **node.attrs)


def _grad_infer(x, gamma, mean, var, gy, axes, epsilon):
    return [(x.shape, x.dtype), (gamma.shape, x.dtype), (gamma.shape, x.dtype)]


@register_op("FusedBatchNormGrad", _grad_infer, num_outputs=3)
def _fused_batch_norm_grad_kernel(xp, x, gamma, mean, var, gy, axes, epsilon):
    keep = _keep_shape(x.shape, axes)
    inv = 1.0 / xp.sqrt(var.reshape(keep) + epsilon)
    xhat = x - mean.reshape(keep)
    xhat *= inv
    count = x.size // max(int(inv.size), 1)
    dbeta = gy.sum(axis=axes, keepdims=True)
    dgamma = xp.multiply(gy, xhat).sum(axis=axes, keepdims=True)
    # dx = gamma * inv / N * (N gy - dbeta - xhat dgamma), built in xhat's buffer.
    xhat *= dgamma
    xhat += dbeta
    xhat *= -1.0 / count
    xhat += gy
    xhat *= gamma.reshape(keep) * inv
    return (xhat.astype(x.dtype, copy=False), dgamma.reshape(gamma.shape),
            dbeta.reshape(gamma.shape))


def fused_batch_norm(x, gamma, beta, axes, epsilon=1e-3):
    """Batch-normalizes ``x`` over ``axes`` with batch statistics, in one op.

    Args:
        x: float tensor.
        gamma, beta: scale and offset of the shape of x without ``axes``
            (e.g. (channels,) for axes (0, 1, 2) of NHWC).
        axes: tuple of the reduced axes (non-negative ints).
        epsilon: added to the variance.

    Returns:
        (y, mean, variance): y of x's shape; mean and (biased) variance of
        gamma's shape.

    Raises:
        TypeError: a non-float x. ValueError: axes out of range.
    """
    return apply("FusedBatchNorm", x, gamma, beta,
                 axes=tuple(int(a) for a in axes), epsilon=float(epsilon))


# -- layer normalization over trailing axes --------------------------------------------
def _wide(dtype):
    """The dtype the statistics are computed in: float16 sums overflow."""
    return np.promote_types(dtype, np.float32)


def _ln_infer(x, gamma, beta, axes, epsilon):
    if x.dtype.kind != "f":
        raise TypeError(f"fused_layer_norm expects a float x. Received: "
                        f"dtype={x.dtype.name}.")
    k = len(axes)
    if x.shape is not None:
        rank = len(x.shape)
        if k == 0 or tuple(axes) != tuple(range(rank - k, rank)):
            raise ValueError(f"fused_layer_norm normalizes trailing axes: expected "
                             f"axes ending in {rank - 1} with no gaps for x of rank "
                             f"{rank}. Received: axes={tuple(axes)}.")
    for label, p in (("gamma", gamma), ("beta", beta)):
        if p.dtype != x.dtype:
            raise TypeError(f"fused_layer_norm expects {label} of x's dtype "
                            f"{x.dtype.name}. Received: {label}.dtype="
                            f"{p.dtype.name}.")
        if (p.shape is None or None in p.shape or len(p.shape) != k or (
                x.shape is not None and any(
                    d is not None and d != e for d, e in zip(x.shape[-k:], p.shape)))):
            raise ValueError(f"fused_layer_norm expects {label} of the (known) shape "
                             f"of x's normalized axes. Received: {label}.shape="
                             f"{p.shape}, x.shape={x.shape}, axes={tuple(axes)}.")
    stats = None if x.shape is None else x.shape[:-k] + (1,) * k
    return [(x.shape, x.dtype), (stats, x.dtype), (stats, x.dtype)]


@register_op("LayerNorm", _ln_infer, num_outputs=3)
def _layer_norm(xp, x, gamma, beta, axes, epsilon):
    wide = _wide(x.dtype)
    xw = x.astype(wide, copy=False)
    mean = xw.mean(axis=axes, keepdims=True)
    y = xw - mean
    var = xp.multiply(y, y).mean(axis=axes, keepdims=True)
    inv = xp.reciprocal(xp.sqrt(var + epsilon))
    y *= inv
    y *= gamma
    y += beta
    dt = x.dtype
    return (y.astype(dt, copy=False), mean.astype(dt, copy=False),
            inv.astype(dt, copy=False))


def _is_zeros(g):
    """Whether ``g`` is the zeros autodiff passes for an unused output."""
    return g.node.op == "ZerosLike"


def _over_rows(t, axes):
    """``t`` summed over the axes before the normalized (trailing) ``axes``."""
    lead = tuple(range(axes[0]))
    return _sum(t, axis=lead) if lead else t


@register_gradient("LayerNorm")
def _layer_norm_grad_rule(node, gy, g_mean, g_inv):
    x, gamma, _ = node.inputs
    _, mean, inv = node.outputs
    axes = node.attrs["axes"]
    dx, dgamma, dbeta = apply("LayerNormGrad", x, gamma, mean, inv, gy, axes=axes)
    if not (_is_zeros(g_mean) and _is_zeros(g_inv)):
        # The statistics' own gradients (they feed LayerNormGrad only when the
        # layer uses them): d mean / dx = 1 / N, d inv / dx = -inv^2 xhat / N.
        xhat = multiply(subtract(x, mean), inv)
        extra = subtract(g_mean, multiply(multiply(g_inv, multiply(inv, inv)), xhat))
        dx = add(dx, multiply(extra, 1.0 / int(np.prod(gamma.shape))))
    return dx, dgamma, dbeta


def _ln_grad_infer(x, gamma, mean, inv, gy, axes):
    return [(x.shape, x.dtype), (gamma.shape, x.dtype), (gamma.shape, x.dtype)]


@register_op("LayerNormGrad", _ln_grad_infer, num_outputs=3)
def _layer_norm_grad(xp, x, gamma, mean, inv, gy, axes):
    wide = _wide(x.dtype)
    lead = tuple(range(axes[0]))
    xhat = xp.subtract(x, mean, dtype=wide)
    xhat *= inv
    g = gy.astype(wide, copy=False)
    dbeta = g.sum(axis=lead)
    dgamma = xp.multiply(g, xhat).sum(axis=lead)
    g = xp.multiply(g, gamma)
    m1 = g.mean(axis=axes, keepdims=True)
    m2 = xp.multiply(g, xhat).mean(axis=axes, keepdims=True)
    # dx = inv * (g - mean(g) - xhat * mean(g * xhat)), built in g's buffer.
    xhat *= m2
    g -= m1
    g -= xhat
    g *= inv
    dt = x.dtype
    return (g.astype(dt, copy=False), dgamma.astype(dt, copy=False),
            dbeta.astype(dt, copy=False))


@register_gradient("LayerNormGrad")
def _layer_norm_grad_grad(node, a, b, c):
    # Second order. Per row, with r = inv, gg = gy * gamma and the incoming
    # gradients a (of dx), b (of dgamma), c (of dbeta), the differentiated
    # quantity is  r sum(gg q) + sum(b gy xhat) + sum(c gy)  with
    # q = a - mean(a) - xhat mean(a xhat); x enters through xhat and r, and
    # xhat = (x - mean) r is undone as the first-order rule undoes it, plus
    # the direct path d r / dx = -r^2 xhat / N. mean and inv are functions of
    # x already counted here, so they get no gradient of their own.
    x, gamma, mean, inv, gy = node.inputs
    axes = node.attrs["axes"]

    def row_mean(t):
        return _mean(t, axis=axes, keepdims=True)

    xhat = multiply(subtract(x, mean), inv)
    gg = multiply(gy, gamma)
    a_c = subtract(a, row_mean(a))
    p = row_mean(multiply(a, xhat))
    q = subtract(a_c, multiply(xhat, p))
    s = row_mean(multiply(gg, xhat))
    g_gy = multiply(multiply(inv, gamma), q)
    h = negative(multiply(inv, add(multiply(gg, p), multiply(a, s))))
    if not _is_zeros(b):
        g_gy = add(g_gy, multiply(b, xhat))
        h = add(h, multiply(b, gy))
    if not _is_zeros(c):
        g_gy = add(g_gy, c)
    g_gamma = _over_rows(multiply(multiply(inv, gy), q), axes)
    k = subtract(row_mean(multiply(gg, a_c)), multiply(s, p))
    h = subtract(subtract(h, row_mean(h)), multiply(xhat, row_mean(multiply(h, xhat))))
    g_x = subtract(multiply(inv, h), multiply(multiply(multiply(inv, inv), k), xhat))
    return g_x, g_gamma, None, None, g_gy


def fused_layer_norm(x, gamma, beta, axes, epsilon=1e-3):
    """Layer-normalizes ``x`` over its trailing ``axes``, in one op (Ba et al.
    2016, "Layer Normalization"; Keras 3's ``LayerNormalization`` formula).

    ``y = (x - mean) / sqrt(var + epsilon) * gamma + beta`` with the mean and
    biased variance of each row (the elements sharing the leading indices).
    The statistics are computed in at least float32 (float64 for float64 x).
    The gradient is one ``LayerNormGrad`` op, itself differentiable.

    Args:
        x: float tensor of rank >= len(axes).
        gamma, beta: scale and offset of x's dtype and of the (known) shape of
            the normalized axes, ``x.shape[-len(axes):]`` (ones and zeros for a
            layer without them).
        axes: the normalized axes, the last ``k`` axes of x in order
            (negative ones count from the end when x's rank is known).
        epsilon: added to the variance.

    Returns:
        (y, mean, inv_std): y of x's shape and dtype; the row means and
        ``1 / sqrt(var + epsilon)``, of shape ``x.shape[:-k] + (1,) * k``.

    Raises:
        TypeError: a non-float x, or gamma/beta of another dtype.
        ValueError: axes that are not x's trailing axes; gamma/beta of another
            shape than the normalized axes.
    """
    shape = getattr(x, "shape", None)
    rank = None if shape is None else len(shape)
    axes = tuple(int(a) % rank if rank and a < 0 else int(a) for a in axes)
    return apply("LayerNorm", x, gamma, beta, axes=axes, epsilon=float(epsilon))
