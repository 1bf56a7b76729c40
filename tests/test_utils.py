"""Tests for kerasflow.utils (to_categorical, normalize)."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow.utils import normalize, to_categorical


def test_to_categorical_vector():
    out = to_categorical([0, 2, 1, 2])
    expected = np.array(
        [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]], dtype=np.float32
    )
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)


def test_to_categorical_num_classes_and_dtype():
    out = to_categorical(np.array([1, 3], dtype=np.uint8), num_classes=5, dtype="int32")
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]])
    assert out.dtype == np.int32


def test_to_categorical_column_vector_drops_trailing_axis():
    out = to_categorical([[1], [0]], num_classes=2)
    np.testing.assert_array_equal(out, [[0, 1], [1, 0]])


def test_to_categorical_multidimensional():
    y = np.array([[0, 1, 2], [2, 1, 0]])
    out = to_categorical(y)
    assert out.shape == (2, 3, 3)
    expected = np.array(
        [
            [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
            [[0, 0, 1], [0, 1, 0], [1, 0, 0]],
        ],
        dtype=np.float32,
    )
    np.testing.assert_array_equal(out, expected)


def test_to_categorical_scalar_and_whole_floats():
    np.testing.assert_array_equal(to_categorical(2, 4), [0, 0, 1, 0])
    np.testing.assert_array_equal(to_categorical([1.0, 0.0]), [[0, 1], [1, 0]])


def test_to_categorical_empty_with_num_classes():
    assert to_categorical(np.array([], dtype=int), 3).shape == (0, 3)


def test_to_categorical_negative_labels():
    with pytest.raises(ValueError, match=r">= 0.*\[-3, -1\]"):
        to_categorical([0, -1, 2, -3], num_classes=4)


def test_to_categorical_labels_too_large():
    with pytest.raises(ValueError, match=r"< num_classes=3.*\[3, 7\]"):
        to_categorical([0, 3, 7, 1], num_classes=3)


def test_to_categorical_bad_arguments():
    with pytest.raises(ValueError, match="whole numbers"):
        to_categorical([0.5, 1.0])
    with pytest.raises(ValueError, match="integers"):
        to_categorical(["a", "b"])
    with pytest.raises(ValueError, match="num_classes must be a positive integer"):
        to_categorical([0], num_classes=0)
    with pytest.raises(ValueError, match="empty"):
        to_categorical([])


def test_normalize_l2():
    out = normalize(np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0], [1.0, 0.0]])


def test_normalize_axis_and_order():
    x = np.array([[1.0, 2.0], [3.0, 6.0]], dtype=np.float32)
    out = normalize(x, axis=0, order=1)
    np.testing.assert_allclose(out, [[0.25, 0.25], [0.75, 0.75]])
    assert out.dtype == np.float32


def test_normalize_integer_input_and_errors():
    out = normalize([[3, 4]])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8]])
    with pytest.raises(ValueError, match="order"):
        normalize([[1.0]], order=0)
    with pytest.raises(ValueError, match="at least 1-D"):
        normalize(3.0)
