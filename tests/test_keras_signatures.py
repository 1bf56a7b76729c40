"""The names added for issue 25 take Keras 3's arguments, with Keras' defaults."""

from __future__ import annotations

import inspect

import pytest

import kerasflow as kf
from tests.keras_oracle import keras_numpy

NAMES = [
    *(f"random.{n}" for n in ("normal", "uniform", "truncated_normal", "randint",
                              "categorical", "dropout", "shuffle", "gamma", "beta",
                              "binomial", "SeedGenerator")),
    *(f"saving.{n}" for n in ("load_model", "save_model", "register_keras_serializable",
                              "serialize_keras_object", "deserialize_keras_object",
                              "get_registered_object", "save_weights",
                              "load_weights")),
    "models.clone_model", "utils.pad_sequences", "utils.Progbar",
    "utils.timeseries_dataset_from_array", "utils.split_dataset",
    "utils.pack_x_y_sample_weight", "Variable",
]
_SKIP = {"self", "kwargs", "args", "preferred_backend"}  # Keras' backend choice


def _resolve(root, dotted):
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def _params(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    return {n: p.default for n, p in inspect.signature(target).parameters.items()
            if n not in _SKIP}


@pytest.mark.parametrize("dotted", NAMES)
def test_arguments_and_defaults_match_keras(dotted):
    keras = keras_numpy()
    ours, theirs = _params(_resolve(kf, dotted)), _params(_resolve(keras, dotted))
    assert list(theirs) == [n for n in ours if n in theirs]  # same order
    missing = set(theirs) - set(ours)
    assert not missing, f"{dotted} lacks Keras arguments {sorted(missing)}"
    for name, default in theirs.items():
        assert ours[name] == default, f"{dotted}({name}=...) default"
