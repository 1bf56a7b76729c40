"""Regression tests for results that were silently wrong (issue: "programs
written by others, round 3"): BatchNormalization with a mask, and
``to_numpy`` / ``convert_to_numpy`` of a Variable."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

X = np.array([[[1.0, 2.0], [2.0, 8.0], [0.0, 0.0]],
              [[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]]], "float32")
MASK = np.array([[True, True, False], [False, True, False]])


def test_batch_norm_excludes_masked_steps_like_keras():
    keras = keras_numpy()
    ours = kf.layers.BatchNormalization(momentum=0.0)
    theirs = keras.layers.BatchNormalization(momentum=0.0)
    out = np.asarray(ours(X, training=True, mask=MASK))
    expected = np.asarray(theirs(X, training=True, mask=MASK))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # By hand: the unmasked rows are [1, 2], [2, 8], [3, 4].
    np.testing.assert_allclose(ours.moving_mean.numpy(), [2.0, 14.0 / 3.0], rtol=1e-6)


def test_batch_norm_reads_the_mask_of_an_embedding():
    """Embedding(mask_zero=True) -> BatchNormalization: padding ids (0) do not
    enter the moving mean (they did before: [0.75, 2.5] for Keras' [1.5, 5.0])."""
    ids = np.array([[3, 1, 0, 0], [2, 0, 0, 0]])
    inputs = kf.Input((4,), dtype="int64")
    emb = kf.layers.Embedding(5, 2, mask_zero=True)
    bn = kf.layers.BatchNormalization(momentum=0.0)
    model = kf.Model(inputs, bn(emb(inputs)))
    model.compile(optimizer=kf.optimizers.SGD(0.0), loss="mse")
    table = np.arange(10, dtype="float32").reshape(5, 2)
    emb.set_weights([table])
    model.train_on_batch(ids, np.zeros((2, 4, 2), "float32"))
    np.testing.assert_allclose(bn.moving_mean.numpy(), table[[3, 1, 2]].mean(0),
                               rtol=1e-6)


def test_masked_batch_norm_gradient(float64):
    mask = MASK.astype("float64")

    def fn(x):
        layer = kf.layers.BatchNormalization(momentum=0.0)
        return layer(x, training=True, mask=mask)

    check_gradients(fn, [X.astype("float64") + np.arange(12).reshape(2, 3, 2) / 7])


def test_to_numpy_of_a_variable_is_its_value():
    v = kf.backend.Variable(np.array([1.0, 2.0], "float32"))
    for got in (kf.backend.to_numpy(v), kf.ops.convert_to_numpy(v)):
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, [1.0, 2.0])
    v.assign(np.array([3.0, 4.0], "float32"))
    np.testing.assert_array_equal(kf.ops.convert_to_numpy(v), [3.0, 4.0])
    with pytest.raises(TypeError, match="symbolic tensor"):
        kf.ops.convert_to_numpy(kf.Input((2,)))
