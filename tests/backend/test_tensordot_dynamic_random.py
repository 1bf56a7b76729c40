"""tensordot (numpy's values, gradients checked, an unknown batch dimension)
and random ops whose shape is known only when the graph runs (Keras 2's
``K.random_normal(shape=(K.shape(z)[0], dim))``)."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients, x


@pytest.mark.parametrize("sa,sb,axes", [
    ((3, 4), (4, 5), 1), ((2, 3, 4), (3, 4, 5), 2), ((3, 4, 5), (5, 4, 2),
                                                      [[1, 2], [1, 0]]),
    ((2, 3), (4, 5), 0), ((2, 3, 4), (4,), [[-1], [0]])])
def test_tensordot_equals_numpy_and_its_gradient_checks(float64, sa, sb, axes):
    a, b = x(*sa, seed=1), x(*sb, seed=2)
    np.testing.assert_allclose(K.tensordot(a, b, axes), np.tensordot(a, b, axes),
                               rtol=1e-12)
    check_gradients(lambda p, q: K.tensordot(p, q, axes), [a, b])


def test_tensordot_with_an_unknown_batch_dimension():
    ph = K.placeholder("float32", (None, 5, 4))
    w = np.random.RandomState(0).rand(4, 3).astype("float32")
    out = K.tensordot(ph, w, axes=1)
    assert out.shape == (None, 5, 3)
    value = np.random.RandomState(1).rand(7, 5, 4).astype("float32")
    np.testing.assert_allclose(K.Function([ph], [out])(value)[0],
                               np.tensordot(value, w, 1), rtol=1e-5)


def test_tensordot_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 2\)"):
        K.tensordot(np.zeros((3, 4)), np.zeros((5, 2)), axes=1)
    with pytest.raises(ValueError, match="one unknown free dimension"):
        K.tensordot(K.placeholder("float32", (None, None, 4)), np.zeros((4, 2)), 1)


def test_random_normal_with_a_run_time_batch_size():
    z = K.placeholder("float32", (None, 4))
    eps = K.random_normal(shape=(K.shape(z)[0], 3), seed=7)
    assert eps.shape == (None, 3)
    run = K.Function([z], [eps])
    first = run(np.zeros((5, 4), "float32"))[0]
    second = run(np.zeros((2, 4), "float32"))[0]
    assert first.shape == (5, 3) and second.shape == (2, 3)
    assert not np.allclose(first[:2], second)  # a new draw each run
    big = run(np.zeros((20000, 4), "float32"))[0]
    assert abs(big.mean()) < 0.03 and abs(big.std() - 1.0) < 0.03
    uni = K.Function([z], [K.random_uniform(K.shape(z), 2.0, 3.0)])(
        np.zeros((3, 4), "float32"))[0]
    assert uni.shape == (3, 4) and uni.min() >= 2.0 and uni.max() < 3.0


def test_random_op_with_a_none_dimension_says_how_to_fix_it():
    with pytest.raises(ValueError, match=r"K.shape\(x\)\[0\]"):
        K.random_normal(shape=(None, 3))


def test_backend_shape_is_keras2_run_time_shape():
    z = K.placeholder("float32", (None, 4))
    s = K.shape(z)
    assert K.is_symbolic(s)
    np.testing.assert_array_equal(K.Function([z], [s])(np.zeros((6, 4), "float32"))[0],
                                  [6, 4])
    assert K.shape(np.zeros((2, 3))) == (2, 3)
