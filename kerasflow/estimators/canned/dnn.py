"""``DNNClassifier`` / ``DNNRegressor``: feed-forward networks on feature columns."""

from __future__ import annotations

from kerasflow.estimators.canned import _base
from kerasflow.estimators.model_fn import ModeKeys
from kerasflow.optimizers import trainable_variables_of

__all__ = ["DNNClassifier", "DNNRegressor"]

_LEARNING_RATE = 0.05  # TF's default for the DNN part (Adagrad)


def _dnn_model_fn(head, hidden_units, columns, optimizer, activation_fn, dropout):
    def model_fn(features, labels, mode):
        net = _base.dense_input(features, columns, "dnn/input_from_feature_columns")
        logits = _base.dnn_logits(net, hidden_units, head.logits_dimension,
                                  activation_fn, dropout, mode == ModeKeys.TRAIN)

        def train_op_fn(loss):
            opt = _base.get_optimizer(optimizer, "Adagrad", _LEARNING_RATE)
            return _base.minimize_all(loss, [(opt, trainable_variables_of(loss))])

        return head.create_spec(features, mode, logits, labels, train_op_fn)

    return model_fn


class _DNN(_base.CannedEstimator):
    def __init__(self, head, hidden_units, feature_columns, model_dir, optimizer,
                 activation_fn, dropout, config, warm_start_from, weight_column):
        hidden_units = list(hidden_units)
        if not hidden_units or any(int(u) < 1 for u in hidden_units):
            raise ValueError(f"hidden_units must be a non-empty list of positive "
                             f"ints. Received: {hidden_units!r}.")
        if dropout is not None and not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1). Received: {dropout}.")
        columns = _base.check_dense(feature_columns, type(self).__name__)
        super().__init__(_dnn_model_fn(head, hidden_units, columns, optimizer,
                                       activation_fn, dropout),
                         head, columns, weight_column, model_dir, config,
                         warm_start_from)


class DNNClassifier(_DNN):
    """A feed-forward classifier (``tf.estimator.DNNClassifier``).

    Args:
        hidden_units: units per hidden layer, e.g. [10, 20, 10].
        feature_columns: dense feature columns.
        model_dir, config, warm_start_from: as ``Estimator``.
        n_classes: number of classes (>= 2).
        weight_column: key (or numeric column) of per-example loss weights.
        label_vocabulary: strings naming the classes when labels are strings.
        optimizer: name, Optimizer or callable; default Adagrad(0.05).
        activation_fn: hidden activation; default "relu".
        dropout: drop probability of hidden units in training, or None.

    Predictions: "logits", "probabilities", "class_ids", "classes" (and
    "logistic" for 2 classes). Evaluation: "accuracy", "average_loss", "loss"
    (and "auc", "precision", "recall", ... for 2 classes).
    """

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn="relu", dropout=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False):
        super().__init__(_base.make_head(n_classes, label_vocabulary), hidden_units,
                         feature_columns, model_dir, optimizer, activation_fn,
                         dropout, config, warm_start_from, weight_column)


class DNNRegressor(_DNN):
    """A feed-forward regressor (``tf.estimator.DNNRegressor``); mean squared
    error on ``label_dimension`` outputs. Arguments as ``DNNClassifier``."""

    def __init__(self, hidden_units, feature_columns, model_dir=None,
                 label_dimension=1, weight_column=None, optimizer="Adagrad",
                 activation_fn="relu", dropout=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False):
        super().__init__(_base.make_head(label_dimension=label_dimension),
                         hidden_units, feature_columns, model_dir, optimizer,
                         activation_fn, dropout, config, warm_start_from,
                         weight_column)
