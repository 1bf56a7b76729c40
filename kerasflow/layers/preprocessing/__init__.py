"""Keras 3's preprocessing layers (see ``base`` for how values flow: numeric
layers are graph layers; string and hash-table layers run eagerly on arrays)."""

from __future__ import annotations

from kerasflow.layers.preprocessing.augmentation import (
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
)
from kerasflow.layers.preprocessing.geometric import (
    RandomRotation,
    RandomTranslation,
    RandomZoom,
)
from kerasflow.layers.preprocessing.image import CenterCrop, Resizing
from kerasflow.layers.preprocessing.normalization import Normalization, Rescaling

__all__ = ["CenterCrop", "Normalization", "RandomBrightness", "RandomContrast",
           "RandomCrop", "RandomFlip", "RandomRotation", "RandomTranslation",
           "RandomZoom", "Rescaling", "Resizing"]
