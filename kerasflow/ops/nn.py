"""``kerasflow.ops.nn``: Keras 3's ``keras.ops.nn`` names with Keras'
signatures, as views over the backend ops (no second implementation), plus
``dot_product_attention`` composed from them.

Every function takes arrays (computing at once) or symbolic tensors (adding
graph nodes); shapes and dtypes follow numpy's broadcasting.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.keras_ops import one_hot

__all__ = ["average_pool", "binary_crossentropy", "categorical_crossentropy",
           "conv", "ctc_loss", "dot_product_attention", "elu", "gelu",
           "hard_sigmoid", "leaky_relu", "log_sigmoid", "log_softmax", "max_pool",
           "moments", "normalize", "one_hot", "relu", "relu6", "selu", "sigmoid",
           "silu", "softmax", "softplus", "softsign", "sparse_categorical_crossentropy",
           "swish"]

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


def _spatial(x, data_format):
    fmt = K.image_data_format() if data_format is None else data_format
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or "
                         f"'channels_first'. Received: data_format={data_format!r}")
    rank = len(x.shape)
    if fmt == "channels_first":
        x = K.transpose(x, (0, *range(2, rank), 1))
    return x, fmt, rank


def _back(y, fmt, rank):
    return y if fmt == "channels_last" else K.transpose(
        y, (0, rank - 1, *range(1, rank - 1)))


def conv(inputs, kernel, strides=1, padding="valid", data_format=None,
         dilation_rate=1):
    """N-d convolution (1, 2 or 3 spatial axes) of ``inputs`` (batch, *spatial,
    channels) with ``kernel`` (*window, in, out); channels_first transposes.

    Raises:
        ValueError: an input of rank other than 3, 4 or 5.
    """
    x, fmt, rank = _spatial(inputs, data_format)
    if rank == 3:
        y = K.squeeze(K.conv2d(K.expand_dims(x, 1), K.expand_dims(kernel, 0),
                               (1, strides if isinstance(strides, int) else
                                strides[0]), padding,
                               (1, dilation_rate if isinstance(dilation_rate, int)
                                else dilation_rate[0])), 1)
    elif rank == 4:
        y = K.conv2d(x, kernel, strides, padding, dilation_rate)
    elif rank == 5:
        y = K.conv3d(x, kernel, strides, padding, dilation_rate)
    else:
        raise ValueError(f"conv expects inputs of rank 3, 4 or 5. Received: "
                         f"inputs.shape={tuple(inputs.shape)}")
    return _back(y, fmt, rank)


def _pool(kind, inputs, pool_size, strides, padding, data_format):
    x, fmt, rank = _spatial(inputs, data_format)
    strides = pool_size if strides is None else strides
    fn2 = K.max_pool2d if kind == "max" else K.avg_pool2d
    fn3 = K.max_pool3d if kind == "max" else K.avg_pool3d
    if rank == 3:
        p = pool_size if isinstance(pool_size, int) else pool_size[0]
        s = strides if isinstance(strides, int) else strides[0]
        y = K.squeeze(fn2(K.expand_dims(x, 1), (1, p), (1, s), padding), 1)
    elif rank == 4:
        y = fn2(x, pool_size, strides, padding)
    elif rank == 5:
        y = fn3(x, pool_size, strides, padding)
    else:
        raise ValueError(f"{kind}_pool expects inputs of rank 3, 4 or 5. Received: "
                         f"inputs.shape={tuple(inputs.shape)}")
    return _back(y, fmt, rank)


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Max pooling over 1, 2 or 3 spatial axes (Keras' ``ops.max_pool``)."""
    return _pool("max", inputs, pool_size, strides, padding, data_format)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Average pooling over 1, 2 or 3 spatial axes."""
    return _pool("avg", inputs, pool_size, strides, padding, data_format)


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

from kerasflow.ops.nn_more import *  # noqa: F403, E402
from kerasflow.ops.nn_more import __all__ as _more  # noqa: E402

from kerasflow.ops.signal import polar  # noqa: E402, F401

__all__ = sorted(set(__all__) | set(_more) | {"polar"})
