"""TF1-style metric pairs for ``eval_metric_ops``: ``(value, update_op)``.

Each function mirrors ``tf.compat.v1.metrics.<name>``: it creates local state
Variables (reset at the start of every ``evaluate``, never checkpointed) and
returns a value and an update op. The update op runs once per evaluation
batch; the value is read after the last one. The state and arithmetic are
kerasflow's Keras metrics (``kerasflow.metrics``), so the two agree.

Example:
    >>> eval_metric_ops = {"accuracy": metrics.accuracy(labels, class_ids)}
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import metrics as keras_metrics
from kerasflow.estimators import _graph

__all__ = [
    "accuracy",
    "auc",
    "from_keras_metric",
    "mean",
    "mean_squared_error",
    "precision",
    "recall",
    "root_mean_squared_error",
]


class _Value:
    """The value of a metric pair: calling it reads the metric's result."""

    def __init__(self, metric):
        self.metric = metric

    def __call__(self):
        return float(self.metric.result())


def from_keras_metric(metric, *args, **kwargs):
    """``(value, update_op)`` from a Keras metric updated on symbolic tensors.

    Args:
        metric: a fresh ``kerasflow.metrics.Metric``.
        *args, **kwargs: its ``update_state`` arguments (symbolic tensors).

    Returns:
        (a callable returning the float result, a grouped update op).
    """
    bucket = getattr(_graph._local, "locals", None)
    if bucket is not None:
        bucket.extend(metric.variables)
    updates = metric.update_state(*args, **kwargs) or []
    return _Value(metric), K.group(*updates)


def _weights(weights):
    return None if weights is None else K.cast(weights, K.floatx())


def accuracy(labels, predictions, weights=None, name=None):
    """Frequency of ``predictions == labels`` (both class ids, same shape)."""
    return from_keras_metric(keras_metrics.Accuracy(name=name or "accuracy"),
                             labels, predictions, _weights(weights))


def mean(values, weights=None, name=None):
    """Weighted mean of ``values`` over every evaluated element."""
    return from_keras_metric(keras_metrics.Mean(name=name or "mean"), values,
                             _weights(weights))


def mean_squared_error(labels, predictions, weights=None, name=None):
    """Mean of ``(predictions - labels) ** 2``."""
    return from_keras_metric(
        keras_metrics.MeanSquaredError(name=name or "mean_squared_error"),
        labels, predictions, _weights(weights))


def root_mean_squared_error(labels, predictions, weights=None, name=None):
    """Square root of ``mean_squared_error``."""
    return from_keras_metric(
        keras_metrics.RootMeanSquaredError(name=name or "rmse"),
        labels, predictions, _weights(weights))


def auc(labels, predictions, weights=None, num_thresholds=200, curve="ROC",
        name=None):
    """Area under the ROC (or PR) curve; labels 0/1, predictions in [0, 1]."""
    return from_keras_metric(
        keras_metrics.AUC(num_thresholds=num_thresholds, curve=curve,
                          name=name or "auc"),
        labels, predictions, _weights(weights))


def precision(labels, predictions, weights=None, name=None):
    """``tp / (tp + fp)`` with predictions thresholded at 0.5."""
    return from_keras_metric(keras_metrics.Precision(name=name or "precision"),
                             labels, predictions, _weights(weights))


def recall(labels, predictions, weights=None, name=None):
    """``tp / (tp + fn)`` with predictions thresholded at 0.5."""
    return from_keras_metric(keras_metrics.Recall(name=name or "recall"),
                             labels, predictions, _weights(weights))
