"""Wide & deep: ``DNNLinearCombinedClassifier`` / ``...Regressor`` (Cheng et al.,
"Wide & Deep Learning for Recommender Systems", DLRS 2016)."""

from __future__ import annotations

from kerasflow.estimators.canned import _base
from kerasflow.estimators.canned.dnn import _LEARNING_RATE
from kerasflow.estimators.canned.linear import linear_learning_rate
from kerasflow.estimators.model_fn import ModeKeys
from kerasflow.feature_column import linear_model
from kerasflow.optimizers import trainable_variables_of

__all__ = ["DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor"]


def _combined_model_fn(head, linear_columns, linear_optimizer, dnn_columns,
                       dnn_hidden_units, dnn_optimizer, activation_fn, dropout,
                       sparse_combiner):
    def model_fn(features, labels, mode):
        parts = []
        dnn_vars_from = linear_vars_from = None
        if dnn_columns:
            net = _base.dense_input(features, dnn_columns,
                                    "dnn/input_from_feature_columns")
            dnn = _base.dnn_logits(net, dnn_hidden_units, head.logits_dimension,
                                   activation_fn, dropout, mode == ModeKeys.TRAIN)
            parts.append(dnn)
            dnn_vars_from = dnn
        if linear_columns:
            lin = linear_model(features, linear_columns, head.logits_dimension,
                               sparse_combiner, state={"scope": "linear"})
            parts.append(lin)
            linear_vars_from = lin
        logits = parts[0] if len(parts) == 1 else parts[0] + parts[1]

        def train_op_fn(loss):
            pairs = []
            if linear_vars_from is not None:
                opt = _base.get_optimizer(linear_optimizer, "Ftrl",
                                          linear_learning_rate(len(linear_columns)))
                pairs.append((opt, trainable_variables_of(linear_vars_from)))
            if dnn_vars_from is not None:
                opt = _base.get_optimizer(dnn_optimizer, "Adagrad", _LEARNING_RATE)
                pairs.append((opt, trainable_variables_of(dnn_vars_from)))
            return _base.minimize_all(loss, pairs)

        return head.create_spec(features, mode, logits, labels, train_op_fn)

    return model_fn


class _Combined(_base.CannedEstimator):
    def __init__(self, head, model_dir, linear_feature_columns, linear_optimizer,
                 dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                 dnn_activation_fn, dnn_dropout, config, warm_start_from,
                 weight_column, linear_sparse_combiner):
        linear = list(linear_feature_columns or [])
        dnn = _base.check_dense(dnn_feature_columns or [], type(self).__name__)
        if not linear and not dnn:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns "
                             "must be defined.")
        if dnn and not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when "
                             "dnn_feature_columns are given.")
        super().__init__(
            _combined_model_fn(head, linear, linear_optimizer, dnn,
                               list(dnn_hidden_units or []), dnn_optimizer,
                               dnn_activation_fn, dnn_dropout,
                               linear_sparse_combiner),
            head, linear + dnn, weight_column, model_dir, config, warm_start_from)


class DNNLinearCombinedClassifier(_Combined):
    """Wide (linear, FTRL) plus deep (DNN, Adagrad) classifier; logits add up.

    Args:
        linear_feature_columns: columns of the wide part (categorical ok).
        linear_optimizer: default Ftrl(min(0.2, 1/sqrt(#linear columns))).
        dnn_feature_columns: dense columns of the deep part.
        dnn_optimizer: default Adagrad(0.05).
        dnn_hidden_units, dnn_activation_fn ("relu"), dnn_dropout.
        n_classes, weight_column, label_vocabulary, model_dir, config,
        warm_start_from: as ``DNNClassifier``.
    """

    def __init__(self, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn="relu", dnn_dropout=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        super().__init__(_base.make_head(n_classes, label_vocabulary), model_dir,
                         linear_feature_columns, linear_optimizer,
                         dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                         dnn_activation_fn, dnn_dropout, config, warm_start_from,
                         weight_column, linear_sparse_combiner)


class DNNLinearCombinedRegressor(_Combined):
    """Wide & deep regressor; arguments as the classifier with
    ``label_dimension``."""

    def __init__(self, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn="relu", dnn_dropout=None, label_dimension=1,
                 weight_column=None, config=None, warm_start_from=None,
                 loss_reduction=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        super().__init__(_base.make_head(label_dimension=label_dimension),
                         model_dir, linear_feature_columns, linear_optimizer,
                         dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                         dnn_activation_fn, dnn_dropout, config, warm_start_from,
                         weight_column, linear_sparse_combiner)
