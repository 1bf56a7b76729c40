"""``UnitNorm``, ``MinMaxNorm``, the constraints' snake-case names and
``OrthogonalRegularizer``, value-equal to Keras 3."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import constraints as C
from kerasflow import regularizers as R
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


def test_orthogonal_regularizer_rows_equals_keras():
    keras = keras_numpy()
    for factor in (0.01, 0.3):
        np.testing.assert_allclose(
            R.OrthogonalRegularizer(factor, "rows")(W),
            keras.regularizers.OrthogonalRegularizer(factor, "rows")(W), rtol=1e-5)
    ours = R.OrthogonalRegularizer(0.1, "columns").get_config()
    theirs = keras.regularizers.OrthogonalRegularizer(0.1, "columns").get_config()
    # Keras keeps the factor as a float32 tensor: 0.10000000149 in its config.
    assert ours == {**theirs, "factor": pytest.approx(0.1)} and ours["factor"] == 0.1


def test_orthogonal_regularizer_columns_formula():
    # Keras' numpy path cannot normalize along axis 0 (it broadcasts wrongly);
    # the formula by hand: factor / 2 * mean |off-diagonal cosine| over pairs.
    n = W / np.linalg.norm(W, axis=0, keepdims=True)
    gram = n.T @ n
    off = np.abs(gram - np.diag(np.diag(gram))).sum()
    expected = 0.1 * 0.5 * off / (4 * 3 / 2)
    assert float(R.orthogonal_regularizer(0.1, "columns")(W)) == pytest.approx(
        expected, rel=1e-5)
    assert float(R.OrthogonalRegularizer(1.0)(np.eye(3, dtype="float32"))) == 0.0


def test_orthogonal_regularizer_in_a_layer_and_errors():
    layer = kf.layers.Dense(3, kernel_regularizer="orthogonal_regularizer")
    layer(np.ones((2, 4), "float32"))
    assert len(layer.losses) == 1
    with pytest.raises(ValueError, match=r"Received: mode=diag"):
        R.OrthogonalRegularizer(mode="diag")
    with pytest.raises(ValueError, match=r"rank 2. Received: inputs.shape=\(3,\)"):
        R.OrthogonalRegularizer()(np.ones(3, "float32"))
    with pytest.raises(ValueError, match="factor"):
        R.OrthogonalRegularizer(-1.0)
