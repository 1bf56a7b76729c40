"""Normalization layers (Keras 3's names, arguments and defaults):
BatchNormalization (moving averages for inference) and LayerNormalization,
and GroupNormalization, UnitNormalization and RMSNormalization (per-sample
statistics, no moving averages, the same in training and inference).

All of them compute in at least float32 and return the layer's compute
dtype: under "mixed_float16" a float16 input is normalized in float32 with
float32 weights (read uncast) and the result is float16, as in Keras 3.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers._masks import get_mask
from kerasflow.layers.base import InputSpec, Layer

__all__ = ["BatchNormalization", "LayerNormalization", "GroupNormalization",
           "UnitNormalization", "RMSNormalization"]


def _axes(axis, ndim, layer):
    """The normalized axes as sorted non-negative ints, checked against ndim."""
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise ValueError(
                f"Layer '{layer.name}': axis {a!r} is out of range for an input of "
                f"rank {ndim}. Received: axis={axis!r}.")
        out.append(int(a) % ndim)
    return sorted(set(out))


def _param_shape(input_shape, axes, layer):
    shape = []
    for a in axes:
        if input_shape[a] is None:
            raise ValueError(
                f"Layer '{layer.name}' needs known sizes on the normalized axes "
                f"{axes}. Received: input_shape={tuple(input_shape)}.")
        shape.append(input_shape[a])
    return tuple(shape)


def _broadcastable(t, input_rank, axes):
    """Reshapes a parameter over ``axes`` so it broadcasts against the input."""
    if axes == [input_rank - 1]:
        return t
    shape = [1] * input_rank
    for a, d in zip(axes, t.shape):
        shape[a] = d
    return K.reshape(t, shape)


def _build_scale_offset(layer, input_shape, keep_order=False):
    """Sets ``layer``'s axes, gamma and beta (as its scale and center ask) and
    input spec; returns the parameter shape (its axes sorted, or with
    ``keep_order`` in the order of the sorted ``axis`` values, negative ones
    first, as Keras' LayerNormalization shapes gamma and beta)."""
    rank = len(input_shape)
    layer._axes = _axes(layer.axis, rank, layer)
    # Keras sorts the axes as given (so -1 comes before 1) before shaping.
    listed = [layer.axis] if isinstance(layer.axis, (int, np.integer)) else \
        list(dict.fromkeys(int(a) % rank for a in sorted(layer.axis)))
    shape = _param_shape(input_shape, listed if keep_order else layer._axes, layer)
    # Read in float32 under mixed precision: the layers compute in float32.
    layer.gamma = layer._w.add(layer, "gamma", shape, autocast=False) \
        if layer.scale else None
    layer.beta = layer._w.add(layer, "beta", shape, autocast=False) \
        if layer.center else None
    layer.input_spec = InputSpec(ndim=rank, axes={a: input_shape[a]
                                                  for a in layer._axes})
    return shape

class BatchNormalization(Layer):
    """Normalizes each feature with batch statistics in training and moving
    statistics at inference (Ioffe & Szegedy 2015; Keras' ``BatchNormalization``).

    Training (``training=True``, e.g. inside ``fit``):
    ``y = gamma * (x - mean_B) / sqrt(var_B + epsilon) + beta`` with the batch
    mean and (biased) variance over every axis but ``axis``; the moving
    statistics are updated ``m = momentum * m + (1 - momentum) * stat`` through
    ``add_update`` (the training step runs the updates; under a distribution
    strategy each replica updates its own copy, tf.distribute's ON_READ).
    Inference: the same formula with ``moving_mean`` and ``moving_variance``.
    A frozen layer (``trainable=False``) always runs in inference mode (Keras 3).

    Args:
        axis: the feature axis (or list of axes), default -1 (channels_last).
        momentum: moving-average momentum, default 0.99.
        epsilon: added to the variance, default 1e-3.
        center, scale: learn beta / gamma.
        beta_/gamma_/moving_mean_/moving_variance_ initializer, beta_/gamma_
        regularizer and constraint: as Dense's.
        synchronized: only False (per-replica statistics) is supported.

    Weights: gamma, beta (trainable), moving_mean, moving_variance
    (non-trainable), each of the shape of the feature axes.

    Raises:
        ValueError: ``synchronized=True``; an axis out of range; unknown
            feature sizes; an input whose feature size differs from the built one.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                 scale=True, synchronized=False, **kwargs):
        self._w = WeightArgs(kwargs, "beta", "gamma", "moving_mean",
                             "moving_variance")
        super().__init__(**kwargs)
        if synchronized:
            raise ValueError(
                f"BatchNormalization(synchronized=True) is not supported: each "
                f"replica keeps its own statistics. Received: "
                f"synchronized={synchronized!r}.")
        if not 0.0 <= momentum <= 1.0 or epsilon <= 0:
            raise ValueError(f"BatchNormalization expects 0 <= momentum <= 1 and "
                             f"epsilon > 0. Received: momentum={momentum}, "
                             f"epsilon={epsilon}.")
        self.axis = axis if isinstance(axis, (int, np.integer)) else list(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.synchronized = False

    def build(self, input_shape):
        shape = _build_scale_offset(self, input_shape)
        self.moving_mean = self._w.add(self, "moving_mean", shape, trainable=False,
                                       autocast=False)
        self.moving_variance = self._w.add(self, "moving_variance", shape,
                                           trainable=False, autocast=False)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        rank = len(inputs.shape)
        axes, param = self._axes, lambda t: _broadcastable(t, rank, self._axes)
        x = _wide(inputs)
        reduce = tuple(a for a in range(rank) if a not in axes)
        if mask is None:
            mask = get_mask(inputs)
        if training and self.trainable:
            shape = tuple(self.moving_mean.shape)
            gamma = self.gamma if self.gamma is not None else np.ones(shape,
                                                                      self.dtype)
            beta = self.beta if self.beta is not None else np.zeros(shape,
                                                                    self.dtype)
            if mask is None:
                # One fused op (and one gradient op) for the batch statistics.
                y, mean, var = K.fused_batch_norm(x, gamma, beta, reduce,
                                                  self.epsilon)
            else:
                y, mean, var = self._masked_batch_norm(x, mask, gamma, beta, reduce,
                                                       param)
            m = self.momentum
            self.add_update([
                self.moving_mean.assign(self.moving_mean * m + mean * (1 - m)),
                self.moving_variance.assign(
                    self.moving_variance * m + var * (1 - m)),
            ])
            return _as(y, self.compute_dtype)
        centered = x - param(self.moving_mean)
        var = param(self.moving_variance)
        scale = K.rsqrt(var + self.epsilon)
        if self.gamma is not None:
            scale = scale * param(self.gamma)
        y = centered * scale
        if self.beta is not None:
            y = y + param(self.beta)
        return _as(y, self.compute_dtype)

    def _masked_batch_norm(self, x, mask, gamma, beta, reduce, param):
        """Batch statistics over the unmasked positions only (Keras 3): the
        mask (batch, steps) weighs each position, masked ones by 0."""
        w = K.cast(mask, x.dtype)
        while len(w.shape) < len(x.shape):
            w = K.expand_dims(w, -1)
        w = w * K.ones_like(x)
        count = K.maximum(K.sum(w, axis=reduce), np.asarray(1.0, x.dtype))
        mean = K.sum(x * w, axis=reduce) / count
        centered = x - param(mean)
        var = K.sum(w * centered * centered, axis=reduce) / count
        y = centered * K.rsqrt(param(var) + self.epsilon) * param(gamma) + param(beta)
        return y, mean, var

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, momentum=self.momentum, epsilon=self.epsilon,
                      center=self.center, scale=self.scale,
                      synchronized=self.synchronized, **self._w.config())
        return config


class LayerNormalization(Layer):
    """Normalizes each sample over ``axis`` (Ba et al. 2016; Keras'
    ``LayerNormalization``): ``y = gamma * (x - mean) / sqrt(var + epsilon) +
    beta`` with the mean and biased variance of each sample over ``axis``;
    the same in training and inference. Over trailing axes (the default) it
    is one ``fused_layer_norm`` op, and its gradient one op; other axis lists
    are composed from reductions and elementwise ops.

    Args:
        axis: int or list of ints (any rank; negative ones count from the
            end), default -1. gamma and beta have the sizes of these axes in
            the order of the sorted values (``[2, -1]``: last axis first), as
            Keras shapes them, so Keras weights load unchanged.
        epsilon: default 1e-3. center, scale: learn beta / gamma.
        beta_/gamma_ initializer, regularizer, constraint: as Dense's.

    Raises:
        ValueError: an axis out of range or of unknown size.
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, **kwargs):
        self._w = WeightArgs(kwargs, "beta", "gamma")
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, (int, np.integer)) else list(axis)
        self.epsilon = float(epsilon)
        self.center, self.scale = bool(center), bool(scale)

    def build(self, input_shape):
        _build_scale_offset(self, input_shape, keep_order=True)
        # gamma/beta are shaped in the order ``axis`` lists the axes and
        # reshaped (not transposed) onto the input's axes, as Keras 3 does.
        self._param_view = tuple(d if a in self._axes else 1
                                 for a, d in enumerate(input_shape))
        self.built = True

    def call(self, inputs):
        axes = tuple(self._axes)
        x = _wide(inputs)
        rank, k = len(inputs.shape), len(axes)
        if axes == tuple(range(rank - k, rank)):
            # Trailing axes (the common case): one op forward, one backward.
            shape = self._param_view[rank - k:]
            y, _, _ = K.fused_layer_norm(
                x, self._trailing_param(self.gamma, shape, x.dtype, np.ones),
                self._trailing_param(self.beta, shape, x.dtype, np.zeros), axes,
                self.epsilon)
            return _as(y, self.compute_dtype)
        mean = K.mean(x, axis=axes, keepdims=True)
        centered = x - mean
        var = K.mean(K.square(centered), axis=axes, keepdims=True)
        y = centered * K.rsqrt(var + self.epsilon)
        if self.gamma is not None:
            y = y * K.reshape(self.gamma, self._param_view)
        if self.beta is not None:
            y = y + K.reshape(self.beta, self._param_view)
        return _as(y, self.compute_dtype)

    @staticmethod
    def _trailing_param(weight, shape, dtype, default):
        """gamma or beta shaped as the trailing axes, in x's dtype (``default``'s
        constant when the layer has none)."""
        if weight is None:
            return default(shape, dtype)
        if tuple(weight.shape) != shape:
            weight = K.reshape(weight, shape)
        return _as(weight, dtype)

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, epsilon=self.epsilon, center=self.center,
                      scale=self.scale, **self._w.config(with_constraints=True))
        return config


def _as(x, dtype):
    """``x`` cast to ``dtype`` (itself when it already is)."""
    return x if x.dtype == np.dtype(dtype) else K.cast(x, dtype)


def _wide(x):
    """``x`` in at least float32: float16 sums of squares overflow (Keras 3
    normalizes half-precision inputs in float32; float64 stays float64, where
    Keras' result_type would narrow it)."""
    return _as(x, np.promote_types(x.dtype, np.float32))


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

    Input: float tensor of any rank >= 2; output of the same shape, in the
    layer's compute dtype. Statistics and the affine map run in at least
    float32 (Keras 3: float16 statistics overflow), so under
    "mixed_float16" the float32 ``gamma``/``beta`` are read uncast
    (``autocast=False``) and only the result is float16.

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
        self.gamma = self._w.add(self, "gamma", (dim,), autocast=False) \
            if self.scale else None
        self.beta = self._w.add(self, "beta", (dim,), autocast=False) \
            if self.center else None
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
        x = _wide(K.reshape(inputs, grouped_shape))
        wide = x.dtype
        axes = [i for i in range(1, len(shape) + 1) if i != a]
        mean, var = K.moments(x, axes=axes, keepdims=True)
        inv = K.rsqrt(var + self.epsilon)
        bshape = [1] * (len(shape) + 1)
        bshape[a], bshape[a + 1] = g, dim // g
        if self.gamma is not None:
            inv = inv * _as(K.reshape(self.gamma, bshape), wide)
        res = -mean * inv
        if self.beta is not None:
            res = res + _as(K.reshape(self.beta, bshape), wide)
        out = _as(x * inv + res, inputs.dtype)
        return _as(K.reshape(out, [-1] + list(shape[1:])), self.compute_dtype)

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
        x = _wide(inputs)  # 1e12 and float16 squares overflow float16
        inv = K.rsqrt(K.sum(K.square(x), axis=axes, keepdims=True))
        return _as(x * K.minimum(inv, 1e12), self.compute_dtype)

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
        x = _wide(inputs)
        ms = K.mean(K.square(x), axis=axes, keepdims=True)
        y = x * K.rsqrt(ms + self.epsilon) * _as(self.scale, x.dtype)
        return _as(y, self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
