"""The preprocessing layers take Keras 3's arguments, in Keras' order, with
Keras' defaults."""

from __future__ import annotations

import inspect

import numpy as np
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


_CONFIGS = [("Normalization", {"axis": (1, 2), "invert": True}),
            ("Rescaling", {"scale": 0.5, "offset": 1.0}),
            ("Resizing", {"height": 3, "width": 4, "crop_to_aspect_ratio": True}),
            ("CenterCrop", {"height": 3, "width": 4}),
            ("RandomFlip", {"mode": "vertical", "seed": 3}),
            ("RandomRotation", {"factor": (0.1, 0.3), "fill_mode": "constant",
                                "seed": 3}),
            ("RandomZoom", {"height_factor": 0.2, "width_factor": (-0.1, 0.3),
                            "seed": 3}),
            ("RandomTranslation", {"height_factor": 0.2, "width_factor": 0.1,
                                   "interpolation": "nearest", "seed": 3}),
            ("RandomCrop", {"height": 2, "width": 3, "seed": 3}),
            ("RandomContrast", {"factor": 0.4, "seed": 3}),
            ("RandomBrightness", {"factor": (-0.2, 0.4), "value_range": (0, 1),
                                  "seed": 3}),
            ("CategoryEncoding", {"num_tokens": 4, "output_mode": "count"}),
            ("Discretization", {"bin_boundaries": [0.0, 1.0],
                                "output_mode": "one_hot"})]


@pytest.mark.parametrize("name,kw", _CONFIGS, ids=[n for n, _ in _CONFIGS])
def test_configs_hold_keras_keys_and_values(name, kw):
    keras = keras_numpy()
    ours = getattr(L, name)(**kw).get_config()
    theirs = getattr(keras.layers, name)(**kw).get_config()
    for key in set(theirs) - {"name", "dtype", "trainable"}:
        assert key in ours, key
        assert np.asarray(ours[key], dtype=object).tolist() == np.asarray(
            theirs[key], dtype=object).tolist(), key
    clone = getattr(L, name).from_config(ours)
    assert clone.get_config() == ours
