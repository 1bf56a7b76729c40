"""``Circle`` and ``CategoricalGeneralizedCrossEntropy`` (Keras 3) against
Keras itself, with a float64 gradient check."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import losses
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.default_rng(0)
EMB = RNG.normal(size=(8, 5)).astype("float32")
EMB /= np.linalg.norm(EMB, axis=1, keepdims=True)
LABELS = RNG.integers(0, 3, 8)
PROBS = RNG.random((6, 4)).astype("float32")
PROBS /= PROBS.sum(1, keepdims=True)
TARGETS = RNG.integers(0, 4, 6)


@pytest.mark.parametrize("kwargs", [{}, {"gamma": 10.0, "margin": 0.2,
                                         "remove_diagonal": False}])
def test_circle_equals_keras(kwargs):
    keras = keras_numpy()
    fn_kwargs = {k: v for k, v in kwargs.items()}
    np.testing.assert_allclose(losses.circle(LABELS, EMB, **fn_kwargs),
                               keras.losses.circle(LABELS, EMB, **fn_kwargs),
                               rtol=1e-5)
    np.testing.assert_allclose(float(losses.Circle(**kwargs)(LABELS, EMB)),
                               float(keras.losses.Circle(**kwargs)(LABELS, EMB)),
                               rtol=1e-5)
    ref = RNG.normal(size=(5, 5)).astype("float32")
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    ref_labels = RNG.integers(0, 3, 5)
    np.testing.assert_allclose(
        losses.circle(LABELS, EMB, ref_labels, ref, remove_diagonal=False),
        keras.losses.circle(LABELS, EMB, ref_labels, ref, remove_diagonal=False),
        rtol=1e-5)
    config = losses.Circle(**kwargs).get_config()
    assert {k: v for k, v in config.items() if k != "dtype"} == \
        keras.losses.Circle(**kwargs).get_config()
    assert losses.deserialize(losses.serialize(losses.Circle(**kwargs))
                              ).get_config() == config


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_generalized_cross_entropy_equals_keras(q):
    keras = keras_numpy()
    np.testing.assert_allclose(
        losses.categorical_generalized_cross_entropy(TARGETS, PROBS, q),
        keras.losses.categorical_generalized_cross_entropy(TARGETS, PROBS, q),
        rtol=1e-5)
    ours = losses.CategoricalGeneralizedCrossEntropy(q)
    theirs = keras.losses.CategoricalGeneralizedCrossEntropy(q)
    sw = RNG.random(6).astype("float32")
    np.testing.assert_allclose(float(ours(TARGETS, PROBS, sw)),
                               float(theirs(TARGETS, PROBS, sw)), rtol=1e-5)
    assert {k: v for k, v in ours.get_config().items() if k != "dtype"} == \
        theirs.get_config()


def test_generalized_cross_entropy_gradient(float64):
    check_gradients(lambda p: losses.categorical_generalized_cross_entropy(
        TARGETS, p, 0.6), [PROBS.astype("float64")])


def test_bad_q_and_lookup():
    with pytest.raises(ValueError, match=r"q must be in the interval \(0, 1\). "
                                         r"Received: q=1.5"):
        losses.CategoricalGeneralizedCrossEntropy(1.5)
    assert isinstance(losses.get("Circle"), losses.Circle)
    assert losses.get("circle") is losses.circle


def test_generalized_cross_entropy_trains_a_model():
    x = RNG.random((32, 4)).astype("float32")
    y = x.argmax(1)
    model = kf.Sequential([kf.layers.Dense(4, activation="softmax",
                                           input_shape=(4,))])
    model.compile(kf.optimizers.SGD(0.5),
                  losses.CategoricalGeneralizedCrossEntropy(0.5))
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
