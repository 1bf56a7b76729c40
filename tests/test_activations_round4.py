"""Keras 3's shrinkage, sparse and gated activations under
``kerasflow.activations``: values equal to Keras', lookup by name, and float64
gradient checks."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import activations
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

NEW = ["celu", "glu", "hard_shrink", "hard_tanh", "log_sigmoid", "soft_shrink",
       "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink"]
X = np.random.default_rng(0).normal(size=(4, 6)).astype("float32") * 2


@pytest.mark.parametrize("name", NEW)
def test_values_equal_keras(name):
    keras = keras_numpy()
    ours = activations.get(name)(X)
    np.testing.assert_allclose(ours, getattr(keras.activations, name)(X),
                               rtol=1e-5, atol=1e-6)
    assert np.asarray(ours).dtype == np.float32


def test_threshold_and_arguments_equal_keras():
    keras = keras_numpy()
    A, KA = activations, keras.activations
    np.testing.assert_allclose(A.threshold(X, 0.3, -1.0), KA.threshold(X, 0.3, -1.0))
    np.testing.assert_allclose(A.celu(X, alpha=0.5), KA.celu(X, alpha=0.5), rtol=1e-6)
    np.testing.assert_allclose(A.squareplus(X, b=2), KA.squareplus(X, b=2),
                               rtol=1e-6)
    np.testing.assert_allclose(A.glu(X, axis=0), KA.glu(X, axis=0), rtol=1e-6)
    np.testing.assert_allclose(A.hard_shrink(X, 1.0), KA.hard_shrink(X, 1.0))


@pytest.mark.parametrize("name", NEW)
def test_serialize_round_trip(name):
    fn = getattr(activations, name)
    assert activations.serialize(fn) == name
    assert activations.deserialize(name) is fn


@pytest.mark.parametrize("name", ["celu", "glu", "log_sigmoid", "squareplus",
                                  "tanh_shrink", "sparsemax", "soft_shrink",
                                  "sparse_plus"])
def test_gradients_float64(name, float64):
    # Points away from the kinks (|x| = 0.5, 1) where one-sided slopes differ.
    x = np.array([[-2.3, -0.7, 0.2, 0.8, 1.7, 2.9], [0.31, -1.4, 2.2, -0.2,
                                                     0.65, -2.6]])
    check_gradients(lambda t: getattr(activations, name)(t), [x])


def test_glu_odd_axis_names_the_shape():
    with pytest.raises(ValueError, match=r"divisible by 2. Received: x.shape=\(2, 3\)"):
        activations.glu(np.ones((2, 3), "float32"))
