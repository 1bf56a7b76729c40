"""``ops.linalg`` (inv, det, solve, norm), ``ops.image.resize`` and the
``ops.numpy`` namespace against Keras 3 (numpy backend); gradients checked
numerically in float64."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
A = RNG.randn(2, 3, 3) + 3 * np.eye(3)
B = RNG.randn(2, 3, 2)


@pytest.mark.parametrize("name,args", [("inv", (A,)), ("det", (A,)),
                                       ("solve", (A, B))])
def test_linalg_equals_keras(name, args):
    keras = keras_numpy()
    np.testing.assert_allclose(getattr(kf.ops.linalg, name)(*args),
                               np.asarray(getattr(keras.ops.linalg, name)(*args)),
                               rtol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"ord": 1, "axis": -1}, {"ord": np.inf,
                                                                  "axis": 1},
                                    {"axis": (1, 2)}, {"ord": 3, "axis": 0,
                                                       "keepdims": True}])
def test_norm_equals_keras(kwargs):
    keras = keras_numpy()
    x = A if "axis" in kwargs else A[0]
    np.testing.assert_allclose(kf.ops.linalg.norm(x, **kwargs),
                               np.asarray(keras.ops.linalg.norm(x, **kwargs)),
                               rtol=1e-6)


@pytest.mark.parametrize("fn", [K.inv, K.det, lambda a: K.solve(a, B),
                                lambda a: kf.ops.linalg.norm(a, axis=(1, 2))])
def test_linalg_gradients(float64, fn):
    check_gradients(fn, [A])


@pytest.mark.parametrize("size", [(8, 6), (2, 3), (5, 5)])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_resize_equals_keras(size, interpolation):
    keras = keras_numpy()
    images = RNG.rand(2, 4, 5, 3).astype("float32")
    ours = kf.ops.image.resize(images, size, interpolation=interpolation)
    theirs = keras.ops.image.resize(images, size, interpolation=interpolation)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_resize_channels_first_and_gradient(float64):
    images = RNG.rand(1, 3, 4, 4)
    out = kf.ops.image.resize(images, (6, 2), data_format="channels_first")
    ref = kf.ops.image.resize(images.transpose(0, 2, 3, 1), (6, 2))
    np.testing.assert_allclose(out, ref.transpose(0, 3, 1, 2))
    check_gradients(lambda x: kf.ops.image.resize(x, (7, 3)), [RNG.rand(1, 4, 5, 2)])


def test_numpy_namespace_holds_the_ops():
    assert kf.ops.numpy.cumsum is kf.ops.cumsum
    assert kf.ops.numpy.matmul is kf.ops.matmul
