"""Streaming metrics (L1; Keras 3's ``keras.metrics``), in graph or eager mode.

``base`` holds the ``Metric`` class, ``Mean``/``Sum``/``MeanMetricWrapper`` and
the lookup (``get``/``serialize``/``deserialize``); ``state`` records the
updates a custom ``update_state`` makes; ``accuracy``, ``regression``,
``confusion``, ``thresholds``, ``iou`` and ``wrappers`` (loss-like per-sample
metrics and correlations) hold the metrics by family. Every public name is
importable here.

Example:
    >>> m = Mean()
    >>> m.update_state(np.array([1.0, 2.0, 6.0]))
    []
    >>> m.result()
    3.0
"""

from __future__ import annotations

# ruff: noqa: F401
from kerasflow.metrics.accuracy import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from kerasflow.metrics.base import (
    Mean,
    MeanMetricWrapper,
    Metric,
    Sum,
    deserialize,
    get,
    serialize,
)
from kerasflow.metrics.confusion import AUC, F1Score, FBetaScore, Precision, Recall
from kerasflow.metrics.iou import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from kerasflow.metrics.regression import (
    MeanAbsoluteError,
    MeanSquaredError,
    R2Score,
    RootMeanSquaredError,
)
from kerasflow.metrics.state import MetricVariable, PendingResult
from kerasflow.metrics.thresholds import (
    FalseNegatives,
    FalsePositives,
    PrecisionAtRecall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
    TrueNegatives,
    TruePositives,
)
# Its __all__: the loss-like metric classes and Keras' function forms.
from kerasflow.metrics.wrappers import *  # noqa: F403
from kerasflow.metrics import wrappers as _wrappers

__all__ = [
    "PendingResult",
    "AUC", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "F1Score",
    "FBetaScore", "Mean",
    "MeanAbsoluteError", "MeanMetricWrapper", "MeanSquaredError", "Metric", "Precision",
    "Recall", "RootMeanSquaredError", "SparseCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy", "Sum", "TopKCategoricalAccuracy", "accuracy",
    "binary_accuracy", "categorical_accuracy", "deserialize", "get", "serialize",
    "sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy",
    "top_k_categorical_accuracy",
    "BinaryIoU", "IoU", "MeanIoU", "OneHotIoU", "OneHotMeanIoU", "R2Score",
    "FalseNegatives", "FalsePositives", "PrecisionAtRecall", "RecallAtPrecision",
    "SensitivityAtSpecificity", "SpecificityAtSensitivity", "TrueNegatives",
    "TruePositives", *_wrappers.__all__,
]
