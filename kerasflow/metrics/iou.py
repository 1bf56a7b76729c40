"""Intersection-over-union metrics (Keras 3's ``keras.metrics``): ``IoU``,
``MeanIoU``, ``BinaryIoU``, ``OneHotIoU`` and ``OneHotMeanIoU``.

The state is one (num_classes, num_classes) confusion matrix, rows the true
class, columns the predicted one, each cell the summed sample weight. It only
adds up, so replicas merge it by summing. Per class,
``iou = tp / (tp + fp + fn)``; the result averages it over the target classes
whose denominator is non-zero.

Example:
    >>> m = MeanIoU(num_classes=2)
    >>> m.update_state(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    []
    >>> round(m.result(), 4)
    0.3333
"""

from __future__ import annotations

import warnings

import numpy as np

from kerasflow.backend import epsilon, ops
from kerasflow.backend.graph import is_symbolic
from kerasflow.metrics.base import Metric, _ndim, _out, _tensor, register

__all__ = ["BinaryIoU", "IoU", "MeanIoU", "OneHotIoU", "OneHotMeanIoU"]


class IoU(Metric):
    """Mean IoU over ``target_class_ids`` (Keras 3's ``keras.metrics.IoU``).

    Args:
        num_classes: number of classes (the confusion matrix is square of it).
        target_class_ids: list of class ids the result averages over (one id:
            that class's IoU).
        name: as ``Metric``.
        dtype: dtype of the confusion matrix (default "int32", as Keras: float
            weights are truncated to integers; pass a float dtype to keep them).
        ignore_class: a label id (e.g. a "void" class, -1 or 255) not counted.
        sparse_y_true, sparse_y_pred: False when labels / predictions are
            scores over classes along ``axis`` (their argmax is taken).
        axis: the class axis of dense inputs.

    Inputs to ``update_state``: y_true and y_pred of the same shape (any rank,
    flattened), integer class ids unless dense; sample_weight None, a scalar
    or one weight per entry. Ids outside [0, num_classes) are not counted.

    Raises:
        ValueError: a target class id >= num_classes.
    """

    _FIXED: tuple = ()  # arguments a subclass fixes, so its config leaves them out

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_true=True, sparse_y_pred=True,
                 axis=-1):
        super().__init__(name=name, dtype=dtype or "int32")
        target_class_ids = list(target_class_ids)
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"Target class id {max(target_class_ids)} is out of "
                             f"range, which is [0, {num_classes}).")
        self.num_classes, self.target_class_ids = int(num_classes), target_class_ids
        self.ignore_class, self.axis = ignore_class, axis
        self.sparse_y_true, self.sparse_y_pred = sparse_y_true, sparse_y_pred
        self.total_cm = self.add_variable((num_classes, num_classes),
                                          name="total_confusion_matrix")

    def _labels(self, y, sparse):
        y = _tensor(y)
        if not sparse:
            y = ops.argmax(y, axis=self.axis)
        return ops.reshape(ops.cast(y, "int64"), (-1,))

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds a batch's weighted (true, predicted) pairs to the matrix.

        Returns:
            Update ops when an input is symbolic, else [].
        """
        symbolic = any(is_symbolic(x) for x in (y_true, y_pred, sample_weight))
        if (sample_weight is not None and "int" in self.dtype
                and "float" in str(getattr(sample_weight, "dtype", ""))):
            warnings.warn("You are passing weight as `float`, but dtype is `int`. "
                          "This may result in an incorrect weight due to type "
                          "casting Consider using integer weights.", stacklevel=2)
        t = self._labels(y_true, self.sparse_y_true)
        p = self._labels(y_pred, self.sparse_y_pred)
        n = self.num_classes
        valid = ops.logical_and(
            ops.logical_and(ops.greater_equal(t, 0), ops.less(t, n)),
            ops.logical_and(ops.greater_equal(p, 0), ops.less(p, n)))
        if self.ignore_class is not None:
            valid = ops.logical_and(valid, ops.not_equal(t, self.ignore_class))
        w = ops.cast(valid, self.dtype)
        if sample_weight is not None:
            sw = ops.cast(ops.cast(_tensor(sample_weight), self.dtype), "float64")
            sw = ops.reshape(sw, (-1,)) if _ndim(sw) > 0 else sw
            w = ops.multiply(ops.cast(w, "float64"), ops.broadcast_like(sw, t))
        # Invalid ids point at class 0 with weight 0, so one_hot stays in range.
        zero = ops.zeros_like(t)
        t, p = ops.where(valid, t, zero), ops.where(valid, p, zero)
        rows = ops.multiply(ops.one_hot(t, n, "float64"),
                            ops.expand_dims(ops.cast(w, "float64"), -1))
        cm = ops.matmul(rows, ops.one_hot(p, n, "float64"), transpose_a=True)
        return self._accumulate([(self.total_cm, ops.cast(cm, self.dtype))],
                                symbolic)

    def _ious(self):
        cm = self.total_cm.numpy().astype(np.float64)
        tp = np.diag(cm)
        denominator = cm.sum(axis=0) + cm.sum(axis=1) - tp
        ids = self.target_class_ids
        tp, denominator = tp[ids], denominator[ids]
        valid = denominator > 1e-9
        iou = np.where(valid, tp / (denominator + epsilon()), 0.0)
        return iou, valid

    def result(self):
        """The mean IoU over the target classes that occur (a float)."""
        iou, valid = self._ious()
        return _out(np.sum(iou) / (np.sum(valid) + epsilon()))

    def get_config(self):
        config = {**super().get_config(), "num_classes": self.num_classes,
                  "target_class_ids": self.target_class_ids,
                  "ignore_class": self.ignore_class,
                  "sparse_y_true": self.sparse_y_true,
                  "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}
        return {k: v for k, v in config.items() if k not in self._FIXED}


class BinaryIoU(IoU):
    """IoU of binary labels against scores thresholded at ``threshold`` (>= is
    class 1), Keras 3's ``keras.metrics.BinaryIoU``.

    Args:
        target_class_ids: [0], [1] or [0, 1] (the mean of both).
        threshold: score at or above which a prediction is class 1.
        name, dtype: as ``IoU``.
    """

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None,
                 dtype=None):
        super().__init__(num_classes=2, target_class_ids=target_class_ids,
                         name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        """As ``IoU.update_state``, with ``y_pred`` scores of y_true's shape."""
        y_pred = ops.cast(ops.greater_equal(ops.cast(_tensor(y_pred), "float32"),
                                            self.threshold), "int64")
        return IoU.update_state(self, y_true, y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": self.target_class_ids,
                "threshold": self.threshold, "name": self.name, "dtype": self.dtype}


class MeanIoU(IoU):
    """IoU averaged over all ``num_classes`` classes (Keras 3's
    ``keras.metrics.MeanIoU``); arguments as ``IoU`` without
    ``target_class_ids``."""

    _FIXED = ("target_class_ids",)

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(num_classes)), name=name,
                         dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred,
                         axis=axis)


class OneHotIoU(IoU):
    """``IoU`` for one-hot labels (and, by default, score predictions): the
    argmax over ``axis`` of each gives the class (Keras 3's
    ``keras.metrics.OneHotIoU``); arguments as ``IoU``."""

    _FIXED = ("sparse_y_true",)

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)


class OneHotMeanIoU(MeanIoU):
    """``MeanIoU`` for one-hot labels (Keras 3's ``keras.metrics.OneHotMeanIoU``);
    arguments as ``MeanIoU``."""

    _FIXED = ("target_class_ids", "sparse_y_true")

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)


register((IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU),
         mean_iou=MeanIoU, binary_iou=BinaryIoU)
