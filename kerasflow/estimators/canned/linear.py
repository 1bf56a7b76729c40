"""``LinearClassifier`` / ``LinearRegressor`` on feature columns (FTRL)."""

from __future__ import annotations

import math

from kerasflow.estimators.canned import _base
from kerasflow.feature_column import linear_model
from kerasflow.optimizers import trainable_variables_of

__all__ = ["LinearClassifier", "LinearRegressor", "linear_learning_rate"]


def linear_learning_rate(num_columns):
    """TF's default: ``min(0.2, 1 / sqrt(num_columns))``."""
    return min(0.2, 1.0 / math.sqrt(max(num_columns, 1)))


def _linear_model_fn(head, columns, optimizer, sparse_combiner):
    def model_fn(features, labels, mode):
        logits = linear_model(features, columns, head.logits_dimension,
                              sparse_combiner, state={"scope": "linear"})

        def train_op_fn(loss):
            opt = _base.get_optimizer(optimizer, "Ftrl",
                                      linear_learning_rate(len(columns)))
            return _base.minimize_all(loss, [(opt, trainable_variables_of(loss))])

        return head.create_spec(features, mode, logits, labels, train_op_fn)

    return model_fn


class LinearClassifier(_base.CannedEstimator):
    """A linear classifier (``tf.estimator.LinearClassifier``).

    Args:
        feature_columns: dense or categorical feature columns.
        model_dir, config, warm_start_from: as ``Estimator``.
        n_classes, weight_column, label_vocabulary: as ``DNNClassifier``.
        optimizer: default Ftrl with rate ``min(0.2, 1/sqrt(#columns))``.
        sparse_combiner: "sum" (default), "mean" or "sqrtn" for multi-valued
            categorical features.
    """

    def __init__(self, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Ftrl",
                 config=None, warm_start_from=None, loss_reduction=None,
                 sparse_combiner="sum"):
        head = _base.make_head(n_classes, label_vocabulary)
        columns = list(feature_columns)
        super().__init__(_linear_model_fn(head, columns, optimizer, sparse_combiner),
                         head, columns, weight_column, model_dir, config,
                         warm_start_from)


class LinearRegressor(_base.CannedEstimator):
    """A linear regressor (``tf.estimator.LinearRegressor``); arguments as
    ``LinearClassifier`` with ``label_dimension`` for ``n_classes``."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Ftrl", config=None,
                 warm_start_from=None, loss_reduction=None, sparse_combiner="sum"):
        head = _base.make_head(label_dimension=label_dimension)
        columns = list(feature_columns)
        super().__init__(_linear_model_fn(head, columns, optimizer, sparse_combiner),
                         head, columns, weight_column, model_dir, config,
                         warm_start_from)
