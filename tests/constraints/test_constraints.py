"""Constraints: ``UnitNorm``, ``MinMaxNorm``, ``MaxNorm`` and the snake-case
names, value-equal to Keras 3."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import constraints as C
from tests.keras_oracle import keras_numpy

W = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")


@pytest.mark.parametrize("name, kwargs", [
    ("UnitNorm", {}), ("UnitNorm", {"axis": 1}),
    ("MinMaxNorm", {"min_value": 0.5, "max_value": 1.5, "rate": 0.7}),
    ("MinMaxNorm", {"axis": [0, 1]}), ("MaxNorm", {"max_value": 1.0}),
])
def test_constraints_equal_keras(name, kwargs):
    keras = keras_numpy()
    ours, theirs = getattr(C, name)(**kwargs), getattr(keras.constraints, name)(
        **kwargs)
    np.testing.assert_allclose(ours(W), theirs(W), rtol=1e-6, atol=1e-7)
    assert ours.get_config() == theirs.get_config()
    assert C.deserialize(C.serialize(ours)).get_config() == ours.get_config()


def test_snake_case_names_are_the_classes():
    keras = keras_numpy()
    for alias, cls in (("max_norm", "MaxNorm"), ("min_max_norm", "MinMaxNorm"),
                       ("non_neg", "NonNeg"), ("unit_norm", "UnitNorm")):
        assert getattr(C, alias) is getattr(C, cls)
        assert getattr(keras.constraints, alias) is getattr(keras.constraints, cls)
        assert type(C.get(alias)) is getattr(C, cls)


def test_unit_norm_gives_unit_columns():
    np.testing.assert_allclose(np.linalg.norm(C.UnitNorm()(W), axis=0),
                               np.ones(4), rtol=1e-5)
