"""Group, unit and RMS normalization (Keras 3's ``GroupNormalization``,
``UnitNormalization``, ``RMSNormalization``): per-sample statistics, no
moving averages, the same in training and inference."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers.base import InputSpec, Layer

__all__ = ["GroupNormalization", "UnitNormalization", "RMSNormalization"]


def _check_axes(layer, axes, ndim):
    """``axes`` as sorted non-negative ints for an input of rank ``ndim``."""
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"Layer '{layer.name}': axis {a} is out of bounds for "
                             f"an input of rank {ndim}. Received: "
                             f"axis={layer.axis}.")
        out.append(a % ndim)
    return sorted(out)


def _axis_arg(axis):
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return int(axis)
    raise TypeError(f"Invalid value for `axis` argument: expected an int or a "
                    f"list/tuple of ints. Received: axis={axis!r}")


class GroupNormalization(Layer):
    """Normalizes groups of channels per sample (Wu & He, "Group
    Normalization", ECCV 2018; Keras 3's ``GroupNormalization``).

    The channels along ``axis`` are split into ``groups`` groups; each group's
    mean and variance are taken over its channels and every other non-batch
    axis; ``y = (x - mean) / sqrt(var + epsilon) * gamma + beta`` with
    per-channel ``gamma`` (ones) and ``beta`` (zeros). ``groups=-1`` is
    instance normalization (one channel per group); ``groups=1`` is layer
    normalization over all axes.

    Args:
        groups: a positive divisor of the channel count, or -1 (default 32).
        axis: the channel axis (default -1).
        epsilon: added to the variance (default 1e-3).
        center, scale: use beta / gamma.
        beta_/gamma_ initializer, regularizer, constraint: as
            ``BatchNormalization``'s.

    Input: float tensor of any rank >= 2; output of the same shape and dtype.

    Raises:
        ValueError: ``groups`` not a positive int or -1; an unknown channel
            dimension; more groups than channels or a group count that does
            not divide them.
    """

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 **kwargs):
        self._w = WeightArgs(kwargs, "beta", "gamma")
        super().__init__(**kwargs)
        if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) \
                or (groups <= 0 and groups != -1):
            raise ValueError("Received an invalid value for argument `groups`, "
                             "expected a positive integer (or `-1` for instance "
                             f"normalization). Received: groups={groups!r}")
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise TypeError(f"GroupNormalization takes one int `axis`. Received: "
                            f"axis={axis!r}")
        self.groups, self.axis = int(groups), int(axis)
        self.epsilon, self.center, self.scale = float(epsilon), bool(center), \
            bool(scale)

    def build(self, input_shape):
        ndim = len(input_shape)
        axis = _check_axes(self, [self.axis], ndim)[0]
        if axis == 0:
            raise ValueError(f"Layer '{self.name}' cannot group the batch axis. "
                             f"Received: axis={self.axis}.")
        dim = input_shape[axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a "
                             f"defined dimension but the layer received an input "
                             f"with shape {tuple(input_shape)}.")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups or dim % self.groups:
            raise ValueError(f"Layer '{self.name}' expects a number of groups that "
                             f"divides the number of channels ({dim}). Received: "
                             f"groups={self.groups}.")
        self._axis = axis
        self.input_spec = InputSpec(ndim=ndim, axes={self.axis: dim})
        self.gamma = self._w.add(self, "gamma", (dim,)) if self.scale else None
        self.beta = self._w.add(self, "beta", (dim,)) if self.center else None
        self.built = True

    def call(self, inputs):
        a, g = self._axis, self.groups
        shape = inputs.shape
        dim = shape[a]
        # (batch, ..., groups, channels / groups, ...): one split axis.
        grouped_shape = [-1] + [0] * (len(shape) - 1)
        grouped_shape[a] = dim // g
        grouped_shape.insert(a, g)
        for i in range(1, len(shape)):
            if i != a:
                grouped_shape[i if i < a else i + 1] = shape[i]
        if any(d is None for d in grouped_shape):
            raise ValueError(f"Layer '{self.name}' needs known non-batch "
                             f"dimensions. Received: shape={tuple(shape)}.")
        x = K.reshape(inputs, grouped_shape)
        axes = [i for i in range(1, len(shape) + 1) if i != a]
        mean, var = K.moments(x, axes=axes, keepdims=True)
        inv = K.rsqrt(var + self.epsilon)
        bshape = [1] * (len(shape) + 1)
        bshape[a], bshape[a + 1] = g, dim // g
        if self.gamma is not None:
            inv = inv * K.reshape(self.gamma, bshape)
        res = -mean * inv
        if self.beta is not None:
            res = res + K.reshape(self.beta, bshape)
        return K.reshape(x * inv + res, [-1] + list(shape[1:]))

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale, **self._w.config()}


class UnitNormalization(Layer):
    """Scales each sample to unit L2 norm over ``axis`` (Keras 3's
    ``UnitNormalization``): ``x * min(1 / sqrt(sum(x^2)), 1e12)``.

    Args:
        axis: int or list of ints (default -1).

    Input: float tensor of any rank; output of the same shape and dtype.

    Raises:
        TypeError: an ``axis`` that is not an int or a list of ints.
        ValueError: an axis out of the input's bounds.
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = _axis_arg(axis)

    def call(self, inputs):
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        axes = _check_axes(self, axes, len(inputs.shape))
        inv = K.rsqrt(K.sum(K.square(inputs), axis=axes, keepdims=True))
        return inputs * K.minimum(inv, 1e12)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class RMSNormalization(Layer):
    """Root-mean-square normalization (Zhang & Sennrich, "Root Mean Square
    Layer Normalization", NeurIPS 2019; Keras 3's ``RMSNormalization``):
    ``x / sqrt(mean(x^2 over axis) + epsilon) * scale``.

    Args:
        axis: int or list of ints (default -1); ``scale`` has the shape of
            those axes (ones at first), broadcast against the trailing axes.
        epsilon: added to the mean square (default 1e-6).

    Input: float tensor of any rank; output of the same shape and dtype.

    Raises:
        TypeError: a bad ``axis``. ValueError: an axis out of bounds or of
            unknown size.
    """

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.epsilon = _axis_arg(axis), float(epsilon)

    def build(self, input_shape):
        axes = sorted(self.axis) if isinstance(self.axis, list) else [self.axis]
        _check_axes(self, axes, len(input_shape))
        shape = tuple(input_shape[a] for a in axes)
        if None in shape:
            raise ValueError(f"Layer '{self.name}' needs known sizes on its axes. "
                             f"Received: input_shape={tuple(input_shape)}, "
                             f"axis={self.axis}.")
        self.scale = self.add_weight("scale", shape, "ones")
        self.built = True

    def call(self, inputs):
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        axes = _check_axes(self, axes, len(inputs.shape))
        ms = K.mean(K.square(inputs), axis=axes, keepdims=True)
        return inputs * K.rsqrt(ms + self.epsilon) * self.scale

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
