"""The preprocessing layers take Keras 3's arguments, in Keras' order, with
Keras' defaults."""

from __future__ import annotations

import inspect

import pytest

from kerasflow import layers as L
from tests.keras_oracle import keras_numpy

NAMES = ["Normalization", "Rescaling", "Resizing", "CenterCrop", "RandomFlip",
         "RandomRotation", "RandomZoom", "RandomTranslation", "RandomCrop",
         "RandomContrast", "RandomBrightness", "StringLookup", "IntegerLookup",
         "Hashing", "CategoryEncoding", "Discretization", "TextVectorization"]
_SKIP = {"self", "kwargs", "name", "dtype"}


def _params(cls):
    params = inspect.signature(cls.__init__).parameters.items()
    return [(n, p.default) for n, p in params if n not in _SKIP]


@pytest.mark.parametrize("name", NAMES)
def test_arguments_and_defaults_match_keras(name):
    keras = keras_numpy()
    assert _params(getattr(L, name)) == _params(getattr(keras.layers, name))
