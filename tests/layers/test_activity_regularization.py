"""Activity regularization: applied once per layer call by ``Layer.__call__``,
over the batch size (Keras 3)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from kerasflow import regularizers


def _model():
    inputs = kf.Input((2,))
    h = L.Dense(2, use_bias=False, kernel_initializer="ones",
                activity_regularizer=regularizers.L1(0.1))(inputs)
    h = L.Reshape((2, 1))(h)
    h = L.Conv1D(1, 1, use_bias=False, kernel_initializer="ones",
                 activity_regularizer=regularizers.L2(0.5))(h)
    out = L.ActivityRegularization(l1=0.25)(L.Flatten()(h))
    return kf.Model(inputs, out)


def test_each_layer_adds_its_penalty_once():
    model = _model()
    x = np.ones((2, 2), "float32")  # every output is 2; penalties per sample:
    dense, conv, act = (model.get_layer(index=i) for i in (1, 3, 5))
    for layer, want in ((dense, 0.1 * (2 + 2)),          # L1 of [2, 2]
                        (conv, 0.5 * (2 ** 2 + 2 ** 2)),  # L2 of [[2], [2]]
                        (act, 0.25 * (2 + 2))):           # L1 of [2, 2]
        (penalty,) = layer.losses
        value = K.Function([model.inputs[0]], penalty)(x)
        assert float(value) == pytest.approx(want)
    assert len(model.losses) == 3
    model.compile("sgd", "mse")
    # mse of outputs 2 against 0 is 4, plus 0.4 + 4.0 + 1.0, each counted once.
    loss = model.evaluate(x, np.zeros((2, 2), "float32"), verbose=0)
    assert loss == pytest.approx(4.0 + 0.4 + 4.0 + 1.0)


def test_activity_regularizer_round_trips_in_config():
    layer = L.Conv2D(2, 3, activity_regularizer="l2")
    config = layer.get_config()
    assert config["activity_regularizer"]["class_name"] == "L2"
    clone = L.Conv2D.from_config(config)
    assert isinstance(clone.activity_regularizer, regularizers.L2)
    assert "activity_regularizer" not in L.Dense(2).get_config()
    assert "activity_regularizer" not in L.ActivityRegularization(0.1).get_config()


def test_any_layer_takes_an_activity_regularizer():
    # GaussianNoise is the identity at inference: the penalty is on its input.
    layer = L.GaussianNoise(1.0, activity_regularizer=regularizers.L1(0.5))
    x = K.placeholder("float32", (None, 2))
    layer(x)
    (penalty,) = layer.losses
    value = K.Function([x], penalty)(np.array([[1, -2], [3, 0]], "float32"))
    assert float(value) == pytest.approx(0.5 * (1 + 2 + 3) / 2)  # batch of 2
