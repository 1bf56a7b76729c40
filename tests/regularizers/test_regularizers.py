"""Regularizers: penalties eager and in a graph, gradients, names, configs;
``OrthogonalRegularizer``, value-equal to Keras 3."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import regularizers as R
from tests.keras_oracle import keras_numpy

W = np.array([[1.0, -2.0], [0.5, 0.0]], np.float32)


@pytest.mark.parametrize("reg,expected", [
    (R.L1(0.1), 0.1 * 3.5), (R.L2(0.01), 0.01 * 5.25),
    (R.L1L2(l1=0.1, l2=0.01), 0.35 + 0.0525), (R.L1L2(), 0.0)])
def test_penalty_eager_and_graph(reg, expected):
    assert float(reg(W)) == pytest.approx(expected, rel=1e-6)
    w = K.Variable(W)
    assert float(K.Function([], reg(w))()) == pytest.approx(expected, rel=1e-6)


def test_l2_gradient_is_2_l2_w():
    w = K.Variable(W)
    grad = K.Function([], K.gradients(R.L2(0.5)(w), [w])[0])()
    np.testing.assert_allclose(grad, 2 * 0.5 * W)


@pytest.mark.parametrize("reg", [R.L1(0.3), R.L2(0.2), R.L1L2(0.1, 0.2)],
                         ids=lambda r: type(r).__name__)
def test_config_round_trip(reg):
    config = reg.get_config()
    assert type(reg)(**config).get_config() == config
    again = R.get(R.serialize(reg))
    assert type(again) is type(reg) and again.get_config() == config


def test_get_names_aliases_and_errors():
    assert type(R.get("l1")) is R.L1 and R.get("l1").l1 == 0.01
    assert type(R.get("l2")) is R.L2 and R.get("l2").l2 == 0.01
    assert type(R.get("l1_l2")) is R.L1L2
    assert R.l1 is R.L1 and R.l2(0.5).l2 == 0.5 and R.l1_l2 is R.L1L2
    assert R.get(None) is None
    reg = R.L2(0.1)
    assert R.get(reg) is reg
    with pytest.raises(ValueError, match="Unknown regularizer identifier: 'l3'"):
        R.get("l3")
    with pytest.raises(ValueError, match="non-negative.*l2=-1.0"):
        R.L2(-1.0)


# -- OrthogonalRegularizer, against Keras 3 -----------------------------------------

W_RANDOM = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")


def test_orthogonal_regularizer_rows_equals_keras():
    keras = keras_numpy()
    for factor in (0.01, 0.3):
        np.testing.assert_allclose(
            R.OrthogonalRegularizer(factor, "rows")(W_RANDOM),
            keras.regularizers.OrthogonalRegularizer(factor, "rows")(W_RANDOM),
            rtol=1e-5)
    ours = R.OrthogonalRegularizer(0.1, "columns").get_config()
    theirs = keras.regularizers.OrthogonalRegularizer(0.1, "columns").get_config()
    # Keras keeps the factor as a float32 tensor: 0.10000000149 in its config.
    assert ours == {**theirs, "factor": pytest.approx(0.1)} and ours["factor"] == 0.1


def test_orthogonal_regularizer_columns_formula():
    # Keras' numpy path cannot normalize along axis 0 (it broadcasts wrongly);
    # the formula by hand: factor / 2 * mean |off-diagonal cosine| over pairs.
    n = W_RANDOM / np.linalg.norm(W_RANDOM, axis=0, keepdims=True)
    gram = n.T @ n
    off = np.abs(gram - np.diag(np.diag(gram))).sum()
    expected = 0.1 * 0.5 * off / (4 * 3 / 2)
    assert float(R.orthogonal_regularizer(0.1, "columns")(W_RANDOM)) == pytest.approx(
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
