"""Conv1DTranspose, and Conv2DTranspose 'valid' with strides over the kernel
size: Keras 3 as the oracle, gradients, contract, errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
X = RNG.randn(3, 5, 4).astype("float32")


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


@pytest.mark.parametrize("make,shape,out", [
    (lambda: L.Conv1DTranspose(2, 3, strides=2), (4, 5, 3), (4, 11, 2)),
])
def test_contract(make, shape, out, tmp_path):
    check_contract(make, shape, out, tmp_path, train=True, stochastic=False)


def test_errors():
    with pytest.raises(ValueError, match="'valid' or 'same'"):
        L.Conv1DTranspose(2, 3, padding="causal")
    with pytest.raises(ValueError, match="expected ndim=3"):
        L.Conv1DTranspose(2, 3, name="c1t_err")(np.ones((2, 3), "float32"))
