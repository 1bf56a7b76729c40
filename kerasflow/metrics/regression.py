"""Regression metrics: mean squared, mean absolute and root mean squared error
(Keras 3's ``keras.metrics``), as ``MeanMetricWrapper`` classes."""

from __future__ import annotations

import numpy as np

from kerasflow import losses as _losses
from kerasflow.backend import ops
from kerasflow.metrics.base import (
    _out,
    _same_rank,
    _tensor,
    register,
    wrapper_class,
)

__all__ = ["MeanAbsoluteError", "MeanSquaredError", "RootMeanSquaredError"]


def _squared_error(y_true, y_pred):
    y_pred = _tensor(y_pred)
    y_true, y_pred = _same_rank(ops.cast(_tensor(y_true), y_pred.dtype), y_pred)
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
