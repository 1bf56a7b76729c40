"""Shape layers: Permute, RepeatVector, ZeroPadding1D/2D, Cropping1D/2D,
UpSampling1D/2D (Keras 3's names, arguments and defaults; channels_last)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._masks import get_mask, set_mask
from kerasflow.layers._utils import ChannelsLastLayer, normalize_tuple
from kerasflow.layers.base import InputSpec, Layer

__all__ = ["Permute", "RepeatVector", "ZeroPadding1D", "ZeroPadding2D",
           "Cropping1D", "Cropping2D", "UpSampling1D", "UpSampling2D"]


def _pairs(value, n, name):
    """Keras' padding/cropping argument: int, n ints, or n (before, after) pairs."""
    if isinstance(value, (int, np.integer)):
        return ((int(value), int(value)),) * n
    value = tuple(value)
    if len(value) == n and all(isinstance(v, (int, np.integer)) for v in value):
        return tuple((int(v), int(v)) for v in value)
    if len(value) == n:
        return tuple(normalize_tuple(tuple(v), 2, name, allow_zero=True)
                     for v in value)
    raise ValueError(f"`{name}` should be an int, a tuple of {n} ints or a tuple "
                     f"of {n} pairs of ints. Received: {name}={value!r}.")


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` are 1-based (Keras' ``Permute``).

    Raises:
        ValueError: ``dims`` not a permutation of 1..rank-1.
    """

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for Permute "
                             f"layer. The set of indices in `dims` must be "
                             f"consecutive and start from 1. Received: "
                             f"dims={dims!r}.")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return K.transpose(inputs, (0,) + self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": list(self.dims)}


class RepeatVector(Layer):
    """(batch, features) -> (batch, n, features) (Keras' ``RepeatVector``)."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = normalize_tuple(n, 1, "n")[0]
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return K.tile(K.expand_dims(inputs, 1), (1, self.n, 1))

    def get_config(self):
        return {**super().get_config(), "n": self.n}


class _Spatial(ChannelsLastLayer):

    def get_config(self):
        config = super().get_config()
        if self.rank == 2:
            config["data_format"] = self.data_format
        return config


class ZeroPadding1D(_Spatial):
    """Pads the steps axis of (batch, steps, channels) with zeros; ``padding``
    is an int or a (before, after) pair."""

    rank = 1

    def __init__(self, padding=1, **kwargs):
        super().__init__(**kwargs)
        pad = padding if isinstance(padding, (int, np.integer)) else (tuple(padding),)
        self.padding = _pairs(pad, 1, "padding")

    def call(self, inputs):
        out = K.pad(inputs, ((0, 0),) + self.padding + ((0, 0),))
        return out

    def get_config(self):
        config = super().get_config()
        config["padding"] = list(self.padding[0])
        return config


class ZeroPadding2D(_Spatial):
    """Pads height and width of (batch, h, w, channels) with zeros; ``padding``
    is an int, (ph, pw) or ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.padding = _pairs(padding, 2, "padding")

    def call(self, inputs):
        return K.pad(inputs, ((0, 0),) + self.padding + ((0, 0),))

    def get_config(self):
        return {**super().get_config(), "padding": [list(p) for p in self.padding]}


class Cropping1D(_Spatial):
    """Crops the steps axis: ``cropping`` an int or a (start, end) pair.

    Raises:
        ValueError: a cropping that leaves no step.
    """

    rank = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        crop = cropping if isinstance(cropping, (int, np.integer)) else (
            tuple(cropping),)
        self.cropping = _pairs(crop, 1, "cropping")

    def call(self, inputs):
        (a, b), = self.cropping
        _check_crop(self, inputs.shape[1:2], self.cropping)
        out = inputs[:, a:(-b if b else None)]
        mask = get_mask(inputs)
        if mask is not None:
            set_mask(out, mask[:, a:(-b if b else None)])
        return out

    def get_config(self):
        return {**super().get_config(), "cropping": list(self.cropping[0])}


def _check_crop(layer, sizes, crops):
    for size, (a, b) in zip(sizes, crops):
        if size is not None and a + b >= size:
            raise ValueError(
                f"Layer '{layer.name}': cropping {tuple(crops)} leaves nothing of "
                f"an axis of size {size}. Received: input shape with spatial "
                f"dims {tuple(sizes)}.")


class Cropping2D(_Spatial):
    """Crops height and width: ``cropping`` an int, (ch, cw) or
    ((top, bottom), (left, right))."""

    def __init__(self, cropping=((0, 0), (0, 0)), **kwargs):
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, 2, "cropping")

    def call(self, inputs):
        (t, b), (lft, r) = self.cropping
        _check_crop(self, inputs.shape[1:3], self.cropping)
        return inputs[:, t:(-b if b else None), lft:(-r if r else None)]

    def get_config(self):
        return {**super().get_config(), "cropping": [list(p) for p in self.cropping]}


class UpSampling1D(_Spatial):
    """Repeats each step ``size`` times (nearest neighbour)."""

    rank = 1

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = normalize_tuple(size, 1, "size")[0]

    def call(self, inputs):
        _, steps, c = inputs.shape
        x = K.tile(K.expand_dims(inputs, 2), (1, 1, self.size, 1))
        return K.reshape(x, (-1, steps * self.size, c))

    def get_config(self):
        return {**super().get_config(), "size": self.size}


class UpSampling2D(_Spatial):
    """Repeats rows and columns (``size`` = (sh, sw)); interpolation 'nearest'
    only (Keras' default).

    Raises:
        ValueError: another interpolation; unknown spatial sizes.
    """

    def __init__(self, size=(2, 2), interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.size = normalize_tuple(size, 2, "size")
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D supports interpolation='nearest' only. "
                             f"Received: interpolation={interpolation!r}.")
        self.interpolation = interpolation

    def call(self, inputs):
        _, h, w, c = inputs.shape
        if None in (h, w, c):
            raise ValueError(f"Layer '{self.name}' needs known spatial sizes. "
                             f"Received: input shape {inputs.shape}.")
        sh, sw = self.size
        x = K.reshape(inputs, (-1, h, 1, w, 1, c))
        x = K.tile(x, (1, 1, sh, 1, sw, 1))
        return K.reshape(x, (-1, h * sh, w * sw, c))

    def get_config(self):
        return {**super().get_config(), "size": list(self.size),
                "interpolation": self.interpolation}
