"""The convolution family of Keras 3's ``keras.ops.nn`` beyond ``conv``:
transposed, depthwise and separable convolutions, ``depth_to_space`` /
``space_to_depth``, adaptive pooling and ``unfold``/``fold`` (im2col and its
adjoint), composed from differentiable backend ops (pad, reshape, transpose,
gather, conv2d, depthwise conv2d). Source: Keras 3's ops (numpy backend
semantics; JAX's ``conv_transpose`` padding rule; PyTorch's adaptive pooling
windows and ``Unfold``/``Fold``).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.ops import nn as _nn
from kerasflow.ops.common import dtype_of, rank, tensor

__all__ = ["adaptive_average_pool", "adaptive_max_pool", "conv_transpose",
           "depth_to_space", "depthwise_conv", "fold", "separable_conv",
           "space_to_depth", "unfold"]


# -- convolutions -----------------------------------------------------------------------------
def _fmt(data_format):
    return K.standardize_data_format(data_format)


def _to_last(x, fmt):
    n = rank(x)
    return x if fmt == "channels_last" else K.transpose(x, (0, *range(2, n), 1))


def _to_first(x, fmt):
    n = rank(x)
    return x if fmt == "channels_last" else K.transpose(x, (0, n - 1, *range(1, n - 1)))


def _tup(v, n):
    return (int(v),) * n if isinstance(v, (int, np.integer)) else tuple(int(u) for u in v)


def _dilate(x, axis, s):
    """``s - 1`` zeros inserted between the elements of ``axis``."""
    if s == 1:
        return x
    n = x.shape[axis]
    y = K.expand_dims(x, axis + 1)
    pads = [[0, 0]] * rank(y)
    pads[axis + 1] = [0, s - 1]
    shape = list(x.shape)
    shape[axis] = n * s
    y = K.reshape(K.pad(y, pads), tuple(-1 if d is None else d for d in shape))
    key = [slice(None)] * rank(x)
    key[axis] = slice(0, (n - 1) * s + 1)
    return y[tuple(key)]


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None,
                   data_format=None, dilation_rate=1):
    """Transposed convolution over 1-3 spatial axes (the gradient of ``conv``
    w.r.t. its input); ``kernel`` (*window, out_channels, in_channels) as
    Keras 3. Computed as a stride-1 ``conv`` of the zero-dilated, padded input
    with the flipped kernel (JAX's ``conv_transpose`` padding rule)."""
    fmt = _fmt(data_format)
    x = _to_last(tensor(inputs), fmt)
    k = tensor(kernel)
    nd = rank(x) - 2
    s, d = _tup(strides, nd), _tup(dilation_rate, nd)
    op = [None] * nd if output_padding is None else list(_tup(output_padding, nd))
    pads = [[0, 0]]
    for i in range(nd):
        keff = (k.shape[i] - 1) * d[i] + 1
        if padding.lower() == "valid":
            o = max(keff, s[i]) - keff if op[i] is None else op[i]
            lo, hi = keff - 1, keff - 1 + o
        else:
            total = s[i] + keff - 2 if op[i] is None else keff + keff % 2 - 2 + op[i]
            lo = min(total // 2 + total % 2, keff - 1)
            hi = total - lo
        x = _dilate(x, 1 + i, s[i])
        pads.append([lo, hi])
    pads.append([0, 0])
    x = K.pad(x, pads)
    flipped = K.flip(k, tuple(range(nd)))
    w = K.transpose(flipped, tuple(range(nd)) + (nd + 1, nd))
    y = _nn.conv(x, w, 1, "valid", "channels_last", d)
    return _to_first(y, fmt)


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """Depthwise convolution over 1 or 2 spatial axes; ``kernel`` (*window,
    in_channels, multiplier): output channel ``c * M + m``.

    Raises:
        ValueError: inputs of rank other than 3 or 4.
    """
    fmt = _fmt(data_format)
    x = _to_last(tensor(inputs), fmt)
    k = tensor(kernel)
    if rank(x) == 3:
        y = K.squeeze(K.depthwise_conv2d(
            K.expand_dims(x, 1), K.expand_dims(k, 0), (1, _tup(strides, 1)[0]),
            padding, (1, _tup(dilation_rate, 1)[0])), 1)
    elif rank(x) == 4:
        y = K.depthwise_conv2d(x, k, _tup(strides, 2), padding, _tup(dilation_rate, 2))
    else:
        raise ValueError(f"depthwise_conv expects inputs of rank 3 or 4. Received: "
                         f"inputs.shape={tuple(x.shape)}.")
    return _to_first(y, fmt)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1,
                   padding="valid", data_format=None, dilation_rate=1):
    """``depthwise_conv`` followed by a 1x1 ``conv`` with ``pointwise_kernel``."""
    y = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format,
                       dilation_rate)
    return _nn.conv(y, tensor(pointwise_kernel), 1, "valid", _fmt(data_format))


def depth_to_space(x, block_size, data_format="channels_last"):
    """Pixel shuffle: channel blocks of ``block_size**2`` moved into space."""
    x, b = tensor(x), int(block_size)
    if _fmt(data_format) == "channels_last":
        n, h, w, c = x.shape
        y = K.transpose(K.reshape(x, (-1, h, w, b, b, c // b ** 2)), (0, 1, 3, 2, 4, 5))
        return K.reshape(y, (-1, h * b, w * b, c // b ** 2))
    n, c, h, w = x.shape
    y = K.transpose(K.reshape(x, (-1, c // b ** 2, b, b, h, w)), (0, 1, 4, 2, 5, 3))
    return K.reshape(y, (-1, c // b ** 2, h * b, w * b))


def space_to_depth(x, block_size, data_format="channels_last"):
    """Pixel unshuffle: ``block_size`` x ``block_size`` blocks moved into
    channels (the inverse of ``depth_to_space``)."""
    x, b = tensor(x), int(block_size)
    if _fmt(data_format) == "channels_last":
        n, h, w, c = x.shape
        y = K.transpose(K.reshape(x, (-1, h // b, b, w // b, b, c)), (0, 1, 3, 2, 4, 5))
        return K.reshape(y, (-1, h // b, w // b, c * b * b))
    n, c, h, w = x.shape
    y = K.transpose(K.reshape(x, (-1, c, h // b, b, w // b, b)), (0, 1, 3, 5, 2, 4))
    return K.reshape(y, (-1, c * b * b, h // b, w // b))


# -- adaptive pooling, unfold/fold --------------------------------------------------------
def _adaptive(kind, inputs, output_size, data_format):
    fmt = _fmt(data_format)
    x = _to_last(tensor(inputs), fmt)
    nd = rank(x) - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"adaptive_{kind}_pool supports 1-3 spatial axes. "
                         f"Received: inputs.shape={tuple(inputs.shape)}.")
    out = _tup(output_size, nd)
    for i in range(nd):
        n, o = x.shape[1 + i], out[i]
        starts = (np.arange(o) * n) // o
        ends = -((-(np.arange(o) + 1) * n) // o)
        if kind == "average":
            m = np.zeros((o, n), dtype_of(x))
            for j, (a, e) in enumerate(zip(starts, ends)):
                m[j, a:e] = 1.0 / (e - a)
            x = moveaxis_last(K.tensordot(x, m, axes=([1 + i], [1])), 1 + i)
        else:
            width = int((ends - starts).max())
            idx = np.minimum(starts[:, None] + np.arange(width), ends[:, None] - 1)
            x = K.max(K.gather(x, idx.astype("int64"), axis=1 + i), axis=2 + i)
    return _to_first(x, fmt)


def moveaxis_last(x, dest):
    """``x`` with its last axis moved to ``dest``."""
    n = rank(x)
    perm = list(range(n - 1))
    perm.insert(dest, n - 1)
    return K.transpose(x, tuple(perm))


def adaptive_average_pool(inputs, output_size, data_format=None):
    """Average pooling to a fixed ``output_size``: output cell i covers input
    ``[floor(i n / o), ceil((i + 1) n / o))`` per axis (PyTorch's rule)."""
    return _adaptive("average", inputs, output_size, data_format)


def adaptive_max_pool(inputs, output_size, data_format=None):
    """Max pooling to a fixed ``output_size`` (windows as
    ``adaptive_average_pool``)."""
    return _adaptive("max", inputs, output_size, data_format)


def _unfold_index(h, w, k, d, s):
    oh = (h - (k[0] - 1) * d[0] - 1) // s[0] + 1
    ow = (w - (k[1] - 1) * d[1] - 1) // s[1] + 1
    i = (np.arange(oh) * s[0])[None, None, :, None] + (np.arange(k[0]) * d[0])[
        :, None, None, None]
    j = (np.arange(ow) * s[1])[None, None, None, :] + (np.arange(k[1]) * d[1])[
        None, :, None, None]
    return (i * w + j).reshape(k[0] * k[1], oh * ow), oh, ow


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """im2col of an NCHW batch: (N, C * kh * kw, L) sliding blocks (PyTorch's
    ``Unfold``); a gather, so differentiable.

    Raises:
        ValueError: an input that is not 4-D.
    """
    x = tensor(x)
    if rank(x) != 4:
        raise ValueError(f"Input must be a 4D tensor. Received: "
                         f"input.shape={tuple(x.shape)}")
    k, d, p, s = (_tup(v, 2) for v in (kernel_size, dilation, padding, stride))
    x = K.pad(x, [[0, 0], [0, 0], [p[0], p[0]], [p[1], p[1]]])
    n, c, h, w = x.shape
    idx, oh, ow = _unfold_index(h, w, k, d, s)
    flat = K.reshape(x, (-1, c, h * w))
    cols = K.gather(flat, idx.astype("int64"), axis=2)  # (N, C, kk, L)
    return K.reshape(cols, (-1, c * k[0] * k[1], oh * ow))


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: sums (N, C * kh * kw, L) blocks back into (N, C, H, W) (the
    adjoint of ``unfold``; PyTorch's ``Fold``)."""
    x = tensor(x)
    o, k, d, p, s = (_tup(v, 2) for v in (output_size, kernel_size, dilation,
                                          padding, stride))
    h, w = o[0] + 2 * p[0], o[1] + 2 * p[1]
    idx, oh, ow = _unfold_index(h, w, k, d, s)
    n, ckk, length = x.shape
    c = ckk // (k[0] * k[1])
    cols = K.reshape(K.transpose(K.reshape(x, (-1, c, k[0] * k[1] * length)),
                                 (2, 0, 1)), (k[0] * k[1] * length, -1))
    like = K.gather(cols, np.zeros(h * w, "int64"), axis=0)  # (H * W, N * C)
    summed = K.apply("GatherGrad", cols, like, idx.reshape(-1).astype("int64"),
                     axis=0)
    img = K.reshape(K.transpose(summed, (1, 0)), (-1, c, h, w))
    return img[:, :, p[0]:p[0] + o[0], p[1]:p[1] + o[1]]

