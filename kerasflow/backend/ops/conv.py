"""Convolution (channels last: NWC / NHWC / NDHWC): conv1d, conv2d and conv3d,
transposed and depthwise 2-D convolution, and the window geometry pooling
shares.

Convolution is im2col plus a matrix product: a strided view presents every
receptive field as a row, so the work is BLAS (and one copy of the view) rather
than a Python loop over pixels. The other kernels loop only over the window
taps (kh * kw, or kd * kh * kw), each tap one strided slice of the (padded)
input. Padding follows TensorFlow's SAME/VALID rule throughout. Every helper
and kernel here works for any number of spatial axes; Conv2D and Conv3D are
one kernel registered under TensorFlow's two op names.

``conv1d`` runs the 2-D kernel on a height-1 view, so it shares its speed and
gradients. ``conv2d_transpose`` is the adjoint of ``conv2d`` (TF's
``conv2d_transpose`` = ``Conv2DBackpropInput``), a primitive with its own
gradient. ``depthwise_conv2d`` loops over the kh * kw taps: each tap is one
broadcast product of a strided slice of the padded input, so the work is
elementwise, as the operation itself (no BLAS can help: each channel meets
only its own filters).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from kerasflow.backend.ops.shape import expand_dims, squeeze
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["conv1d", "conv2d", "conv2d_transpose", "conv2d_transpose_output_size",
           "conv3d", "depthwise_conv2d", "window_geometry"]


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


def _single(value, name):
    v = value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name} must be a positive int. Received: {name}={value!r}.")
    return int(v)


def _rank_check(what, x, rank):
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape) != rank:
        raise ValueError(
            f"{what} expects a rank-{rank} input. Received: x.shape={tuple(shape)}."
        )


# -- 1-D convolution ------------------------------------------------------------------
def conv1d(x, kernel, stride: int = 1, padding: str = "valid",
           dilation_rate: int = 1):
    """1-D convolution (cross-correlation), NWC (TF's ``tf.nn.conv1d``).

    Args:
        x: float tensor (batch, width, in_channels).
        kernel: (kernel_width, in_channels, out_channels), dtype of x.
        stride, dilation_rate: positive ints.
        padding: 'valid' or 'same' (TF's rule); callers pad for 'causal'.

    Returns:
        Tensor (batch, out_width, out_channels).

    Raises:
        ValueError: wrong ranks, channel mismatch, an empty 'valid' output.
    """
    _rank_check("conv1d", x, 3)
    _rank_check("conv1d (kernel)", kernel, 3)
    y = conv2d(expand_dims(x, 1), expand_dims(kernel, 0),
               strides=(1, _single(stride, "stride")), padding=padding,
               dilation_rate=(1, _single(dilation_rate, "dilation_rate")))
    return squeeze(y, 1)


# -- transposed convolution -----------------------------------------------------------
def _transpose_out(size, k, s, d, padding):
    keff = (k - 1) * d + 1
    if size is None:
        return None
    # Keras 3: 'valid' gives (size - 1) * s + max(keff, s); with s > keff the
    # last s - keff positions are reached by no input (zeros, before the bias).
    return size * s if padding == "SAME" else (size - 1) * s + max(keff, s)


def _conv2d_transpose_infer(x, kernel, strides, padding, dilation_rate,
                            output_shape):
    if x.shape is not None and len(x.shape) != 4:
        raise ValueError(f"conv2d_transpose expects a rank-4 input. Received: "
                         f"x.shape={x.shape}.")
    if x.dtype != kernel.dtype or x.dtype.kind != "f":
        raise TypeError(f"conv2d_transpose needs x and kernel of one float dtype. "
                        f"Received: {x.dtype.name}, {kernel.dtype.name}.")
    ks = kernel.shape or (None,) * 4
    if x.shape is not None and None not in (x.shape[3], ks[3]) \
            and x.shape[3] != ks[3]:
        raise ValueError(
            f"conv2d_transpose needs x.shape[-1] to equal the kernel's "
            f"out_channels (kernel.shape[3]; kernel (kh, kw, out, in) as TF). "
            f"Received: x.shape={x.shape}, kernel.shape={kernel.shape}.")
    n = None if x.shape is None else x.shape[0]
    return (n, *output_shape[:2], ks[2]), x.dtype


class _Shape:
    """Stands in for ``x`` in ``Conv2DBackpropInput``: only its shape is read."""

    def __init__(self, shape):
        self.shape = shape


@register_op("Conv2DTranspose", _conv2d_transpose_infer)
def _conv2d_transpose(xp, x, kernel, strides, padding, dilation_rate, output_shape):
    shape = (x.shape[0], *output_shape[:2], kernel.shape[2])
    return _conv_backprop_input(xp, _Shape(shape), kernel, x, strides, padding,
                                dilation_rate)


@register_gradient("Conv2DTranspose")
def _conv2d_transpose_grad(node, g):
    # y = A^T(x) with A = conv2d(., kernel): dx = conv2d(g, kernel), and the
    # kernel gradient is conv2d's filter gradient with the roles of x and g swapped.
    x, kernel = node.inputs
    attrs = {k: v for k, v in node.attrs.items() if k != "output_shape"}
    return (apply("Conv2D", g, kernel, **attrs),
            apply("Conv2DBackpropFilter", g, kernel, x, **attrs))


def conv2d_transpose(x, kernel, output_size, strides=(1, 1), padding="valid",
                     dilation_rate=(1, 1)):
    """Transposed 2-D convolution (the gradient of conv2d w.r.t. its input), NHWC.

    Semantics of TF's ``tf.nn.conv2d_transpose``: the kernel is laid out
    (kh, kw, out_channels, in_channels) and ``conv2d(y, kernel)`` maps the
    output back to x's shape.

    Args:
        x: float tensor (batch, height, width, in_channels).
        kernel: (kh, kw, out_channels, in_channels), dtype of x.
        output_size: (out_height, out_width) of the result.
        strides, dilation_rate: ints or pairs. padding: 'valid' or 'same'.

    Returns:
        Tensor (batch, out_height, out_width, out_channels).

    Raises:
        ValueError: ranks, channel mismatch, an output_size that conv2d with
            these strides and padding does not map onto x's size.
    """
    strides = _pair(strides, "strides")
    dilation = _pair(dilation_rate, "dilation_rate")
    padding = _padding(padding)
    output_size = tuple(int(v) for v in output_size)
    xs = getattr(x, "shape", None)
    ks = getattr(kernel, "shape", None)
    if xs is not None and ks is not None and len(xs) == 4 and len(ks) == 4:
        for a in (0, 1):
            if xs[1 + a] is None:
                continue
            back = window_geometry(output_size[a], ks[a], strides[a],
                                   dilation[a], padding)[0]
            if back != xs[1 + a]:
                raise ValueError(
                    f"conv2d_transpose: output_size={output_size} does not map back "
                    f"onto the input size with kernel {ks[:2]}, strides={strides}, "
                    f"padding={padding.lower()!r}. Received: x.shape={xs}.")
    return apply("Conv2DTranspose", x, kernel, strides=strides, padding=padding,
                 dilation_rate=dilation, output_shape=output_size)


def conv2d_transpose_output_size(size, k, s, d, padding):
    """Keras' default output size of a transposed convolution along one axis."""
    return _transpose_out(size, k, s, d, _padding(padding))


# -- depthwise convolution ------------------------------------------------------------
def _depthwise_infer(x, kernel, strides, padding, dilation_rate):
    if x.dtype != kernel.dtype or x.dtype.kind != "f":
        raise TypeError(f"depthwise_conv2d needs x and kernel of one float dtype. "
                        f"Received: {x.dtype.name}, {kernel.dtype.name}.")
    ks = kernel.shape or (None,) * 4
    n, ho, wo = _spatial_infer("depthwise_conv2d", x, ks[:2], strides,
                               dilation_rate, padding)
    cin = None if x.shape is None else x.shape[3]
    if None not in (cin, ks[2]) and cin != ks[2]:
        raise ValueError(
            f"depthwise_conv2d needs x.shape[-1] to equal kernel.shape[2]. "
            f"Received: x.shape={x.shape}, kernel.shape={kernel.shape}.")
    out_c = None if None in (ks[2], ks[3]) else ks[2] * ks[3]
    return (n, ho, wo, out_c), x.dtype


def _depthwise_taps(x, kernel, strides, padding, dilation_rate):
    """(channels, multiplier, out height, out width, pads, taps) of a
    depthwise convolution."""
    kh, kw, c, m = kernel.shape
    (ho, wo), pads = _plan(x.shape, (kh, kw), strides, dilation_rate, padding)
    return c, m, ho, wo, pads, _taps((kh, kw), (ho, wo), strides, dilation_rate)


@register_op("DepthwiseConv2D", _depthwise_infer)
def _depthwise(xp, x, kernel, strides, padding, dilation_rate):
    c, m, ho, wo, pads, taps = _depthwise_taps(x, kernel, strides, padding,
                                               dilation_rate)
    xpad = _pad(xp, x, pads)
    y = xp.zeros((x.shape[0], ho, wo, c, m), dtype=x.dtype)
    for (i, j), idx in taps:
        y += xpad[idx][..., None] * kernel[i, j]
    return y.reshape(x.shape[0], ho, wo, c * m)


@register_gradient("DepthwiseConv2D")
def _depthwise_grad(node, g):
    x, kernel = node.inputs
    return (apply("DepthwiseConv2DBackpropInput", x, kernel, g, **node.attrs),
            apply("DepthwiseConv2DBackpropFilter", x, kernel, g, **node.attrs))


@register_op("DepthwiseConv2DBackpropInput",
             lambda x, kernel, g, **_: (x.shape, g.dtype))
def _depthwise_backprop_input(xp, x, kernel, g, strides, padding, dilation_rate):
    c, m, ho, wo, pads, taps = _depthwise_taps(x, kernel, strides, padding,
                                               dilation_rate)
    g5 = g.reshape(g.shape[0], ho, wo, c, m)
    dx = _padded_zeros(xp, x.shape, pads, g.dtype)
    for (i, j), idx in taps:
        dx[idx] += (g5 * kernel[i, j]).sum(axis=-1)
    return _crop(dx, x.shape, pads)


@register_gradient("DepthwiseConv2DBackpropInput")
def _depthwise_backprop_input_grad(node, gg):
    _, kernel, g = node.inputs
    return (None, apply("DepthwiseConv2DBackpropFilter", gg, kernel, g, **node.attrs),
            apply("DepthwiseConv2D", gg, kernel, **node.attrs))


@register_op("DepthwiseConv2DBackpropFilter",
             lambda x, kernel, g, **_: (kernel.shape, g.dtype))
def _depthwise_backprop_filter(xp, x, kernel, g, strides, padding, dilation_rate):
    c, m, ho, wo, pads, taps = _depthwise_taps(x, kernel, strides, padding,
                                               dilation_rate)
    xpad = _pad(xp, x, pads)
    g5 = g.reshape(-1, c, m)
    dk = xp.empty(kernel.shape, dtype=g.dtype)
    for (i, j), idx in taps:
        # (rows, c) x (rows, c, m) summed over rows, channel by channel.
        dk[i, j] = xp.einsum("rc,rcm->cm", xpad[idx].reshape(-1, c), g5)
    return dk


@register_gradient("DepthwiseConv2DBackpropFilter")
def _depthwise_backprop_filter_grad(node, gg):
    x, _, g = node.inputs
    return (apply("DepthwiseConv2DBackpropInput", x, gg, g, **node.attrs), None,
            apply("DepthwiseConv2D", x, gg, **node.attrs))


def depthwise_conv2d(x, kernel, strides=(1, 1), padding="valid",
                     dilation_rate=(1, 1)):
    """Depthwise 2-D convolution, NHWC (TF's ``tf.nn.depthwise_conv2d``).

    ``y[n, i, j, c * M + m] = sum_{a, b} xpad[n, i*sh + a*dh, j*sw + b*dw, c] *
    kernel[a, b, c, m]``: each input channel meets only its own M filters.

    Args:
        x: float tensor (batch, height, width, channels).
        kernel: (kh, kw, channels, depth_multiplier), dtype of x.
        strides, dilation_rate: ints or pairs. padding: 'valid' or 'same'.

    Returns:
        Tensor (batch, out_height, out_width, channels * depth_multiplier).

    Raises:
        ValueError: ranks, channel mismatch, an empty 'valid' output.
    """
    return apply("DepthwiseConv2D", x, kernel,
                 strides=_pair(strides, "strides"),
                 padding=_padding(padding),
                 dilation_rate=_pair(dilation_rate, "dilation_rate"))
