"""Normalization layers: BatchNormalization and LayerNormalization (Keras 3's
names, arguments and defaults).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers._masks import get_mask
from kerasflow.layers.base import InputSpec, Layer

__all__ = ["BatchNormalization", "LayerNormalization"]


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
    layer.gamma = layer._w.add(layer, "gamma", shape) if layer.scale else None
    layer.beta = layer._w.add(layer, "beta", shape) if layer.center else None
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
        self.moving_mean = self._w.add(self, "moving_mean", shape, trainable=False)
        self.moving_variance = self._w.add(self, "moving_variance", shape,
                                           trainable=False)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        rank = len(inputs.shape)
        axes, param = self._axes, lambda t: _broadcastable(t, rank, self._axes)
        x = inputs
        if x.dtype != np.dtype(self.dtype):
            x = K.cast(x, self.dtype)
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
            return y
        centered = x - param(self.moving_mean)
        var = param(self.moving_variance)
        scale = K.rsqrt(var + self.epsilon)
        if self.gamma is not None:
            scale = scale * param(self.gamma)
        y = centered * scale
        if self.beta is not None:
            y = y + param(self.beta)
        return y

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
    the same in training and inference.

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
        mean = K.mean(inputs, axis=axes, keepdims=True)
        centered = inputs - mean
        var = K.mean(K.square(centered), axis=axes, keepdims=True)
        y = centered * K.rsqrt(var + self.epsilon)
        if self.gamma is not None:
            y = y * K.reshape(self.gamma, self._param_view)
        if self.beta is not None:
            y = y + K.reshape(self.beta, self._param_view)
        return y

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, epsilon=self.epsilon, center=self.center,
                      scale=self.scale, **self._w.config(with_constraints=True))
        return config
