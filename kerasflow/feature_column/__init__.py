"""Feature columns (``kf.feature_column``): TF's ``tf.feature_column`` API.

Raw features (numbers or strings, dicts of numpy arrays) are transformed on the
host into ids and dense values; ``input_layer`` / ``linear_model`` turn those
into graph tensors. Hashing is ``fingerprint64`` (BLAKE2b, documented and
stable across processes), never Python's salted ``hash``.
"""

from __future__ import annotations

from kerasflow.feature_column.base import (
    CategoricalColumn,
    DenseColumn,
    FeatureColumn,
    fingerprint64,
)
from kerasflow.feature_column.categorical import (
    categorical_column_with_hash_bucket,
    categorical_column_with_identity,
    categorical_column_with_vocabulary_file,
    categorical_column_with_vocabulary_list,
    crossed_column,
    weighted_categorical_column,
)
from kerasflow.feature_column.dense import (
    bucketized_column,
    embedding_column,
    indicator_column,
    numeric_column,
)
from kerasflow.feature_column.layers import (
    input_layer,
    linear_model,
    transform_features,
)

__all__ = [
    "CategoricalColumn",
    "DenseColumn",
    "FeatureColumn",
    "bucketized_column",
    "categorical_column_with_hash_bucket",
    "categorical_column_with_identity",
    "categorical_column_with_vocabulary_file",
    "categorical_column_with_vocabulary_list",
    "crossed_column",
    "embedding_column",
    "fingerprint64",
    "indicator_column",
    "input_layer",
    "linear_model",
    "numeric_column",
    "transform_features",
    "weighted_categorical_column",
]
