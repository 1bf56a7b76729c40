"""Confusion-matrix metrics: ``Precision``, ``Recall`` and ``AUC`` (Keras 3's
``keras.metrics``), from true/false positive/negative counts per threshold."""

from __future__ import annotations

import numpy as np

from kerasflow.backend import ops
from kerasflow.backend.graph import is_symbolic
from kerasflow.metrics.base import (
    EPSILON,
    Metric,
    _ndim,
    _out,
    _safe_div,
    _same_rank,
    _tensor,
    register,
)

__all__ = ["AUC", "F1Score", "FBetaScore", "Precision", "Recall"]


def _confusion(y_true, y_pred, thresholds, sample_weight, dtype, class_id=None):
    """Per-threshold (tp, fp, tn, fn) deltas: weighted counts of ``y_pred >
    threshold`` against ``y_true != 0``, over all entries flattened."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    if class_id is not None:
        y_true, y_pred = y_true[..., class_id], y_pred[..., class_id]
    y_pred = ops.cast(y_pred, dtype)
    y_true, y_pred = _same_rank(ops.cast(ops.not_equal(y_true, 0), dtype), y_pred)
    labels = ops.reshape(y_true, (-1, 1))
    above = ops.cast(ops.greater(ops.reshape(y_pred, (-1, 1)),
                                 np.asarray(thresholds, dtype)), dtype)  # (N, T)
    below = ops.subtract(1.0, above)
    pos, neg = labels, ops.subtract(1.0, labels)
    if sample_weight is not None:
        sw = ops.cast(_tensor(sample_weight), dtype)
        _, sw = _same_rank(y_pred, sw)
        while 0 < _ndim(sw) < _ndim(y_pred):
            sw = ops.expand_dims(sw, -1)
        sw = ops.reshape(ops.broadcast_like(sw, y_pred), (-1, 1))
        pos, neg = ops.multiply(pos, sw), ops.multiply(neg, sw)
    return [ops.sum(ops.multiply(a, b), axis=0)
            for a, b in ((above, pos), (above, neg), (below, neg), (below, pos))]


class _Confusion(Metric):
    """Base of threshold metrics: tp/fp/tn/fn Variables of shape (thresholds,)."""

    _KEEP = ("true_positives", "false_positives", "true_negatives",
             "false_negatives")

    def _init_confusion(self, thresholds, keep):
        self.thresholds = [float(t) for t in thresholds]
        self._keep = keep
        for attr in keep:
            setattr(self, attr, self.add_variable((len(self.thresholds),), name=attr))

    def _update(self, y_true, y_pred, sample_weight, class_id=None):
        symbolic = any(is_symbolic(x) for x in (y_true, y_pred, sample_weight))
        deltas = _confusion(y_true, y_pred, self.thresholds, sample_weight,
                            self.dtype, class_id)
        return self._accumulate([(getattr(self, a), d) for a, d in
                                 zip(self._KEEP, deltas) if a in self._keep],
                                symbolic)

    def _read(self, attr):
        return getattr(self, attr).numpy().astype(np.float64)


def _thresholds_arg(thresholds):
    if thresholds is None:
        return [0.5]
    return [thresholds] if np.ndim(thresholds) == 0 else list(thresholds)


class Precision(_Confusion):
    """``tp / (tp + fp)`` with predictions above ``thresholds`` counted positive.

    Args:
        thresholds: a float or list of floats in [0, 1] (default 0.5); with a
            list, ``result()`` is an array, one precision per threshold.
        class_id: score only this class (last-axis index) of multi-label data.
        name, dtype: as ``Metric``.
    """

    _OTHER = "false_positives"  # tp / (tp + this)

    def __init__(self, thresholds=None, class_id=None, name="precision",
                 dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds, self.class_id = thresholds, class_id
        self._init_confusion(_thresholds_arg(thresholds),
                             ("true_positives", self._OTHER))

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Counts a batch; labels are positive where ``y_true != 0``."""
        return self._update(y_true, y_pred, sample_weight, self.class_id)

    def result(self):
        tp = self._read("true_positives")
        r = _safe_div(tp, tp + self._read(self._OTHER))
        return _out(r[0] if len(self.thresholds) == 1 else r)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "class_id": self.class_id}


class Recall(Precision):
    """``tp / (tp + fn)``; arguments as ``Precision``."""

    _OTHER = "false_negatives"

    def __init__(self, thresholds=None, class_id=None, name="recall", dtype=None):
        super().__init__(thresholds, class_id, name=name, dtype=dtype)


class AUC(_Confusion):
    """Area under the ROC or precision-recall curve, from confusion counts at
    ``num_thresholds`` thresholds (Keras' AUC; Davis & Goadrich, ICML 2006, for
    the PR interpolation).

    ROC with "interpolation" is the trapezoidal rule over (FPR, TPR) points; the
    result approaches the exact (rank) AUC as thresholds get finer: with the
    default 200 even thresholds it is within about 1e-2 for scores in [0, 1].

    Args:
        num_thresholds: number of thresholds (> 1): 0 - 1e-7, the
            ``num_thresholds - 2`` even inner points of (0, 1), and 1 + 1e-7.
        curve: "ROC" or "PR".
        summation_method: "interpolation", "minoring" or "majoring".
        name, dtype: as ``Metric``.
        thresholds: explicit inner thresholds in [0, 1] (overrides
            ``num_thresholds``).
        from_logits: apply a sigmoid to predictions first.

    Raises:
        ValueError: num_thresholds <= 1, or an unknown curve/summation method.
    """

    def __init__(self, num_thresholds=200, curve="ROC",
                 summation_method="interpolation", name="auc", dtype=None,
                 thresholds=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        if curve.upper() not in ("ROC", "PR"):
            raise ValueError(f"curve must be 'ROC' or 'PR'. Received: curve={curve!r}.")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f"summation_method must be 'interpolation', 'minoring' "
                             f"or 'majoring'. Received: {summation_method!r}.")
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            num_thresholds = len(inner) + 2
        elif num_thresholds <= 1:
            raise ValueError(f"num_thresholds must be > 1. Received: "
                             f"num_thresholds={num_thresholds}.")
        else:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.num_thresholds, self.curve = num_thresholds, curve.upper()
        self.summation_method, self.from_logits = summation_method, from_logits
        self._init_thresholds = thresholds
        self._init_confusion([-EPSILON] + inner + [1.0 + EPSILON], self._KEEP)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Counts a batch: labels (0/1, any shape), scores like the labels."""
        if self.from_logits:
            y_pred = ops.sigmoid(_tensor(y_pred))
        return self._update(y_true, y_pred, sample_weight)

    def result(self):
        tp, fp, tn, fn = (self._read(a) for a in self._KEEP)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _out(_interpolate_pr_auc(tp, fp, fn))
        recall = _safe_div(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _safe_div(fp, fp + tn), recall
        else:
            x, y = recall, _safe_div(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return _out(np.sum((x[:-1] - x[1:]) * heights))

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "curve": self.curve, "summation_method": self.summation_method,
                "thresholds": self._init_thresholds, "from_logits": self.from_logits}


def _interpolate_pr_auc(tp, fp, fn):
    """PR-AUC interpolating precision between thresholds (Davis & Goadrich)."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = _safe_div(dtp, np.maximum(dp, 0))
    intercept = tp[1:] - slope * p[1:]
    both = (p[:-1] > 0) & (p[1:] > 0)
    ratio = np.where(both, _safe_div(p[:-1], np.maximum(p[1:], 0)), 1.0)
    log_ratio = np.log(np.where(ratio > 0, ratio, 1.0))
    return np.sum(_safe_div(slope * (dtp + intercept * log_ratio),
                            np.maximum(tp[1:] + fn[1:], 0)))


register((AUC, Precision, Recall), auc=AUC, precision=Precision, recall=Recall)


class FBetaScore(Metric):
    """F-beta score per class from one-hot (or multi-label) targets (Keras 3).

    ``(1 + beta**2) * p * r / (beta**2 * p + r)`` with precision ``p`` and
    recall ``r`` accumulated per class as true/false positive/negative counts.

    Args:
        average: None (a score per class), "micro" (global counts), "macro"
            (unweighted mean of class scores) or "weighted" (mean weighted by
            class support).
        beta: float > 0; 1.0 gives F1.
        threshold: predictions above it count positive; None marks the top
            class of each row positive (Keras' rule).
        name, dtype: as ``Metric``.

    Raises:
        ValueError: an unknown average or beta <= 0.
    """

    def __init__(self, average=None, beta=1.0, threshold=None,
                 name="fbeta_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(f"average must be None, 'micro', 'macro' or "
                             f"'weighted'. Received: average={average!r}.")
        if not beta > 0:
            raise ValueError(f"beta must be > 0. Received: beta={beta!r}.")
        self.average, self.beta, self.threshold = average, float(beta), threshold
        self._counts = None  # created at the first update, sized by classes

    def _build(self, num_classes):
        if self._counts is None:
            if num_classes is None:
                raise ValueError(f"{type(self).__name__} needs a known number of "
                                 f"classes (last axis of y_pred).")
            self._counts = [self.add_variable((num_classes,), name=n) for n in (
                "true_positives", "false_positives", "false_negatives", "support")]

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Counts a batch: y_true and y_pred of shape (batch, classes)."""
        symbolic = any(is_symbolic(v) for v in (y_true, y_pred, sample_weight))
        y_pred = ops.cast(y_pred, self.dtype) if symbolic else np.asarray(
            y_pred, self.dtype)
        self._build(y_pred.shape[-1])
        if self.threshold is None:
            top = ops.max(y_pred, axis=-1, keepdims=True)
            pred = ops.cast(ops.equal(y_pred, top), self.dtype)
        else:
            pred = ops.cast(ops.greater(y_pred, self.threshold), self.dtype)
        true = ops.cast(y_true, self.dtype)
        if sample_weight is not None:
            w = ops.reshape(ops.cast(sample_weight, self.dtype), (-1, 1))
            pred_w, true_w = pred * w, true * w
        else:
            pred_w, true_w = pred, true
        deltas = [ops.sum(pred_w * true, axis=0),
                  ops.sum(pred_w * (1.0 - true), axis=0),
                  ops.sum((1.0 - pred) * true_w, axis=0),
                  ops.sum(true_w, axis=0)]
        return self._accumulate(list(zip(self._counts, deltas)), symbolic)

    def result(self):
        if self._counts is None:
            return 0.0
        tp, fp, fn, support = (v.numpy().astype(np.float64) for v in self._counts)
        if self.average == "micro":
            tp, fp, fn = tp.sum(), fp.sum(), fn.sum()
        p, r = _safe_div(tp, tp + fp), _safe_div(tp, tp + fn)
        b2 = self.beta ** 2
        f = _safe_div((1 + b2) * p * r, b2 * p + r)
        if self.average == "macro":
            f = f.mean()
        elif self.average == "weighted":
            f = _safe_div(np.sum(f * support), support.sum())
        return _out(f)

    def reset_state(self):
        for v in self._counts or ():
            v.assign(np.zeros(v.shape, v.dtype))

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """F1 score (``FBetaScore`` with beta = 1); arguments as ``FBetaScore``."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average, 1.0, threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config


register((FBetaScore, F1Score), f1_score=F1Score, fbeta_score=FBetaScore)
