"""More convolution ops (NHWC / NWC): 1-D conv and pooling, transposed and
depthwise 2-D convolution.

``conv1d`` and the 1-D poolings run the 2-D kernels on a height-1 view, so they
share their speed and gradients. ``conv2d_transpose`` is the adjoint of
``conv2d`` (TF's ``conv2d_transpose`` = ``Conv2DBackpropInput``), a primitive
with its own gradient. ``depthwise_conv2d`` loops over the kh * kw taps: each
tap is one broadcast product of a strided slice of the padded input, so the
work is elementwise, as the operation itself (no BLAS can help: each channel
meets only its own filters).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import conv as _conv
from kerasflow.backend.ops.pooling import avg_pool2d, max_pool2d
from kerasflow.backend.ops.shape import expand_dims, squeeze
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["avg_pool1d", "conv1d", "conv2d_transpose", "conv2d_transpose_output_size",
           "depthwise_conv2d",
           "max_pool1d"]


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


# -- 1-D through the 2-D kernels --------------------------------------------------
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
    y = _conv.conv2d(expand_dims(x, 1), expand_dims(kernel, 0),
                     strides=(1, _single(stride, "stride")), padding=padding,
                     dilation_rate=(1, _single(dilation_rate, "dilation_rate")))
    return squeeze(y, 1)


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


# -- transposed convolution ----------------------------------------------------------
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
    return _conv._conv_backprop_input(xp, _Shape(shape), kernel, x, strides,
                                      padding, dilation_rate)


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
    strides = _conv._pair(strides, "strides")
    dilation = _conv._pair(dilation_rate, "dilation_rate")
    padding = _conv._padding(padding)
    output_size = tuple(int(v) for v in output_size)
    xs = getattr(x, "shape", None)
    ks = getattr(kernel, "shape", None)
    if xs is not None and ks is not None and len(xs) == 4 and len(ks) == 4:
        for a in (0, 1):
            if xs[1 + a] is None:
                continue
            back = _conv.window_geometry(output_size[a], ks[a], strides[a],
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
    return _transpose_out(size, k, s, d, _conv._padding(padding))


# -- depthwise convolution ------------------------------------------------------------
def _depthwise_infer(x, kernel, strides, padding, dilation_rate):
    if x.dtype != kernel.dtype or x.dtype.kind != "f":
        raise TypeError(f"depthwise_conv2d needs x and kernel of one float dtype. "
                        f"Received: {x.dtype.name}, {kernel.dtype.name}.")
    ks = kernel.shape or (None,) * 4
    n, ho, wo = _conv._spatial_infer("depthwise_conv2d", x, ks[:2], strides,
                                     dilation_rate, padding)
    cin = None if x.shape is None else x.shape[3]
    if None not in (cin, ks[2]) and cin != ks[2]:
        raise ValueError(
            f"depthwise_conv2d needs x.shape[-1] to equal kernel.shape[2]. "
            f"Received: x.shape={x.shape}, kernel.shape={kernel.shape}.")
    out_c = None if None in (ks[2], ks[3]) else ks[2] * ks[3]
    return (n, ho, wo, out_c), x.dtype


def _depthwise_taps(xp, x, kernel, strides, padding, dilation_rate):
    kh, kw, c, m = kernel.shape
    (ho, wo), pads = _conv._plan(x.shape, (kh, kw), strides, dilation_rate, padding)
    return ho, wo, pads, _conv._taps((kh, kw), (ho, wo), strides, dilation_rate)


@register_op("DepthwiseConv2D", _depthwise_infer)
def _depthwise(xp, x, kernel, strides, padding, dilation_rate):
    c, m = kernel.shape[2:]
    ho, wo, pads, taps = _depthwise_taps(xp, x, kernel, strides, padding,
                                         dilation_rate)
    xpad = _conv._pad(xp, x, pads)
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
    c, m = kernel.shape[2:]
    ho, wo, pads, taps = _depthwise_taps(xp, x, kernel, strides, padding,
                                         dilation_rate)
    g5 = g.reshape(g.shape[0], ho, wo, c, m)
    dx = _conv._padded_zeros(xp, x.shape, pads, g.dtype)
    for (i, j), idx in taps:
        dx[idx] += (g5 * kernel[i, j]).sum(axis=-1)
    return _conv._crop(dx, x.shape, pads)


@register_gradient("DepthwiseConv2DBackpropInput")
def _depthwise_backprop_input_grad(node, gg):
    _, kernel, g = node.inputs
    return (None, apply("DepthwiseConv2DBackpropFilter", gg, kernel, g, **node.attrs),
            apply("DepthwiseConv2D", gg, kernel, **node.attrs))


@register_op("DepthwiseConv2DBackpropFilter",
             lambda x, kernel, g, **_: (kernel.shape, g.dtype))
def _depthwise_backprop_filter(xp, x, kernel, g, strides, padding, dilation_rate):
    c, m = kernel.shape[2:]
    ho, wo, pads, taps = _depthwise_taps(xp, x, kernel, strides, padding,
                                         dilation_rate)
    xpad = _conv._pad(xp, x, pads)
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
                 strides=_conv._pair(strides, "strides"),
                 padding=_conv._padding(padding),
                 dilation_rate=_conv._pair(dilation_rate, "dilation_rate"))
