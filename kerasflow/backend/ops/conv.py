"""Convolution and pooling ops (NHWC): conv2d, max_pool2d, avg_pool2d.

Convolution is im2col plus one matrix product: a strided view presents every
receptive field as a row, so the work is one BLAS call (and one copy of the view)
rather than a Python loop over pixels. The backward kernels loop only over the
kh * kw window taps, each tap one strided slice of the (padded) input. Padding
follows TensorFlow's SAME/VALID rule throughout.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["conv2d", "max_pool2d", "avg_pool2d"]


# -- geometry -------------------------------------------------------------------------
def _geometry(size, k, s, d, padding):
    """(output size, pad before, pad after) along one spatial axis, TF's rule."""
    keff = (k - 1) * d + 1
    if padding == "VALID":
        return (size - keff) // s + 1, 0, 0
    out = -(-size // s)
    total = max((out - 1) * s + keff - size, 0)
    return out, total // 2, total - total // 2


def _pad(xp, x, window, strides, dilation, padding, value=0):
    """``x`` padded as ``padding`` needs, and the output height and width."""
    (ho, t, b), (wo, l, r) = (
        _geometry(x.shape[1 + a], window[a], strides[a], dilation[a], padding)
        for a in (0, 1)
    )
    if t or b or l or r:
        x = xp.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=value)
    return x, ho, wo, (t, l)


def _windows(xp, xpad, window, ho, wo, strides, dilation):
    """A view (N, Ho, Wo, kh, kw, C) of the receptive fields of padded ``xpad``."""
    n, _, _, c = xpad.shape
    sn, sh, sw, sc = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, (n, ho, wo, window[0], window[1], c),
        (sn, sh * strides[0], sw * strides[1], sh * dilation[0], sw * dilation[1], sc),
    )


def _taps(window, ho, wo, strides, dilation):
    """Per window tap, the index of the padded-input elements it meets, (N,Ho,Wo,C)."""
    for i in range(window[0]):
        for j in range(window[1]):
            r, c = i * dilation[0], j * dilation[1]
            yield (slice(None), slice(r, r + (ho - 1) * strides[0] + 1, strides[0]),
                   slice(c, c + (wo - 1) * strides[1] + 1, strides[1]), slice(None))


def _crop(xpad, shape, origin):
    t, l = origin
    return xpad[:, t:t + shape[1], l:l + shape[2]]


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
        o = _geometry(size, k, strides[a], dilation[a], padding)[0]
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


def _im2col(xp, x, kshape, strides, padding, dilation_rate):
    """Receptive fields as rows (N*Ho*Wo, kh*kw*Cin), with the output's (N, Ho, Wo)."""
    xpad, ho, wo, _ = _pad(xp, x, kshape, strides, dilation_rate, padding)
    view = _windows(xp, xpad, kshape, ho, wo, strides, dilation_rate)
    return view.reshape(-1, kshape[0] * kshape[1] * kshape[2]), (x.shape[0], ho, wo)


@register_op("Conv2D", _conv2d_infer)
def _conv2d(xp, x, kernel, strides, padding, dilation_rate):
    cols, nhw = _im2col(xp, x, kernel.shape, strides, padding, dilation_rate)
    return xp.matmul(cols, kernel.reshape(cols.shape[1], -1)).reshape(
        *nhw, kernel.shape[3])


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
    shape = (0, 0) if padding == "VALID" else None
    xpad_shape, ho, wo, origin = _pad_shape(x.shape, (kh, kw), strides,
                                            dilation_rate, padding)
    del shape
    dx = xp.zeros(xpad_shape, dtype=g.dtype)
    g2 = g.reshape(-1, cout)
    # One (N*Ho*Wo, Cout) @ (Cout, Cin) product per tap, scattered into the taps'
    # strided slices: col2im without materializing the kh*kw-times larger columns.
    for (i, j), idx in zip(np.ndindex(kh, kw),
                           _taps((kh, kw), ho, wo, strides, dilation_rate)):
        dx[idx] += xp.matmul(g2, kernel[i, j].T).reshape(g.shape[:3] + (cin,))
    return _crop(dx, x.shape, origin)


def _pad_shape(shape, window, strides, dilation, padding):
    """Shape of the padded input, output height and width, and the pad origin."""
    (ho, t, b), (wo, l, r) = (
        _geometry(shape[1 + a], window[a], strides[a], dilation[a], padding)
        for a in (0, 1)
    )
    return (shape[0], shape[1] + t + b, shape[2] + l + r, shape[3]), ho, wo, (t, l)


@register_gradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(node, gg):
    # dx is linear in (kernel, g): it is the adjoint of conv2d in x, so
    # <gg, dx(k, g)> = <conv2d(gg, k), g>.
    x, kernel, g = node.inputs
    return (None, apply("Conv2DBackpropFilter", gg, kernel, g, **node.attrs),
            apply("Conv2D", gg, kernel, **node.attrs))


@register_op("Conv2DBackpropFilter", lambda x, kernel, g, **_: (kernel.shape, g.dtype))
def _conv2d_backprop_filter(xp, x, kernel, g, strides, padding, dilation_rate):
    cols, _ = _im2col(xp, x, kernel.shape, strides, padding, dilation_rate)
    # cols.T is a transposed view: BLAS reads it as is, no second copy.
    return xp.matmul(cols.T, g.reshape(cols.shape[0], -1)).reshape(kernel.shape)


@register_gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(node, gg):
    # dk is bilinear in (x, g): <gg, dk(x, g)> = <conv2d(x, gg), g>.
    x, kernel, g = node.inputs
    return (apply("Conv2DBackpropInput", x, gg, g, **node.attrs), None,
            apply("Conv2D", x, gg, **node.attrs))
