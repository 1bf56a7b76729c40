"""Accuracy metrics: exact, binary, categorical, sparse and top-k (Keras 3's
``keras.metrics``), as per-sample functions and ``MeanMetricWrapper`` classes.

Example:
    >>> m = SparseCategoricalAccuracy()
    >>> m.update_state(np.array([1, 0]), np.array([[0.1, 0.9], [0.3, 0.7]]))
    []
    >>> m.result()
    0.5
"""

from __future__ import annotations

from kerasflow import losses as _losses
from kerasflow.backend import floatx, ops
from kerasflow.metrics.base import (
    _pair,
    _tensor,
    register,
    wrapper_class,
)

__all__ = [
    "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy", "TopKCategoricalAccuracy", "accuracy",
    "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
    "sparse_top_k_categorical_accuracy", "top_k_categorical_accuracy",
]


def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` elementwise, else 0.0 (floatx)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return ops.cast(ops.equal(y_true, y_pred), floatx())


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where ``(y_pred > threshold) == y_true`` elementwise (labels 0/1)."""
    y_true, y_pred = _pair(y_true, y_pred)
    pred = ops.cast(ops.greater(y_pred, threshold), y_true.dtype)
    return ops.cast(ops.equal(y_true, pred), floatx())


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)``; (batch, classes) ->
    (batch,)."""
    return ops.cast(ops.equal(ops.argmax(_tensor(y_true), -1),
                              ops.argmax(_tensor(y_pred), -1)), floatx())


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where ``y_true == argmax(y_pred)``; labels (batch,) or (batch, 1) of
    any dtype, scores (batch, classes) -> (batch,)."""
    y_pred = _tensor(y_pred)
    labels = _losses.sparse_labels(y_true, y_pred)
    return ops.cast(ops.equal(labels, ops.argmax(y_pred, -1)), floatx())


def _in_top_k(labels, y_pred, k):
    # Ties count as in the top k (as tf.math.in_top_k): the target is in when
    # fewer than k scores are strictly greater than its own.
    depth = y_pred.shape[-1] if y_pred.shape is not None else None
    if depth is None:
        raise ValueError(f"Top-k accuracy needs a known number of classes. "
                         f"Received: y_pred.shape={y_pred.shape}.")
    target = ops.sum(ops.multiply(y_pred, ops.one_hot(labels, depth, y_pred.dtype)),
                     axis=-1, keepdims=True)
    above = ops.sum(ops.cast(ops.greater(y_pred, target), floatx()), axis=-1)
    return ops.cast(ops.less(above, float(k)), floatx())


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where ``argmax(y_true)`` is among the ``k`` highest of ``y_pred``."""
    y_pred = _tensor(y_pred)
    return _in_top_k(ops.argmax(_tensor(y_true), -1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """1.0 where label ``y_true`` is among the ``k`` highest of ``y_pred``.

    With ``from_sorted_ids`` (Keras 3), ``y_pred`` holds class ids already
    sorted by score, (batch, N) ints with N >= k (a retrieval model's top-N):
    1.0 where ``y_true`` is among the first ``k`` of them.
    """
    y_pred = _tensor(y_pred)
    if not from_sorted_ids:
        return _in_top_k(_losses.sparse_labels(y_true, y_pred), y_pred, k)
    labels = ops.cast(_losses.sparse_labels(y_true, y_pred), "int64")
    top = ops.cast(y_pred[:, :k], "int64")
    hits = ops.equal(top, ops.expand_dims(labels, -1))
    return ops.max(ops.cast(hits, floatx()), axis=-1)


Accuracy = wrapper_class("Accuracy", accuracy,
                         "How often predictions equal labels exactly.", __name__)
BinaryAccuracy = wrapper_class(
    "BinaryAccuracy", binary_accuracy,
    "How often ``y_pred > threshold`` matches 0/1 labels.", __name__,
    threshold=0.5)
CategoricalAccuracy = wrapper_class(
    "CategoricalAccuracy", categorical_accuracy,
    "How often the argmax of predictions matches that of one-hot labels.",
    __name__)
SparseCategoricalAccuracy = wrapper_class(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy,
    "How often the argmax of predictions matches integer labels.", __name__)
TopKCategoricalAccuracy = wrapper_class(
    "TopKCategoricalAccuracy", top_k_categorical_accuracy,
    "How often the one-hot target is in the top ``k`` predictions.", __name__,
    k=5)
SparseTopKCategoricalAccuracy = wrapper_class(
    "SparseTopKCategoricalAccuracy", sparse_top_k_categorical_accuracy,
    "How often the integer target is in the top ``k`` predictions.", __name__,
    k=5, from_sorted_ids=False)

register(
    (Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
     TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy),
    (accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
     top_k_categorical_accuracy, sparse_top_k_categorical_accuracy),
    accuracy=Accuracy, acc=Accuracy, binary_accuracy=BinaryAccuracy,
    categorical_accuracy=CategoricalAccuracy,
    sparse_categorical_accuracy=SparseCategoricalAccuracy,
    top_k_categorical_accuracy=TopKCategoricalAccuracy,
    sparse_top_k_categorical_accuracy=SparseTopKCategoricalAccuracy,
)
