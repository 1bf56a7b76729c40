"""Shape layers: Permute, RepeatVector, ZeroPadding1D/2D/3D, Cropping1D/2D/3D,
UpSampling1D/2D/3D (Keras 3's names, arguments and defaults; the 2-D and 3-D
ones and ZeroPadding1D also take data_format='channels_first')."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._masks import get_mask, set_mask
from kerasflow.layers._utils import SpatialLayer, normalize_tuple
from kerasflow.layers.base import InputSpec, Layer

__all__ = ["Permute", "RepeatVector", "ZeroPadding1D", "ZeroPadding2D",
           "ZeroPadding3D", "Cropping1D", "Cropping2D", "Cropping3D",
           "UpSampling1D", "UpSampling2D", "UpSampling3D"]


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


class _Spatial(SpatialLayer):
    """Per-spatial-axis reshaping in either layout: ``_spatial`` places one
    entry per spatial axis around the batch and channel entries."""

    def _spatial(self, per_axis, fill):
        per_axis = tuple(per_axis)
        if self.channels_first:
            return (fill, fill) + per_axis
        return (fill,) + per_axis + (fill,)

    def _sizes(self, shape):
        return shape[2:] if self.channels_first else shape[1:-1]

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class _ZeroPadding(_Spatial):
    """Pads each spatial axis with zeros: ``padding`` an int, one int per
    axis, or one (before, after) pair per axis."""

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _pairs(padding, self.rank, "padding")

    def call(self, inputs):
        return K.pad(inputs, self._spatial(self.padding, (0, 0)))

    def get_config(self):
        return {**super().get_config(), "padding": [list(p) for p in self.padding]}


class ZeroPadding1D(_ZeroPadding):
    """Pads the steps axis of (batch, steps, channels) with zeros; ``padding``
    is an int or a (before, after) pair (Keras' ``ZeroPadding1D``)."""

    rank = 1

    def __init__(self, padding=1, data_format=None, **kwargs):
        pad = padding if isinstance(padding, (int, np.integer)) else (tuple(padding),)
        super().__init__(pad, data_format, **kwargs)

    def get_config(self):
        return {**super().get_config(), "padding": list(self.padding[0])}


class ZeroPadding2D(_ZeroPadding):
    """Pads height and width of (batch, h, w, channels) with zeros; ``padding``
    is an int, (ph, pw) or ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Pads depth, height and width of (batch, d, h, w, channels) with zeros
    (Keras' ``ZeroPadding3D``); ``padding`` an int, 3 ints or 3 pairs."""

    rank = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None,
                 **kwargs):
        super().__init__(padding, data_format, **kwargs)


def _check_crop(layer, sizes, crops):
    for size, (a, b) in zip(sizes, crops):
        if size is not None and a + b >= size:
            raise ValueError(
                f"Layer '{layer.name}': cropping {tuple(crops)} leaves nothing of "
                f"an axis of size {size}. Received: input shape with spatial "
                f"dims {tuple(sizes)}.")


class _Cropping(_Spatial):
    """Crops each spatial axis: ``cropping`` an int, one int per axis, or one
    (start, end) pair per axis.

    Raises:
        ValueError: a cropping that leaves nothing of an axis.
    """

    def __init__(self, cropping, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _pairs(cropping, self.rank, "cropping")

    def call(self, inputs):
        _check_crop(self, self._sizes(inputs.shape), self.cropping)
        return inputs[self._spatial((slice(a, -b if b else None)
                                     for a, b in self.cropping), slice(None))]

    def get_config(self):
        return {**super().get_config(), "cropping": [list(p) for p in self.cropping]}


class Cropping1D(_Cropping):
    """Crops the steps axis of (batch, steps, channels): ``cropping`` an int or a
    (start, end) pair; keeps the mask in step. channels_last only (as Keras)."""

    rank = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        crop = cropping if isinstance(cropping, (int, np.integer)) else (
            tuple(cropping),)
        super().__init__(crop, "channels_last", **kwargs)

    def call(self, inputs):
        out = super().call(inputs)
        (a, b), = self.cropping
        mask = get_mask(inputs)
        if mask is not None:
            set_mask(out, mask[:, a:(-b if b else None)])
        return out

    def get_config(self):
        config = super().get_config()
        del config["data_format"]
        return {**config, "cropping": list(self.cropping[0])}


class Cropping2D(_Cropping):
    """Crops height and width: ``cropping`` an int, (ch, cw) or
    ((top, bottom), (left, right))."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_Cropping):
    """Crops depth, height and width (Keras' ``Cropping3D``): ``cropping`` an
    int, 3 ints or 3 (start, end) pairs."""

    rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None,
                 **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class _UpSampling(_Spatial):
    """Repeats each spatial position ``size`` times per axis (nearest
    neighbour), in channels_last around a transpose for channels_first.

    Raises:
        ValueError: unknown spatial or channel sizes.
    """

    def __init__(self, size=2, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = normalize_tuple(size, self.rank, "size")

    def call(self, inputs):
        x = self.to_channels_last(inputs)
        n, *spatial, c = x.shape
        if None in (*spatial, c):
            raise ValueError(f"Layer '{self.name}' needs known spatial sizes. "
                             f"Received: input shape {inputs.shape}.")
        x = K.reshape(x, (-1, *(v for s in spatial for v in (s, 1)), c))
        x = K.tile(x, (1, *(v for f in self.size for v in (1, f)), 1))
        x = K.reshape(x, (-1, *(s * f for s, f in zip(spatial, self.size)), c))
        return self.from_channels_last(x)

    def get_config(self):
        return {**super().get_config(), "size": list(self.size)}


class UpSampling1D(_UpSampling):
    """Repeats each step ``size`` times (Keras' ``UpSampling1D``; channels_last
    only, as Keras)."""

    rank = 1

    def __init__(self, size=2, **kwargs):
        super().__init__(size, "channels_last", **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["data_format"]
        return {**config, "size": self.size[0]}


class UpSampling2D(_UpSampling):
    """Repeats rows and columns (``size`` = (sh, sw)); interpolation 'nearest'
    only (Keras' default).

    Raises:
        ValueError: another interpolation; unknown spatial sizes.
    """

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest",
                 **kwargs):
        super().__init__(size, data_format, **kwargs)
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D supports interpolation='nearest' only. "
                             f"Received: interpolation={interpolation!r}.")
        self.interpolation = interpolation

    def get_config(self):
        return {**super().get_config(), "interpolation": self.interpolation}


class UpSampling3D(_UpSampling):
    """Repeats each voxel ``size`` = (sd, sh, sw) times (Keras'
    ``UpSampling3D``)."""

    rank = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(size, data_format, **kwargs)
