"""``kerasflow.ops.nn``: Keras 3's ``keras.ops.nn`` with Keras' signatures:
activations, normalizations, convolutions and pooling, cross-entropies and
CTC, encodings and metrics, and ``dot_product_attention``.

Every function takes arrays (computing at once) or symbolic tensors (adding
graph nodes); shapes and dtypes follow numpy's broadcasting. Names the backend
has are views over its ops (no second implementation); the rest are composed
from differentiable backend ops (where, clip, sort, reshape/transpose, pad,
gather, conv2d, depthwise conv2d), so they run eagerly and in graphs with
gradients. Source: Keras 3's ops (numpy backend semantics; JAX's
``conv_transpose`` padding rule; PyTorch's adaptive pooling windows and
``Unfold``/``Fold``); Martins & Astudillo, 2016 (sparsemax); Zhang &
Sennrich, 2019 (RMS normalization).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.keras_ops import one_hot
from kerasflow.ops.common import dtype_of, rank, tensor, to_float
from kerasflow.ops.signal import polar

__all__ = [
    "adaptive_average_pool", "adaptive_max_pool", "average_pool",
    "batch_normalization", "binary_crossentropy", "categorical_crossentropy",
    "celu", "conv", "conv_transpose", "ctc_decode", "ctc_loss", "depth_to_space",
    "depthwise_conv", "dot_product_attention", "elu", "fold", "gelu", "glu",
    "hard_shrink", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "in_top_k", "layer_normalization", "leaky_relu", "log_sigmoid", "log_softmax",
    "max_pool", "moments", "multi_hot", "normalize", "one_hot", "polar", "psnr",
    "relu", "relu6", "rms_normalization", "selu", "separable_conv", "sigmoid",
    "silu", "soft_shrink", "softmax", "softplus", "softsign", "space_to_depth",
    "sparse_categorical_crossentropy", "sparse_plus", "sparse_sigmoid",
    "sparsemax", "squareplus", "swish", "tanh_shrink", "threshold", "unfold",
]


# -- activations -----------------------------------------------------------------------
relu6, sigmoid, softplus, softsign = K.relu6, K.sigmoid, K.softplus, K.softsign
selu, swish, hard_sigmoid, log_softmax = K.selu, K.swish, K.hard_sigmoid, K.log_softmax
moments = K.moments


def relu(x):
    """``max(x, 0)``."""
    return K.relu(x)


def silu(x):
    """``x * sigmoid(x)`` (swish)."""
    return K.swish(x)


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, finite for large ``|x|``."""
    return -K.softplus(-x)


def leaky_relu(x, negative_slope=0.2):
    """``x`` for ``x >= 0``, ``negative_slope * x`` below."""
    return K.leaky_relu(x, alpha=negative_slope)


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below."""
    return K.elu(x, alpha=alpha)


def gelu(x, approximate=True):
    """Gaussian error linear unit; Keras' ops default is the tanh
    approximation (``approximate=True``)."""
    return K.gelu(x, approximate=approximate)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` over ``axis``, stably."""
    return K.softmax(x, axis=axis)


def _zero(x):
    return K.zeros_like(x)


def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)`` (Barron, 2017)."""
    x = to_float(x)
    return K.maximum(x, 0.0) + alpha * K.expm1(K.minimum(x, 0.0) / alpha)


def glu(x, axis=-1):
    """Gated linear unit: ``a * sigmoid(b)`` for the halves ``a, b`` of
    ``axis`` (Dauphin et al., 2017).

    Raises:
        ValueError: an odd size along ``axis``.
    """
    x = tensor(x)
    if x.shape[axis] is not None and x.shape[axis] % 2:
        raise ValueError(f"axis size must be divisible by 2. Received: "
                         f"x.shape={tuple(x.shape)} with axis={axis}")
    a, b = K.split(x, 2, axis=axis % rank(x))
    return a * K.sigmoid(b)


def hard_tanh(x):
    """``clip(x, -1, 1)``."""
    return K.clip(tensor(x), -1.0, 1.0)


def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0."""
    x = tensor(x)
    return K.where(K.greater(K.abs(x), threshold), x, _zero(x))


def soft_shrink(x, threshold=0.5):
    """``x - threshold`` above ``threshold``, ``x + threshold`` below
    ``-threshold``, else 0."""
    x = tensor(x)
    return K.where(K.greater(x, threshold), x - threshold,
                   K.where(K.less(x, -threshold), x + threshold, _zero(x)))


def tanh_shrink(x):
    """``x - tanh(x)``."""
    x = to_float(x)
    return x - K.tanh(x)


def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` in between, ``x`` for ``x >= 1``."""
    x = tensor(x)
    return K.where(K.less_equal(x, -1.0), _zero(x),
                   K.where(K.less(x, 1.0), 0.25 * K.square(x + 1.0), x))


def sparse_sigmoid(x):
    """0 for ``x <= -1``, ``(x + 1) / 2`` in between, 1 for ``x >= 1``."""
    x = to_float(x)
    return K.where(K.less_equal(x, -1.0), _zero(x),
                   K.where(K.greater_equal(x, 1.0), K.ones_like(x), 0.5 * (x + 1.0)))


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2`` (So, 2021)."""
    x = to_float(x)
    return (x + K.sqrt(K.square(x) + float(b))) / 2.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` with Keras' ``hard_sigmoid = relu6(x + 3) / 6``."""
    x = to_float(x)
    return x * (K.clip(x + 3.0, 0.0, 6.0) / 6.0)


hard_swish = hard_silu


def threshold(x, threshold, default_value):  # noqa: A002  (Keras' names)
    """``x`` where ``x > threshold``, else ``default_value``."""
    x = tensor(x)
    return K.where(K.greater(x, threshold), x,
                   K.cast(K.ones_like(x) * default_value, dtype_of(x).name))


def sparsemax(x, axis=-1):
    """The Euclidean projection of ``x`` onto the simplex along ``axis``
    (Martins & Astudillo, 2016): sparse probabilities."""
    x = to_float(x)
    ax = axis % rank(x)
    n = x.shape[ax]
    z = -K.sort(-x, axis=ax)
    cs = K.cumsum(z, axis=ax)
    shape = [1] * rank(x)
    shape[ax] = n
    r = np.arange(1, n + 1, dtype=dtype_of(x)).reshape(shape)
    support = K.greater(z - K.divide(cs - 1.0, r), 0.0)
    k = K.sum(K.cast(support, dtype_of(x).name), axis=ax, keepdims=True)
    tau = (K.sum(K.where(support, cs, _zero(cs)), axis=ax, keepdims=True) - 1.0) / k
    return K.maximum(x - tau, 0.0)


# -- normalization ---------------------------------------------------------------------
def batch_normalization(x, mean, variance, axis, offset=None, scale=None,
                        epsilon=1e-3):
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset`` with the 1-D
    statistics along ``axis`` (Ioffe & Szegedy, 2015)."""
    x = tensor(x)
    shape = [1] * rank(x)
    shape[axis % rank(x)] = -1

    def b(v):
        return K.reshape(tensor(v), tuple(shape))

    inv = 1.0 / K.sqrt(b(variance) + epsilon)
    if scale is not None:
        inv = inv * b(scale)
    res = -b(mean) * inv
    if offset is not None:
        res = res + b(offset)
    return x * inv + res


def _axes(x, axis):
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted(a % rank(x) for a in axes)


def _compute(x):
    x = tensor(x)
    dt = dtype_of(x)
    cdt = np.result_type(dt, np.float32) if dt.kind == "f" else np.dtype("float32")
    return K.cast(x, cdt.name) if cdt != dt else x, dt


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over ``axis`` (Ba et
    al., 2016); computed in at least float32; epsilon defaults to
    ``backend.epsilon()``."""
    xc, dt = _compute(x)
    eps = K.epsilon() if epsilon is None else epsilon
    axes = _axes(xc, axis)
    bshape = [1] * rank(xc)
    for a in axes:
        bshape[a] = xc.shape[a]

    def b(v):
        v = tensor(v, np.dtype(xc.dtype).name)
        return K.reshape(v, tuple(bshape)) if rank(v) != rank(xc) and \
            axes != [rank(xc) - 1] else v

    mean, var = K.moments(xc, axes=tuple(axes), keepdims=True)
    inv = K.rsqrt(var + eps)
    if gamma is not None:
        inv = inv * b(gamma)
    res = -mean * inv
    if beta is not None:
        res = res + b(beta)
    return K.cast(xc * inv + res, dt.name)


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """``x / sqrt(mean(x**2) + epsilon) * scale`` over ``axis`` (Zhang &
    Sennrich, 2019); computed in at least float32."""
    xc, dt = _compute(x)
    eps = K.epsilon() if epsilon is None else epsilon
    axes = tuple(_axes(xc, axis))
    out = xc * K.rsqrt(K.mean(K.square(xc), axis=axes, keepdims=True) + eps)
    if scale is not None:
        out = out * tensor(scale, np.dtype(xc.dtype).name)
    return K.cast(out, dt.name)


def normalize(x, axis=-1, order=2, epsilon=None):
    """``x`` over its L2 norm along ``axis`` (Keras' ``ops.normalize``).

    Raises:
        NotImplementedError: ``order`` other than 2.
    """
    if order != 2:
        raise NotImplementedError(f"normalize supports order=2. Received: "
                                  f"order={order!r}.")
    return K.l2_normalize(x, axis=axis, epsilon=1e-12 if epsilon is None
                          else epsilon)


# -- convolution and pooling -----------------------------------------------------------
def _spatial(x, data_format):
    """``x`` channels-last, the format, and the rank (3, 4 or 5 expected)."""
    fmt = K.image_data_format() if data_format is None else data_format
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or "
                         f"'channels_first'. Received: data_format={data_format!r}")
    return _to_last(x, fmt), fmt, len(x.shape)


def _fmt(data_format):
    return K.standardize_data_format(data_format)


def _to_last(x, fmt):
    n = rank(x)
    return x if fmt == "channels_last" else K.transpose(x, (0, *range(2, n), 1))


def _to_first(x, fmt):
    n = rank(x)
    return x if fmt == "channels_last" else K.transpose(x, (0, n - 1, *range(1, n - 1)))


def conv(inputs, kernel, strides=1, padding="valid", data_format=None,
         dilation_rate=1):
    """N-d convolution (1, 2 or 3 spatial axes) of ``inputs`` (batch, *spatial,
    channels) with ``kernel`` (*window, in, out); channels_first transposes.

    Raises:
        ValueError: an input of rank other than 3, 4 or 5.
    """
    x, fmt, nd = _spatial(inputs, data_format)
    if nd == 3:
        y = K.squeeze(K.conv2d(K.expand_dims(x, 1), K.expand_dims(kernel, 0),
                               (1, strides if isinstance(strides, int) else
                                strides[0]), padding,
                               (1, dilation_rate if isinstance(dilation_rate, int)
                                else dilation_rate[0])), 1)
    elif nd == 4:
        y = K.conv2d(x, kernel, strides, padding, dilation_rate)
    elif nd == 5:
        y = K.conv3d(x, kernel, strides, padding, dilation_rate)
    else:
        raise ValueError(f"conv expects inputs of rank 3, 4 or 5. Received: "
                         f"inputs.shape={tuple(inputs.shape)}")
    return _to_first(y, fmt)


def _pool(kind, inputs, pool_size, strides, padding, data_format):
    x, fmt, nd = _spatial(inputs, data_format)
    strides = pool_size if strides is None else strides
    fn2 = K.max_pool2d if kind == "max" else K.avg_pool2d
    fn3 = K.max_pool3d if kind == "max" else K.avg_pool3d
    if nd == 3:
        p = pool_size if isinstance(pool_size, int) else pool_size[0]
        s = strides if isinstance(strides, int) else strides[0]
        y = K.squeeze(fn2(K.expand_dims(x, 1), (1, p), (1, s), padding), 1)
    elif nd == 4:
        y = fn2(x, pool_size, strides, padding)
    elif nd == 5:
        y = fn3(x, pool_size, strides, padding)
    else:
        raise ValueError(f"{kind}_pool expects inputs of rank 3, 4 or 5. Received: "
                         f"inputs.shape={tuple(inputs.shape)}")
    return _to_first(y, fmt)


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Max pooling over 1, 2 or 3 spatial axes (Keras' ``ops.max_pool``)."""
    return _pool("max", inputs, pool_size, strides, padding, data_format)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Average pooling over 1, 2 or 3 spatial axes."""
    return _pool("avg", inputs, pool_size, strides, padding, data_format)


def _tup(v, n):
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    return tuple(int(u) for u in v)


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
    y = conv(x, w, 1, "valid", "channels_last", d)
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
    return conv(y, tensor(pointwise_kernel), 1, "valid", _fmt(data_format))


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


# -- adaptive pooling, unfold/fold -----------------------------------------------------
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
            x = _moveaxis_last(K.tensordot(x, m, axes=([1 + i], [1])), 1 + i)
        else:
            width = int((ends - starts).max())
            idx = np.minimum(starts[:, None] + np.arange(width), ends[:, None] - 1)
            x = K.max(K.gather(x, idx.astype("int64"), axis=1 + i), axis=2 + i)
    return _to_first(x, fmt)


def _moveaxis_last(x, dest):
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


# -- losses ----------------------------------------------------------------------------
_EPS = 1e-7


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy (no reduction), output clipped to
    [1e-7, 1 - 1e-7] unless ``from_logits``."""
    if from_logits:
        return K.sigmoid_cross_entropy_with_logits(K.cast(target, output.dtype),
                                                   output)
    p = K.clip(output, _EPS, 1.0 - _EPS)
    t = K.cast(target, p.dtype)
    return -(t * K.log(p) + (1.0 - t) * K.log(1.0 - p))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """``-sum(target * log(output))`` over ``axis`` (output renormalized and
    clipped, or log-softmaxed with ``from_logits``)."""
    t = K.cast(target, output.dtype)
    if from_logits:
        log_p = K.log_softmax(output, axis=axis)
    else:
        p = output / K.sum(output, axis=axis, keepdims=True)
        log_p = K.log(K.clip(p, _EPS, 1.0 - _EPS))
    return -K.sum(t * log_p, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Categorical cross-entropy with integer ``target`` ids."""
    classes = output.shape[axis]
    return categorical_crossentropy(one_hot(K.cast(target, "int64"), classes),
                                    output, from_logits=from_logits, axis=axis)


def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """CTC loss per sequence (``output`` logits (batch, steps, classes);
    ``mask_index`` is the blank class), as Keras' ``ops.ctc_loss``."""
    return K.ctc_loss(target, output, target_length, output_length,
                      blank_index=mask_index)


def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100,
               top_paths=1, merge_repeated=True, mask_index=0):
    """Greedy CTC decoding (Graves et al., 2006) of ``inputs`` (batch, steps,
    classes): the best class per step, repeats merged, blanks (``mask_index``)
    and steps past ``sequence_lengths`` dropped. Returns (decoded (1, batch,
    steps) int32, -1-padded at the end; scores (batch, 1): minus the summed
    best logits), as Keras.

    Raises:
        NotImplementedError: ``strategy='beam_search'``.
        ValueError: another strategy.
    """
    if strategy == "beam_search":
        raise NotImplementedError("ctc_decode supports strategy='greedy' here; "
                                  "beam search is not implemented.")
    if strategy != "greedy":
        raise ValueError(f"Invalid strategy {strategy}. Supported values are "
                         f"'greedy' and 'beam_search'.")
    x = tensor(inputs)
    if dtype_of(x).kind != "f" or dtype_of(x).itemsize < 4:
        x = K.cast(x, "float32")
    steps = x.shape[1]
    lengths = K.cast(tensor(sequence_lengths), "int32")
    idx = K.cast(K.argmax(x, axis=-1), "int32")
    scores = K.max(x, axis=-1)
    past = K.greater_equal(np.arange(steps, dtype="int32")[None, :],
                           K.expand_dims(lengths, 1))
    idx = K.where(past, mask_index, idx)
    scores = K.where(past, K.zeros_like(scores), scores)
    if merge_repeated:
        same = K.equal(idx[:, 1:], idx[:, :-1])
        same = K.concatenate([K.zeros_like(same[:, :1]), same], axis=1)
        idx = K.where(same, mask_index, idx)
    blank = K.equal(idx, mask_index)
    idx = K.where(blank, -1, idx)
    order = K.where(blank, steps, np.arange(steps, dtype="int32")[None, :]
                    + K.zeros_like(idx))
    idx = K.take_along_axis(idx, K.argsort(order, axis=-1), axis=-1)
    return K.expand_dims(idx, 0), -K.sum(scores, axis=1, keepdims=True)


# -- encodings, metrics ----------------------------------------------------------------
def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """Multi-hot encoding: 1 at each class index present in a row of int
    ``inputs`` (a 1-D input is one row). floatx by default.

    Raises:
        ValueError: ``sparse=True`` or no ``num_classes``.
    """
    num_classes = kwargs.pop("num_tokens", num_classes)
    if sparse or num_classes is None:
        raise ValueError(f"multi_hot needs num_classes and sparse=False. Received: "
                         f"num_classes={num_classes}, sparse={sparse}.")
    x = K.cast(tensor(inputs), "int64")
    dt = np.dtype(K.floatx() if dtype is None else dtype).name
    oh = K.one_hot(x, int(num_classes), dtype=dt)
    if axis != -1:
        oh = K.transpose(oh, tuple(np.moveaxis(np.arange(rank(oh)), -1, axis)))
    return K.max(oh, axis=1 if rank(x) > 1 else 0)


def psnr(x1, x2, max_val):
    """Peak signal-to-noise ratio in dB: ``20 log10(max_val) - 10 log10(mse)``.

    Raises:
        ValueError: inputs of different shapes.
    """
    a, b = tensor(x1), tensor(x2)
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"Input shapes {tuple(a.shape)} and {tuple(b.shape)} must "
                         f"match for PSNR calculation.")
    mse = K.mean(K.square(a - b))
    ln10 = float(np.log(10.0))
    return 20.0 * float(np.log10(max_val)) - 10.0 * K.log(mse) / ln10


def in_top_k(targets, predictions, k):
    """Whether each target's score is among the ``k`` largest of its row
    (ties count as in; bool, no gradient)."""
    p = tensor(predictions)
    t = K.cast(tensor(targets), "int64")
    kth = K.top_k(p, int(k))[0][..., -1:]
    own = K.take_along_axis(p, K.expand_dims(t, -1), axis=-1)
    return K.squeeze(K.greater_equal(own, kth), -1)


# -- attention -------------------------------------------------------------------------
def dot_product_attention(query, key, value, bias=None, mask=None, scale=None,
                          is_causal=False, flash_attention=None,
                          attn_logits_soft_cap=None):
    """``softmax(q k^T * scale + bias, masked) v`` (Vaswani et al., 2017;
    Keras 3's ``ops.dot_product_attention``).

    Args:
        query: (batch, T, heads, head_dim); key, value: (batch, S, heads,
            head_dim) (Keras' layout).
        bias: added to the logits, broadcastable to (batch, heads, T, S).
        mask: bool, broadcastable to (batch, heads, T, S); False positions get
            no weight.
        scale: default ``1 / sqrt(head_dim)``. is_causal: position t attends to
            positions <= t only.

    Returns:
        (batch, T, heads, head_dim).

    Raises:
        NotImplementedError: flash attention or a logits soft cap.
    """
    if flash_attention or attn_logits_soft_cap is not None:
        raise NotImplementedError("dot_product_attention: flash attention and "
                                  "attn_logits_soft_cap are not supported here.")
    dim = query.shape[-1]
    scale = 1.0 / np.sqrt(dim) if scale is None else float(scale)
    if (bias is None and mask is None and not is_causal and K.fused_attention_enabled()
            and len(query.shape) == 4 and query.dtype in (np.float32, np.float64)
            and query.dtype == key.dtype == value.dtype):
        # One op (backend.ops.attention): scores never leave the cache.
        return K.fused_attention(query, key, value, scale)
    logits = K.einsum("btnh,bsnh->bnts", query, key) * scale
    if bias is not None:
        logits = logits + bias
    keep = None if mask is None else K.cast(mask, "bool")
    if is_causal:
        t, s = query.shape[1], key.shape[1]
        causal = np.tril(np.ones((t, s), bool))
        keep = causal if keep is None else K.greater(
            K.cast(keep, logits.dtype) * causal.astype(logits.dtype), 0.0)
    if keep is not None:
        neg = np.asarray(np.finfo(np.dtype(logits.dtype)).min / 2, logits.dtype)
        logits = K.where(keep, logits, neg)
    weights = K.softmax(logits, axis=-1)
    return K.einsum("bnts,bsnh->btnh", weights, value)
