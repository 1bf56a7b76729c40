"""Noise and regularization layers: SpatialDropout1D/2D/3D, GaussianNoise,
GaussianDropout (multiplicative), AlphaDropout (SELU-preserving),
ActivityRegularization, and the identity layer ``Identity`` (Keras 3's names
and arguments)."""

from __future__ import annotations

import math

from kerasflow import backend as K
from kerasflow import regularizers
from kerasflow import tree
from kerasflow.layers._masks import get_mask, set_mask
from kerasflow.layers.base import InputSpec, Layer

__all__ = ["SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
           "GaussianNoise", "ActivityRegularization", "GaussianDropout",
           "AlphaDropout", "Identity"]

# SELU's constants (Klambauer et al., "Self-Normalizing Neural Networks", 2017).
_ALPHA = 1.6732632423543772848170429916717
_SCALE = 1.0507009873554804934193349852946


def _check_rate(rate, allow_one=False):
    """``rate`` as a float in [0, 1) ([0, 1] with ``allow_one``)."""
    if not (0 <= rate <= 1 if allow_one else 0 <= rate < 1):
        raise ValueError(f"Invalid value received for argument `rate`. Expected a "
                         f"float value between 0 and 1. Received: rate={rate}")
    return float(rate)


class _SpatialDropout(Layer):
    rank = 1

    def __init__(self, rate, seed=None, data_format="channels_last", **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _check_rate(rate), seed
        self.data_format = K.standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        # One draw per (sample, channel), shared along the spatial axes
        # (Tompson et al. 2015): correlated neighbours are dropped together.
        first = self.data_format == "channels_first"
        spatial = (slice(0, 1),) * self.rank
        one = inputs[(slice(None),) + ((slice(None),) + spatial if first
                                       else spatial)]
        keep = K.dropout(K.ones_like(one), self.rate, seed=self.seed)
        return inputs * keep

    def get_config(self):
        config = {**super().get_config(), "rate": self.rate, "seed": self.seed}
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of (batch, steps, channels) in training, scaling the
    rest by 1 / (1 - rate); identity at inference."""

    rank = 1

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, seed, "channels_last", **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Drops whole feature maps of (batch, h, w, channels) in training, scaling
    the rest by 1 / (1 - rate); identity at inference.

    Args:
        rate: the fraction of feature maps dropped, in [0, 1).
        data_format: 'channels_last', or 'channels_first' for (batch,
            channels, h, w); None means ``image_data_format()``.
        seed: int seed of the draws.

    Raises:
        ValueError: a rate outside [0, 1), or a bad data_format.
    """

    rank = 2

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, seed, data_format, **kwargs)


class SpatialDropout3D(SpatialDropout2D):
    """Drops whole feature volumes of (batch, d, h, w, channels) in training
    (Keras' ``SpatialDropout3D``); arguments as ``SpatialDropout2D``."""

    rank = 3


class GaussianNoise(Layer):
    """Adds N(0, stddev^2) noise in training; identity at inference.

    Raises:
        ValueError: a negative stddev.
    """

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if stddev < 0:
            raise ValueError(f"Invalid value received for argument `stddev`. "
                             f"Expected a float >= 0. Received: stddev={stddev}")
        self.stddev, self.seed = float(stddev), seed

    def call(self, inputs, training=None):
        if not training or self.stddev == 0:
            return inputs
        return inputs + K.random_normal_like(inputs, 0.0, self.stddev,
                                             dtype=inputs.dtype, seed=self.seed)

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class ActivityRegularization(Layer):
    """Identity that adds ``l1 * sum(|x|) + l2 * sum(x^2)`` to the model's loss
    (Keras' ``ActivityRegularization``: an ``activity_regularizer`` of L1L2).

    Raises:
        ValueError: a negative factor.
    """

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        if l1 < 0 or l2 < 0:
            raise ValueError(f"ActivityRegularization factors must be >= 0. "
                             f"Received: l1={l1}, l2={l2}.")
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2),
                         **kwargs)
        self.l1, self.l2 = float(l1), float(l2)

    def get_config(self):
        config = {**super().get_config(), "l1": self.l1, "l2": self.l2}
        config.pop("activity_regularizer")
        return config


class GaussianDropout(Layer):
    """Multiplies by N(1, rate / (1 - rate)) noise in training; identity at
    inference (Srivastava et al., "Dropout", JMLR 2014, §10; Keras 3's
    ``GaussianDropout``).

    Args:
        rate: in [0, 1]: the equivalent dropout rate.
        seed: int seed of the draws.

    Input: float tensor of any shape; output of the same shape and dtype.

    Raises:
        ValueError: a rate outside [0, 1].
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _check_rate(rate, allow_one=True), seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return inputs * K.random_normal_like(inputs, 1.0, stddev,
                                             dtype=inputs.dtype, seed=self.seed)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class AlphaDropout(Layer):
    """Dropout that keeps SELU activations' mean and variance (Klambauer et al.
    2017; Keras 3's ``AlphaDropout``): in training, dropped units are set to
    ``-alpha * scale`` and the result is affinely rescaled; identity at
    inference.

    Args:
        rate: fraction dropped, in [0, 1].
        noise_shape: None, or a tuple of the input's rank whose entries are
            None (the input's size) or 1 (one draw shared along that axis).
        seed: int seed of the draws.

    Input: float tensor; output of the same shape and dtype.

    Raises:
        ValueError: a rate outside [0, 1]; a noise_shape of another rank or
            with entries other than None, 1 or the input's size.
    """

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _check_rate(rate, allow_one=True), seed
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)

    def _template(self, inputs):
        """A slice of ``inputs`` of the noise's shape."""
        if self.noise_shape is None:
            return inputs
        shape = inputs.shape
        if len(self.noise_shape) != len(shape) or any(
                n not in (None, 1, d) for n, d in zip(self.noise_shape, shape)):
            raise ValueError(f"Layer '{self.name}' expects a noise_shape of rank "
                             f"{len(shape)} with entries None, 1 or the input's "
                             f"size. Received: noise_shape={self.noise_shape}, "
                             f"input shape={tuple(shape)}.")
        return inputs[tuple(slice(0, 1) if n == 1 and d != 1 else slice(None)
                            for n, d in zip(self.noise_shape, shape))]

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        alpha_p = -_ALPHA * _SCALE
        u = K.random_uniform_like(self._template(inputs), dtype=inputs.dtype,
                                  seed=self.seed)
        kept = K.cast(K.greater_equal(u, self.rate), inputs.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        return a * (inputs * kept + alpha_p * (1.0 - kept)) + b

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": self.noise_shape}


class Identity(Layer):
    """Returns its input(s) unchanged, masks included (Keras 3's
    ``Identity``); any nested structure of tensors."""

    def call(self, inputs):
        def same(t):
            out = K.identity(t)
            mask = get_mask(t)
            if mask is not None:
                set_mask(out, mask)
            return out

        return tree.map_structure(same, inputs)
