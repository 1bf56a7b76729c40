"""ConvLSTM1D/2D/3D: Keras 3 as the oracle (padding, strides, dilation,
channels_first, return_sequences/state, go_backwards), masks, float64
gradients, contract, errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

import kerasflow as kf
from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
X5 = RNG.randn(2, 3, 5, 6, 2).astype("float32")


@pytest.mark.parametrize("cls,kw,x", [
    ("ConvLSTM2D", {"filters": 3, "kernel_size": 3}, X5),
    ("ConvLSTM2D", {"filters": 3, "kernel_size": (3, 2), "padding": "same",
                    "return_sequences": True, "return_state": True}, X5),
    ("ConvLSTM2D", {"filters": 2, "kernel_size": 2, "strides": 2,
                    "go_backwards": True, "return_sequences": True}, X5),
    ("ConvLSTM2D", {"filters": 2, "kernel_size": 3, "dilation_rate": 2,
                    "padding": "same", "activation": "relu"}, X5),
    ("ConvLSTM2D", {"filters": 2, "kernel_size": 3,
                    "data_format": "channels_first", "return_sequences": True},
     np.ascontiguousarray(X5.transpose(0, 1, 4, 2, 3))),
    ("ConvLSTM1D", {"filters": 3, "kernel_size": 2, "return_sequences": True},
     RNG.randn(2, 4, 6, 3).astype("float32")),
    ("ConvLSTM3D", {"filters": 2, "kernel_size": 2, "padding": "same"},
     RNG.randn(2, 2, 3, 4, 3, 2).astype("float32")),
])
def test_matches_keras(cls, kw, x):
    keras = keras_numpy()
    ours, theirs = getattr(L, cls)(**kw), getattr(keras.layers, cls)(**kw)
    ours(x)
    theirs(x)
    weights = [(w + RNG.randn(*w.shape) * 0.2).astype("float32")
               for w in ours.get_weights()]
    assert [w.shape for w in weights] == [tuple(w.shape) for w in theirs.weights]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    got = kf.tree.flatten(ours(x))
    want = keras.tree.flatten(theirs(x))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-4, atol=1e-5)


def test_masked_steps_keep_the_state():
    layer = L.ConvLSTM2D(2, 3, padding="same", name="clstm_mask")
    mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    masked = layer(X5, mask=mask)
    np.testing.assert_allclose(masked[0], layer(X5[:1, :2])[0], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(masked[1], layer(X5[1:])[0], rtol=1e-5, atol=1e-6)


def test_gradients(float64):
    rng = np.random.RandomState(1)

    def fn(x, kernel, recurrent, bias):
        layer = L.ConvLSTM2D(2, 2, padding="same", return_sequences=True,
                             dtype="float64")
        layer.build(x.shape)
        cell = layer.cell
        cell.kernel, cell.recurrent_kernel, cell.bias = kernel, recurrent, bias
        return layer.call(x)

    check_gradients(fn, [rng.randn(1, 2, 3, 3, 2), rng.randn(2, 2, 2, 8) * 0.5,
                         rng.randn(2, 2, 2, 8) * 0.5, rng.randn(8) * 0.5])


def test_contract(tmp_path):
    check_contract(lambda: L.ConvLSTM2D(2, 2, padding="same"), (3, 2, 4, 4, 1),
                   (3, 4, 4, 2), tmp_path)


def test_errors():
    with pytest.raises(ValueError, match="not compatible with `dilation_rate"):
        L.ConvLSTM2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(NotImplementedError, match="stateful"):
        L.ConvLSTM2D(2, 3, stateful=True)
    with pytest.raises(ValueError, match="expected ndim=5"):
        L.ConvLSTM2D(2, 3, name="clstm_err")(np.ones((2, 3, 4), "float32"))
    with pytest.raises(ValueError, match="filters"):
        L.ConvLSTM2D(0, 3)
