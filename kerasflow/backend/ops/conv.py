"""Convolution (NHWC): conv2d, and the window geometry pooling shares.

Convolution is im2col plus a matrix product: a strided view presents every
receptive field as a row, so the work is BLAS (and one copy of the view) rather
than a Python loop over pixels. The other kernels loop only over the kh * kw
window taps, each tap one strided slice of the (padded) input. Padding follows
TensorFlow's SAME/VALID rule throughout.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["conv2d", "window_geometry"]


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
    """Output height and width of a window sliding over NHWC ``shape``, and pads."""
    (ho, *rows), (wo, *cols) = (
        window_geometry(shape[1 + a], window[a], strides[a], dilation[a], padding)
        for a in (0, 1)
    )
    return ho, wo, (tuple(rows), tuple(cols))


def _pad(xp, x, pads, value=0):
    if pads == ((0, 0), (0, 0)):
        return x
    return xp.pad(x, ((0, 0), *pads, (0, 0)), constant_values=value)


def _padded_zeros(xp, shape, pads, dtype):
    (top, bottom), (left, right) = pads
    return xp.zeros((shape[0], shape[1] + top + bottom, shape[2] + left + right,
                     shape[3]), dtype)


def _crop(xpad, shape, pads):
    (top, _), (left, _) = pads
    return xpad[:, top:top + shape[1], left:left + shape[2]]


def _windows(xp, xpad, window, ho, wo, strides, dilation):
    """A view (N, Ho, Wo, kh, kw, C) of the receptive fields of padded ``xpad``."""
    n, _, _, c = xpad.shape
    sn, sh, sw, sc = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, (n, ho, wo, window[0], window[1], c),
        (sn, sh * strides[0], sw * strides[1], sh * dilation[0], sw * dilation[1], sc),
    )


def _taps(window, ho, wo, strides, dilation=(1, 1)):
    """Per window tap (i, j): the index of the padded-input elements it meets."""
    for i in range(window[0]):
        for j in range(window[1]):
            r, c = i * dilation[0], j * dilation[1]
            yield (i, j), (
                slice(None), slice(r, r + (ho - 1) * strides[0] + 1, strides[0]),
                slice(c, c + (wo - 1) * strides[1] + 1, strides[1]), slice(None))


def _spatial_infer(what, x, window, strides, dilation, padding):
    """Output (batch, Ho, Wo) of a sliding window over NHWC ``x``; checks rank, size."""
    if x.shape is None:
        return None, None, None
    if len(x.shape) != 4:
        raise ValueError(
            f"{what} expects a rank-4 input (batch, height, width, channels). "
            f"Received: x.shape={x.shape}."
        )
    out = []
    for a in (0, 1):
        size, k = x.shape[1 + a], window[a]
        if size is None or k is None:
            out.append(None)
            continue
        o = window_geometry(size, k, strides[a], dilation[a], padding)[0]
        if o < 1:
            raise ValueError(
                f"{what} with padding='valid' needs inputs at least as large as its "
                f"window{' (dilated)' if dilation != (1, 1) else ''}, so the output "
                f"is not empty. Received: x.shape={x.shape}, window={tuple(window)}, "
                f"dilation_rate={dilation}. Use padding='same' or a smaller window."
            )
        out.append(o)
    return x.shape[0], out[0], out[1]


# -- conv2d ---------------------------------------------------------------------------
def _conv2d_infer(x, kernel, strides, padding, dilation_rate):
    if kernel.shape is not None and len(kernel.shape) != 4:
        raise ValueError(
            f"conv2d expects a rank-4 kernel (height, width, in_channels, "
            f"out_channels). Received: kernel.shape={kernel.shape}."
        )
    if x.dtype != kernel.dtype or x.dtype.kind != "f":
        raise TypeError(
            f"conv2d needs x and kernel of one float dtype. Received: "
            f"x.dtype={x.dtype.name}, kernel.dtype={kernel.dtype.name}."
        )
    ks = kernel.shape or (None,) * 4
    n, ho, wo = _spatial_infer("conv2d", x, ks[:2], strides, dilation_rate, padding)
    cin = None if x.shape is None else x.shape[3]
    if cin is not None and ks[2] is not None and cin != ks[2]:
        raise ValueError(
            f"conv2d needs the input's channels (x.shape[-1]) to equal the kernel's "
            f"in_channels (kernel.shape[2]). Received: x.shape={x.shape}, "
            f"kernel.shape={kernel.shape}."
        )
    return (n, ho, wo, ks[3]), x.dtype


# im2col makes the input kh*kw times larger, so columns are built one batch slice
# at a time: memory stays bounded, and a slice is still in the last-level cache
# when BLAS reads it (conv2d on (128, 28, 28, 32) * (3, 3, 32, 64): 1.4x the time
# of the bare matmul, against 1.6x for all columns at once).
_COLUMN_BYTES = 32 * 2**20
_TAP_BYTES = 2 * 2**20


def _columns(xp, x, kshape, strides, padding, dilation_rate):
    """Receptive fields (N, Ho, Wo, kh*kw*Cin) as a view, and batch slices of it."""
    ho, wo, pads = _plan(x.shape, kshape, strides, dilation_rate, padding)
    view = _windows(xp, _pad(xp, x, pads), kshape, ho, wo, strides, dilation_rate)
    row = ho * wo * kshape[0] * kshape[1] * kshape[2] * x.dtype.itemsize
    step = max(1, _COLUMN_BYTES // max(row, 1))
    return view, [slice(b, b + step) for b in range(0, x.shape[0], step)]


@register_op("Conv2D", _conv2d_infer)
def _conv2d(xp, x, kernel, strides, padding, dilation_rate):
    view, batches = _columns(xp, x, kernel.shape, strides, padding, dilation_rate)
    k2 = kernel.reshape(-1, kernel.shape[3])
    y = xp.empty(view.shape[:3] + (kernel.shape[3],), dtype=x.dtype)
    for b in batches:
        xp.matmul(view[b].reshape(-1, k2.shape[0]), k2,
                  out=y[b].reshape(-1, k2.shape[1]))
    return y


@register_gradient("Conv2D")
def _conv2d_grad(node, g):
    x, kernel = node.inputs
    return (apply("Conv2DBackpropInput", x, kernel, g, **node.attrs),
            apply("Conv2DBackpropFilter", x, kernel, g, **node.attrs))


# ``x`` and ``kernel`` give the backprop ops only the shape of their result (TF's
# input_sizes / filter_sizes), which may be known only at run time.
@register_op("Conv2DBackpropInput", lambda x, kernel, g, **_: (x.shape, g.dtype))
def _conv2d_backprop_input(xp, x, kernel, g, strides, padding, dilation_rate):
    kh, kw, cin, cout = kernel.shape
    ho, wo, pads = _plan(x.shape, (kh, kw), strides, dilation_rate, padding)
    dx = _padded_zeros(xp, x.shape, pads, g.dtype)
    n = g.shape[0]
    # col2im one tap at a time: a (rows, Cout) @ (Cout, Cin) product added into
    # the tap's strided slice, never materializing the kh*kw-times larger columns.
    # A few images at a time, into one reused buffer, so the product is still in
    # cache when it is added (1.3x faster than whole-batch products here).
    step = max(1, _TAP_BYTES // max(ho * wo * cin * g.dtype.itemsize, 1))
    buf = xp.empty((min(step, n) * ho * wo, cin), dtype=g.dtype)
    taps = [(idx, kernel[i, j].T) for (i, j), idx in
            _taps((kh, kw), ho, wo, strides, dilation_rate)]
    for b in range(0, n, step):
        gb, db = g[b:b + step], dx[b:b + step]
        rows = buf[:gb.shape[0] * ho * wo]
        g2 = gb.reshape(-1, cout)
        for idx, kt in taps:
            xp.matmul(g2, kt, out=rows)
            db[idx] += rows.reshape(gb.shape[:3] + (cin,))
    return _crop(dx, x.shape, pads)


@register_gradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(node, gg):
    # dx(k, g) is the adjoint of conv2d in x, linear in k and in g:
    # <gg, dx(k, g)> = <conv2d(gg, k), g>.
    _, kernel, g = node.inputs
    return (None, apply("Conv2DBackpropFilter", gg, kernel, g, **node.attrs),
            apply("Conv2D", gg, kernel, **node.attrs))


@register_op("Conv2DBackpropFilter", lambda x, kernel, g, **_: (kernel.shape, g.dtype))
def _conv2d_backprop_filter(xp, x, kernel, g, strides, padding, dilation_rate):
    view, batches = _columns(xp, x, kernel.shape, strides, padding, dilation_rate)
    g2 = g.reshape(-1, kernel.shape[3])
    rows = view.shape[1] * view.shape[2]
    dk = xp.zeros((kernel.size // kernel.shape[3], kernel.shape[3]), dtype=g.dtype)
    for b in batches:
        cols = view[b].reshape(-1, dk.shape[0])
        # cols.T is a transposed view: BLAS reads it in place, no second copy.
        dk += xp.matmul(cols.T, g2[b.start * rows:b.start * rows + cols.shape[0]])
    return dk.reshape(kernel.shape)


@register_gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(node, gg):
    # dk(x, g) is bilinear: <gg, dk(x, g)> = <conv2d(x, gg), g>.
    x, _, g = node.inputs
    return (apply("Conv2DBackpropInput", x, gg, g, **node.attrs), None,
            apply("Conv2D", x, gg, **node.attrs))


# -- public wrappers ------------------------------------------------------------------
def _pair(value, name):
    pair = (value, value) if isinstance(value, (int, np.integer)) else value
    if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1
        for v in pair
    ):
        raise ValueError(
            f"{name} must be a positive int or a pair of them. Received: "
            f"{name}={value!r}."
        )
    return int(pair[0]), int(pair[1])


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
