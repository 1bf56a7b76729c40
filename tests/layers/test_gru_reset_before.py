"""GRU(reset_after=False), Keras' original GRU: forward equal to Keras 3
(numpy backend), backpropagation through time checked numerically, masks,
recurrent dropout and the config."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import assert_same_forward, keras_numpy

X = np.random.RandomState(0).randn(3, 5, 4).astype("float32")


@pytest.mark.parametrize("kwargs", [
    {}, {"return_sequences": True}, {"activation": "relu"},
    {"recurrent_activation": "hard_sigmoid", "go_backwards": True},
    {"use_bias": False, "return_sequences": True}])
def test_forward_equals_keras(kwargs):
    keras = keras_numpy()
    ours = kf.layers.GRU(6, reset_after=False, bias_initializer="random_uniform",
                         **kwargs)
    theirs = keras.layers.GRU(6, reset_after=False, **kwargs)
    assert_same_forward(ours, theirs, X, rtol=1e-5, atol=1e-5)
    if kwargs.get("use_bias", True):
        assert ours.bias.shape == (18,)


def test_masked_forward_equals_keras():
    keras = keras_numpy()
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], bool)
    ours = kf.layers.GRU(6, reset_after=False, return_sequences=True)
    theirs = keras.layers.GRU(6, reset_after=False, return_sequences=True)
    assert_same_forward(ours, theirs, X, rtol=1e-5, atol=1e-5, mask=mask)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("state", [False, True])
def test_bptt_gradients(float64, masked, state):
    rng = np.random.RandomState(1)
    n, t, d, u = 2, 4, 3, 5
    x = rng.randn(n, t, d)
    w, r, b = rng.randn(d, 3 * u) * 0.5, rng.randn(u, 3 * u) * 0.5, rng.randn(3 * u)
    mask = np.array([[1, 1, 0, 1], [1, 0, 1, 1]], bool) if masked else None
    h0 = rng.randn(n, u) if state else None

    def fn(x, w, r, b, *h):
        hs, _, _ = K.rnn_loop(x, w, r, b, cell="gru_v1", mask=mask,
                              initial_state=list(h) or None)
        return hs

    check_gradients(fn, [x, w, r, b] + ([h0] if state else []))


def test_recurrent_dropout_gradients(float64):
    rng = np.random.RandomState(2)
    rmask = (rng.rand(2, 4) > 0.3) / 0.7

    def fn(x, w, r, b):
        return K.rnn_loop(x, w, r, b, cell="gru_v1", recurrent_mask=rmask)[0]

    check_gradients(fn, [rng.randn(2, 3, 3), rng.randn(3, 12) * 0.5,
                         rng.randn(4, 12) * 0.5, rng.randn(12)])


def test_config_round_trip_and_training():
    layer = kf.layers.GRU(4, reset_after=False)
    config = layer.get_config()
    assert config["reset_after"] is False
    assert kf.layers.GRU.from_config(config).cell == "gru_v1"
    model = kf.Sequential([kf.Input((5, 4)), kf.layers.GRU(8, reset_after=False),
                           kf.layers.Dense(1)])
    model.compile(optimizer=kf.optimizers.Adam(0.02), loss="mse")
    y = X.sum(axis=(1, 2))[:, None]
    first = model.fit(X, y, epochs=1, verbose=0).history["loss"][0]
    last = model.fit(X, y, epochs=40, verbose=0).history["loss"][-1]
    assert last < 0.2 * first
