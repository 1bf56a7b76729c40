"""Feature columns to model inputs: ``transform_features``, ``input_layer``,
``linear_model`` (TF1's names)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.feature_column.base import (
    IDS,
    WEIGHTS,
    CategoricalColumn,
    DenseColumn,
    FeatureColumn,
)
from kerasflow.feature_column.dense import combine

__all__ = [
    "TransformedFeatures",
    "input_layer",
    "linear_model",
    "transform_features",
]


class TransformedFeatures(dict):
    """The output of ``transform_features``: already-transformed arrays."""


def _check_columns(columns, what, kinds):
    columns = list(columns)
    if not columns:
        raise ValueError(f"{what} expects a non-empty list of feature columns.")
    for c in columns:
        if not isinstance(c, kinds):
            names = " or ".join(k.__name__ for k in kinds) if isinstance(
                kinds, tuple) else kinds.__name__
            raise TypeError(f"{what} expects {names} items. Received: {c!r}.")
    return columns


def transform_features(features, feature_columns) -> dict:
    """Host-side numeric arrays for every column (see ``base`` for the keys).

    Args:
        features: dict {key: array (batch, ...)} of raw features (numbers or
            strings).
        feature_columns: iterable of feature columns.

    Returns:
        dict {derived key: numpy array}.

    Raises:
        KeyError: a feature a column needs is missing (naming both).
        ValueError / TypeError: values a column cannot take.
    """
    features = {k: np.asarray(v) for k, v in dict(features).items()}
    cache: dict = {}
    out = TransformedFeatures()
    for c in _check_columns(feature_columns, "transform_features", FeatureColumn):
        out.update(c._cached(features, cache))
    return out


def _is_transformed(features, columns):
    return all(all(k in features for k in _keys(c)) for c in columns)


def _keys(column):
    if isinstance(column, CategoricalColumn) and not isinstance(column, DenseColumn):
        return [column.name + IDS, column.name + WEIGHTS]
    if hasattr(column, "categorical_column") and not hasattr(column, "boundaries"):
        c = column.categorical_column
        return [c.name + IDS, c.name + WEIGHTS]
    if hasattr(column, "boundaries"):
        return [column.name + IDS]
    return [column.name]


def _inputs(features, columns):
    if isinstance(features, TransformedFeatures):
        return features
    if any(K.is_symbolic(v) for v in features.values()):
        if _is_transformed(features, columns):  # placeholders of transformed arrays
            return features
        raise TypeError(
            "Feature columns transform raw features on the host (numpy); received "
            "symbolic raw features. Use a canned estimator (which feeds "
            "transformed features), or pass transform_features(...) outputs.")
    return transform_features(features, columns)


def input_layer(features, feature_columns, state=None):
    """Concatenated dense tensor of ``feature_columns`` (TF1's ``input_layer``).

    Args:
        features: raw features (numpy; transformed here) or the output of
            ``transform_features`` (numpy arrays or placeholders).
        feature_columns: dense columns (numeric, bucketized, indicator,
            embedding), in the order of the output's slices.
        state: dict holding created Variables (embedding tables); pass the same
            dict to reuse them.

    Returns:
        float tensor (batch, sum of dimensions): symbolic when a Variable
        (embedding) is involved, else computed at once for array inputs; run a
        symbolic one with ``K.Function([], [t])()``.

    Raises:
        TypeError: a categorical column given directly (wrap it in
            ``indicator_column`` or ``embedding_column``, as TF requires).
    """
    columns = _check_columns(feature_columns, "input_layer", DenseColumn)
    state = {} if state is None else state
    inputs = _inputs(features, columns)
    with K.name_scope(state.get("scope", "input_layer")):
        parts = [K.cast(c.dense_tensor(inputs, state), K.floatx())
                 for c in sorted(columns, key=lambda c: c.name)]
    return parts[0] if len(parts) == 1 else K.concatenate(parts, axis=-1)


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 state=None):
    """Logits ``sum_c f_c W_c + b`` of a linear model over feature columns.

    Dense columns multiply a (dimension, units) weight; categorical columns
    look up rows of a (num_buckets, units) weight and combine them
    (``sparse_combiner``: "sum" (TF's default), "mean" or "sqrtn"). Variables
    are named ``linear_model/<column>/weights`` and ``linear_model/bias_weights``
    and start at zero (TF's).

    Returns:
        float tensor (batch, units).
    """
    columns = _check_columns(feature_columns, "linear_model",
                             (DenseColumn, CategoricalColumn))
    state = {} if state is None else state
    scope = state.get("scope", "linear") + "/linear_model"
    inputs = _inputs(features, columns)
    terms = []
    with K.name_scope(scope):
        for c in sorted(columns, key=lambda c: c.name):
            cat = c if isinstance(c, CategoricalColumn) else None
            rows = cat.num_buckets if cat is not None else c.dimension
            key = ("linear", c.name)
            if key not in state:
                state[key] = K.Variable(np.zeros((rows, units), K.floatx()),
                                        name=f"{scope}/{c.name}/weights")
            w = state[key]
            if cat is not None:
                ids = inputs[cat.name + IDS]
                wts = (inputs[cat.name + WEIGHTS] if cat.name + WEIGHTS in inputs
                       else K.ones_like(K.cast(ids, K.floatx())))
                terms.append(combine(K.gather(w, ids), wts, sparse_combiner))
            else:
                terms.append(K.matmul(K.cast(c.dense_tensor(inputs, state),
                                             K.floatx()), w))
        if ("linear", "bias") not in state:
            state[("linear", "bias")] = K.Variable(
                np.zeros((units,), K.floatx()), name=f"{scope}/bias_weights")
        out = K.add_n(terms) if len(terms) > 1 else terms[0]
        return out + state[("linear", "bias")]
