"""Random geometric augmentation: ``RandomRotation``, ``RandomZoom``,
``RandomTranslation`` (Keras 3's layers of those names: same arguments,
defaults, transform matrices and resampling), built on ``affine_transform``.
Training-only, seeded, as the other augmentation layers (``augmentation``)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers.preprocessing.affine import affine_transform, rotation_matrix
from kerasflow.layers.preprocessing.augmentation import RandomImageLayer, parse_factor

__all__ = ["RandomRotation", "RandomZoom", "RandomTranslation"]

_FILL = ("reflect", "wrap", "constant", "nearest")


def _pair_factor(factor, name, lo_open):
    """(lower, upper) of RandomZoom/RandomTranslation's factors (Keras'
    ``_set_factor`` of those layers: each value in (-1, 1] or [-1, 1])."""
    msg = (f"The `{name}` argument should be a number (or a list of two numbers) "
           f"in the range {'(' if lo_open else '['}-1.0, 1.0]. Received: "
           f"{name}={factor}")

    def check(v):
        if v > 1.0 or (v <= -1.0 if lo_open else v < -1.0):
            raise ValueError(msg)

    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(msg)
        check(factor[0])
        check(factor[1])
        return tuple(sorted(factor))
    if isinstance(factor, (int, float, np.number)) and not isinstance(factor, bool):
        check(factor)
        return -abs(factor), abs(factor)
    raise ValueError(msg)


class _AffineLayer(RandomImageLayer):
    def __init__(self, fill_mode, interpolation, seed, fill_value, data_format,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if fill_mode not in _FILL:
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected "
                                      f"of one {_FILL}.")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(
                f"Unknown `interpolation` {interpolation}. Expected of one "
                f"('nearest', 'bilinear').")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = fill_value

    def _resample(self, images, transform):
        return affine_transform(images, transform, self.interpolation,
                                self.fill_mode, self.fill_value, self.data_format)

    def _batch(self, images):
        return K.shape(images)[0]

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


class RandomRotation(_AffineLayer):
    """Rotates each image about its center by a random angle (Keras 3's
    ``keras.layers.RandomRotation``).

    Args:
        factor: a fraction of a full turn: a number f gives angles in
            [-f * 360, f * 360] degrees, a pair (lower, upper) in [lower * 360,
            upper * 360]; positive angles turn counter-clockwise.
        fill_mode: 'reflect' (default), 'wrap', 'constant' or 'nearest': how
            points outside the input are filled.
        interpolation: 'bilinear' (default) or 'nearest'.
        seed: int seed of the draws.
        fill_value: the value of 'constant' fill.

    Input: (batch, H, W, C) or (H, W, C) floats of known H, W, C; output:
    same shape; at inference the input unchanged.

    Raises:
        ValueError: a factor outside [-1, 1], or images of rank other than 3/4.
        NotImplementedError: another fill_mode or interpolation.
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear",
                 seed=None, fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format,
                         **kwargs)
        self.factor = parse_factor(factor)

    def _draw(self, images):
        return (self._uniform((self._batch(images),), self.factor[0] * 360.0,
                              self.factor[1] * 360.0),)

    def _apply(self, images, angle):
        h, w = self._hw(images)
        return self._resample(images, rotation_matrix(K.cast(angle, "float32"),
                                                      h, w))

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_AffineLayer):
    """Zooms each image in or out by a random factor about its center (Keras 3's
    ``keras.layers.RandomZoom``).

    Args:
        height_factor: a number f in (-1, 1] or a pair: the vertical zoom is
            drawn from [1 + lower, 1 + upper] (f gives [1 - |f|, 1 + |f|]); a
            value above 1 zooms out, below 1 zooms in.
        width_factor: the same for the width; None keeps the aspect ratio (one
            draw for both).
        fill_mode, interpolation, seed, fill_value: as ``RandomRotation``.

    Input/output: (batch, H, W, C) or (H, W, C) floats; at inference the
    input unchanged.

    Raises:
        ValueError: a factor outside (-1, 1], or images of rank other than 3/4.
        NotImplementedError: another fill_mode or interpolation.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format,
                         **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_lower, self.height_upper = _pair_factor(
            height_factor, "height_factor", True)
        if width_factor is not None:
            self.width_lower, self.width_upper = _pair_factor(
                width_factor, "width_factor", True)

    def _draw(self, images):
        shape = (self._batch(images), 1)
        hz = self._uniform(shape, 1.0 + self.height_lower, 1.0 + self.height_upper)
        if self.width_factor is None:
            return hz, hz
        return hz, self._uniform(shape, 1.0 + self.width_lower,
                                 1.0 + self.width_upper)

    def _apply(self, images, height_zoom, width_zoom):
        h, w = self._hw(images)
        wz, hz = K.cast(width_zoom, "float32"), K.cast(height_zoom, "float32")
        zero = K.zeros_like(wz)
        transform = K.concatenate(
            [wz, zero, (w - 1.0) / 2.0 * (1.0 - wz), zero, hz,
             (h - 1.0) / 2.0 * (1.0 - hz), zero, zero], axis=1)
        return self._resample(images, transform)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomTranslation(_AffineLayer):
    """Shifts each image by a random fraction of its height and width (Keras 3's
    ``keras.layers.RandomTranslation``).

    Args:
        height_factor: a number f in [-1, 1] or a pair: the vertical shift is
            ``uniform(lower, upper) * height`` pixels (f gives [-|f|, |f|];
            positive moves the image down).
        width_factor: the same for the width (positive moves it right).
        fill_mode, interpolation, seed, fill_value: as ``RandomRotation``.

    Input/output: (batch, H, W, C) or (H, W, C) floats; at inference the
    input unchanged.

    Raises:
        ValueError: a factor outside [-1, 1], or images of rank other than 3/4.
        NotImplementedError: another fill_mode or interpolation.
    """

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format,
                         **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_lower, self.height_upper = _pair_factor(
            height_factor, "height_factor", False)
        self.width_lower, self.width_upper = _pair_factor(
            width_factor, "width_factor", False)

    def _draw(self, images):
        h, w = self._hw(images)
        shape = (self._batch(images), 1)
        dy = self._uniform(shape, self.height_lower, self.height_upper) * float(h)
        dx = self._uniform(shape, self.width_lower, self.width_upper) * float(w)
        return (K.concatenate([dx, dy], axis=1),)

    def _apply(self, images, translations):
        t = K.cast(translations, "float32")
        one, zero = K.ones_like(t[:, 0:1]), K.zeros_like(t[:, 0:1])
        transform = K.concatenate([one, zero, -t[:, 0:1], zero, one, -t[:, 1:2],
                                   zero, zero], axis=1)
        return self._resample(images, transform)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}

