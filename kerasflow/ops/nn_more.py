"""More of Keras 3's ``keras.ops.nn``: activations (``celu``, ``glu``,
``hard_tanh``, shrinkage functions, ``sparse_plus``, ``squareplus``,
``sparsemax``...), normalizations (batch, layer, RMS), ``multi_hot``,
``psnr`` and ``in_top_k``; the convolution family is in ``nn_conv``.

Everything is composed from differentiable backend ops (where, clip, sort,
reshape/transpose, pad, gather, conv2d), so it runs eagerly and in graphs with
gradients. Source: Keras 3's ops (numpy backend semantics); Martins &
Astudillo, 2016 (sparsemax); Zhang & Sennrich, 2019 (RMS normalization).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.ops.common import dtype_of, rank, tensor, to_float

__all__ = [
    "batch_normalization", "celu", "ctc_decode",
    "glu",
    "hard_shrink", "hard_silu", "hard_swish", "hard_tanh", "in_top_k",
    "layer_normalization", "multi_hot", "psnr", "rms_normalization",
    "soft_shrink", "sparse_plus",
    "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink", "threshold",
    
]


def _zero(x):
    return K.zeros_like(x)


# -- activations ------------------------------------------------------------------------
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


# -- normalization ----------------------------------------------------------------------
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


# -- encodings, metrics ---------------------------------------------------------------------
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


from kerasflow.ops.nn_conv import *  # noqa: F403, E402
from kerasflow.ops.nn_conv import __all__ as _conv_all  # noqa: E402

__all__ = sorted(__all__ + _conv_all)
