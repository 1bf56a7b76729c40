"""Every layer's contract: build, output shape, config round trip, a training step."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.keras_oracle import keras_numpy

CASES = [
    (lambda: L.Dense(4, activation="relu"), (3, 5), (3, 4)),
    (lambda: L.Dense(2, use_bias=False, kernel_regularizer="l2"), (3, 5), (3, 2)),
    (lambda: L.Dense(3), (2, 4, 5), (2, 4, 3)),
    (lambda: L.Activation("tanh"), (3, 5), (3, 5)),
    (lambda: L.Dropout(0.5, seed=1), (3, 5), (3, 5)),
    (lambda: L.Flatten(), (3, 2, 5), (3, 10)),
    (lambda: L.Reshape((5, 2)), (3, 10), (3, 5, 2)),
]


@pytest.mark.parametrize("make,in_shape,out_shape", CASES)
def test_layer_contract(make, in_shape, out_shape):
    layer = make()
    x = K.placeholder("float32", (None,) + in_shape[1:])
    y = layer(x)
    assert layer.built
    assert y.shape == (None,) + out_shape[1:]
    # Eager call on arrays gives the same shape.
    data = np.random.RandomState(0).randn(*in_shape).astype("float32")
    assert layer(data).shape == out_shape
    # Config round trip rebuilds an equivalent layer.
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == {**config, "name": clone.name} or \
        clone.get_config() == config
    clone(K.placeholder("float32", (None,) + in_shape[1:]))
    if layer.weights:
        clone.set_weights(layer.get_weights())
        np.testing.assert_allclose(
            clone(data), layer(data) if not isinstance(layer, L.Dropout) else data)


@pytest.mark.parametrize("make,in_shape,out_shape", CASES)
def test_layer_trains_one_step(make, in_shape, out_shape):
    np.random.seed(0)
    model = kf.Sequential([make(), L.Flatten(), L.Dense(1)])
    model.build((None,) + in_shape[1:])
    model.compile(optimizer=kf.optimizers.SGD(0.05), loss="mse")
    x = np.random.randn(16, *in_shape[1:]).astype("float32")
    y = np.random.randn(16, 1).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    loss0 = model.evaluate(x, y, verbose=0)
    model.train_on_batch(x, y)
    after = model.get_weights()
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    assert np.isfinite(loss0)


def test_dense_kernel_math_and_input_check():
    layer = L.Dense(2, kernel_initializer="ones", bias_initializer="zeros")
    out = layer(np.array([[1.0, 2.0, 3.0]], dtype="float32"))
    np.testing.assert_allclose(out, [[6.0, 6.0]])
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have "
                                         "value 3"):
        layer(K.placeholder("float32", (None, 4)))
    with pytest.raises(ValueError, match="positive integer"):
        L.Dense(0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        L.Dense(2, unitz=3)


def test_dropout_training_vs_inference():
    layer = L.Dropout(0.5, seed=3)
    x = K.placeholder("float32", (None, 1000))
    train = K.Function([x], layer(x, training=True))
    infer = K.Function([x], layer(x, training=False))
    ones = np.ones((4, 1000), "float32")
    t = train(ones)
    assert set(np.unique(t)) <= {0.0, 2.0}
    assert 0.4 < (t == 0).mean() < 0.6
    np.testing.assert_array_equal(infer(ones), ones)


def test_user_layer_with_add_weight():
    class Scale(L.Layer):
        def build(self, input_shape):
            self.s = self.add_weight("s", (input_shape[-1],), "ones")

        def call(self, x):
            return x * self.s

    layer = Scale()
    np.testing.assert_allclose(layer(np.full((2, 3), 2.0, "float32")),
                               np.full((2, 3), 2.0))
    assert [w.name for w in layer.weights] == [f"{layer.name}/s"]
    assert layer.count_params() == 3


def test_regularizer_losses_join_the_loss():
    layer = L.Dense(2, kernel_initializer="ones", kernel_regularizer=kf.regularizers.L2(0.5))
    layer(K.placeholder("float32", (None, 3)))
    (penalty,) = layer.losses
    # 0.5 * sum(ones(3, 2) ** 2) = 3
    assert float(K.Function([], penalty)()) == pytest.approx(3.0)


@pytest.mark.parametrize("units", [-1, 0, "3", 2.5])
def test_dense_bad_units_is_a_value_error_like_keras(units):
    keras = keras_numpy()
    with pytest.raises(ValueError):
        keras.layers.Dense(units)
    with pytest.raises(ValueError, match="expected a positive integer"):
        kf.layers.Dense(units)
