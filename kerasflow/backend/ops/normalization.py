"""Fused batch normalization (training mode): TF's ``FusedBatchNorm``.

``fused_batch_norm(x, gamma, beta, axes, epsilon)`` normalizes ``x`` with the
mean and (biased) variance over ``axes`` in one kernel and returns them too,
for the moving statistics. Its gradient is one kernel as well (Ioffe & Szegedy
2015, section 3): with ``xhat = (x - mean) / sqrt(var + eps)`` and N the
reduced count, ``dbeta = sum(dy)``, ``dgamma = sum(dy * xhat)`` and
``dx = gamma / sqrt(var + eps) / N * (N dy - dbeta - xhat dgamma)``: about 5
passes over x instead of the ~12 of the same formula built from primitives.
"""

from __future__ import annotations

from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["fused_batch_norm"]


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
