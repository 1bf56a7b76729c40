"""Keras 3 names and behaviours that real code trips on (round 3): Embedding
``weights=``, ``SparseTopKCategoricalAccuracy(from_sorted_ids=True)``, the
exception types of argument checks, the one-class warning of categorical
losses; Keras 3 (numpy backend) as the oracle where it has the name."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.keras_oracle import keras_numpy


def test_embedding_takes_pretrained_weights():
    table = np.arange(30, dtype="float32").reshape(10, 3)
    for weights in ([table], table):
        layer = kf.layers.Embedding(10, 3, weights=weights, trainable=False)
        assert layer.built and not layer.trainable_weights
        np.testing.assert_array_equal(layer(np.array([[1, 2]]))[0], table[[1, 2]])
    with pytest.raises(ValueError, match=r"expects shape \(10, 3\).*\(9, 3\)"):
        kf.layers.Embedding(10, 3, weights=[np.ones((9, 3))])


def test_embedding_build_with_an_input_shape():
    layer = kf.layers.Embedding(7, 2)
    layer.build((None, 5))
    assert layer.embeddings.shape == (7, 2)


def test_sparse_top_k_from_sorted_ids_equals_keras():
    keras = keras_numpy()
    y_true = np.array([2, 1, 0, 3])
    ids = np.array([[2, 0, 1], [0, 2, 1], [1, 2, 0], [3, 1, 2]])
    for k in (1, 2, 3):
        ours = kf.metrics.SparseTopKCategoricalAccuracy(k=k, from_sorted_ids=True)
        theirs = keras.metrics.SparseTopKCategoricalAccuracy(k=k,
                                                             from_sorted_ids=True)
        ours.update_state(y_true, ids)
        theirs.update_state(y_true, ids)
        assert ours.result() == pytest.approx(float(theirs.result()))
    assert ours.result() == 1.0  # every label is within the 3 ids
    config = ours.get_config()
    assert config["from_sorted_ids"] is True
    assert type(ours).from_config(config).get_config() == config


@pytest.mark.parametrize("units", [-1, 0, "3", 2.5])
def test_dense_bad_units_is_a_value_error_like_keras(units):
    keras = keras_numpy()
    with pytest.raises(ValueError):
        keras.layers.Dense(units)
    with pytest.raises(ValueError, match="expected a positive integer"):
        kf.layers.Dense(units)


def test_categorical_losses_warn_on_one_class():
    with pytest.warns(SyntaxWarning, match="num_classes > 1"):
        kf.losses.categorical_crossentropy(np.ones((3, 1)), np.ones((3, 1)))
    with pytest.warns(SyntaxWarning, match="categorical_focal_crossentropy"):
        kf.losses.categorical_focal_crossentropy(np.ones((3, 1)), np.ones((3, 1)))
