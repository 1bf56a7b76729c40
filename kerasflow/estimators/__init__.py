"""Estimators (layer L5): TF's ``tf.estimator`` API on kerasflow graphs.

``kf.estimators`` (also ``kf.estimator``)::

    est = kf.estimator.DNNClassifier(feature_columns=[numeric_column("x", [4])],
                                     hidden_units=[10, 20, 10], n_classes=3)
    est.train(input_fn, steps=1000); est.evaluate(input_fn)["accuracy"]
"""

from __future__ import annotations

from kerasflow.estimators import inputs, metrics
from kerasflow.estimators.estimator import Estimator, WarmStartSettings
from kerasflow.estimators.model_fn import EstimatorSpec, ModeKeys
from kerasflow.estimators.run_config import RunConfig
from kerasflow.estimators.training import EvalSpec, TrainSpec, train_and_evaluate

# Canned estimators (``estimators.canned``) load on first use.
_CANNED = ("LinearClassifier", "LinearRegressor", "DNNClassifier", "DNNRegressor",
           "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
           "BaselineClassifier", "BaselineRegressor")

__all__ = [
    "Estimator", "EstimatorSpec", "EvalSpec", "ModeKeys", "RunConfig", "TrainSpec",
    "WarmStartSettings", "inputs", "metrics", "model_to_estimator",
    "train_and_evaluate", *_CANNED,
]


def __getattr__(name):  # canned estimators and Keras conversion load on first use
    if name in _CANNED:
        from kerasflow.estimators import canned

        return getattr(canned, name)
    if name == "model_to_estimator":
        from kerasflow.estimators.keras import model_to_estimator

        return model_to_estimator
    raise AttributeError(f"module 'kerasflow.estimators' has no attribute '{name}'")
