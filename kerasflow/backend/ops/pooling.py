"""Pooling ops (NWC / NHWC / NDHWC): max_pool1d, avg_pool1d, max_pool2d,
avg_pool2d, max_pool3d, avg_pool3d.

Each kernel works for any number of spatial axes and loops only over the
window taps, each tap one strided slice
of the (padded) input; padding follows TensorFlow's SAME/VALID rule, as in
``conv``.
"""

from __future__ import annotations

import itertools

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.conv import (
    _crop, _pad, _padded_zeros, _padding, _plan, _rank_check, _single,
    _spatial_infer, _taps, _tuple,
)
from kerasflow.backend.ops.shape import expand_dims, squeeze
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d",
           "max_pool3d"]


# -- pooling --------------------------------------------------------------------------
def _pool_infer(what, rank, float_only):
    def infer(x, pool_size, strides, padding):
        if float_only and x.dtype.kind != "f":
            raise TypeError(f"{what} expects a float input. Received: {I.fmt(x)}.")
        n, *out = _spatial_infer(what, x, pool_size, strides, (1,) * rank, padding)
        return (n, *out, None if x.shape is None else x.shape[-1]), x.dtype

    return infer


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool(xp, x, pool_size, strides, padding):
    out, pads = _plan(x.shape, pool_size, strides, (1,) * len(pool_size), padding)
    # SAME pads never exceed the window minus one, so every window holds a real
    # element and the -inf padding never wins.
    xpad = _pad(xp, x, pads, _lowest(x.dtype))
    y = None
    for _, idx in _taps(pool_size, out, strides):
        y = xpad[idx].copy() if y is None else xp.maximum(y, xpad[idx], out=y)
    return y


def _max_pool_grad(node, g):
    return (apply(node.op + "Grad", node.inputs[0], node.outputs[0], g,
                  **node.attrs),)


def _first_max_masks(xp, xpad, y, pool_size, strides):
    """Per tap, its index and where it holds its window's first maximum (TF's rule)."""
    free = xp.ones(y.shape, dtype=bool)
    for _, idx in _taps(pool_size, y.shape[1:-1], strides):
        hit = (xpad[idx] == y) & free
        free &= ~hit
        yield idx, hit


def _tiled_max_pool_grad(xp, xpad, y, g, pool_size):
    """MaxPoolGrad for windows that tile the input (strides == pool_size).

    The padded input is viewed as (N, O1, p1, O2, p2, ..., C) blocks: one
    comparison with the broadcast maxima marks every maximum, a pass over the
    window taps of the boolean mask keeps only the first one per window (TF's
    rule), and one broadcast product writes the gradient: no per-tap float
    temporaries.
    """
    n, *out, c = y.shape
    block = xpad[(slice(None),) + tuple(slice(0, o * p) for o, p in
                                        zip(out, pool_size))]
    blocked = (n, *(v for o, p in zip(out, pool_size) for v in (o, p)), c)
    spread = (slice(None),) + (slice(None), None) * len(out) + (slice(None),)
    mask = block.reshape(blocked) == y[spread]
    taken = xp.zeros(y.shape, dtype=bool)
    for tap in itertools.product(*(range(p) for p in pool_size)):
        sel = mask[(slice(None),) + tuple(v for t in tap for v in (slice(None), t))]
        sel &= ~taken
        taken |= sel
    dx = xp.multiply(mask, g[spread], dtype=g.dtype)
    return dx.reshape((n, *(o * p for o, p in zip(out, pool_size)), c))


def _max_pool_grad_kernel(xp, x, y, g, pool_size, strides, padding):
    _, pads = _plan(x.shape, pool_size, strides, (1,) * len(pool_size), padding)
    xpad = _pad(xp, x, pads, _lowest(x.dtype))
    if tuple(strides) == tuple(pool_size):
        dx = _tiled_max_pool_grad(xp, xpad, y, g, pool_size)
        if dx.shape != xpad.shape:
            full = xp.zeros(xpad.shape, dtype=g.dtype)
            full[tuple(slice(0, s) for s in dx.shape)] = dx
            dx = full
        return _crop(dx, x.shape, pads)
    dx = _padded_zeros(xp, x.shape, pads, g.dtype)
    for idx, hit in _first_max_masks(xp, xpad, y, pool_size, strides):
        dx[idx] += xp.where(hit, g, 0)
    return _crop(dx, x.shape, pads)


def _max_pool_grad_grad(node, gg):
    x, y, _ = node.inputs
    return None, None, apply(node.op + "Grad", x, y, gg, **node.attrs)


def _max_pool_grad_grad_kernel(xp, x, y, gg, pool_size, strides, padding):
    # Picks gg at each window's first maximum: the adjoint of MaxPoolGrad in g.
    _, pads = _plan(x.shape, pool_size, strides, (1,) * len(pool_size), padding)
    xpad, ggpad = _pad(xp, x, pads, _lowest(x.dtype)), _pad(xp, gg, pads)
    out = xp.zeros(y.shape, dtype=gg.dtype)
    for idx, hit in _first_max_masks(xp, xpad, y, pool_size, strides):
        out += xp.where(hit, ggpad[idx], 0)
    return out


def _max_pool_grad_grad_grad(node, ggg):
    x, y, _ = node.inputs
    return None, None, apply(node.op[:-len("Grad")], x, y, ggg, **node.attrs)


def _window_counts(xp, shape, pool_size, strides, padding, dtype):
    """(1, *out, 1) counts of the real (unpadded) elements in each window."""
    r = len(pool_size)
    out, pads = _plan(shape, pool_size, strides, (1,) * r, padding)
    counts = xp.ones((1,) * (r + 2), dtype=dtype)
    for a in range(r):
        start = xp.arange(out[a]) * strides[a] - pads[a][0]
        n = xp.minimum(start + pool_size[a], shape[1 + a]) - xp.maximum(start, 0)
        counts = counts * n.astype(dtype).reshape((1,) * (a + 1) + (-1,)
                                                  + (1,) * (r - a))
    return counts


def _avg_pool(xp, x, pool_size, strides, padding):
    out, pads = _plan(x.shape, pool_size, strides, (1,) * len(pool_size), padding)
    xpad = _pad(xp, x, pads)
    y = None
    for _, idx in _taps(pool_size, out, strides):
        y = xpad[idx].copy() if y is None else xp.add(y, xpad[idx], out=y)
    y /= _window_counts(xp, x.shape, pool_size, strides, padding, x.dtype)
    return y


def _avg_pool_grad(node, g):
    return (apply(node.op + "Grad", node.inputs[0], g, **node.attrs),)


def _avg_pool_grad_kernel(xp, x, g, pool_size, strides, padding):
    _, pads = _plan(x.shape, pool_size, strides, (1,) * len(pool_size), padding)
    share = g / _window_counts(xp, x.shape, pool_size, strides, padding, g.dtype)
    dx = _padded_zeros(xp, x.shape, pads, g.dtype)
    for _, idx in _taps(pool_size, g.shape[1:-1], strides):
        dx[idx] += share
    return _crop(dx, x.shape, pads)


def _avg_pool_grad_grad(node, gg):
    # AvgPoolGrad is the adjoint of the linear AvgPool, whose adjoint is AvgPool.
    return None, apply(node.op[:-len("Grad")], gg, **node.attrs)


# TF's op names: MaxPool / AvgPool (2-D), MaxPool3D / AvgPool3D; one kernel each.
# ``x`` gives the Grad ops only the shape of their result (TF's orig_input_shape).
for _rank, _suffix in ((2, ""), (3, "3D")):
    _max, _avg = "MaxPool" + _suffix, "AvgPool" + _suffix
    register_op(_max, _pool_infer(f"max_pool{_rank}d", _rank, False))(_max_pool)
    register_gradient(_max)(_max_pool_grad)
    register_op(_max + "Grad", lambda x, y, g, **_: (x.shape, g.dtype))(
        _max_pool_grad_kernel)
    register_gradient(_max + "Grad")(_max_pool_grad_grad)
    register_op(_max + "GradGrad", lambda x, y, gg, **_: (y.shape, gg.dtype))(
        _max_pool_grad_grad_kernel)
    register_gradient(_max + "GradGrad")(_max_pool_grad_grad_grad)
    register_op(_avg, _pool_infer(f"avg_pool{_rank}d", _rank, True))(_avg_pool)
    register_gradient(_avg)(_avg_pool_grad)
    register_op(_avg + "Grad", lambda x, g, **_: (x.shape, g.dtype))(
        _avg_pool_grad_kernel)
    register_gradient(_avg + "Grad")(_avg_pool_grad_grad)
del _rank, _suffix, _max, _avg


# -- public wrappers ------------------------------------------------------------------
def _pool_attrs(pool_size, strides, padding, rank=2):
    pool_size = _tuple(pool_size, rank, "pool_size")
    strides = pool_size if strides is None else _tuple(strides, rank, "strides")
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


def max_pool3d(x, pool_size: int | tuple[int, int, int] = 2,
               strides: int | tuple[int, int, int] | None = None,
               padding: str = "valid"):
    """Maximum over sliding 3-D windows, NDHWC (TF's ``tf.nn.max_pool3d``).

    The 3-D form of ``max_pool2d`` (one kernel serves both): the gradient goes
    to each window's first maximum in row-major window order.

    Args:
        x: tensor (batch, depth, height, width, channels), float or integer.
        pool_size: int or triple (pd, ph, pw).
        strides: int or triple; None means ``pool_size`` (as Keras).
        padding: 'valid' or 'same' (TF's rule); case-insensitive.

    Returns:
        Tensor (batch, out_depth, out_height, out_width, channels), x's dtype.

    Raises:
        ValueError: x not of rank 5, a 'valid' output that would be empty, or
            bad pool_size, strides or padding.
    """
    return apply("MaxPool3D", x, **_pool_attrs(pool_size, strides, padding, 3))


def avg_pool3d(x, pool_size: int | tuple[int, int, int] = 2,
               strides: int | tuple[int, int, int] | None = None,
               padding: str = "valid"):
    """Mean over sliding 3-D windows, NDHWC (TF's ``tf.nn.avg_pool3d``); 'same'
    padding is not counted in the mean. Arguments, result and errors as
    ``max_pool3d``, except that x must be float.

    Raises:
        TypeError: a non-float x.
    """
    return apply("AvgPool3D", x, **_pool_attrs(pool_size, strides, padding, 3))


# -- 1-D through the 2-D kernels ------------------------------------------------------
def _pool1d(fn, x, pool_size, strides, padding):
    _rank_check(fn.__name__.replace("2d", "1d"), x, 3)
    p = _single(pool_size, "pool_size")
    s = p if strides is None else _single(strides, "strides")
    return squeeze(fn(expand_dims(x, 1), (1, p), (1, s), padding), 1)


def max_pool1d(x, pool_size: int = 2, strides: int | None = None,
               padding: str = "valid"):
    """Maximum over windows along axis 1 of (batch, steps, channels)."""
    return _pool1d(max_pool2d, x, pool_size, strides, padding)


def avg_pool1d(x, pool_size: int = 2, strides: int | None = None,
               padding: str = "valid"):
    """Mean over windows along axis 1 of (batch, steps, channels); 'same'
    padding is not counted in the mean (as Keras)."""
    return _pool1d(avg_pool2d, x, pool_size, strides, padding)
