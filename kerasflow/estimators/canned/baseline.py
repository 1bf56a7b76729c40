"""``BaselineClassifier`` / ``BaselineRegressor``: predict the label prior
(TF's baselines: one bias per logit, features ignored)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.estimators.canned import _base
from kerasflow.estimators.canned.heads import WEIGHT_KEY
from kerasflow.estimators.estimator import Estimator

__all__ = ["BaselineClassifier", "BaselineRegressor"]


def _baseline_model_fn(head, optimizer):
    def model_fn(features, labels, mode):
        first = next(iter(features.values())) if isinstance(features, dict) \
            else features
        bias = K.Variable(np.zeros((head.logits_dimension,), K.floatx()),
                          name="baseline/bias")
        ones = K.ones_like(K.cast(K.reshape(first, (-1, 1))[:, :1], K.floatx()))
        logits = ones * bias

        def train_op_fn(loss):
            opt = _base.get_optimizer(optimizer, "Ftrl", 0.3)
            return _base.minimize_all(loss, [(opt, [bias])])

        return head.create_spec(features, mode, logits, labels, train_op_fn)

    return model_fn


class _Baseline(Estimator):
    def __init__(self, head, model_dir, optimizer, config, weight_column):
        super().__init__(_baseline_model_fn(head, optimizer), model_dir=model_dir,
                         config=config)
        self._head = head
        self._label_transform = head.transform_labels
        self._prediction_transform = head.postprocess
        self._weight_key = weight_column
        self._feature_transform = self._transform

    def _transform(self, features):
        if isinstance(features, dict):
            feats = {}
            for k, v in features.items():
                v = np.asarray(v)
                if v.dtype.kind in "fiub":
                    feats[k] = v.astype(np.float32)
            if not feats:
                n = len(np.asarray(next(iter(features.values()))))
                feats["__rows__"] = np.zeros((n, 1), np.float32)
            if self._weight_key is not None:
                feats[WEIGHT_KEY] = np.asarray(features[self._weight_key],
                                               np.float32).reshape(-1)
            return feats
        return np.asarray(features, np.float32)


class BaselineClassifier(_Baseline):
    """Predicts each class's training frequency, ignoring features (TF's).

    Args:
        model_dir, config: as ``Estimator``; n_classes, weight_column,
        label_vocabulary: as ``DNNClassifier``; optimizer: default Ftrl(0.3).
    """

    def __init__(self, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None,
                 loss_reduction=None):
        super().__init__(_base.make_head(n_classes, label_vocabulary), model_dir,
                         optimizer, config, weight_column)


class BaselineRegressor(_Baseline):
    """Predicts the mean training label, ignoring features (TF's)."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, loss_reduction=None):
        super().__init__(_base.make_head(label_dimension=label_dimension),
                         model_dir, optimizer, config, weight_column)
