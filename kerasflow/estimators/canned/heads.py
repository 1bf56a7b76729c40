"""Heads: logits -> loss, predictions and metrics (TF's canned heads).

Loss reduction is TF 2's ``SUM_OVER_BATCH_SIZE``: the mean over the batch of
each example's (weighted) loss.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.estimators import metrics as M
from kerasflow.estimators.model_fn import EstimatorSpec, ModeKeys
from kerasflow.feature_column.dense import float_rows

__all__ = ["WEIGHT_KEY", "ClassificationHead", "RegressionHead"]

WEIGHT_KEY = "__example_weight__"


def _weights(features):
    w = features.get(WEIGHT_KEY) if isinstance(features, dict) else None
    return None if w is None else K.reshape(w, (-1,))


def _need_labels(labels, mode):
    if labels is None:
        raise ValueError(f"A canned estimator needs labels in mode '{mode}': "
                         f"input_fn returned features only. Return (features, "
                         f"labels).")


class ClassificationHead:
    """Softmax (n_classes > 2) or sigmoid (n_classes == 2) classification.

    Args:
        n_classes: int >= 2.
        label_vocabulary: list of strings naming the classes (labels are those
            strings), or None (labels are ints in [0, n_classes)).
    """

    def __init__(self, n_classes=2, label_vocabulary=None):
        if not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
            raise ValueError(f"n_classes must be an int >= 2. Received: "
                             f"n_classes={n_classes!r}.")
        if label_vocabulary is not None:
            label_vocabulary = [str(v) for v in label_vocabulary]
            if len(label_vocabulary) != n_classes:
                raise ValueError(f"label_vocabulary needs {n_classes} entries. "
                                 f"Received: {len(label_vocabulary)}.")
        self.n_classes = int(n_classes)
        self.label_vocabulary = label_vocabulary
        self.logits_dimension = 1 if n_classes == 2 else int(n_classes)

    def transform_labels(self, labels):
        """Host-side check: int64 class ids of shape (batch,).

        Raises:
            ValueError: labels not of shape (batch,) or (batch, 1), ids outside
                [0, n_classes), or strings outside label_vocabulary.
        """
        y = np.asarray(labels)
        if isinstance(labels, dict):
            raise TypeError("Classifier labels must be an array. Received: a dict "
                            f"with keys {sorted(labels)}.")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"Classifier labels must have shape [batch_size] or "
                             f"[batch_size, 1]. Received: labels.shape={y.shape}.")
        if self.label_vocabulary is not None:
            table = {v: i for i, v in enumerate(self.label_vocabulary)}
            strs = y.astype(str)
            bad = sorted({s for s in strs if s not in table})
            if bad:
                raise ValueError(f"Labels {bad[:5]} are not in label_vocabulary "
                                 f"{self.label_vocabulary}.")
            return np.array([table[s] for s in strs], np.int64)
        if y.dtype.kind not in "iub" and not (
                y.dtype.kind == "f" and np.all(np.equal(np.mod(y, 1), 0))):
            raise ValueError(f"Classifier labels must be integer class ids (or set "
                             f"label_vocabulary). Received: dtype {y.dtype}.")
        y = y.astype(np.int64)
        if y.size and (y.min() < 0 or y.max() >= self.n_classes):
            raise ValueError(f"Labels must be in [0, {self.n_classes}) for "
                             f"n_classes={self.n_classes}. Received: labels from "
                             f"{y.min()} to {y.max()}.")
        return y

    def postprocess(self, preds):
        """Adds "classes" (strings) on the host."""
        if "class_ids" in preds:
            ids = np.asarray(preds["class_ids"])
            names = (np.asarray(self.label_vocabulary) if self.label_vocabulary
                     else np.arange(self.n_classes).astype(str))
            preds["classes"] = names[ids]
        return preds

    def create_spec(self, features, mode, logits, labels, train_op_fn):
        if self.n_classes == 2:
            logistic = K.sigmoid(logits)
            probs = K.concatenate([1.0 - logistic, logistic], axis=-1)
            class_ids = K.cast(K.greater(logits, 0.0), "int64")
            preds = {"logits": logits, "logistic": logistic, "probabilities": probs,
                     "class_ids": class_ids}
        else:
            probs = K.softmax(logits)
            class_ids = K.expand_dims(K.argmax(logits, -1), -1)
            preds = {"logits": logits, "probabilities": probs,
                     "class_ids": class_ids}
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=preds)
        _need_labels(labels, mode)
        w = _weights(features)
        if self.n_classes == 2:
            y = K.cast(K.reshape(labels, (-1, 1)), K.floatx())
            per = K.reshape(K.sigmoid_cross_entropy_with_logits(y, logits), (-1,))
        else:
            per = K.sparse_softmax_cross_entropy_with_logits(labels, logits)
        loss = K.mean(per if w is None else per * w)
        if mode == ModeKeys.TRAIN:
            return EstimatorSpec(mode, predictions=preds, loss=loss,
                                 train_op=train_op_fn(loss))
        ids = K.reshape(class_ids, (-1,))
        ops = {"accuracy": M.accuracy(labels, ids, w),
               "average_loss": M.mean(per, w)}
        if self.n_classes == 2:
            yf = K.cast(labels, K.floatx())
            p = K.reshape(logistic, (-1,))
            ops.update({"auc": M.auc(yf, p, w),
                        "precision": M.precision(yf, p, w),
                        "recall": M.recall(yf, p, w),
                        "label/mean": M.mean(yf, w),
                        "prediction/mean": M.mean(p, w)})
        return EstimatorSpec(mode, predictions=preds, loss=loss, eval_metric_ops=ops)


class RegressionHead:
    """Mean squared error regression on ``label_dimension`` outputs."""

    def __init__(self, label_dimension=1):
        if not isinstance(label_dimension, (int, np.integer)) or label_dimension < 1:
            raise ValueError(f"label_dimension must be an int >= 1. Received: "
                             f"{label_dimension!r}.")
        self.logits_dimension = int(label_dimension)
        self.label_vocabulary = None

    def transform_labels(self, labels):
        return float_rows(labels, self.logits_dimension, "Regression labels")

    def postprocess(self, preds):
        return preds

    def create_spec(self, features, mode, logits, labels, train_op_fn):
        preds = {"predictions": logits}
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=preds)
        _need_labels(labels, mode)
        w = _weights(features)
        per = K.mean(K.square(logits - labels), axis=-1)
        loss = K.mean(per if w is None else per * w)
        if mode == ModeKeys.TRAIN:
            return EstimatorSpec(mode, predictions=preds, loss=loss,
                                 train_op=train_op_fn(loss))
        ops = {"average_loss": M.mean(per, w),
               "label/mean": M.mean(labels, w),
               "prediction/mean": M.mean(logits, w)}
        return EstimatorSpec(mode, predictions=preds, loss=loss, eval_metric_ops=ops)
