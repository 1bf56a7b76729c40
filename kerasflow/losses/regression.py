"""Regression losses: squared, absolute, percentage, logarithmic, Huber, log-cosh
and cosine, as functions (one value per sample) and ``Loss`` classes (Keras 3's
``keras.losses``).

Example:
    >>> MeanSquaredError()(np.array([[0.0], [1.0]]), np.array([[1.0], [1.0]]))
    0.5
"""

from __future__ import annotations

import math

from kerasflow.backend import ops
from kerasflow.losses.base import EPSILON, _prepare, register, wrapper_class

__all__ = [
    "CosineSimilarity", "Huber", "LogCosh", "MeanAbsoluteError",
    "MeanAbsolutePercentageError", "MeanSquaredError", "MeanSquaredLogarithmicError",
    "cosine_similarity", "huber", "log_cosh", "mae", "mape", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_error",
    "mean_squared_logarithmic_error", "mse", "msle",
]


def mean_squared_error(y_true, y_pred):
    """``mean(square(y_true - y_pred), axis=-1)``.

    Args:
        y_true: targets, shape (batch, d...); cast to y_pred's dtype.
        y_pred: float predictions of the same shape.

    Returns:
        Tensor of shape (batch, ...) without the last axis.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    return ops.mean(ops.square(ops.subtract(y_true, y_pred)), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``; shapes as ``mean_squared_error``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return ops.mean(ops.abs(ops.subtract(y_true, y_pred)), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7), axis=-1)``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    diff = ops.divide(ops.abs(ops.subtract(y_true, y_pred)),
                      ops.maximum(ops.abs(y_true), EPSILON))
    return ops.multiply(100.0, ops.mean(diff, axis=-1))


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean(square(log(1 + y_pred) - log(1 + y_true)), axis=-1)``, inputs
    floored at 1e-7."""
    y_true, y_pred = _prepare(y_true, y_pred)
    first = ops.log(ops.add(ops.maximum(y_pred, EPSILON), 1.0))
    second = ops.log(ops.add(ops.maximum(y_true, EPSILON), 1.0))
    return ops.mean(ops.square(ops.subtract(first, second)), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """Huber loss (Huber, 1964), mean over the last axis.

    ``0.5 * e**2`` where ``|e| <= delta``, else ``delta * |e| - 0.5 * delta**2``,
    with ``e = y_true - y_pred``.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    err = ops.subtract(y_pred, y_true)
    abs_err = ops.abs(err)
    quad = ops.multiply(0.5, ops.square(err))
    lin = ops.subtract(ops.multiply(float(delta), abs_err), 0.5 * delta * delta)
    return ops.mean(ops.where(ops.less_equal(abs_err, float(delta)), quad, lin),
                    axis=-1)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, as
    ``x + softplus(-2x) - log 2`` so it stays finite for large errors."""
    y_true, y_pred = _prepare(y_true, y_pred)
    x = ops.subtract(y_pred, y_true)
    lc = ops.add(x, ops.softplus(ops.multiply(-2.0, x)))
    return ops.mean(ops.subtract(lc, math.log(2.0)), axis=-1)


def _l2_normalize(x, axis):
    return ops.multiply(x, ops.rsqrt(ops.maximum(
        ops.sum(ops.square(x), axis=axis, keepdims=True), 1e-12)))


def cosine_similarity(y_true, y_pred, axis=-1):
    """Negative cosine similarity ``-sum(l2n(y_true) * l2n(y_pred), axis)``: -1
    for parallel vectors, 0 for orthogonal ones, as Keras' loss."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return ops.negative(ops.sum(ops.multiply(
        _l2_normalize(y_true, axis), _l2_normalize(y_pred, axis)), axis=axis))


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
logcosh = log_cosh

MeanSquaredError = wrapper_class(
    "MeanSquaredError", mean_squared_error, "Mean of squares of errors.", __name__)
MeanAbsoluteError = wrapper_class(
    "MeanAbsoluteError", mean_absolute_error, "Mean of absolute errors.", __name__)
MeanAbsolutePercentageError = wrapper_class(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "Mean absolute percentage error (``mape``).", __name__)
MeanSquaredLogarithmicError = wrapper_class(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "Mean squared logarithmic error (``msle``).", __name__)
Huber = wrapper_class("Huber", huber, "Huber loss.", __name__, name="huber_loss",
                      delta=1.0)
LogCosh = wrapper_class("LogCosh", log_cosh, "Log of the cosh of the error.",
                        __name__)
CosineSimilarity = wrapper_class("CosineSimilarity", cosine_similarity,
                                 "Negative cosine similarity.", __name__, axis=-1)

register(mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
         mean_squared_logarithmic_error, huber, log_cosh, cosine_similarity,
         MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
         MeanSquaredLogarithmicError, Huber, LogCosh, CosineSimilarity,
         mse=mse, mae=mae, mape=mape, msle=msle, logcosh=log_cosh)
