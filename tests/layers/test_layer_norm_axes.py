"""LayerNormalization over any rank and axis lists (negative, unordered),
against Keras 3 (numpy backend), with gamma/beta shaped as Keras shapes them."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.keras_oracle import assert_same_forward, keras_numpy

X4 = np.random.RandomState(0).randn(2, 3, 4, 5).astype("float32") * 3 + 1


@pytest.mark.parametrize("axis", [-1, 1, 2, [1, 2], [-1, -2], [3, 1], [1, 2, 3],
                                  (2, -1)])
def test_forward_and_weights_equal_keras(axis):
    keras = keras_numpy()
    ours = kf.layers.LayerNormalization(axis=axis, gamma_initializer="random_uniform",
                                        beta_initializer="random_uniform")
    theirs = keras.layers.LayerNormalization(axis=axis)
    assert_same_forward(ours, theirs, X4, rtol=1e-4, atol=1e-5)
    assert [w.shape for w in ours.get_weights()] == \
        [tuple(w.shape) for w in theirs.get_weights()]


def test_rank_two_and_three_and_no_scale():
    keras = keras_numpy()
    for x in (X4[:, 0, 0], X4[:, 0]):
        assert_same_forward(kf.layers.LayerNormalization(scale=False),
                            keras.layers.LayerNormalization(scale=False), x,
                            rtol=1e-4, atol=1e-5)


def test_bad_axis_is_a_value_error():
    with pytest.raises(ValueError):
        kf.layers.LayerNormalization(axis=4)(X4)
