"""``tf.nn`` with TF1's argument conventions, on the backend's ops.

Differences from Keras that TF1 programs rely on: ``dropout`` takes a *keep*
probability (possibly a placeholder fed 0.75 in training and 1.0 in test);
``conv2d``/``max_pool``/``avg_pool`` take 4-element ``strides``/``ksize``
(``[1, s, s, 1]``, NHWC); ``softmax_cross_entropy_with_logits`` must be called
with keywords (``labels=``, ``logits=``), as TF1 enforced.
"""

from __future__ import annotations

import numbers

from kerasflow import backend as K
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1._missing import missing_attribute
from kerasflow.distribute.custom_loop import (
    compute_average_loss,  # noqa: E402  tf.nn's name
)

__all__ = [
    "compute_average_loss", "relu", "relu6", "elu", "selu", "sigmoid", "tanh", "softplus", "softsign",
    "leaky_relu", "softmax", "log_softmax", "bias_add", "xw_plus_b", "dropout", "conv2d",
    "max_pool", "avg_pool", "max_pool2d", "avg_pool2d",
    "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
    "l2_loss", "embedding_lookup", "l2_normalize", "moments", "in_top_k",
]

_t = G.as_tensor


def _unary(fn):
    def op(features, name=None):
        return G.track(fn(_t(features)))

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


relu, relu6, elu, selu = (_unary(f) for f in (K.relu, K.relu6, K.elu, K.selu))
sigmoid, tanh, softplus, softsign = (_unary(f) for f in (K.sigmoid, K.tanh,
                                                         K.softplus, K.softsign))


def leaky_relu(features, alpha=0.2, name=None):
    return G.track(K.leaky_relu(_t(features), alpha))


def softmax(logits, axis=None, name=None, dim=None):
    axis = dim if axis is None else axis
    return G.track(K.softmax(_t(logits), -1 if axis is None else axis))


def log_softmax(logits, axis=None, name=None, dim=None):
    axis = dim if axis is None else axis
    return G.track(K.log_softmax(_t(logits), -1 if axis is None else axis))


def bias_add(value, bias, data_format=None, name=None):
    """``value + bias`` with ``bias`` (C,) along the last axis (NHWC)."""
    if data_format not in (None, "NHWC", "N...C"):
        raise NotImplementedError(f"tf.nn.bias_add with data_format="
                                  f"{data_format!r}: kerasflow is NHWC only.")
    return G.track(K.add(_t(value), _t(bias)))


def xw_plus_b(x, weights, biases, name=None):
    """``matmul(x, weights) + biases`` (TF1's ``tf.nn.xw_plus_b``).

    Args:
        x: (batch, in) float tensor.
        weights: (in, units) float tensor.
        biases: (units,) float tensor.

    Returns:
        (batch, units) tensor of ``x``'s dtype.
    """
    return G.track(K.add(K.matmul(*G.as_tensor_pair(x, weights)), _t(biases)))


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Keeps each element with probability ``keep_prob`` and scales kept ones
    by ``1 / keep_prob`` (TF1; inverted dropout, Srivastava et al., JMLR 2014).

    Args:
        x: float tensor.
        keep_prob: float in (0, 1] or a scalar float tensor (a placeholder fed
            per run). ``rate`` (= 1 - keep_prob) may be given instead.
        seed: op seed.

    Raises:
        ValueError: both or neither of keep_prob and rate, or a number outside
            (0, 1].
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError(f"tf.nn.dropout expects exactly one of keep_prob and "
                         f"rate. Received: keep_prob={keep_prob!r}, rate={rate!r}.")
    if noise_shape is not None:
        raise NotImplementedError("tf.nn.dropout with noise_shape is not provided "
                                  "by kerasflow.compat.v1.")
    x = _t(x)
    if keep_prob is None:
        keep_prob = 1.0 - rate if isinstance(rate, numbers.Real) else K.subtract(
            1.0, rate)
    if isinstance(keep_prob, numbers.Real):
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError(f"keep_prob must be a scalar tensor or a float in the "
                             f"range (0, 1], got {keep_prob}")
        return G.track(K.dropout(x, 1.0 - float(keep_prob), seed=seed))
    keep_prob = K.cast(_t(keep_prob), x.dtype)
    keep = K.cast(K.less(K.random_uniform_like(x, seed=seed), keep_prob), x.dtype)
    return G.track(K.divide(K.multiply(x, keep), keep_prob))


def _spatial(values, who, arg):
    if isinstance(values, numbers.Integral):
        return (int(values), int(values))
    values = [int(v) for v in values]
    if len(values) == 1:
        return (values[0], values[0])
    if len(values) == 2:
        return tuple(values)
    if len(values) == 4 and values[0] == 1 and values[3] == 1:
        return (values[1], values[2])
    raise ValueError(f"{who} expects {arg} as [1, h, w, 1] (NHWC; batch and "
                     f"channel entries 1), [h, w] or an int. Received: "
                     f"{arg}={values}.")


def _nhwc(data_format, who):
    if data_format not in (None, "NHWC"):
        raise NotImplementedError(f"{who} with data_format={data_format!r}: "
                                  f"kerasflow is NHWC only.")


def conv2d(input, filter=None, strides=None, padding=None,  # noqa: A002
           use_cudnn_on_gpu=True, data_format="NHWC", dilations=None, name=None,
           filters=None):
    """2-D convolution, NHWC: ``filter`` (kh, kw, in, out), ``strides``
    ``[1, sh, sw, 1]``, ``padding`` 'SAME' or 'VALID'."""
    _nhwc(data_format, "tf.nn.conv2d")
    kernel = filter if filter is not None else filters
    if strides is None or padding is None:
        raise ValueError("tf.nn.conv2d expects strides= and padding=.")
    dil = (1, 1) if dilations is None else _spatial(dilations, "conv2d", "dilations")
    return G.track(K.conv2d(_t(input), _t(kernel), _spatial(strides, "conv2d",
                                                            "strides"),
                            padding, dil))


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Max pooling, NHWC, ``ksize``/``strides`` as ``[1, k, k, 1]``."""
    return _pool(K.max_pool2d, "max_pool", value, input, ksize, strides, padding,
                 data_format)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Average pooling, NHWC, ``ksize``/``strides`` as ``[1, k, k, 1]``."""
    return _pool(K.avg_pool2d, "avg_pool", value, input, ksize, strides, padding,
                 data_format)


def _pool(fn, what, value, input, ksize, strides, padding, data_format):  # noqa: A002
    _nhwc(data_format, f"tf.nn.{what}")
    return G.track(fn(_t(value if value is not None else input),
                      _spatial(ksize, what, "ksize"),
                      _spatial(strides, what, "strides"), padding))


max_pool2d, avg_pool2d = max_pool, avg_pool


def _named_only(who, sentinel):
    if sentinel is not None:
        raise ValueError(f"Only call `{who}` with named arguments (labels=..., "
                         f"logits=..., ...)")


def _softmax_xent(labels, logits, axis, stop_labels):
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits needs both labels= "
                         "and logits=.")
    logits = _t(logits)
    if axis not in (-1, None) and axis != logits.ndim - 1:
        raise NotImplementedError("softmax_cross_entropy_with_logits over an axis "
                                  "other than the last is not provided.")
    labels = K.cast(_t(labels), logits.dtype)
    if stop_labels:
        labels = K.stop_gradient(labels)
    return G.track(K.softmax_cross_entropy_with_logits(labels, logits))


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                      dim=-1, name=None, axis=None):
    """Per-row ``-sum(labels * log_softmax(logits))``; keywords only (TF1).

    As in TF1, gradients flow into ``logits`` only (``_v2`` also into labels).

    Args:
        labels: (batch, classes) probabilities (one-hot rows).
        logits: (batch, classes) unnormalized scores.

    Returns:
        (batch,) tensor.

    Raises:
        ValueError: positional arguments (TF1's check: swapping labels and
            logits was a classic bug), or labels/logits missing.
    """
    _named_only("softmax_cross_entropy_with_logits", _sentinel)
    return _softmax_xent(labels, logits, dim if axis is None else axis, True)


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None,
                                         axis=None, name=None, dim=-1):
    """As ``softmax_cross_entropy_with_logits``; gradients flow into labels too."""
    _named_only("softmax_cross_entropy_with_logits_v2", _sentinel)
    return _softmax_xent(labels, logits, dim if axis is None else axis, False)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None,
                                             logits=None, name=None):
    """Per-example cross-entropy with int class ``labels`` (batch,)."""
    _named_only("sparse_softmax_cross_entropy_with_logits", _sentinel)
    return G.track(K.sparse_softmax_cross_entropy_with_logits(_t(labels),
                                                              _t(logits)))


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                      name=None):
    """Elementwise logistic loss, TF's stable form."""
    _named_only("sigmoid_cross_entropy_with_logits", _sentinel)
    logits = _t(logits)
    return G.track(K.sigmoid_cross_entropy_with_logits(
        K.cast(_t(labels), logits.dtype), logits))


def l2_loss(t, name=None):
    """``sum(t ** 2) / 2``."""
    return G.track(K.multiply(K.sum(K.square(_t(t))), 0.5))


def embedding_lookup(params, ids, partition_strategy="mod", name=None,
                     validate_indices=True, max_norm=None):
    """Rows ``params[ids]`` (one params tensor; no partitioning)."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("embedding_lookup over partitioned params "
                                      "is not provided by kerasflow.compat.v1.")
        params = params[0]
    return G.track(K.gather(_t(params), _t(ids), axis=0))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x**2, axis), epsilon))``."""
    axis = dim if axis is None else axis
    x = _t(x)
    sq = K.sum(K.square(x), axis=axis, keepdims=True)
    return G.track(K.multiply(x, K.rsqrt(K.maximum(sq, epsilon))))


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of ``x`` over ``axes``."""
    keep = bool(keep_dims if keepdims is None else keepdims)
    x = _t(x)
    axes = tuple(axes)
    mean = K.mean(x, axis=axes, keepdims=True)
    var = K.mean(K.square(K.subtract(x, K.stop_gradient(mean))), axis=axes,
                 keepdims=keep)
    if not keep:
        mean = K.squeeze(mean, axes)
    return G.track(mean), G.track(var)


def in_top_k(predictions, targets, k, name=None):
    """For k == 1: whether each target is the arg max of its row."""
    if k != 1:
        raise NotImplementedError("tf.nn.in_top_k with k > 1 is not provided by "
                                  "kerasflow.compat.v1.")
    pred = K.argmax(_t(predictions), -1)
    return G.track(K.equal(pred, K.cast(_t(targets), "int64")))


__getattr__ = missing_attribute("tf.nn", globals())
