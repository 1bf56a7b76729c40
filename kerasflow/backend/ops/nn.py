"""Neural-network ops: activations, fused cross-entropies, dropout.

Activations are composites of primitives (no gradient code) except relu, sigmoid
and tanh, whose kernels are stable and whose gradients reuse the output. The
softmax cross-entropies are fused primitives for a numerical reason: the gradient
softmax(z) - labels avoids differentiating through log(softmax(z)).
"""

from __future__ import annotations

import math

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.elementwise import abs, exp, log1p, sign, square
from kerasflow.backend.ops.math import (
    add, divide, greater, maximum, minimum, multiply, negative, subtract, where,
)
from kerasflow.backend.ops.dropout_mask import dropout_mask
from kerasflow.backend.ops.reduction import logsumexp, sum
from kerasflow.backend.ops.shape import expand_dims, one_hot
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["relu", "sigmoid", "tanh", "softplus", "softsign", "elu", "selu", "gelu",
           "leaky_relu", "relu6", "swish", "silu", "hard_sigmoid", "softmax",
           "log_softmax", "softmax_cross_entropy_with_logits",
           "sparse_softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits", "dropout"]


# -- primitive activations ------------------------------------------------------------
@register_op("Relu", I.same)
def _relu(xp, x):
    return xp.maximum(x, 0)


@register_gradient("Relu")
def _relu_grad(node, g):
    return (apply("ReluGrad", g, node.outputs[0]),)


@register_op("ReluGrad", lambda g, y: (g.shape, g.dtype))
def _relu_grad_kernel(xp, g, y):
    return g * (y > 0)


@register_gradient("ReluGrad")
def _relu_grad_grad(node, gg):
    return apply("ReluGrad", gg, node.inputs[1]), None


@register_op("Sigmoid", I.same_float)
def _sigmoid(xp, x):
    # 0.5 * (1 + tanh(x / 2)): equal to 1 / (1 + exp(-x)) without overflow.
    return 0.5 * (1.0 + xp.tanh(0.5 * x))


@register_gradient("Sigmoid")
def _sigmoid_grad(node, g):
    y = node.outputs[0]
    return (multiply(g, multiply(y, subtract(1.0, y))),)


@register_op("Tanh", I.same_float)
def _tanh(xp, x):
    return xp.tanh(x)


@register_gradient("Tanh")
def _tanh_grad(node, g):
    y = node.outputs[0]
    return (multiply(g, subtract(1.0, multiply(y, y))),)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """Rectified linear unit max(x, 0); Keras' ``alpha``/``max_value`` supported.

    Args:
        x: float tensor of any shape.
        alpha: slope below ``threshold`` (leaky relu when > 0).
        max_value: upper clip (relu6 is ``max_value=6``).
    """
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return apply("Relu", x)
    y = where(greater(x, threshold), x, multiply(alpha, subtract(x, threshold)))
    return y if max_value is None else minimum(y, max_value)


def sigmoid(x):
    """Logistic sigmoid 1 / (1 + exp(-x)), computed without overflow."""
    return apply("Sigmoid", x)


def tanh(x):
    """Hyperbolic tangent."""
    return apply("Tanh", x)


# -- composite activations ------------------------------------------------------------
def _neg_abs(x):
    """-|x| as minimum(-x, x): at 0 its gradient is -1, where abs's is 0."""
    return minimum(negative(x), x)


def softplus(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): finite for any x.

    At x = 0 the gradients of the two terms are 1 and -1/2 (max's tie goes to x,
    ``_neg_abs``'s to -x), summing to the exact sigmoid(0) = 1/2.
    """
    return add(maximum(x, 0.0), log1p(exp(_neg_abs(x))))


def softsign(x):
    """x / (1 + |x|)."""
    return divide(x, add(abs(x), 1.0))


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise (Clevert et al., 2015)."""
    neg = multiply(alpha, subtract(exp(minimum(x, 0.0)), 1.0))
    return where(greater(x, 0.0), x, neg)


_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def selu(x):
    """Scaled ELU with the constants of Klambauer et al., 2017."""
    return multiply(_SELU_SCALE, elu(x, _SELU_ALPHA))


def gelu(x, approximate=False):
    """Gaussian error linear unit x * Φ(x) (Hendrycks & Gimpel, 2016).

    Args:
        approximate: use the tanh approximation (as Keras' ``approximate=True``);
            otherwise Φ(x) = (1 + erf(x / √2)) / 2 with erf from Abramowitz &
            Stegun 7.1.26 (absolute error ≤ 1.5e-7).
    """
    if approximate:
        inner = multiply(math.sqrt(2.0 / math.pi),
                         add(x, multiply(0.044715, multiply(x, multiply(x, x)))))
        return multiply(multiply(0.5, x), add(1.0, tanh(inner)))
    return multiply(multiply(0.5, x), add(1.0, _erf(multiply(x, 1.0 / math.sqrt(2)))))


def _erf(x):
    """erf by Abramowitz & Stegun 7.1.26, built from primitives."""
    a = abs(x)
    t = divide(1.0, add(1.0, multiply(0.3275911, a)))
    acc = multiply(t, 1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        acc = multiply(t, add(acc, c))
    return multiply(sign(x), subtract(1.0, multiply(acc, exp(negative(square(a))))))


def leaky_relu(x, alpha=0.2):
    """x for x > 0, alpha * x otherwise (Keras' default alpha 0.2)."""
    return where(greater(x, 0.0), x, multiply(alpha, x))


def relu6(x):
    """min(max(x, 0), 6)."""
    return minimum(apply("Relu", x), 6.0)


def swish(x):
    """x * sigmoid(x) (Ramachandran et al., 2017); also called silu."""
    return multiply(x, sigmoid(x))


silu = swish


def hard_sigmoid(x):
    """Piecewise linear sigmoid: clip(x / 6 + 0.5, 0, 1) (Keras 3's definition)."""
    return minimum(maximum(add(multiply(x, 1.0 / 6.0), 0.5), 0.0), 1.0)


def _softmax_infer(x, axis):
    shape, dtype = I.same_float(x)
    if shape is not None:
        I.norm_axis(axis, len(shape))  # an axis out of range fails here
    return shape, dtype


@register_op("Softmax", _softmax_infer)
def _softmax(xp, x, axis):
    # One output buffer, three passes over it after the max: x - max, exp in
    # place, divided in place by the sums (the graph of exp/sum/divide wrote
    # three arrays of x's size and its gradient ~6 more).
    out = xp.subtract(x, x.max(axis=axis, keepdims=True))
    xp.exp(out, out=out)
    out /= out.sum(axis=axis, keepdims=True)
    return out


@register_gradient("Softmax")
def _softmax_grad(node, g):
    # dx = y * (g - sum(g * y)) along the axis: graph ops, so differentiable again.
    y, axis = node.outputs[0], node.attrs["axis"]
    return (multiply(y, subtract(g, sum(multiply(g, y), axis=axis, keepdims=True))),)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis`` (an int or a tuple of ints).

    Computed as e / sum(e) with e = exp(x - max(x)): finite for large logits,
    and a row of equal huge negatives (a fully masked row) comes out uniform,
    as in Keras, where exp(x - logsumexp(x)) would round to 1 everywhere in
    float32. One ``Softmax`` node; its gradient y * (g - sum(g * y)) is built
    from graph ops (so it is differentiable again).

    Args:
        x: float tensor of any shape.
        axis: the axis or axes normalized over.

    Returns:
        Tensor of x's shape and dtype.

    Raises:
        TypeError: a non-float input. ValueError: an axis out of range.
    """
    axis = int(axis) if isinstance(axis, (int, np.integer)) else tuple(
        int(a) for a in axis)
    return apply("Softmax", x, axis=axis)


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along ``axis``: finite for large logits."""
    return subtract(x, logsumexp(x, axis=axis, keepdims=True))


# -- fused cross-entropies ------------------------------------------------------------
def _xent_infer(labels, logits):
    if labels.shape is not None and logits.shape is not None:
        if len(labels.shape) != len(logits.shape) or any(
            a is not None and b is not None and a != b
            for a, b in zip(labels.shape, logits.shape)
        ):
            raise ValueError(
                f"labels and logits must have one shape. Received: "
                f"labels.shape={labels.shape}, logits.shape={logits.shape}."
            )
    return (None if logits.shape is None else logits.shape[:-1]), logits.dtype


def _log_softmax_kernel(xp, z):
    m = z.max(axis=-1, keepdims=True)
    shifted = z - m
    return shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))


@register_op("SoftmaxCrossEntropyWithLogits", _xent_infer)
def _softmax_xent(xp, labels, logits):
    return -(labels * _log_softmax_kernel(xp, logits)).sum(axis=-1)


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(node, g):
    labels, logits = node.inputs
    ge = apply("ExpandDims", g, axis=-1)
    sm = softmax(logits)
    # d/dlogits = (softmax * sum(labels) - labels); sum(labels) = 1 for
    # distributions, kept general so unnormalized labels differentiate exactly.
    gl = subtract(multiply(sm, sum(labels, axis=-1, keepdims=True)), labels)
    return multiply(ge, negative(log_softmax(logits))), multiply(ge, gl)


def softmax_cross_entropy_with_logits(labels, logits):
    """Per-example -sum(labels * log_softmax(logits)) over the last axis.

    Args:
        labels: float tensor (batch..., classes), usually one-hot or a
            probability distribution per row.
        logits: float tensor of the same shape, unnormalized log-probabilities.

    Returns:
        Tensor of shape (batch...,).

    Raises:
        ValueError: labels and logits of different shapes, naming both.

    TF's ``tf.nn.softmax_cross_entropy_with_logits``.
    """
    return apply("SoftmaxCrossEntropyWithLogits", labels, logits)


def _sparse_xent_infer(labels, logits):
    if labels.dtype.kind not in "iu":
        raise TypeError(
            f"sparse labels must be integers. Received: labels {I.fmt(labels)}."
        )
    if labels.shape is not None and logits.shape is not None:
        if len(labels.shape) + 1 != len(logits.shape) or any(
            a is not None and b is not None and a != b
            for a, b in zip(labels.shape, logits.shape[:-1])
        ):
            raise ValueError(
                f"sparse labels need shape logits.shape[:-1]. Received: "
                f"labels.shape={labels.shape}, logits.shape={logits.shape}."
            )
    return (None if logits.shape is None else logits.shape[:-1]), logits.dtype


def _check_labels(xp, labels, n):
    if labels.size:
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= n:
            raise ValueError(
                f"sparse labels must lie in [0, {n}) for {n} classes. Received: "
                f"labels from {lo} to {hi}."
            )


@register_op("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_infer)
def _sparse_xent(xp, labels, logits):
    n = logits.shape[-1]
    _check_labels(xp, labels, n)
    # logsumexp(z) - z[label] on z shifted by its row max: only the picked entries
    # of log_softmax are formed (no full-size subtract, and no take_along_axis,
    # whose Python-level index building dominates at classifier sizes).
    z = logits.reshape(-1, n)
    shifted = z - z.max(axis=-1, keepdims=True)
    lse = xp.log(xp.exp(shifted).sum(axis=-1))
    picked = shifted[xp.arange(z.shape[0]), labels.reshape(-1)]
    return (lse - picked).reshape(labels.shape)


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(node, g):
    labels, logits = node.inputs
    return None, apply("SparseXentGrad", g, labels, logits)


@register_op("SparseXentGrad", lambda g, labels, logits: (logits.shape, logits.dtype))
def _sparse_xent_grad_kernel(xp, g, labels, logits):
    # softmax(logits) - one_hot(labels), scaled by the incoming gradient; one pass.
    e = xp.exp(logits - logits.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    e -= labels[..., None] == xp.arange(e.shape[-1])  # one-hot by comparison
    e *= g[..., None]
    return e


@register_gradient("SparseXentGrad")
def _sparse_xent_grad_grad(node, gg):
    g, labels, logits = node.inputs
    sm = softmax(logits)
    d = subtract(sm, one_hot(labels, logits.shape[-1], logits.dtype.name))
    # d(out)/dg: out = d * g[..., None]
    gg_g = sum(multiply(gg, d), axis=-1)
    # d(out)/dlogits: g * Jacobian of softmax applied to gg.
    inner = sum(multiply(gg, sm), axis=-1, keepdims=True)
    gg_logits = multiply(expand_dims(g, -1), multiply(sm, subtract(gg, inner)))
    return gg_g, None, gg_logits


def sparse_softmax_cross_entropy_with_logits(labels, logits):
    """Per-example cross-entropy with integer class labels.

    Args:
        labels: int tensor (batch...,) with values in [0, classes).
        logits: float tensor (batch..., classes).

    Returns:
        Tensor of shape (batch...,).

    Raises:
        TypeError: non-integer labels. ValueError: shapes that do not pair up
        (at graph build), or labels outside [0, classes) (at run time), naming the
        range and the labels received.

    TF's ``tf.nn.sparse_softmax_cross_entropy_with_logits``.
    """
    return apply("SparseSoftmaxCrossEntropyWithLogits", labels, logits)


def sigmoid_cross_entropy_with_logits(labels, logits):
    """Elementwise -z log σ(x) - (1 - z) log(1 - σ(x)), with x = logits, z = labels.

    Computed as max(x, 0) - x z + log1p(exp(-|x|)), TF's stable form, so no term
    overflows for large |x|; its gradient is sigmoid(x) - z, at x = 0 too (see
    ``softplus``).
    """
    return add(subtract(maximum(logits, 0.0), multiply(logits, labels)),
               log1p(exp(_neg_abs(logits))))


def dropout(x, rate, seed=None, training=True):
    """Zeroes each element with probability ``rate`` and scales the rest by
    1 / (1 - rate) (inverted dropout, Srivastava et al., 2014).

    Args:
        x: float tensor.
        rate: drop probability in [0, 1).
        seed: op seed; None takes the next one from ``set_random_seed``'s sequence.
        training: when False, returns ``x`` unchanged.

    Raises:
        ValueError: rate outside [0, 1).
    """
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout rate must be in [0, 1). Received: rate={rate}.")
    if not training or rate == 0.0:
        return x
    return multiply(x, dropout_mask(x, rate, seed=seed))
