"""Dense columns: numeric, bucketized, indicator and embedding."""

from __future__ import annotations

import itertools
import math

import numpy as np

from kerasflow import backend as K
from kerasflow import initializers
from kerasflow.feature_column.base import (
    IDS,
    WEIGHTS,
    CategoricalColumn,
    DenseColumn,
    raw_feature,
)

__all__ = [
    "bucketized_column",
    "combine",
    "embedding_column",
    "indicator_column",
    "numeric_column",
]


def _tensor(inputs, key, column):
    if key not in inputs:
        raise KeyError(f"Feature column '{column}' expects transformed input "
                       f"'{key}'. Received keys: {sorted(inputs)}.")
    return inputs[key]


def combine(rows, weights, combiner):
    """Weighted reduction over the id axis: rows (n, k, d), weights (n, k).

    "sum": sum_j w_j r_j; "mean": that / sum_j w_j; "sqrtn": / sqrt(sum_j w_j**2)
    (0 for an example without ids), TF's embedding combiners.
    """
    s = K.sum(rows * K.expand_dims(weights, -1), axis=1)
    if combiner == "sum":
        return s
    if combiner == "mean":
        denom = K.sum(weights, axis=1, keepdims=True)
    elif combiner == "sqrtn":
        denom = K.sqrt(K.sum(weights * weights, axis=1, keepdims=True))
    else:
        raise ValueError(f"combiner must be 'sum', 'mean' or 'sqrtn'. Received: "
                         f"combiner={combiner!r}.")
    return s / K.maximum(denom, 1e-12)


def float_rows(values, width: int, what: str) -> np.ndarray:
    """``values`` as float32 ``(n, width)`` rows (features or labels).

    Raises:
        TypeError: non-numeric values. ValueError: rows of another width.
    """
    v = np.asarray(values)
    if v.dtype.kind not in "fiub":
        raise TypeError(f"{what} expects numbers. Received: dtype {v.dtype}.")
    v = v.astype(np.float32).reshape(len(v), -1)
    if v.shape[1] != width:
        raise ValueError(f"{what} expects {width} values per example. Received: "
                         f"{v.shape[1]}.")
    return v

class NumericColumn(DenseColumn):
    """Real values of shape ``shape`` per example, flattened to ``dimension``."""

    def __init__(self, key, shape=(1,), default_value=None, dtype="float32",
                 normalizer_fn=None):
        if not isinstance(key, str) or not key:
            raise ValueError(f"numeric_column expects a non-empty string key. "
                             f"Received: key={key!r}.")
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
            int(d) for d in shape)
        if not shape or any(d < 1 for d in shape):
            raise ValueError(f"numeric_column '{key}' expects a shape of positive "
                             f"ints. Received: shape={shape!r}.")
        if normalizer_fn is not None and not callable(normalizer_fn):
            raise TypeError(f"normalizer_fn must be callable. Received: "
                            f"{normalizer_fn!r}.")
        self.key, self.name, self.shape = key, key, shape
        self.default_value = default_value
        self.dtype = np.dtype(dtype)
        self.normalizer_fn = normalizer_fn

    @property
    def dimension(self):
        return int(np.prod(self.shape))

    def values(self, features):
        """float32 (batch, dimension), normalized; host side."""
        if self.default_value is not None and self.key not in features:
            n = len(next(iter(features.values())))
            v = np.broadcast_to(np.asarray(self.default_value, np.float32),
                                (n,) + self.shape).copy()
        else:
            v = raw_feature(features, self.key, self.name)
        v = float_rows(v, self.dimension,
                       f"numeric_column '{self.key}' (shape {self.shape})")
        if self.normalizer_fn is not None:
            v = np.asarray(self.normalizer_fn(v), np.float32)
        return v

    def transform(self, features, cache):
        return {self.name: self.values(features)}

    def dense_tensor(self, inputs, state):
        t = _tensor(inputs, self.name, self.name)
        shape = getattr(t, "shape", None)
        if shape is not None and (len(shape) != 2 or shape[-1] != self.dimension):
            # Raw (batch,) or (batch, *shape) features, as a model_fn receives
            # them from a Dataset input_fn: TF's input_layer flattens them.
            t = K.reshape(t, (-1, self.dimension))
        return t


class BucketizedColumn(DenseColumn, CategoricalColumn):
    """Bucket ids of a numeric column; dense form one-hot (per element)."""

    def __init__(self, source_column, boundaries):
        if not isinstance(source_column, NumericColumn):
            raise TypeError(f"bucketized_column expects a numeric_column. Received: "
                            f"{source_column!r}.")
        boundaries = [float(b) for b in boundaries]
        if not boundaries or any(b >= c for b, c in itertools.pairwise(boundaries)):
            raise ValueError(f"boundaries must be a non-empty sorted list without "
                             f"duplicates. Received: boundaries={boundaries!r}.")
        self.source_column = source_column
        self.boundaries = boundaries
        self.name = f"{source_column.name}_bucketized"

    @property
    def parents(self):
        return [self.source_column]

    @property
    def num_buckets(self):
        return (len(self.boundaries) + 1) * self.source_column.dimension

    @property
    def dimension(self):
        return self.num_buckets

    def transform(self, features, cache):
        v = self.source_column.values(features)
        # [-inf, b0) -> 0, [b0, b1) -> 1, ..., [b_last, inf) -> len(boundaries)
        ids = np.searchsorted(np.asarray(self.boundaries), v, side="right")
        ids = ids + np.arange(v.shape[1]) * (len(self.boundaries) + 1)
        return self._pack(ids, np.ones(ids.shape, bool))

    def dense_tensor(self, inputs, state):
        ids = _tensor(inputs, self.name + IDS, self.name)
        return K.sum(K.one_hot(ids, self.num_buckets), axis=1)


class IndicatorColumn(DenseColumn):
    """Multi-hot (weighted) vector of a categorical column's ids."""

    def __init__(self, categorical_column):
        if not isinstance(categorical_column, CategoricalColumn):
            raise TypeError(f"indicator_column expects a categorical column. "
                            f"Received: {categorical_column!r}.")
        self.categorical_column = categorical_column
        self.name = f"{categorical_column.name}_indicator"

    @property
    def parents(self):
        return [self.categorical_column]

    @property
    def dimension(self):
        return self.categorical_column.num_buckets

    def transform(self, features, cache):
        return dict(self.categorical_column._cached(features, cache))

    def dense_tensor(self, inputs, state):
        c = self.categorical_column
        ids = _tensor(inputs, c.name + IDS, self.name)
        w = _tensor(inputs, c.name + WEIGHTS, self.name)
        return K.sum(K.one_hot(ids, self.dimension) * K.expand_dims(w, -1), axis=1)


class EmbeddingColumn(DenseColumn):
    """Trainable ``(num_buckets, dimension)`` table looked up and combined."""

    def __init__(self, categorical_column, dimension, combiner="mean",
                 initializer=None, max_norm=None, trainable=True):
        if not isinstance(categorical_column, CategoricalColumn):
            raise TypeError(f"embedding_column expects a categorical column. "
                            f"Received: {categorical_column!r}.")
        if not isinstance(dimension, (int, np.integer)) or dimension < 1:
            raise ValueError(f"Invalid dimension {dimension!r}: an int >= 1 is "
                             f"expected.")
        if combiner not in ("sum", "mean", "sqrtn"):
            raise ValueError(f"combiner must be 'sum', 'mean' or 'sqrtn'. Received: "
                             f"combiner={combiner!r}.")
        self.categorical_column = categorical_column
        self._dimension = int(dimension)
        self.combiner = combiner
        # TF's default: truncated normal with stddev 1/sqrt(dimension).
        self.initializer = initializers.get(initializer) if initializer else \
            initializers.TruncatedNormal(stddev=1.0 / math.sqrt(dimension))
        self.trainable = trainable
        self.name = f"{categorical_column.name}_embedding"

    @property
    def parents(self):
        return [self.categorical_column]

    @property
    def dimension(self):
        return self._dimension

    def transform(self, features, cache):
        return dict(self.categorical_column._cached(features, cache))

    def table(self, state):
        """The embedding Variable, created once per ``state``."""
        key = ("embedding", self.name)
        if key not in state:
            shape = (self.categorical_column.num_buckets, self._dimension)
            state[key] = K.Variable(
                np.asarray(self.initializer(shape, dtype=K.floatx())),
                trainable=self.trainable,
                name=f"{state.get('scope', 'input_layer')}/{self.name}/"
                     f"embedding_weights")
        return state[key]

    def dense_tensor(self, inputs, state):
        c = self.categorical_column
        ids = _tensor(inputs, c.name + IDS, self.name)
        w = _tensor(inputs, c.name + WEIGHTS, self.name)
        return combine(K.gather(self.table(state), ids), w, self.combiner)


def numeric_column(key, shape=(1,), default_value=None, dtype="float32",
                   normalizer_fn=None):
    """Real-valued feature ``features[key]`` of ``shape`` per example (TF's).

    Args:
        key: feature name.
        shape: per-example shape; flattened to ``prod(shape)`` values.
        default_value: used when the feature is absent from a batch.
        dtype: accepted for TF compatibility; values are fed as float32.
        normalizer_fn: ``f(values)`` on the host (numpy, (batch, dimension)),
            e.g. ``lambda x: (x - mean) / std``.
    """
    return NumericColumn(key, shape, default_value, dtype, normalizer_fn)


def bucketized_column(source_column, boundaries):
    """Buckets ``[-inf, b0), [b0, b1), ..., [b_last, inf)`` of a numeric column."""
    return BucketizedColumn(source_column, boundaries)


def indicator_column(categorical_column):
    """Multi-hot representation of a categorical column (dense, num_buckets)."""
    return IndicatorColumn(categorical_column)


def embedding_column(categorical_column, dimension, combiner="mean",
                     initializer=None, ckpt_to_load_from=None,
                     tensor_name_in_ckpt=None, max_norm=None, trainable=True):
    """Dense embedding of a categorical column (trainable lookup table).

    Args:
        dimension: embedding size.
        combiner: "mean" (default, TF's), "sum" or "sqrtn" over an example's ids.
        initializer: initializer of the table; default truncated normal with
            stddev ``1 / sqrt(dimension)``.
    """
    return EmbeddingColumn(categorical_column, dimension, combiner, initializer,
                           max_norm, trainable)
