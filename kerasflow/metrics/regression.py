"""Regression metrics: mean squared, mean absolute and root mean squared error
(Keras 3's ``keras.metrics``, ``MeanMetricWrapper`` classes) and ``R2Score``."""

from __future__ import annotations

import warnings

import numpy as np

from kerasflow import losses as _losses
from kerasflow.backend import ops
from kerasflow.backend.graph import is_symbolic
from kerasflow.metrics.base import (
    Metric,
    _ndim,
    _out,
    _pair,
    _same_rank,
    _tensor,
    register,
    wrapper_class,
)

__all__ = ["MeanAbsoluteError", "MeanSquaredError", "R2Score",
           "RootMeanSquaredError"]


def _squared_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return ops.square(ops.subtract(y_pred, y_true))


MeanSquaredError = wrapper_class(
    "MeanSquaredError", _losses.mean_squared_error,
    "Mean of ``mean_squared_error`` over samples.", __name__)
MeanAbsoluteError = wrapper_class(
    "MeanAbsoluteError", _losses.mean_absolute_error,
    "Mean of ``mean_absolute_error`` over samples.", __name__)
_RMSEBase = wrapper_class("RootMeanSquaredError", _squared_error, "", __name__,
                          name="root_mean_squared_error")


class RootMeanSquaredError(_RMSEBase):
    """``sqrt`` of the (weighted) mean squared error over all samples.

    Args:
        name, dtype: as ``Metric``.
    """

    def result(self):
        return _out(np.sqrt(super().result()))


register(
    (MeanSquaredError, MeanAbsoluteError, RootMeanSquaredError),
    mse=MeanSquaredError, mean_squared_error=MeanSquaredError,
    mae=MeanAbsoluteError, mean_absolute_error=MeanAbsoluteError,
    rmse=RootMeanSquaredError, root_mean_squared_error=RootMeanSquaredError,
)


class R2Score(Metric):
    """Coefficient of determination ``1 - SS_res / SS_tot`` per output (Keras
    3's ``keras.metrics.R2Score``), optionally adjusted for the number of
    regressors.

    State: per-output weighted sums of ``y``, ``y**2``, squared residuals and
    weights, plus the number of entries seen; all only add up.

    Args:
        class_aggregation: None (one score per output), "uniform_average" or
            "variance_weighted_average" (weighted by each output's variance).
        num_regressors: number of independent regressors p (>= 0); non-zero
            gives the adjusted R2 ``1 - (1 - r2) (n - 1) / (n - p - 1)``.
        name, dtype: as ``Metric``.

    Inputs to ``update_state``: y_true and y_pred of shape (batch, outputs),
    with outputs known; sample_weight None, (batch,) or (batch, outputs).

    Raises:
        ValueError: an unknown class_aggregation, num_regressors < 0, or inputs
            that are not 2-D with a known last dimension.
    """

    def __init__(self, class_aggregation="uniform_average", num_regressors=0,
                 name="r2_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        valid = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in valid:
            raise ValueError(f"Invalid value for argument `class_aggregation`. "
                             f"Expected one of {valid}. Received: "
                             f"class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError(f"Invalid value for argument `num_regressors`. "
                             f"Expected a value >= 0. Received: "
                             f"num_regressors={num_regressors}")
        self.class_aggregation, self.num_regressors = class_aggregation, \
            num_regressors
        self.num_samples = self.add_variable((), name="num_samples")
        self._sums = None  # created at the first update, sized by outputs

    def _build(self, true_shape, pred_shape):
        if len(pred_shape) != 2 or len(true_shape) != 2 or pred_shape[-1] is None:
            raise ValueError(f"R2Score expects 2D inputs with shape (batch_size, "
                             f"output_dim), with output_dim fully defined (not "
                             f"None). Received input shapes: y_pred.shape="
                             f"{pred_shape} and y_true.shape={true_shape}.")
        n = pred_shape[-1]
        self._sums = [self.add_variable((n,), name=a) for a in (
            "squared_sum", "sum", "residual", "count")]

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Accumulates a batch; returns update ops (symbolic inputs) or []."""
        symbolic = any(is_symbolic(x) for x in (y_true, y_pred, sample_weight))
        y_true = ops.cast(_tensor(y_true), self.dtype)
        y_pred = ops.cast(_tensor(y_pred), self.dtype)
        y_true, y_pred = _same_rank(y_true, y_pred)
        if self._sums is None:
            self._build(tuple(y_true.shape or ()), tuple(y_pred.shape or ()))
        sw = ops.ones_like(y_true) if sample_weight is None else ops.cast(
            _tensor(sample_weight), self.dtype)
        if _ndim(sw) == 1:
            sw = ops.expand_dims(sw, 1)
        sw = ops.broadcast_like(sw, y_true)
        weighted = ops.multiply(y_true, sw)
        residual = ops.multiply(ops.square(ops.subtract(y_true, y_pred)), sw)
        deltas = [ops.sum(ops.multiply(y_true, weighted), axis=0),
                  ops.sum(weighted, axis=0), ops.sum(residual, axis=0),
                  ops.sum(sw, axis=0)]
        size = ops.reduced_count(y_true, None, self.dtype)
        return self._accumulate(list(zip(self._sums, deltas))
                                + [(self.num_samples, size)], symbolic)

    def result(self):
        """The score: a float, or one per output when class_aggregation=None."""
        if self._sums is None:
            return 0.0
        squared, total_sum, residual, count = (
            v.numpy().astype(np.float64) for v in self._sums)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = total_sum / count
            total = squared - total_sum * mean
            raw = 1.0 - residual / total
        raw = np.where(np.isinf(raw), 0.0, raw)
        if self.class_aggregation == "uniform_average":
            r2 = np.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            r2 = np.sum(total * raw) / np.sum(total)
        else:
            r2 = raw
        n, p = float(self.num_samples.numpy()), self.num_regressors
        if p != 0:
            if p > n - 1:
                warnings.warn("More independent predictors than datapoints in "
                              "adjusted R2 score. Falling back to standard R2 "
                              "score.", stacklevel=2)
            elif p == n - 1:
                warnings.warn("Division by zero in Adjusted R2 score. Falling "
                              "back to standard R2 score.", stacklevel=2)
            else:
                r2 = 1.0 - (1.0 - r2) * (n - 1.0) / (n - p - 1.0)
        return _out(r2)

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


register((R2Score,), r2_score=R2Score)
