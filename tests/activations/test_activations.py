"""Activations: values against numpy, eager and in a graph; logits recorded for
the fused cross-entropies; names and errors. Keras 3's shrinkage, sparse and
gated activations: values equal to Keras', lookup by name, and float64
gradient checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kerasflow import activations
from kerasflow import activations as A
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

X = np.array([[-3.0, -0.5, 0.0, 0.5, 3.0], [10.0, -10.0, 1.0, -1.0, 6.5]], np.float32)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


_erf = np.vectorize(math.erf)
EXPECTED = {
    "linear": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": _sig,
    "tanh": np.tanh,
    "softmax": lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
    "log_softmax": lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)),
    "softplus": _softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1),
    "selu": lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "silu": lambda x: x * _sig(x),
    "swish": lambda x: x * _sig(x),
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "hard_silu": lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "exponential": np.exp,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_values_eager_and_graph(name):
    fn = A.get(name)
    expected = EXPECTED[name](X.astype(np.float64))
    np.testing.assert_allclose(fn(X), expected, rtol=1e-5, atol=1e-6)
    x = K.placeholder("float32", (None, 5))
    np.testing.assert_allclose(K.Function([x], fn(x))(X), expected, rtol=1e-5,
                               atol=1e-6)
    assert A.serialize(fn) == fn.__name__
    assert A.get(A.serialize(fn)) is fn


def test_keyword_arguments():
    np.testing.assert_allclose(A.relu(X, negative_slope=0.1, max_value=5.0),
                               np.minimum(np.where(X > 0, X, 0.1 * X), 5.0), 1e-6)
    np.testing.assert_allclose(A.relu(X, threshold=1.0), np.where(X > 1.0, X, 0.0))
    np.testing.assert_allclose(A.leaky_relu(X, negative_slope=0.5),
                               np.where(X > 0, X, 0.5 * X))
    np.testing.assert_allclose(A.elu(X, alpha=2.0),
                               np.where(X > 0, X, 2.0 * np.expm1(X)), 1e-5)
    sm = A.softmax(X, axis=0)
    np.testing.assert_allclose(sm.sum(axis=0), np.ones(5), rtol=1e-6)


def test_softmax_and_sigmoid_record_logits_on_symbolic_outputs():
    x = K.placeholder("float32", (None, 5))
    assert A.softmax(x)._keras_logits is x
    assert A.sigmoid(x)._keras_logits is x
    assert A.softmax(x, axis=1)._keras_logits is x  # the last axis, named
    assert A.softmax(x, axis=0)._keras_logits is None  # CE reduces the last axis
    assert A.relu(x)._keras_logits is None


def test_get_and_errors():
    assert A.get(None) is A.linear
    assert A.get("swish") is A.silu and A.get("hard_swish") is A.hard_silu
    def custom(x):
        return x * 2

    assert A.get(custom) is custom
    with pytest.raises(ValueError, match="Unknown activation identifier: 'rellu'.*"
                                         "relu"):
        A.get("rellu")
    with pytest.raises(TypeError, match="Could not interpret activation"):
        A.get(42)
    assert A.deserialize("custom", custom_objects={"custom": custom}) is custom


# -- shrinkage, sparse and gated activations, against Keras 3 -----------------------

SHRINK_SPARSE_GATED = ["celu", "glu", "hard_shrink", "hard_tanh", "log_sigmoid",
                       "soft_shrink", "sparse_plus", "sparse_sigmoid", "sparsemax",
                       "squareplus", "tanh_shrink"]
Z = np.random.default_rng(0).normal(size=(4, 6)).astype("float32") * 2


@pytest.mark.parametrize("name", SHRINK_SPARSE_GATED)
def test_values_equal_keras(name):
    keras = keras_numpy()
    ours = activations.get(name)(Z)
    np.testing.assert_allclose(ours, getattr(keras.activations, name)(Z),
                               rtol=1e-5, atol=1e-6)
    assert np.asarray(ours).dtype == np.float32


def test_threshold_and_arguments_equal_keras():
    keras = keras_numpy()
    A, KA = activations, keras.activations
    np.testing.assert_allclose(A.threshold(Z, 0.3, -1.0), KA.threshold(Z, 0.3, -1.0))
    np.testing.assert_allclose(A.celu(Z, alpha=0.5), KA.celu(Z, alpha=0.5), rtol=1e-6)
    np.testing.assert_allclose(A.squareplus(Z, b=2), KA.squareplus(Z, b=2),
                               rtol=1e-6)
    np.testing.assert_allclose(A.glu(Z, axis=0), KA.glu(Z, axis=0), rtol=1e-6)
    np.testing.assert_allclose(A.hard_shrink(Z, 1.0), KA.hard_shrink(Z, 1.0))


@pytest.mark.parametrize("name", SHRINK_SPARSE_GATED)
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
