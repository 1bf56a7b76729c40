"""Activation layers with their own arguments or weights (Keras 3's
``layers/activations``): ``ReLU``, ``LeakyReLU``, ``ELU``, ``PReLU``,
``Softmax``."""

from __future__ import annotations

import warnings

import numpy as np

from kerasflow import backend as K
from kerasflow import activations, constraints, initializers, regularizers
from kerasflow.layers.base import Layer

__all__ = ["ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax"]


def _non_negative(layer, name, value):
    if value is not None and not (isinstance(value, (int, float, np.number))
                                  and value >= 0):
        raise ValueError(f"{layer} expects {name} >= 0 (or None where allowed). "
                         f"Received: {name}={value!r}")
    return None if value is None else float(value)


class ReLU(Layer):
    """Rectified linear unit with Keras' arguments:
    ``max_value`` for ``x >= max_value``, ``x`` for ``threshold <= x <
    max_value``, ``negative_slope * (x - threshold)`` below.

    Input: any shape, float. Output: the same shape and dtype.

    Args:
        max_value: upper saturation (None: none), >= 0.
        negative_slope: slope below the threshold, >= 0.
        threshold: where the negative slope starts.

    Raises:
        ValueError: a negative ``max_value`` or ``negative_slope``.
    """

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = _non_negative("ReLU", "max_value", max_value)
        self.negative_slope = _non_negative("ReLU", "negative_slope", negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        return activations.relu(inputs, negative_slope=self.negative_slope,
                                max_value=self.max_value, threshold=self.threshold)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(Layer):
    """``x`` for ``x >= 0``, ``negative_slope * x`` below (Maas et al., 2013).

    Input: any shape, float. Output: the same shape and dtype.

    Args:
        negative_slope: slope below 0, >= 0 (default 0.3, Keras' default).
            Keras 2's ``alpha`` is accepted with a warning, as Keras 3 does.

    Raises:
        ValueError: a negative or non-numeric ``negative_slope``.
    """

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
            warnings.warn("Argument `alpha` is deprecated. Use `negative_slope` "
                          "instead.", stacklevel=2)
        super().__init__(**kwargs)
        if negative_slope is None:
            raise ValueError("LeakyReLU expects negative_slope >= 0. Received: "
                             "negative_slope=None")
        self.negative_slope = _non_negative("LeakyReLU", "negative_slope",
                                            negative_slope)

    def call(self, inputs):
        return activations.leaky_relu(inputs, negative_slope=self.negative_slope)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ELU(Layer):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below (Clevert et al., 2015).

    Input: any shape, float. Output: the same shape and dtype.
    """

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class PReLU(Layer):
    """Parametric ReLU: ``max(x, 0) + alpha * min(x, 0)`` with a learned
    ``alpha`` per input position (He et al., ICCV 2015).

    Input: (batch, ...), float. Output: the same shape. ``alpha`` has the
    input's shape without the batch axis, with size 1 on ``shared_axes``
    (e.g. ``shared_axes=[1, 2]`` for one alpha per channel of an image).

    Args:
        alpha_initializer: default "zeros" (starts as ReLU).
        alpha_regularizer, alpha_constraint: as a Dense kernel's.
        shared_axes: axes (1-based, the batch axis excluded) sharing one alpha.

    Raises:
        ValueError: (at build) an input of unknown non-batch dimensions.
    """

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            shape[axis - 1] = 1
        if any(d is None for d in shape):
            raise ValueError(f"PReLU needs the non-batch dimensions of its input "
                             f"(or shared_axes over the unknown ones). Received: "
                             f"input_shape={tuple(input_shape)}")
        self.alpha = self.add_weight("alpha", tuple(shape), self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        super().build(input_shape)

    def call(self, inputs):
        return K.relu(inputs) - self.alpha * K.relu(-inputs)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}


class Softmax(Layer):
    """``softmax`` over ``axis`` (an int or a tuple of axes), as a layer.

    Input: any shape, float; ``mask`` (optional, broadcastable boolean, True
    for kept positions) gives masked positions a large negative logit first,
    so they get ~0 probability (Keras 3). Output: the same shape.
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = tuple(axis) if isinstance(axis, (list, tuple)) else int(axis)

    def call(self, inputs, mask=None):
        if mask is not None:
            neg = np.asarray(-1e9 if inputs.dtype != np.float16 else -6e4,
                             inputs.dtype)
            inputs = inputs + (1.0 - K.cast(mask, inputs.dtype)) * neg
        if isinstance(self.axis, tuple):
            shifted = inputs - K.stop_gradient(K.max(inputs, axis=self.axis,
                                                     keepdims=True))
            e = K.exp(shifted)
            return e / K.sum(e, axis=self.axis, keepdims=True)
        return activations.softmax(inputs, axis=self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
