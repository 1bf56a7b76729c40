"""ReLU, LeakyReLU, ELU, PReLU, Softmax layers against Keras 3 (numpy backend)
as the oracle, plus gradients, configs and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.keras_oracle import assert_same_forward, keras_numpy

X = np.linspace(-4, 8, 24, dtype="float32").reshape(2, 3, 4)


@pytest.mark.parametrize("name,kwargs", [
    ("ReLU", {}), ("ReLU", {"max_value": 6.0}),
    ("ReLU", {"max_value": 5.0, "negative_slope": 0.1, "threshold": 1.0}),
    ("ReLU", {"negative_slope": 0.2}), ("LeakyReLU", {}),
    ("LeakyReLU", {"negative_slope": 0.1}), ("ELU", {}), ("ELU", {"alpha": 0.5}),
    ("Softmax", {}), ("Softmax", {"axis": 1}), ("Softmax", {"axis": (1, 2)}),
    ("PReLU", {"alpha_initializer": "random_uniform"}),
    ("PReLU", {"alpha_initializer": "random_uniform", "shared_axes": [1, 2]}),
])
def test_forward_equals_keras(name, kwargs):
    keras = keras_numpy()
    ours = getattr(kf.layers, name)(**kwargs)
    assert_same_forward(ours, getattr(keras.layers, name)(**kwargs), X)
    clone = type(ours).from_config(ours.get_config())
    assert clone.get_config() == ours.get_config()


def test_softmax_mask_matches_keras():
    keras = keras_numpy()
    mask = np.array([[[1, 1, 0, 1]] * 3, [[0, 1, 1, 1]] * 3], dtype=bool)
    out = assert_same_forward(kf.layers.Softmax(), keras.layers.Softmax(), X,
                              mask=mask)
    assert np.all(out[~mask] < 1e-6)


def test_leaky_relu_accepts_keras2_alpha_with_a_warning():
    with pytest.warns(UserWarning, match="alpha"):
        layer = kf.layers.LeakyReLU(alpha=0.2)
    assert layer.negative_slope == 0.2
    np.testing.assert_allclose(layer(np.array([-1.0, 2.0], "float32")), [-0.2, 2.0])


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="negative_slope >= 0.*-1"):
        kf.layers.LeakyReLU(negative_slope=-1)
    with pytest.raises(ValueError, match="max_value"):
        kf.layers.ReLU(max_value=-2)
    with pytest.raises(ValueError, match="non-batch dimensions"):
        kf.layers.PReLU()(kf.Input((None, 4)))


def test_prelu_learns_its_slope(float64):
    """A PReLU fit to y = relu(x) - 0.25*relu(-x) recovers alpha = 0.25 (its
    gradient is right, or it would not)."""
    rng = np.random.RandomState(0)
    x = rng.randn(512, 3)
    y = np.maximum(x, 0) + 0.25 * np.minimum(x, 0)
    model = kf.Sequential([kf.layers.PReLU(input_shape=(3,), shared_axes=[1])])
    model.compile(optimizer=kf.optimizers.SGD(0.5), loss="mse")
    model.fit(x, y, batch_size=64, epochs=20, verbose=0)
    np.testing.assert_allclose(model.layers[0].get_weights()[0], [0.25], atol=1e-3)


def test_gan_style_discriminator_trains_with_leaky_relu():
    model = kf.Sequential([
        kf.layers.Dense(16, input_shape=(4,)), kf.layers.LeakyReLU(0.2),
        kf.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=kf.optimizers.Adam(0.01), loss="binary_crossentropy")
    rng = np.random.RandomState(1)
    x = rng.randn(256, 4).astype("float32")
    y = (x[:, 0] - x[:, 1] > 0).astype("float32")
    first = model.fit(x, y, epochs=1, verbose=0).history["loss"][0]
    last = model.fit(x, y, epochs=15, verbose=0).history["loss"][-1]
    assert last < 0.5 * first
