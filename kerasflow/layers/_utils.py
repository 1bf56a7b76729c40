"""Helpers shared by the layer families: argument normalization and config."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import initializers, regularizers
from kerasflow.layers.base import InputSpec, Layer
from kerasflow.layers.core import _get_constraint, _serialize_constraint

__all__ = ["normalize_tuple", "normalize_padding", "WeightArgs", "check_rank",
           "SpatialLayer"]


def normalize_tuple(value, n, name, allow_zero=False):
    """An int or a length-``n`` sequence of ints as a tuple of ``n`` ints.

    Raises:
        ValueError: another length, a non-int, or a value < 1 (< 0 with
            ``allow_zero``), naming the argument and the received value.
    """
    vals = (value,) * n if isinstance(value, (int, np.integer)) else value
    low = 0 if allow_zero else 1
    if not isinstance(vals, (tuple, list)) or len(vals) != n or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= low
        for v in vals
    ):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(
            f"The `{name}` argument must be a {kind} int or a tuple of {n} "
            f"{kind} ints. Received: {name}={value!r}."
        )
    return tuple(int(v) for v in vals)


def normalize_padding(value, allowed=("valid", "same")):
    """Lower-cased padding mode, checked against ``allowed``."""
    mode = value.lower() if isinstance(value, str) else value
    if mode not in allowed:
        raise ValueError(f"The `padding` argument must be one of {list(allowed)}. "
                         f"Received: padding={value!r}.")
    return mode


def check_rank(layer, input_shape, rank, what):
    """Raises a ValueError naming the layer when the input rank is not ``rank``."""
    if input_shape is not None and len(input_shape) != rank:
        raise ValueError(
            f"Input 0 of layer '{layer.name}' ({type(layer).__name__}) is "
            f"incompatible with the layer: expected ndim={rank} {what}, found "
            f"ndim={len(input_shape)}. Full shape received: {tuple(input_shape)}."
        )


class WeightArgs:
    """Initializer / regularizer / constraint triples by weight name, with config.

    ``WeightArgs(kwargs, "kernel", "bias")`` pops ``kernel_initializer``,
    ``kernel_regularizer``, ``kernel_constraint`` (and the bias ones) from
    ``kwargs``, resolves them, and ``config()`` serializes them back.
    """

    DEFAULTS = {"kernel": "glorot_uniform", "bias": "zeros",
                "recurrent": "orthogonal", "depthwise": "glorot_uniform",
                "pointwise": "glorot_uniform", "embeddings": "random_uniform",
                "beta": "zeros", "gamma": "ones", "moving_mean": "zeros",
                "moving_variance": "ones"}

    def __init__(self, kwargs, *names, defaults=None):
        self.names = names
        self.init, self.reg, self.con = {}, {}, {}
        defaults = {**self.DEFAULTS, **(defaults or {})}
        for n in names:
            self.init[n] = initializers.get(kwargs.pop(f"{n}_initializer",
                                                       defaults[n]))
            self.reg[n] = regularizers.get(kwargs.pop(f"{n}_regularizer", None))
            self.con[n] = _get_constraint(kwargs.pop(f"{n}_constraint", None))

    def add(self, layer, name, shape, trainable=True, weight_name=None,
            autocast=True):
        """``layer.add_weight`` with this weight's initializer, regularizer and
        constraint."""
        return layer.add_weight(weight_name or name, shape, self.init[name],
                                self.reg[name], trainable=trainable,
                                constraint=self.con[name], autocast=autocast)

    def config(self, with_constraints=True):
        out = {}
        for n in self.names:
            out[f"{n}_initializer"] = initializers.serialize(self.init[n])
            out[f"{n}_regularizer"] = (regularizers.serialize(self.reg[n])
                                       if self.reg[n] else None)
            if with_constraints:
                out[f"{n}_constraint"] = _serialize_constraint(self.con[n])
        return out


_AXES = {1: "steps", 2: "height, width", 3: "depth, height, width"}


class SpatialLayer(Layer):
    """A layer over images, sequences or volumes with ``rank`` spatial axes
    (1: steps; 2: height, width; 3: depth, height, width), in either layout:
    (batch, *spatial, channels) for 'channels_last', (batch, channels,
    *spatial) for 'channels_first'.

    Layers compute in channels_last: ``to_channels_last`` and
    ``from_channels_last`` transpose around the kernels for 'channels_first'
    (what Keras' TensorFlow backend does on CPU); weights keep Keras' layout.

    Raises:
        ValueError: a bad ``data_format``; an input whose rank is not
            ``rank + 2``, naming the layer and the shape.
    """

    rank = 2

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = K.standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    @property
    def channels_first(self) -> bool:
        return self.data_format == "channels_first"

    @property
    def channel_axis(self) -> int:
        return 1 if self.channels_first else -1

    def to_channels_last(self, x):
        """(N, C, *S) -> (N, *S, C) for 'channels_first'; x itself otherwise."""
        if not self.channels_first:
            return x
        return K.transpose(x, (0, *range(2, self.rank + 2), 1))

    def from_channels_last(self, y):
        """(N, *S, C) -> (N, C, *S) for 'channels_first'; y itself otherwise."""
        if not self.channels_first:
            return y
        return K.transpose(y, (0, self.rank + 1, *range(1, self.rank + 1)))

    def _check_rank(self, input_shape):
        axes = _AXES[self.rank]
        check_rank(self, input_shape, self.rank + 2,
                   f"(batch, channels, {axes})" if self.channels_first
                   else f"(batch, {axes}, channels)")

    def build(self, input_shape):
        self._check_rank(input_shape)
        self.built = True
