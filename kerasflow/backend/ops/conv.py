"""Convolution (channels last: NWC / NHWC / NDHWC): conv2d and conv3d, and the
window geometry pooling shares.

Convolution is im2col plus a matrix product: a strided view presents every
receptive field as a row, so the work is BLAS (and one copy of the view) rather
than a Python loop over pixels. The other kernels loop only over the window
taps (kh * kw, or kd * kh * kw), each tap one strided slice of the (padded)
input. Padding follows TensorFlow's SAME/VALID rule throughout. Every helper
and kernel here works for any number of spatial axes; Conv2D and Conv3D are
one kernel registered under TensorFlow's two op names.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["conv2d", "conv3d", "window_geometry"]


# -- geometry -------------------------------------------------------------------------
def window_geometry(size, k, s, d, padding):
    """Where a window sliding along one spatial axis lands, TensorFlow's rule.

    Args:
        size: input length along the axis (int).
        k, s, d: window (kernel) size, stride and dilation (ints >= 1).
        padding: 'VALID' or 'SAME' (upper case).

    Returns:
        ``(output size, pad before, pad after)``; the output size is < 1 when a
        'VALID' window is larger than the input.
    """
    keff = (k - 1) * d + 1
    if padding == "VALID":
        return (size - keff) // s + 1, 0, 0
    out = -(-size // s)
    total = max((out - 1) * s + keff - size, 0)
    return out, total // 2, total - total // 2


def _plan(shape, window, strides, dilation, padding):
    """Output sizes of a window sliding over the spatial axes of (N, *S, C)
    ``shape``, and the (before, after) pads per spatial axis."""
    geo = [window_geometry(shape[1 + a], window[a], strides[a], dilation[a], padding)
           for a in range(len(window))]
    return tuple(g[0] for g in geo), tuple((g[1], g[2]) for g in geo)


def _pad(xp, x, pads, value=0):
    if all(p == (0, 0) for p in pads):
        return x
    return xp.pad(x, ((0, 0), *pads, (0, 0)), constant_values=value)


def _padded_zeros(xp, shape, pads, dtype):
    inner = tuple(s + a + b for s, (a, b) in zip(shape[1:-1], pads))
    return xp.zeros((shape[0], *inner, shape[-1]), dtype)


def _crop(xpad, shape, pads):
    return xpad[(slice(None),) + tuple(slice(a, a + s) for s, (a, _) in
                                       zip(shape[1:-1], pads))]


def _windows(xp, xpad, window, out, strides, dilation):
    """A view (N, *out, *window, C) of the receptive fields of padded ``xpad``."""
    sn, *ss, sc = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, (xpad.shape[0], *out, *window, xpad.shape[-1]),
        (sn, *(s * t for s, t in zip(ss, strides)),
         *(s * d for s, d in zip(ss, dilation)), sc),
    )


def _taps(window, out, strides, dilation=None):
    """Per window tap (a tuple of offsets): the index of the padded-input
    elements it meets."""
    dilation = dilation or (1,) * len(window)
    for tap in itertools.product(*(range(k) for k in window)):
        yield tap, (slice(None),) + tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s)
            for t, d, o, s in zip(tap, dilation, out, strides)) + (slice(None),)


_AXES = {1: "steps", 2: "height, width", 3: "depth, height, width"}


def _spatial_infer(what, x, window, strides, dilation, padding):
    """Output (batch, *spatial) of a sliding window over channels-last ``x``;
    checks the rank and that a 'valid' output is not empty."""
    r = len(window)
    if x.shape is None:
        return (None,) * (r + 1)
    if len(x.shape) != r + 2:
        raise ValueError(
            f"{what} expects a rank-{r + 2} input (batch, {_AXES[r]}, channels). "
            f"Received: x.shape={x.shape}."
        )
    out = []
    for a in range(r):
        size, k = x.shape[1 + a], window[a]
        if size is None or k is None:
            out.append(None)
            continue
        o = window_geometry(size, k, strides[a], dilation[a], padding)[0]
        if o < 1:
            raise ValueError(
                f"{what} with padding='valid' needs inputs at least as large as its "
                f"window{' (dilated)' if max(dilation) > 1 else ''}, so the output "
                f"is not empty. Received: x.shape={x.shape}, window={tuple(window)}, "
                f"dilation_rate={dilation}. Use padding='same' or a smaller window."
            )
        out.append(o)
    return (x.shape[0], *out)


# -- conv2d / conv3d ------------------------------------------------------------------
def _conv_infer(rank):
    what = f"conv{rank}d"

    def infer(x, kernel, strides, padding, dilation_rate):
        if kernel.shape is not None and len(kernel.shape) != rank + 2:
            raise ValueError(
                f"{what} expects a rank-{rank + 2} kernel ({_AXES[rank]}, "
                f"in_channels, out_channels). Received: kernel.shape={kernel.shape}."
            )
        if x.dtype != kernel.dtype or x.dtype.kind != "f":
            raise TypeError(
                f"{what} needs x and kernel of one float dtype. Received: "
                f"x.dtype={x.dtype.name}, kernel.dtype={kernel.dtype.name}."
            )
        ks = kernel.shape or (None,) * (rank + 2)
        n, *out = _spatial_infer(what, x, ks[:rank], strides, dilation_rate, padding)
        cin = None if x.shape is None else x.shape[-1]
        if cin is not None and ks[-2] is not None and cin != ks[-2]:
            raise ValueError(
                f"{what} needs the input's channels (x.shape[-1]) to equal the "
                f"kernel's in_channels (kernel.shape[{rank}]). Received: "
                f"x.shape={x.shape}, kernel.shape={kernel.shape}."
            )
        return (n, *out, ks[-1]), x.dtype

    return infer


# im2col makes the input kh*kw (kd*kh*kw) times larger, so columns are built one
# batch slice at a time: memory stays bounded, and a slice is still in the
# last-level cache when BLAS reads it (conv2d on (128, 28, 28, 32) * (3, 3, 32,
# 64): 1.4x the time of the bare matmul, against 1.6x for all columns at once).
_COLUMN_BYTES = 32 * 2**20
_TAP_BYTES = 2 * 2**20


def _columns(xp, x, kshape, strides, padding, dilation_rate):
    """Receptive fields (N, *out, *window, Cin) as a view, and batch slices of it."""
    r = len(kshape) - 2
    out, pads = _plan(x.shape, kshape[:r], strides, dilation_rate, padding)
    view = _windows(xp, _pad(xp, x, pads), kshape[:r], out, strides, dilation_rate)
    row = math.prod(out) * math.prod(kshape[:r + 1]) * x.dtype.itemsize
    step = max(1, _COLUMN_BYTES // max(row, 1))
    return view, [slice(b, b + step) for b in range(0, x.shape[0], step)]


def _conv(xp, x, kernel, strides, padding, dilation_rate):
    view, batches = _columns(xp, x, kernel.shape, strides, padding, dilation_rate)
    r = kernel.ndim - 2
    k2 = kernel.reshape(-1, kernel.shape[-1])
    y = xp.empty(view.shape[:1 + r] + (kernel.shape[-1],), dtype=x.dtype)
    for b in batches:
        xp.matmul(view[b].reshape(-1, k2.shape[0]), k2,
                  out=y[b].reshape(-1, k2.shape[1]))
    return y


def _conv_backprop_input(xp, x, kernel, g, strides, padding, dilation_rate):
    r = kernel.ndim - 2
    cin, cout = kernel.shape[-2:]
    out, pads = _plan(x.shape, kernel.shape[:r], strides, dilation_rate, padding)
    dx = _padded_zeros(xp, x.shape, pads, g.dtype)
    n, pixels = g.shape[0], math.prod(out)
    # col2im one tap at a time: a (rows, Cout) @ (Cout, Cin) product added into
    # the tap's strided slice, never materializing the window-times larger
    # columns. A few images at a time, into one reused buffer, so the product is
    # still in cache when it is added (1.3x faster than whole-batch products).
    step = max(1, _TAP_BYTES // max(pixels * cin * g.dtype.itemsize, 1))
    buf = xp.empty((min(step, n) * pixels, cin), dtype=g.dtype)
    taps = [(idx, kernel[tap].T) for tap, idx in
            _taps(kernel.shape[:r], out, strides, dilation_rate)]
    for b in range(0, n, step):
        gb, db = g[b:b + step], dx[b:b + step]
        rows = buf[:gb.shape[0] * pixels]
        g2 = gb.reshape(-1, cout)
        for idx, kt in taps:
            xp.matmul(g2, kt, out=rows)
            db[idx] += rows.reshape(gb.shape[:-1] + (cin,))
    return _crop(dx, x.shape, pads)


def _conv_backprop_filter(xp, x, kernel, g, strides, padding, dilation_rate):
    view, batches = _columns(xp, x, kernel.shape, strides, padding, dilation_rate)
    cout = kernel.shape[-1]
    g2 = g.reshape(-1, cout)
    rows = math.prod(view.shape[1:kernel.ndim - 1])
    dk = xp.zeros((kernel.size // cout, cout), dtype=g.dtype)
    for b in batches:
        cols = view[b].reshape(-1, dk.shape[0])
        # cols.T is a transposed view: BLAS reads it in place, no second copy.
        dk += xp.matmul(cols.T, g2[b.start * rows:b.start * rows + cols.shape[0]])
    return dk.reshape(kernel.shape)


def _base(node):
    """'Conv2D' or 'Conv3D': the forward op a (backprop) node belongs to."""
    return node.op.split("Backprop")[0]


def _conv_grad(node, g):
    x, kernel = node.inputs
    return (apply(node.op + "BackpropInput", x, kernel, g, **node.attrs),
            apply(node.op + "BackpropFilter", x, kernel, g, **node.attrs))


def _conv_backprop_input_grad(node, gg):
    # dx(k, g) is the adjoint of conv in x, linear in k and in g:
    # <gg, dx(k, g)> = <conv(gg, k), g>.
    _, kernel, g = node.inputs
    base = _base(node)
    return (None, apply(base + "BackpropFilter", gg, kernel, g, **node.attrs),
            apply(base, gg, kernel, **node.attrs))


def _conv_backprop_filter_grad(node, gg):
    # dk(x, g) is bilinear: <gg, dk(x, g)> = <conv(x, gg), g>.
    x, _, g = node.inputs
    base = _base(node)
    return (apply(base + "BackpropInput", x, gg, g, **node.attrs), None,
            apply(base, x, gg, **node.attrs))


# ``x`` and ``kernel`` give the backprop ops only the shape of their result (TF's
# input_sizes / filter_sizes), which may be known only at run time.
for _rank in (2, 3):
    _name = f"Conv{_rank}D"
    register_op(_name, _conv_infer(_rank))(_conv)
    register_gradient(_name)(_conv_grad)
    register_op(_name + "BackpropInput",
                lambda x, kernel, g, **_: (x.shape, g.dtype))(_conv_backprop_input)
    register_gradient(_name + "BackpropInput")(_conv_backprop_input_grad)
    register_op(_name + "BackpropFilter",
                lambda x, kernel, g, **_: (kernel.shape, g.dtype))(
                    _conv_backprop_filter)
    register_gradient(_name + "BackpropFilter")(_conv_backprop_filter_grad)
del _rank, _name


# -- public wrappers ------------------------------------------------------------------
def _tuple(value, n, name):
    """A positive int or ``n`` of them as a tuple of ``n`` ints."""
    vals = (value,) * n if isinstance(value, (int, np.integer)) else value
    if not isinstance(vals, (tuple, list)) or len(vals) != n or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1
        for v in vals
    ):
        what = "a pair" if n == 2 else f"a tuple of {n}"
        raise ValueError(
            f"{name} must be a positive int or {what} of them. Received: "
            f"{name}={value!r}."
        )
    return tuple(int(v) for v in vals)


def _pair(value, name):
    return _tuple(value, 2, name)


def _padding(padding):
    mode = padding.upper() if isinstance(padding, str) else padding
    if mode not in ("SAME", "VALID"):
        raise ValueError(
            f"padding must be 'same' or 'valid'. Received: padding={padding!r}."
        )
    return mode


def conv2d(x, kernel, strides: int | tuple[int, int] = (1, 1),
           padding: str = "valid", dilation_rate: int | tuple[int, int] = (1, 1)):
    """2-D convolution (cross-correlation, as in every DL framework), NHWC.

    ``y[n, i, j, o] = sum_{a, b, c} xpad[n, i*sh + a*dh, j*sw + b*dw, c] *
    kernel[a, b, c, o]``, computed as im2col plus one matrix product. Semantics of
    TF's ``tf.nn.conv2d`` (``data_format='NHWC'``) with ``dilations``; unlike
    Keras' Conv2D layer, strides > 1 together with dilation > 1 are allowed.

    Args:
        x: float tensor (batch, height, width, in_channels); batch, height and
            width may be unknown (None) in a graph.
        kernel: tensor (kernel_height, kernel_width, in_channels, out_channels) of
            the dtype of ``x``.
        strides: int or pair (sh, sw), the step between windows.
        padding: 'valid' (windows inside x) or 'same' (output size
            ceil(size / stride), zero padding split as TF does: the larger half
            after); case-insensitive.
        dilation_rate: int or pair (dh, dw), the spacing between kernel taps.

    Returns:
        Tensor (batch, out_height, out_width, out_channels) of the dtype of x,
        where out = ceil((size - (k - 1) * d) / s) for 'valid' and
        ceil(size / s) for 'same'.

    Raises:
        ValueError: x or kernel not of rank 4, in_channels of x and kernel that
            differ (naming both shapes), a 'valid' output that would be empty,
            or bad strides, padding or dilation_rate.
        TypeError: x and kernel not of one float dtype.

    Example:
        >>> x = np.arange(16, dtype="float32").reshape(1, 4, 4, 1)
        >>> conv2d(x, np.ones((2, 2, 1, 1), "float32"), strides=2)[0, :, :, 0]
        array([[10., 18.],
               [42., 50.]], dtype=float32)
    """
    return apply("Conv2D", x, kernel, strides=_pair(strides, "strides"),
                 padding=_padding(padding),
                 dilation_rate=_pair(dilation_rate, "dilation_rate"))


def conv3d(x, kernel, strides: int | tuple[int, int, int] = 1,
           padding: str = "valid", dilation_rate: int | tuple[int, int, int] = 1):
    """3-D convolution (cross-correlation), NDHWC (TF's ``tf.nn.conv3d``).

    ``y[n, i, j, l, o] = sum_{a, b, e, c} xpad[n, i*sd + a*dd, j*sh + b*dh,
    l*sw + e*dw, c] * kernel[a, b, e, c, o]``: the im2col + one matrix product
    of ``conv2d``, with a third window axis. Gradients: ``Conv3DBackpropInput``
    and ``Conv3DBackpropFilter``, the same kernels as conv2d's.

    Args:
        x: float tensor (batch, depth, height, width, in_channels); batch and
            spatial sizes may be unknown (None) in a graph.
        kernel: tensor (kd, kh, kw, in_channels, out_channels), dtype of x.
        strides: int or triple (sd, sh, sw).
        padding: 'valid' or 'same' (TF's rule, as conv2d); case-insensitive.
        dilation_rate: int or triple; strides > 1 with dilation > 1 allowed.

    Returns:
        Tensor (batch, out_depth, out_height, out_width, out_channels) of the
        dtype of x; each out size as in ``conv2d``.

    Raises:
        ValueError: x or kernel not of rank 5, in_channels of x and kernel that
            differ, a 'valid' output that would be empty, or bad strides,
            padding or dilation_rate.
        TypeError: x and kernel not of one float dtype.

    Example:
        >>> x = np.ones((1, 4, 4, 4, 1), "float32")
        >>> conv3d(x, np.ones((2, 2, 2, 1, 1), "float32"), strides=2).shape
        (1, 2, 2, 2, 1)
    """
    return apply("Conv3D", x, kernel, strides=_tuple(strides, 3, "strides"),
                 padding=_padding(padding),
                 dilation_rate=_tuple(dilation_rate, 3, "dilation_rate"))
