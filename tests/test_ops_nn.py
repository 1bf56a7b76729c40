"""``kerasflow.ops.nn`` against Keras 3's ``keras.ops.nn`` (numpy backend):
activations, conv and pooling in both data formats, cross-entropies, and
``dot_product_attention`` with bias, masks and the causal mask; gradients of
the attention checked numerically."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
X = RNG.randn(2, 3, 5).astype("float32")


@pytest.mark.parametrize("name,kwargs", [
    ("relu", {}), ("relu6", {}), ("sigmoid", {}), ("softplus", {}), ("softsign", {}),
    ("silu", {}), ("log_sigmoid", {}), ("leaky_relu", {"negative_slope": 0.1}),
    ("hard_sigmoid", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("gelu", {}),
    ("gelu", {"approximate": False}), ("softmax", {"axis": 1}),
    ("log_softmax", {}), ("normalize", {"axis": 1})])
def test_activations_equal_keras(name, kwargs):
    keras = keras_numpy()
    np.testing.assert_allclose(getattr(kf.ops.nn, name)(X, **kwargs),
                               np.asarray(getattr(keras.ops.nn, name)(X, **kwargs)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,kshape,kwargs", [
    ((2, 9, 3), (3, 3, 4), {"strides": 2, "padding": "same"}),
    ((2, 7, 7, 3), (3, 3, 3, 4), {"padding": "valid", "dilation_rate": 2}),
    ((2, 3, 7, 7), (3, 3, 3, 4), {"data_format": "channels_first"}),
    ((1, 5, 5, 5, 2), (2, 2, 2, 2, 3), {"strides": 1}),
])
def test_conv_equals_keras(shape, kshape, kwargs):
    keras = keras_numpy()
    x, k = RNG.randn(*shape).astype("float32"), RNG.randn(*kshape).astype("float32")
    np.testing.assert_allclose(kf.ops.nn.conv(x, k, **kwargs),
                               np.asarray(keras.ops.nn.conv(x, k, **kwargs)),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["max_pool", "average_pool"])
@pytest.mark.parametrize("shape,kwargs", [
    # Strides given: Keras' numpy backend fails on strides=None for these.
    ((2, 8, 3), {"pool_size": 2, "strides": 2}),
    ((2, 6, 6, 3), {"pool_size": 3, "strides": 2, "padding": "same"}),
    ((2, 3, 6, 6), {"pool_size": 2, "strides": 2, "data_format": "channels_first"})])
def test_pools_equal_keras(name, shape, kwargs):
    keras = keras_numpy()
    x = RNG.randn(*shape).astype("float32")
    np.testing.assert_allclose(getattr(kf.ops.nn, name)(x, **kwargs),
                               np.asarray(getattr(keras.ops.nn, name)(x, **kwargs)),
                               rtol=1e-5, atol=1e-6)


def test_cross_entropies_equal_keras():
    keras = keras_numpy()
    p = RNG.uniform(0.05, 0.95, (4, 3)).astype("float32")
    t = (RNG.rand(4, 3) > 0.5).astype("float32")
    ids = np.array([0, 2, 1, 2])
    for fl in (False, True):
        np.testing.assert_allclose(
            kf.ops.nn.binary_crossentropy(t, p, from_logits=fl),
            np.asarray(keras.ops.nn.binary_crossentropy(t, p, from_logits=fl)),
            rtol=1e-5)
        onehot = np.eye(3, dtype="float32")[ids]
        np.testing.assert_allclose(
            kf.ops.nn.categorical_crossentropy(onehot, p, from_logits=fl),
            np.asarray(keras.ops.nn.categorical_crossentropy(onehot, p,
                                                             from_logits=fl)),
            rtol=1e-5)
        np.testing.assert_allclose(
            kf.ops.nn.sparse_categorical_crossentropy(ids, p, from_logits=fl),
            np.asarray(keras.ops.nn.sparse_categorical_crossentropy(
                ids, p, from_logits=fl)), rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3}])
def test_dot_product_attention_equals_keras(kwargs):
    keras = keras_numpy()
    q = RNG.randn(2, 4, 2, 3).astype("float32")
    k = RNG.randn(2, 5, 2, 3).astype("float32") if not kwargs.get("is_causal") \
        else RNG.randn(2, 4, 2, 3).astype("float32")
    v = RNG.randn(*k.shape).astype("float32")
    s = k.shape[1]
    bias = RNG.randn(1, 2, 4, s).astype("float32")
    mask = RNG.rand(2, 1, 4, s) > 0.3
    mask[..., 0] = True
    for extra in ({}, {"bias": bias}, {"mask": mask}):
        ours = kf.ops.nn.dot_product_attention(q, k, v, **kwargs, **extra)
        theirs = keras.ops.nn.dot_product_attention(q, k, v, **kwargs, **extra)
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-4, atol=1e-5)


def test_dot_product_attention_gradients(float64):
    q, k, v = (RNG.randn(1, 3, 2, 2) for _ in range(3))
    check_gradients(lambda a, b, c: kf.ops.nn.dot_product_attention(
        a, b, c, is_causal=True), [q, k, v])


def test_pool_strides_default_to_the_pool_size():
    x = RNG.randn(2, 8, 3).astype("float32")
    np.testing.assert_allclose(kf.ops.nn.max_pool(x, 2), x.reshape(2, 4, 2, 3).max(2))
