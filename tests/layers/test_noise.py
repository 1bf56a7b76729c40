"""GaussianDropout, AlphaDropout and Identity: Keras 3 as the oracle where
deterministic, the noise's statistics in training, contract, errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
X = RNG.randn(3, 5, 4).astype("float32")


def _train(layer, x):
    ph = K.placeholder("float32", (None,) + x.shape[1:])
    return K.Function([ph], layer(ph, training=True))(x)


@pytest.mark.parametrize("cls", ["GaussianDropout", "AlphaDropout"])
def test_identity_at_inference_like_keras(cls):
    keras = keras_numpy()
    np.testing.assert_array_equal(getattr(L, cls)(0.3, name=f"inf_{cls}")(X), X)
    np.testing.assert_array_equal(np.asarray(getattr(keras.layers, cls)(0.3)(X)), X)


def test_gaussian_dropout_noise_statistics():
    x = np.ones((400, 250), "float32")
    y = _train(L.GaussianDropout(0.2, seed=1, name="gd_stats"), x)
    assert abs(y.mean() - 1.0) < 0.01
    assert abs(y.std() - np.sqrt(0.2 / 0.8)) < 0.01


def test_alpha_dropout_keeps_selu_statistics_and_drops_to_alpha_p():
    x = np.random.RandomState(1).randn(400, 250).astype("float32")
    rate = 0.2
    y = _train(L.AlphaDropout(rate, seed=2, name="ad_stats"), x)
    assert abs(y.mean() - x.mean()) < 0.02 and abs(y.std() - x.std()) < 0.02
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    dropped = np.isclose(y, a * alpha_p - a * alpha_p * rate, atol=1e-5)
    assert abs(dropped.mean() - rate) < 0.01
    kept = ~dropped
    np.testing.assert_allclose(y[kept], a * x[kept] - a * alpha_p * rate,
                               rtol=1e-5, atol=1e-5)


def test_alpha_dropout_noise_shape_shares_draws():
    y = _train(L.AlphaDropout(0.5, noise_shape=(None, 1, 4), seed=3,
                              name="ad_shape"), np.ones((6, 5, 4), "float32"))
    assert np.all(y == y[:, :1, :])


def test_identity_keeps_values_and_masks():
    keras = keras_numpy()
    np.testing.assert_array_equal(L.Identity(name="id_vals")(X),
                                  np.asarray(keras.layers.Identity()(X)))
    inp = kf.Input((None,), dtype="int32")
    e = L.Embedding(5, 3, mask_zero=True, name="id_emb")(inp)
    out = L.LSTM(2, name="id_lstm")(L.Identity(name="id_mask")(e))
    model = kf.Model(inp, out)
    ids = np.array([[1, 2, 0, 0]])
    np.testing.assert_allclose(model.predict(ids, verbose=0),
                               model.predict(ids[:, :2], verbose=0), rtol=1e-6)


@pytest.mark.parametrize("make,shape,out,stochastic", [
    (lambda: L.GaussianDropout(0.3, seed=1), (4, 5), (4, 5), True),
    (lambda: L.AlphaDropout(0.3, seed=1), (4, 5), (4, 5), True),
])
def test_contract(make, shape, out, stochastic, tmp_path):
    check_contract(make, shape, out, tmp_path, train=not stochastic,
                   stochastic=stochastic)


def test_errors():
    with pytest.raises(ValueError, match="rate"):
        L.GaussianDropout(1.5)
    with pytest.raises(ValueError, match="rate"):
        L.AlphaDropout(-0.1)
    with pytest.raises(ValueError, match="noise_shape"):
        _train(L.AlphaDropout(0.5, noise_shape=(None, 2), name="ad_err"), X)
