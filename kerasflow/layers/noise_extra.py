"""Multiplicative and SELU-preserving dropout, and the identity layer (Keras 3's
``GaussianDropout``, ``AlphaDropout``, ``Identity``)."""

from __future__ import annotations

import math

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.layers._masks import get_mask, set_mask
from kerasflow.layers.base import Layer

__all__ = ["GaussianDropout", "AlphaDropout", "Identity"]

# SELU's constants (Klambauer et al., "Self-Normalizing Neural Networks", 2017).
_ALPHA = 1.6732632423543772848170429916717
_SCALE = 1.0507009873554804934193349852946


def _check_rate(rate):
    if not 0 <= rate <= 1:
        raise ValueError(f"Invalid value received for argument `rate`. Expected a "
                         f"float value between 0 and 1. Received: rate={rate}")
    return float(rate)


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
        self.rate, self.seed = _check_rate(rate), seed

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
        self.rate, self.seed = _check_rate(rate), seed
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
