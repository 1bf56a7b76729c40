"""Pooling ops (NHWC): max_pool2d, avg_pool2d.

Each kernel loops only over the kh * kw window taps, each tap one strided slice
of the (padded) input; padding follows TensorFlow's SAME/VALID rule, as in
``conv``.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.conv import (
    _crop, _pad, _padded_zeros, _padding, _pair, _plan, _spatial_infer, _taps,
)
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["avg_pool2d", "max_pool2d"]


# -- pooling --------------------------------------------------------------------------
def _pool_infer(what, float_only):
    def infer(x, pool_size, strides, padding):
        if float_only and x.dtype.kind != "f":
            raise TypeError(f"{what} expects a float input. Received: {I.fmt(x)}.")
        n, ho, wo = _spatial_infer(what, x, pool_size, strides, (1, 1), padding)
        return (n, ho, wo, None if x.shape is None else x.shape[3]), x.dtype

    return infer


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


@register_op("MaxPool", _pool_infer("max_pool2d", float_only=False))
def _max_pool(xp, x, pool_size, strides, padding):
    ho, wo, pads = _plan(x.shape, pool_size, strides, (1, 1), padding)
    # SAME pads never exceed the window minus one, so every window holds a real
    # element and the -inf padding never wins.
    xpad = _pad(xp, x, pads, _lowest(x.dtype))
    y = None
    for _, idx in _taps(pool_size, ho, wo, strides):
        y = xpad[idx].copy() if y is None else xp.maximum(y, xpad[idx], out=y)
    return y


@register_gradient("MaxPool")
def _max_pool_grad(node, g):
    return (apply("MaxPoolGrad", node.inputs[0], node.outputs[0], g, **node.attrs),)


def _first_max_masks(xp, xpad, y, pool_size, strides):
    """Per tap, its index and where it holds its window's first maximum (TF's rule)."""
    free = xp.ones(y.shape, dtype=bool)
    for _, idx in _taps(pool_size, y.shape[1], y.shape[2], strides):
        hit = (xpad[idx] == y) & free
        free &= ~hit
        yield idx, hit


def _tiled_max_pool_grad(xp, xpad, y, g, pool_size):
    """MaxPoolGrad for windows that tile the input (strides == pool_size).

    The padded input is viewed as (N, Ho, ph, Wo, pw, C) blocks: one comparison
    with the broadcast maxima marks every maximum, a pass over the ph * pw taps
    of the boolean mask keeps only the first one per window (TF's rule), and one
    broadcast product writes the gradient: no per-tap float temporaries.
    """
    (ph, pw), (n, ho, wo, c) = pool_size, y.shape
    block = xpad[:, :ho * ph, :wo * pw]
    mask = block.reshape(n, ho, ph, wo, pw, c) == y[:, :, None, :, None, :]
    taken = xp.zeros(y.shape, dtype=bool)
    for i in range(ph):
        for j in range(pw):
            tap = mask[:, :, i, :, j, :]
            tap &= ~taken
            taken |= tap
    dx = xp.multiply(mask, g[:, :, None, :, None, :], dtype=g.dtype)
    return dx.reshape(n, ho * ph, wo * pw, c)


@register_op("MaxPoolGrad", lambda x, y, g, **_: (x.shape, g.dtype))
def _max_pool_grad_kernel(xp, x, y, g, pool_size, strides, padding):
    _, _, pads = _plan(x.shape, pool_size, strides, (1, 1), padding)
    xpad = _pad(xp, x, pads, _lowest(x.dtype))
    if tuple(strides) == tuple(pool_size):
        dx = _tiled_max_pool_grad(xp, xpad, y, g, pool_size)
        if dx.shape != xpad.shape:
            full = xp.zeros(xpad.shape, dtype=g.dtype)
            full[:, :dx.shape[1], :dx.shape[2]] = dx
            dx = full
        return _crop(dx, x.shape, pads)
    dx = _padded_zeros(xp, x.shape, pads, g.dtype)
    for idx, hit in _first_max_masks(xp, xpad, y, pool_size, strides):
        dx[idx] += xp.where(hit, g, 0)
    return _crop(dx, x.shape, pads)


@register_gradient("MaxPoolGrad")
def _max_pool_grad_grad(node, gg):
    x, y, _ = node.inputs
    return None, None, apply("MaxPoolGradGrad", x, y, gg, **node.attrs)


@register_op("MaxPoolGradGrad", lambda x, y, gg, **_: (y.shape, gg.dtype))
def _max_pool_grad_grad_kernel(xp, x, y, gg, pool_size, strides, padding):
    # Picks gg at each window's first maximum: the adjoint of MaxPoolGrad in g.
    _, _, pads = _plan(x.shape, pool_size, strides, (1, 1), padding)
    xpad, ggpad = _pad(xp, x, pads, _lowest(x.dtype)), _pad(xp, gg, pads)
    out = xp.zeros(y.shape, dtype=gg.dtype)
    for idx, hit in _first_max_masks(xp, xpad, y, pool_size, strides):
        out += xp.where(hit, ggpad[idx], 0)
    return out


@register_gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(node, ggg):
    x, y, _ = node.inputs
    return None, None, apply("MaxPoolGrad", x, y, ggg, **node.attrs)


def _window_counts(xp, shape, pool_size, strides, padding, dtype):
    """(1, Ho, Wo, 1) counts of the real (unpadded) elements in each window."""
    ho, wo, pads = _plan(shape, pool_size, strides, (1, 1), padding)
    counts = []
    for a, n in ((0, ho), (1, wo)):
        start = xp.arange(n) * strides[a] - pads[a][0]
        counts.append(xp.minimum(start + pool_size[a], shape[1 + a])
                      - xp.maximum(start, 0))
    return (counts[0][:, None] * counts[1][None, :]).astype(dtype)[None, :, :, None]


@register_op("AvgPool", _pool_infer("avg_pool2d", float_only=True))
def _avg_pool(xp, x, pool_size, strides, padding):
    ho, wo, pads = _plan(x.shape, pool_size, strides, (1, 1), padding)
    xpad = _pad(xp, x, pads)
    y = None
    for _, idx in _taps(pool_size, ho, wo, strides):
        y = xpad[idx].copy() if y is None else xp.add(y, xpad[idx], out=y)
    y /= _window_counts(xp, x.shape, pool_size, strides, padding, x.dtype)
    return y


@register_gradient("AvgPool")
def _avg_pool_grad(node, g):
    return (apply("AvgPoolGrad", node.inputs[0], g, **node.attrs),)


# ``x`` gives AvgPoolGrad only the shape of its result (TF's orig_input_shape).
@register_op("AvgPoolGrad", lambda x, g, **_: (x.shape, g.dtype))
def _avg_pool_grad_kernel(xp, x, g, pool_size, strides, padding):
    _, _, pads = _plan(x.shape, pool_size, strides, (1, 1), padding)
    share = g / _window_counts(xp, x.shape, pool_size, strides, padding, g.dtype)
    dx = _padded_zeros(xp, x.shape, pads, g.dtype)
    for _, idx in _taps(pool_size, g.shape[1], g.shape[2], strides):
        dx[idx] += share
    return _crop(dx, x.shape, pads)


@register_gradient("AvgPoolGrad")
def _avg_pool_grad_grad(node, gg):
    # AvgPoolGrad is the adjoint of the linear AvgPool, whose adjoint is AvgPool.
    return None, apply("AvgPool", gg, **node.attrs)


# -- public wrappers ------------------------------------------------------------------
def _pool_attrs(pool_size, strides, padding):
    pool_size = _pair(pool_size, "pool_size")
    strides = pool_size if strides is None else _pair(strides, "strides")
    return {"pool_size": pool_size, "strides": strides, "padding": _padding(padding)}


def max_pool2d(x, pool_size: int | tuple[int, int] = (2, 2),
               strides: int | tuple[int, int] | None = None, padding: str = "valid"):
    """Maximum over sliding windows, NHWC (TF's ``tf.nn.max_pool2d``).

    The gradient flows to one element per window, the first maximum in row-major
    window order when several are equal, as TF's MaxPoolGrad does. With 'same'
    padding the padded positions never win.

    Args:
        x: tensor (batch, height, width, channels), float or integer.
        pool_size: int or pair (ph, pw), the window size.
        strides: int or pair; None means ``pool_size`` (as Keras' MaxPooling2D).
        padding: 'valid' or 'same' (TF's rule, as in ``conv2d``); case-insensitive.

    Returns:
        Tensor (batch, out_height, out_width, channels) of the dtype of x.

    Raises:
        ValueError: x not of rank 4, a 'valid' output that would be empty, or bad
            pool_size, strides or padding.
    """
    return apply("MaxPool", x, **_pool_attrs(pool_size, strides, padding))


def avg_pool2d(x, pool_size: int | tuple[int, int] = (2, 2),
               strides: int | tuple[int, int] | None = None, padding: str = "valid"):
    """Mean over sliding windows, NHWC (TF's ``tf.nn.avg_pool2d``).

    With 'same' padding each mean is over the window's real elements only (the
    padding is not counted), as in TF and Keras' AveragePooling2D. Arguments,
    result and errors as ``max_pool2d``, except that x must be float.

    Raises:
        TypeError: a non-float x.
    """
    return apply("AvgPool", x, **_pool_attrs(pool_size, strides, padding))
