"""Keras 3's preprocessing layers (see ``base`` for how values flow: numeric
layers are graph layers; string and hash-table layers run eagerly on arrays)."""

from __future__ import annotations

from kerasflow.layers.preprocessing.augmentation import (
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
)
from kerasflow.layers.preprocessing.encoding import CategoryEncoding, Discretization
from kerasflow.layers.preprocessing.geometric import (
    RandomRotation,
    RandomTranslation,
    RandomZoom,
)
from kerasflow.layers.preprocessing.hashing import Hashing
from kerasflow.layers.preprocessing.image import CenterCrop, Resizing
from kerasflow.layers.preprocessing.lookup import IntegerLookup, StringLookup
from kerasflow.layers.preprocessing.normalization import Normalization, Rescaling
from kerasflow.layers.preprocessing.text_vectorization import TextVectorization

__all__ = ["CategoryEncoding", "CenterCrop", "Discretization", "Hashing",
           "IntegerLookup", "Normalization", "RandomBrightness", "RandomContrast",
           "RandomCrop", "RandomFlip", "RandomRotation", "RandomTranslation",
           "RandomZoom", "Rescaling", "Resizing", "StringLookup",
           "TextVectorization"]
