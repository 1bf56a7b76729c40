"""GaussianDropout, AlphaDropout, Identity and Conv1DTranspose: Keras 3 as the
oracle where deterministic, the noise's statistics in training, gradients,
contract, errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
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


@pytest.mark.parametrize("kw", [
    {"filters": 3, "kernel_size": 3},
    {"filters": 3, "kernel_size": 3, "strides": 2, "padding": "same"},
    {"filters": 2, "kernel_size": 2, "strides": 3},
    {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "padding": "same"},
    {"filters": 2, "kernel_size": 3, "strides": 2, "data_format": "channels_first",
     "activation": "relu"},
])
def test_conv1d_transpose_matches_keras(kw):
    keras = keras_numpy()
    ours, theirs = L.Conv1DTranspose(**kw), keras.layers.Conv1DTranspose(**kw)
    ours(X)
    theirs(X)
    weights = [(w + RNG.randn(*w.shape) * 0.3).astype(w.dtype)
               for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    np.testing.assert_allclose(ours(X), np.asarray(theirs(X)), rtol=1e-5,
                               atol=1e-5)


def test_conv2d_transpose_valid_with_stride_over_kernel_matches_keras():
    keras = keras_numpy()
    x = RNG.randn(2, 4, 5, 3).astype("float32")
    kw = {"filters": 2, "kernel_size": (1, 2), "strides": (3, 2)}
    ours, theirs = L.Conv2DTranspose(**kw), keras.layers.Conv2DTranspose(**kw)
    ours(x)
    theirs(x)
    theirs.set_weights(ours.get_weights())
    got = ours(x)
    assert got.shape == (2, 12, 10, 2)  # (4 - 1) * 3 + max(1, 3) rows
    np.testing.assert_allclose(got, np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)


def test_conv1d_transpose_gradients(float64):
    rng = np.random.RandomState(4)

    def fn(x, kernel):
        layer = L.Conv1DTranspose(2, 3, strides=2, padding="same", use_bias=False,
                                  dtype="float64")
        layer.build(x.shape)
        layer.kernel = kernel
        return layer.call(x)

    check_gradients(fn, [rng.randn(2, 4, 3), rng.randn(3, 2, 3)])


@pytest.mark.parametrize("make,shape,out,stochastic", [
    (lambda: L.Conv1DTranspose(2, 3, strides=2), (4, 5, 3), (4, 11, 2), False),
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
    with pytest.raises(ValueError, match="'valid' or 'same'"):
        L.Conv1DTranspose(2, 3, padding="causal")
    with pytest.raises(ValueError, match="expected ndim=3"):
        L.Conv1DTranspose(2, 3, name="c1t_err")(np.ones((2, 3), "float32"))
