"""Canned estimators: linear, DNN, wide & deep and baseline models (TF's)."""

from __future__ import annotations

from kerasflow.estimators.canned.baseline import BaselineClassifier, BaselineRegressor
from kerasflow.estimators.canned.dnn import DNNClassifier, DNNRegressor
from kerasflow.estimators.canned.dnn_linear_combined import (
    DNNLinearCombinedClassifier,
    DNNLinearCombinedRegressor,
)
from kerasflow.estimators.canned.linear import LinearClassifier, LinearRegressor

__all__ = [
    "BaselineClassifier",
    "BaselineRegressor",
    "DNNClassifier",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor",
    "DNNRegressor",
    "LinearClassifier",
    "LinearRegressor",
]
