"""Random image augmentation: ``RandomFlip``, ``RandomCrop``, ``RandomContrast``,
``RandomBrightness`` (Keras 3's layers of those names, same arguments,
defaults and transformations).

Active in training only: ``training=False`` (what ``predict`` and ``evaluate``
pass) gives the inference output; an omitted ``training`` means True, as in
Keras. Draws come from ``kerasflow.random`` with the layer's
``SeedGenerator(seed)``: in a compiled graph every run draws anew, and two
layers built with the same seed draw alike. Each layer separates the draw
(``_draw``) from the transformation (``_apply``), which is checked against
Keras' ``transform_images`` on the same draws.
"""

from __future__ import annotations

import random as _py_random

import numpy as np

from kerasflow import backend as K
from kerasflow import random as kf_random
from kerasflow.layers.preprocessing.base import ImageLayer, training_flag
from kerasflow.layers.preprocessing.image import (
    Resizing,
    aspect_crop_box,
    crop,
    resize_images,
)

__all__ = ["RandomFlip", "RandomCrop", "RandomContrast", "RandomBrightness",
           "RandomImageLayer", "parse_factor"]


def parse_factor(factor, bounds=(-1.0, 1.0), name="factor"):
    """(lower, upper) from a number f (``(max(-|f|, low), |f|)``) or a pair
    (sorted), as Keras' ``BaseImagePreprocessingLayer._set_factor``.

    Raises:
        ValueError: a value outside ``bounds`` or not a number or pair.
    """
    msg = (f"The `{name}` argument should be a number (or a list of two numbers) "
           f"in the range [{bounds[0]}, {bounds[1]}]. Received: {name}={factor}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(msg)
        lower, upper = sorted(factor)
    elif isinstance(factor, (int, float, np.number)) and not isinstance(factor, bool):
        if factor < bounds[0] or factor > bounds[1]:
            raise ValueError(msg)
        factor = abs(factor)
        lower, upper = max(-factor, bounds[0]), factor
    else:
        raise ValueError(msg)
    return lower, upper


class RandomImageLayer(ImageLayer):
    """Base of the random image layers: a seeded ``SeedGenerator``, the
    training switch, and draw/apply split."""

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.seed = seed
        self.generator = kf_random.SeedGenerator(seed)

    def _uniform(self, shape, minval=0.0, maxval=1.0):
        return kf_random.uniform(shape, minval, maxval, dtype="float32",
                                 seed=self.generator)

    def _call_batch(self, images, training):
        x = self._float(images)
        if not training_flag(training):
            return self._inference(x)
        return self._apply(x, *self._draw(x))

    def _inference(self, images):
        return images

    def _draw(self, images):
        raise NotImplementedError

    def _apply(self, images, *params):
        raise NotImplementedError

    def get_config(self):
        return {**super().get_config(), "seed": self.seed}


class RandomFlip(RandomImageLayer):
    """Flips each image left-right and/or up-down with probability 1/2 (Keras
    3's ``keras.layers.RandomFlip``; with 'horizontal_and_vertical' one draw
    decides both flips).

    Args:
        mode: 'horizontal', 'vertical' or 'horizontal_and_vertical'.
        seed: int seed of the draws.
        data_format: 'channels_last' or 'channels_first'.

    Input: (batch, H, W, C) or (H, W, C); output: same shape, the layer's
    dtype.

    Raises:
        ValueError: an unknown mode, or images of rank other than 3 or 4.
    """

    _MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip layer {self.name} received an unknown "
                             f"mode argument {mode}; expected one of "
                             f"{self._MODES}.")
        self.mode = mode

    def _draw(self, images):
        return (self._uniform((K.shape(images)[0], 1, 1, 1)) <= 0.5,)

    def _apply(self, images, flips):
        h_ax, w_ax = (2, 3) if self.data_format == "channels_first" else (1, 2)
        out = images
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            out = K.where(flips, K.flip(out, axis=w_ax), out)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            out = K.where(flips, K.flip(out, axis=h_ax), out)
        return out

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


class RandomCrop(RandomImageLayer):
    """Crops a random (height, width) window, one position per batch, in
    training (Keras 3's ``keras.layers.RandomCrop``); an input not larger in
    both dimensions is instead sliced from the corner of the largest centered
    box of the target's aspect ratio and resized bilinearly to (height, width)
    (Keras 3.15's arithmetic). At
    inference (``training=False``) the input passes unchanged, as in Keras
    3.15.

    Args:
        height, width: the output size in pixels.
        seed: int seed (None: one is picked and kept in the config, as Keras).

    Input: (batch, H, W, C) or (H, W, C) with known H, W; output in training:
    the same layout, (height, width) spatially, the layer's dtype.

    Raises:
        ValueError: unknown height/width, or images of rank other than 3 or 4.
    """

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        if seed is None:
            seed = _py_random.randint(1, 10**9)
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.height, self.width = int(height), int(width)

    def _call_batch(self, images, training):
        x = self._float(images)
        h, w = self._known_hw(x)
        if not training_flag(training):
            return x
        if h > self.height and w > self.width:
            return self._apply(x, *self._draw(x))
        return self._center(x)

    def _center(self, images):
        h, w = self._hw(images)
        top, left, _, _ = aspect_crop_box(h, w, self.height, self.width)
        # Keras slices the target size from the box's corner (so a smaller
        # input is mostly resized whole), then resizes.
        out = crop(images, top, left, min(self.height, h - top),
                   min(self.width, w - left), self.data_format)
        return resize_images(out, self.height, self.width, "bilinear",
                             self.data_format)

    def _draw(self, images):
        h, w = self._hw(images)
        # One position for the whole batch (Keras); a draw shaped by the batch
        # is a graph node even outside a traced step.
        u = self._uniform((K.shape(images)[0], 2))
        top = K.floor(u[0, 0] * float(h - self.height + 1))
        left = K.floor(u[0, 1] * float(w - self.width + 1))
        return top, left

    def _apply(self, images, top, left):
        h_ax, w_ax = (2, 3) if self.data_format == "channels_first" else (1, 2)
        rows = K.cast(K.cast(top, "float32") + np.arange(self.height, dtype="float32"),
                      "int64")
        cols = K.cast(K.cast(left, "float32") + np.arange(self.width, dtype="float32"),
                      "int64")
        return K.gather(K.gather(images, rows, axis=h_ax), cols, axis=w_ax)

    compute_output_shape = Resizing.compute_output_shape

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class RandomContrast(RandomImageLayer):
    """Scales each image's deviation from its per-channel mean by a random
    factor, then clips to ``value_range`` (Keras 3's
    ``keras.layers.RandomContrast``).

    Args:
        factor: a number f or a pair in [0, 1]; the contrast factor is drawn
            from [1 - lower, 1 + upper], where a number gives (lower, upper) =
            (0, f) (Keras 3.15's parsing).
        value_range: (min, max) of the pixel values, default (0, 255).

    Input/output: (batch, H, W, C) or (H, W, C) floats; at inference the
    input unchanged.

    Raises:
        ValueError: a factor outside [0, 1], or images of rank other than 3 or 4.
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = parse_factor(factor, (0, 1))
        self.value_range = value_range

    def _draw(self, images):
        return (self._uniform((K.shape(images)[0], 1, 1, 1),
                              1.0 - self.factor[0], 1.0 + self.factor[1]),)

    def _apply(self, images, contrast):
        h_ax, w_ax = (2, 3) if self.data_format == "channels_first" else (1, 2)
        mean = K.mean(K.mean(images, axis=h_ax, keepdims=True), axis=w_ax,
                      keepdims=True)
        out = (images - mean) * K.cast(contrast, images.dtype) + mean
        return K.clip(out, self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range}


class RandomBrightness(RandomImageLayer):
    """Adds one random offset per image, ``uniform(lower, upper) * (max -
    min)`` of ``value_range``, then clips to it (Keras 3's
    ``keras.layers.RandomBrightness``).

    Args:
        factor: a number f in [-1, 1] (offsets in [-|f|, |f|]) or a pair.
        value_range: (min, max) of the pixel values, default (0, 255).

    Input/output: (batch, H, W, C) or (H, W, C) floats; at inference the
    input unchanged.

    Raises:
        ValueError: a factor outside [-1, 1], a value_range that is not a pair,
            or images of rank other than 3 or 4.
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = parse_factor(factor)
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
            raise ValueError(f"The `value_range` argument should be a list of two "
                             f"numbers. Received: value_range={value_range}")
        self.value_range = sorted(value_range)

    def _draw(self, images):
        delta = self._uniform((K.shape(images)[0], 1, 1, 1), *self.factor)
        return (delta * float(self.value_range[1] - self.value_range[0]),)

    def _apply(self, images, delta):
        return K.clip(images + K.cast(delta, images.dtype), self.value_range[0],
                      self.value_range[1])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range}
