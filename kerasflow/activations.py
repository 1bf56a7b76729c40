"""Activation functions by name (Keras 3's ``keras.activations``).

Each function wraps backend ops, so it works on symbolic tensors (adding graph
nodes) and on arrays (computing at once). ``softmax`` and ``sigmoid`` given a
symbolic tensor record their input on the output as ``_keras_logits``, so a
cross-entropy loss can use the fused, numerically stable op on the logits, as
Keras does.

Example:
    >>> from kerasflow import activations
    >>> activations.get("relu")(np.array([-1.0, 2.0]))
    array([0., 2.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kerasflow.backend import ops
from kerasflow.backend.graph import is_symbolic

# Keras 3's activations that are ops.nn's functions themselves (one op, one
# place): shrinkage, sparse and gated activations (kerasflow/ops/nn.py).
from kerasflow.ops.nn import (  # noqa: E402
    celu,
    glu,
    hard_shrink,
    hard_tanh,
    log_sigmoid,
    soft_shrink,
    sparse_plus,
    sparse_sigmoid,
    sparsemax,
    squareplus,
    tanh_shrink,
    threshold,
)
from kerasflow.utils.serialization import (
    deserialize_object,
    get_object,
    serialize_object,
)

__all__ = [
    "celu", "deserialize", "elu", "exponential", "gelu", "get", "glu", "hard_shrink",
    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "leaky_relu", "linear",
    "log_sigmoid", "log_softmax", "mish", "relu", "relu6", "selu", "serialize",
    "sigmoid", "silu", "soft_shrink", "softmax", "softplus", "softsign",
    "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "swish", "tanh",
    "tanh_shrink", "threshold",
]


def linear(x):
    """Identity activation: returns ``x`` unchanged."""
    return x


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Rectified linear unit: ``x`` above ``threshold``, else
    ``negative_slope * (x - threshold)``, clipped at ``max_value``.

    Args:
        x: float tensor or array of any shape.
        negative_slope: slope below the threshold (0: plain relu).
        max_value: upper saturation value; None for none.
        threshold: value below which the negative slope applies.

    Returns:
        Tensor of the same shape and dtype.
    """
    return ops.relu(x, alpha=negative_slope, max_value=max_value,
                    threshold=threshold)


def relu6(x):
    """``min(max(x, 0), 6)``; same shape and dtype as ``x``."""
    return ops.relu6(x)


def sigmoid(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, computed without overflow.

    Args:
        x: float tensor or array.

    Returns:
        Values in (0, 1), same shape and dtype; a symbolic result carries
        ``_keras_logits = x`` for the fused binary cross-entropy.
    """
    out = ops.sigmoid(x)
    if is_symbolic(x):
        out._keras_logits = x
    return out


def tanh(x):
    """Hyperbolic tangent; same shape and dtype as ``x``."""
    return ops.tanh(x)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably.

    Args:
        x: float tensor or array, usually (batch, classes) logits.
        axis: the axis normalized over.

    Returns:
        Tensor of the same shape whose entries along ``axis`` sum to 1. When
        ``x`` is symbolic and ``axis`` is the last axis, the result carries
        ``_keras_logits = x`` for the fused categorical cross-entropies (those
        reduce over the last axis).
    """
    out = ops.softmax(x, axis=axis)
    if is_symbolic(x) and (axis == -1 or (x.ndim is not None and axis == x.ndim - 1)):
        out._keras_logits = x
    return out


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis``: finite for large logits."""
    return ops.log_softmax(x, axis=axis)


def softplus(x):
    """``log(1 + exp(x))``, finite for any ``x``."""
    return ops.softplus(x)


def softsign(x):
    """``x / (1 + |x|)``."""
    return ops.softsign(x)


def elu(x, alpha=1.0):
    """``x`` for x > 0, else ``alpha * (exp(x) - 1)`` (Clevert et al., 2015)."""
    return ops.elu(x, alpha=alpha)


def selu(x):
    """Scaled ELU with the constants of Klambauer et al., 2017."""
    return ops.selu(x)


def gelu(x, approximate=False):
    """Gaussian error linear unit ``x * Phi(x)`` (Hendrycks & Gimpel, 2016).

    Args:
        x: float tensor or array.
        approximate: use the tanh approximation.
    """
    return ops.gelu(x, approximate=approximate)


def leaky_relu(x, negative_slope=0.2):
    """``x`` for x > 0, else ``negative_slope * x`` (Keras 3 default 0.2)."""
    return ops.leaky_relu(x, alpha=negative_slope)


def silu(x):
    """``x * sigmoid(x)`` (Ramachandran et al., 2017); ``swish`` is an alias."""
    return ops.silu(x)


swish = silu


def hard_sigmoid(x):
    """Piecewise linear sigmoid ``clip(x / 6 + 0.5, 0, 1)`` (Keras 3)."""
    return ops.hard_sigmoid(x)


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (Howard et al., 2019); ``hard_swish`` alias."""
    return ops.multiply(x, ops.hard_sigmoid(x))


hard_swish = hard_silu


def mish(x):
    """``x * tanh(softplus(x))`` (Misra, 2019)."""
    return ops.multiply(x, ops.tanh(ops.softplus(x)))


def exponential(x):
    """``exp(x)``."""
    return ops.exp(x)


_FUNCTIONS: dict[str, Callable] = {
    f.__name__: f
    for f in (linear, relu, relu6, sigmoid, tanh, softmax, log_softmax, softplus,
              softsign, elu, selu, gelu, leaky_relu, silu, hard_sigmoid,
              hard_silu, mish, exponential, celu, glu, hard_shrink, hard_tanh,
              log_sigmoid, soft_shrink, sparse_plus, sparse_sigmoid, sparsemax,
              squareplus, tanh_shrink, threshold)
}
_FUNCTIONS.update(swish=silu, hard_swish=hard_silu)


def serialize(activation: Callable) -> Any:
    """The name of an activation function, or the config dict of an object.

    A custom function serializes to its ``__name__``; ``deserialize`` then needs
    it in ``custom_objects``.

    Raises:
        TypeError: neither a function nor an object with ``get_config``.
    """
    return serialize_object(activation)


def deserialize(config, custom_objects=None) -> Callable:
    """The activation named by ``config`` (a name or a class_name/config dict).

    Raises:
        ValueError: an unknown name, listing the valid ones.
    """
    return deserialize_object(config, _FUNCTIONS, "activation", custom_objects)


def get(identifier) -> Callable:
    """Resolves an activation identifier (Keras' ``activations.get``).

    Args:
        identifier: None (-> ``linear``), a name such as "relu", a config dict,
            or a callable (returned as is).

    Returns:
        A callable ``f(x) -> tensor``.

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
    if identifier is None:
        return linear
    return get_object(identifier, _FUNCTIONS, "activation")
