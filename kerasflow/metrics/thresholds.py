"""Threshold metrics from confusion counts (Keras 3's ``keras.metrics``):
``TruePositives``/``FalsePositives``/``TrueNegatives``/``FalseNegatives`` and
the constrained ones (``SensitivityAtSpecificity``, ``SpecificityAtSensitivity``,
``PrecisionAtRecall``, ``RecallAtPrecision``).

Their state is weighted counts per threshold, which only add up (replicas
merge them by summing). A prediction counts as positive at threshold ``t``
when ``y_pred > t``; a label is positive where ``y_true != 0``.

Example:
    >>> m = TruePositives()
    >>> m.update_state(np.array([0, 1, 1, 1]), np.array([1, 0, 1, 1]))
    []
    >>> m.result()
    2.0
"""

from __future__ import annotations

import numpy as np

from kerasflow.metrics.base import _out, _safe_div, register
from kerasflow.metrics.confusion import _Confusion, _thresholds_arg

__all__ = ["FalseNegatives", "FalsePositives", "PrecisionAtRecall",
           "RecallAtPrecision", "SensitivityAtSpecificity",
           "SpecificityAtSensitivity", "TrueNegatives", "TruePositives"]


class _Count(_Confusion):
    """One confusion count per threshold; ``_KIND`` names which."""

    _KIND = "true_positives"

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self._init_confusion(_thresholds_arg(thresholds), (self._KIND,))
        self.accumulator = getattr(self, self._KIND)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Counts a batch.

        Args:
            y_true: labels of any shape (positive where != 0).
            y_pred: scores of the same shape, compared with each threshold.
            sample_weight: None, a scalar, or weights broadcastable to y_pred.

        Returns:
            Update ops when an input is symbolic, else [].
        """
        return self._update(y_true, y_pred, sample_weight)

    def result(self):
        """The count: a float for one threshold, else one per threshold."""
        counts = self._read(self._KIND)
        return _out(counts[0] if len(self.thresholds) == 1 else counts)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


def _count_class(cls_name, kind, what):
    doc = (f"Weighted number of {what} (Keras 3's ``keras.metrics.{cls_name}``)."
           f"\n\n    Args:\n        thresholds: a float or list of floats in [0, 1]"
           f" (default 0.5); with a list,\n            ``result()`` is an array, "
           f"one count per threshold.\n        name, dtype: as ``Metric``.\n")
    return type(cls_name, (_Count,), {"_KIND": kind, "__doc__": doc,
                                      "__module__": __name__,
                                      "__qualname__": cls_name})


TruePositives = _count_class("TruePositives", "true_positives", "true positives")
FalsePositives = _count_class("FalsePositives", "false_positives",
                              "false positives")
TrueNegatives = _count_class("TrueNegatives", "true_negatives", "true negatives")
FalseNegatives = _count_class("FalseNegatives", "false_negatives",
                              "false negatives")


class _AtConstraint(_Confusion):
    """Best ``dependent`` rate among thresholds whose ``constrained`` rate is
    at least ``value`` (Keras' ``SensitivitySpecificityBase``): ``num_thresholds``
    thresholds 0, the ``num_thresholds - 2`` even inner points of (0, 1), and 1
    (one threshold: 0.5)."""

    _VALUE = "value"  # the constructor argument naming the constraint

    def __init__(self, value, num_thresholds=200, class_id=None, name=None,
                 dtype=None):
        if not 0 <= value <= 1:
            raise ValueError(f"Argument `{self._VALUE}` must be in the range "
                             f"[0, 1]. Received: {self._VALUE}={value}")
        if num_thresholds <= 0:
            raise ValueError(f"Argument `num_thresholds` must be an integer > 0. "
                             f"Received: num_thresholds={num_thresholds}")
        super().__init__(name=name, dtype=dtype)
        self.value, self.num_thresholds = value, num_thresholds
        self.class_id = class_id
        setattr(self, self._VALUE, value)
        if num_thresholds == 1:
            thresholds = [0.5]
        else:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            thresholds = [0.0] + inner + [1.0]
        self._init_confusion(thresholds, self._KEEP)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Counts a batch: labels (positive where != 0) and scores in [0, 1] of
        the same shape; ``sample_weight`` None, scalar or broadcastable."""
        return self._update(y_true, y_pred, sample_weight, self.class_id)

    def _rates(self):
        tp, fp, tn, fn = (self._read(a) for a in self._KEEP)
        return {"sensitivity": _safe_div(tp, tp + fn),
                "specificity": _safe_div(tn, tn + fp),
                "precision": _safe_div(tp, tp + fp)}

    def _best(self, constrained, dependent):
        rates = self._rates()
        rates["recall"] = rates["sensitivity"]
        feasible = rates[constrained] >= self.value
        return _out(np.max(np.where(feasible, rates[dependent], 0.0), initial=0.0))

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                self._VALUE: self.value, "class_id": self.class_id}


_AT_ARGS = """
    Args:
        {arg}: float in [0, 1], the minimum {arg} a threshold must reach.
        num_thresholds: number of thresholds (> 0) the curve is sampled at.
        class_id: score only this class (last-axis index) of multi-label data.
        name, dtype: as ``Metric``.

    Raises:
        ValueError: {arg} outside [0, 1] or num_thresholds <= 0.
"""


class SensitivityAtSpecificity(_AtConstraint):
    __doc__ = ("Best sensitivity ``tp / (tp + fn)`` at specificity >= the "
               "given one (Keras 3)." + _AT_ARGS.format(arg="specificity"))
    _VALUE = "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None,
                 dtype=None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def result(self):
        return self._best("specificity", "sensitivity")


class SpecificityAtSensitivity(_AtConstraint):
    __doc__ = ("Best specificity ``tn / (tn + fp)`` at sensitivity >= the "
               "given one (Keras 3)." + _AT_ARGS.format(arg="sensitivity"))
    _VALUE = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None,
                 dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def result(self):
        return self._best("sensitivity", "specificity")


class PrecisionAtRecall(_AtConstraint):
    __doc__ = ("Best precision ``tp / (tp + fp)`` at recall >= the given one "
               "(Keras 3)." + _AT_ARGS.format(arg="recall"))
    _VALUE = "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None,
                 dtype=None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def result(self):
        return self._best("recall", "precision")


class RecallAtPrecision(_AtConstraint):
    __doc__ = ("Best recall ``tp / (tp + fn)`` at precision >= the given one "
               "(Keras 3)." + _AT_ARGS.format(arg="precision"))
    _VALUE = "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None,
                 dtype=None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def result(self):
        return self._best("precision", "recall")


register((TruePositives, FalsePositives, TrueNegatives, FalseNegatives,
          SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall,
          RecallAtPrecision),
         true_positives=TruePositives, false_positives=FalsePositives,
         true_negatives=TrueNegatives, false_negatives=FalseNegatives)
