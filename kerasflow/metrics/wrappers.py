"""Per-sample metrics that average a loss-like function (Keras 3's
``keras.metrics``): cross-entropies, hinges, KL divergence, Poisson, log-cosh,
percentage and logarithmic errors, cosine similarity and the Pearson and
concordance correlations, as ``MeanMetricWrapper`` classes, plus the function
forms Keras exports from ``keras.metrics`` (the losses' functions).

Each class keeps two scalar state Variables (``total``, ``count``) that only
add up, so replicas merge them by summing. ``result()`` is the weighted mean of
the per-sample values over every batch seen.

Example:
    >>> m = PearsonCorrelation()
    >>> m.update_state(np.array([[0, 1, 0.5]]), np.array([[0.1, 0.9, 0.5]]))
    []
    >>> round(m.result(), 4)
    0.9934
"""

from __future__ import annotations

# ruff: noqa: F401
from kerasflow import losses as _losses
from kerasflow.backend import epsilon, ops
from kerasflow.losses import (
    binary_crossentropy,
    binary_focal_crossentropy,
    categorical_crossentropy,
    categorical_focal_crossentropy,
    categorical_hinge,
    hinge,
    huber,
    kl_divergence,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)
from kerasflow.metrics.base import _pair, register, wrapper_class

__all__ = [
    "BinaryCrossentropy", "CategoricalCrossentropy", "CategoricalHinge",
    "ConcordanceCorrelation", "CosineSimilarity", "Hinge", "KLDivergence",
    "LogCoshError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
    "PearsonCorrelation", "Poisson", "SparseCategoricalCrossentropy", "SquaredHinge",
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "categorical_focal_crossentropy", "categorical_hinge", "concordance_correlation",
    "hinge", "huber", "kl_divergence", "log_cosh",
    "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error",
    "mean_squared_logarithmic_error", "pearson_correlation", "poisson",
    "sparse_categorical_crossentropy", "squared_hinge",
]


def cosine_similarity(y_true, y_pred, axis=-1):
    """Cosine similarity ``sum(l2n(y_true) * l2n(y_pred), axis)`` (Keras 3's
    metric form: +1 for parallel vectors; the loss is its negative).

    Args:
        y_true, y_pred: float tensors of the same shape, e.g. (batch, d).
        axis: the axis of the vectors.

    Returns:
        Tensor of the inputs' shape without ``axis``.
    """
    return ops.negative(_losses.cosine_similarity(y_true, y_pred, axis=axis))


def pearson_correlation(y_true, y_pred, axis=-1):
    """Pearson correlation of ``y_true`` and ``y_pred`` along ``axis``
    (Keras 3's ``keras.metrics.pearson_correlation``): both centred and scaled
    by their standard deviation, then the mean of their product.

    Args:
        y_true, y_pred: float tensors of the same shape, e.g. (batch, d).
        axis: the axis the correlation runs over.

    Returns:
        Tensor of the inputs' shape without ``axis``, in [-1, 1].
    """
    y_true, y_pred = _pair(y_true, y_pred)
    t = ops.subtract(y_true, ops.mean(y_true, axis=axis, keepdims=True))
    p = ops.subtract(y_pred, ops.mean(y_pred, axis=axis, keepdims=True))
    t = ops.divide(t, ops.std(t, axis=axis, keepdims=True))
    p = ops.divide(p, ops.std(p, axis=axis, keepdims=True))
    return ops.mean(ops.multiply(t, p), axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1):
    """Concordance correlation (Lin, Biometrics 1989) along ``axis``, as Keras
    3 computes it: ``mean(2 (t - mean(p)) (p - mean(p)) / (var(t) + var(p) +
    (mean(t) - mean(p))**2 + epsilon))``.

    Args:
        y_true, y_pred: float tensors of the same shape, e.g. (batch, d).
        axis: the axis the correlation runs over.

    Returns:
        Tensor of the inputs' shape without ``axis``.
    """
    y_true, y_pred = _pair(y_true, y_pred)
    t_mean = ops.mean(y_true, axis=axis, keepdims=True)
    p_mean = ops.mean(y_pred, axis=axis, keepdims=True)
    t_var = ops.var(ops.subtract(y_true, t_mean), axis=axis, keepdims=True)
    p_var = ops.var(ops.subtract(y_pred, p_mean), axis=axis, keepdims=True)
    covar = ops.multiply(ops.subtract(y_true, p_mean), ops.subtract(y_pred, p_mean))
    norm = ops.add(ops.add(t_var, p_var), ops.square(ops.subtract(t_mean, p_mean)))
    ratio = ops.divide(ops.multiply(2.0, covar), ops.add(norm, epsilon()))
    return ops.mean(ratio, axis=axis)


def _cls(name, fn, summary, default_name=None, **defaults):
    return wrapper_class(name, fn, summary, __name__, name=default_name,
                         **defaults)


BinaryCrossentropy = _cls(
    "BinaryCrossentropy", binary_crossentropy,
    "Mean binary cross-entropy between 0/1 labels and probabilities (or logits).",
    from_logits=False, label_smoothing=0)
CategoricalCrossentropy = _cls(
    "CategoricalCrossentropy", categorical_crossentropy,
    "Mean cross-entropy between one-hot labels and class probabilities.",
    from_logits=False, label_smoothing=0, axis=-1)
SparseCategoricalCrossentropy = _cls(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "Mean cross-entropy between integer labels and class probabilities.",
    from_logits=False, ignore_class=None, axis=-1)
KLDivergence = _cls("KLDivergence", kl_divergence,
                    "Mean Kullback-Leibler divergence ``sum(t * log(t / p))``.")
Poisson = _cls("Poisson", poisson, "Mean Poisson loss ``p - t * log(p)``.")
Hinge = _cls("Hinge", hinge, "Mean hinge loss ``max(1 - t * p, 0)`` (labels "
             "-1/1 or 0/1).")
SquaredHinge = _cls("SquaredHinge", squared_hinge,
                    "Mean squared hinge loss ``max(1 - t * p, 0)**2``.")
CategoricalHinge = _cls("CategoricalHinge", categorical_hinge,
                        "Mean categorical hinge loss ``max(0, 1 + neg - pos)``.")
LogCoshError = _cls("LogCoshError", log_cosh,
                    "Mean ``log(cosh(p - t))`` over samples.", "logcosh")
MeanAbsolutePercentageError = _cls(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "Mean of ``100 * |t - p| / |t|`` over samples.")
MeanSquaredLogarithmicError = _cls(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "Mean of ``(log(1 + p) - log(1 + t))**2`` over samples.")
CosineSimilarity = _cls("CosineSimilarity", cosine_similarity,
                        "Mean cosine similarity of label and prediction vectors.",
                        axis=-1)
PearsonCorrelation = _cls("PearsonCorrelation", pearson_correlation,
                          "Mean Pearson correlation per sample along ``axis``.",
                          axis=-1)
ConcordanceCorrelation = _cls(
    "ConcordanceCorrelation", concordance_correlation,
    "Mean concordance correlation per sample along ``axis``.", axis=-1)

register(
    (BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
     KLDivergence, Poisson, Hinge, SquaredHinge, CategoricalHinge, LogCoshError,
     MeanAbsolutePercentageError, MeanSquaredLogarithmicError, CosineSimilarity,
     PearsonCorrelation, ConcordanceCorrelation),
    # cosine_similarity keeps naming the loss (negated) for wrapped functions.
    (pearson_correlation, concordance_correlation),
    mape=MeanAbsolutePercentageError, msle=MeanSquaredLogarithmicError,
    mean_absolute_percentage_error=MeanAbsolutePercentageError,
    mean_squared_logarithmic_error=MeanSquaredLogarithmicError,
    cosine_similarity=CosineSimilarity, logcosh=LogCoshError,
    pearson_correlation=PearsonCorrelation,
    concordance_correlation=ConcordanceCorrelation,
)
