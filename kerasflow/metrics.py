"""Streaming metrics (Keras 3's ``keras.metrics``), in graph or eager mode.

A metric keeps its state in backend ``Variable``s. ``update_state`` given any
symbolic input returns a list of update ops (``assign_add`` nodes) for the caller
to run with each batch, e.g. as ``Function(..., updates=...)``; given arrays it
updates the state at once and returns ``[]``. ``result()`` reads the Variables on
the host and returns a Python float (a numpy array for vector results), so
logging a metric costs microseconds; ``reset_state()`` zeroes the state.

Example:
    >>> m = SparseCategoricalAccuracy()
    >>> m.update_state(np.array([1, 0]), np.array([[0.1, 0.9], [0.3, 0.7]]))
    []
    >>> m.result()
    0.5
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kerasflow import losses as _losses
from kerasflow.backend import Variable, floatx, ops
from kerasflow.backend.graph import is_symbolic
from kerasflow.utils.serialization import (
    deserialize_object,
    serialize_object,
    to_snake_case,
)

__all__ = [
    "AUC", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "Mean",
    "MeanAbsoluteError", "MeanMetricWrapper", "MeanSquaredError", "Metric", "Precision",
    "Recall", "RootMeanSquaredError", "SparseCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy", "Sum", "TopKCategoricalAccuracy", "accuracy",
    "binary_accuracy", "categorical_accuracy", "deserialize", "get", "serialize",
    "sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy",
    "top_k_categorical_accuracy",
]

EPSILON = 1e-7
_same_rank = _losses.squeeze_or_expand_to_same_rank
_tensor = _losses._tensor


def _ndim(x) -> int:
    return 0 if x.ndim is None else x.ndim


def _safe_div(a, b):
    """a / b on the host, 0 where b is 0 (Keras' divide_no_nan)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))


def _out(x):
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


class Metric:
    """Base class: state Variables, ``update_state``, ``result``, ``reset_state``.

    Args:
        name: name used in logs (default: the class name in snake case).
        dtype: dtype of the state (default: floatx()).

    Example:
        >>> class Count(Metric):
        ...     def __init__(self, name="count"):
        ...         super().__init__(name=name)
        ...         self.n = self.add_variable((), name="n")
        ...     def update_state(self, values, sample_weight=None):
        ...         return self._accumulate([(self.n, ops.reduced_count(values))],
        ...                                 is_symbolic(values))
        ...     def result(self):
        ...         return float(self.n.numpy())
    """

    def __init__(self, name=None, dtype=None):
        self.name = name or to_snake_case(type(self).__name__)
        self.dtype = np.dtype(dtype or floatx()).name
        self._variables: list[Variable] = []
        self._initial: list[np.ndarray] = []

    def add_variable(self, shape, initializer="zeros", name=None, dtype=None):
        """A non-trainable state Variable "<metric>/<name>", initialized on host.

        Args:
            shape: tuple of ints.
            initializer: "zeros", "ones", a callable ``f(shape, dtype)`` or a value.
            name: name of the variable.
            dtype: dtype; default the metric's.
        """
        dtype = np.dtype(dtype or self.dtype)
        shape = tuple(shape)
        if isinstance(initializer, str) and initializer in ("zeros", "ones"):
            value = (np.zeros if initializer == "zeros" else np.ones)(shape, dtype)
        elif callable(initializer):
            value = np.asarray(initializer(shape, dtype), dtype)
        else:
            value = np.broadcast_to(np.asarray(initializer, dtype), shape).copy()
        var = Variable(value, trainable=False, name=f"{self.name}/{name or 'var'}",
                       dtype=dtype)
        self._variables.append(var)
        self._initial.append(value)
        return var

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    def _accumulate(self, deltas, symbolic):
        """Adds each delta to its Variable: update ops if symbolic, else at once."""
        if symbolic:
            return [ops.assign_add(var, delta) for var, delta in deltas]
        for var, delta in deltas:
            var.assign_add(delta)
        return []

    def update_state(self, *args, **kwargs):
        """Accumulates a batch; returns update ops (symbolic inputs) or []."""
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  f"update_state().")

    def result(self):
        """The metric value from the current state: float or numpy array."""
        raise NotImplementedError(f"{type(self).__name__} must implement result().")

    def reset_state(self) -> None:
        """Sets every state Variable back to its initial value, eagerly."""
        for var, value in zip(self._variables, self._initial):
            var.assign(value)

    def __call__(self, *args, **kwargs):
        """Eager convenience: ``update_state(...)`` then ``result()``."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _samplewise(values, sample_weight, dtype, reduce=ops.mean):
    # Keras' reduce_to_samplewise_values: weight, then reduce all but axis 0.
    values = ops.cast(_tensor(values), dtype)
    if sample_weight is not None:
        sw = ops.cast(_tensor(sample_weight), dtype)
        if _ndim(sw) == 0 and _ndim(values) > 0:  # one weight for every sample
            sw = ops.multiply(sw, ops.ones_like(values))
        values, sw = _same_rank(values, sw)
        if _ndim(values) > _ndim(sw):
            values = reduce(values, axis=tuple(range(_ndim(sw), _ndim(values))))
        sw = ops.broadcast_like(sw, values)
        values = ops.multiply(values, sw)
        if _ndim(sw) > 1:
            sw = reduce(sw, axis=tuple(range(1, _ndim(sw))))
        sample_weight = sw
    if _ndim(values) > 1:
        values = reduce(values, axis=tuple(range(1, _ndim(values))))
    return values, sample_weight


class Sum(Metric):
    """Running (weighted) sum of all values.

    Args:
        name, dtype: as ``Metric``.
    """

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), name="total")

    def update_state(self, values, sample_weight=None):
        """Adds ``sum(values * sample_weight)``; values of any shape."""
        symbolic = is_symbolic(values) or is_symbolic(sample_weight)
        values, _ = _samplewise(values, sample_weight, self.dtype, ops.sum)
        return self._accumulate([(self.total, ops.sum(values))], symbolic)

    def result(self):
        return _out(self.total.numpy())


class Mean(Metric):
    """Running weighted mean, per sample as Keras 3.

    Values of shape (batch, ...) are averaged over all but the first axis; the
    result is ``sum(v_i * w_i) / sum(w_i)`` over samples (w_i = 1 by default; a
    scalar value counts as one sample).

    Args:
        name, dtype: as ``Metric``.
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), name="total")
        self.count = self.add_variable((), name="count")

    def update_state(self, values, sample_weight=None):
        """Accumulates a batch of values (and optional weights, (batch,))."""
        symbolic = is_symbolic(values) or is_symbolic(sample_weight)
        values, sw = _samplewise(values, sample_weight, self.dtype)
        if sw is not None:
            count = ops.sum(sw)
        elif _ndim(values) >= 1:
            count = ops.reduced_count(values, 0, self.dtype)
        else:
            count = np.asarray(1.0, self.dtype)
        return self._accumulate(
            [(self.total, ops.sum(values)), (self.count, count)], symbolic)

    def result(self):
        return _out(_safe_div(self.total.numpy(), self.count.numpy()))


class MeanMetricWrapper(Mean):
    """Mean of a per-sample function ``fn(y_true, y_pred, **kwargs)``.

    Args:
        fn: function returning values of shape (batch, ...).
        name: default ``fn.__name__``.
        dtype: as ``Metric``.
        **kwargs: passed to ``fn`` on every update.
    """

    def __init__(self, fn: Callable, name=None, dtype=None, **kwargs):
        super().__init__(name=name or fn.__name__, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Accumulates ``fn(y_true, y_pred)`` weighted by ``sample_weight``.

        Args:
            y_true: targets, (batch, ...).
            y_pred: predictions, (batch, ...).
            sample_weight: None or (batch,) weights.

        Returns:
            A list of update ops when an input is symbolic, else [].
        """
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        symbolic = any(is_symbolic(x) for x in (y_true, y_pred, sample_weight))
        if symbolic and not is_symbolic(values):  # e.g. a numpy-only custom fn
            raise TypeError(f"Metric '{self.name}': fn returned {type(values)} "
                            f"for symbolic inputs; it must use backend ops.")
        return Mean.update_state(self, values, sample_weight)

    def get_config(self):
        config = {**super().get_config(), **self._fn_kwargs}
        if type(self) is MeanMetricWrapper:
            config["fn"] = serialize_object(self._fn)
        return config

    @classmethod
    def from_config(cls, config):
        if cls is MeanMetricWrapper:
            config = dict(config)
            config["fn"] = deserialize_object(config["fn"], _FUNCTIONS, "metric")
        return cls(**config)


# -- per-sample functions ------------------------------------------------------------
def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` elementwise, else 0.0 (floatx)."""
    y_pred = _tensor(y_pred)
    y_true, y_pred = _same_rank(ops.cast(_tensor(y_true), y_pred.dtype), y_pred)
    return ops.cast(ops.equal(y_true, y_pred), floatx())


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where ``(y_pred > threshold) == y_true`` elementwise (labels 0/1)."""
    y_pred = _tensor(y_pred)
    y_true, y_pred = _same_rank(ops.cast(_tensor(y_true), y_pred.dtype), y_pred)
    pred = ops.cast(ops.greater(y_pred, threshold), y_true.dtype)
    return ops.cast(ops.equal(y_true, pred), floatx())


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)``; (batch, classes) ->
    (batch,)."""
    return ops.cast(ops.equal(ops.argmax(_tensor(y_true), -1),
                              ops.argmax(_tensor(y_pred), -1)), floatx())


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where ``y_true == argmax(y_pred)``; labels (batch,) or (batch, 1) of
    any dtype, scores (batch, classes) -> (batch,)."""
    y_pred = _tensor(y_pred)
    labels = _losses._sparse_labels(y_true, y_pred)
    return ops.cast(ops.equal(labels, ops.argmax(y_pred, -1)), floatx())


def _in_top_k(labels, y_pred, k):
    # Ties count as in the top k (as tf.math.in_top_k): the target is in when
    # fewer than k scores are strictly greater than its own.
    depth = y_pred.shape[-1] if y_pred.shape is not None else None
    if depth is None:
        raise ValueError(f"Top-k accuracy needs a known number of classes. "
                         f"Received: y_pred.shape={y_pred.shape}.")
    target = ops.sum(ops.multiply(y_pred, ops.one_hot(labels, depth, y_pred.dtype)),
                     axis=-1, keepdims=True)
    above = ops.sum(ops.cast(ops.greater(y_pred, target), floatx()), axis=-1)
    return ops.cast(ops.less(above, float(k)), floatx())


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where ``argmax(y_true)`` is among the ``k`` highest of ``y_pred``."""
    y_pred = _tensor(y_pred)
    return _in_top_k(ops.argmax(_tensor(y_true), -1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where label ``y_true`` is among the ``k`` highest of ``y_pred``."""
    y_pred = _tensor(y_pred)
    return _in_top_k(_losses._sparse_labels(y_true, y_pred), y_pred, k)


def _squared_error(y_true, y_pred):
    y_pred = _tensor(y_pred)
    y_true, y_pred = _same_rank(ops.cast(_tensor(y_true), y_pred.dtype), y_pred)
    return ops.square(ops.subtract(y_pred, y_true))


def _wrapper(cls_name, fn, default_name, doc, base=MeanMetricWrapper, **defaults):
    # A MeanMetricWrapper subclass whose __init__ takes fn's keyword arguments.
    def __init__(self, name=default_name, dtype=None, **kw):
        unknown = set(kw) - set(defaults)
        if unknown:
            raise TypeError(f"{cls_name}() got unexpected keyword arguments "
                            f"{sorted(unknown)}. Accepted: {sorted(defaults)}.")
        base.__init__(self, fn, name=name, dtype=dtype, **{**defaults, **kw})

    return type(cls_name, (base,), {"__init__": __init__, "__doc__": doc,
                                    "__module__": __name__, "__qualname__": cls_name})


_ARGS = "\n\n    Args:\n        name, dtype: as ``Metric``."
Accuracy = _wrapper("Accuracy", accuracy, "accuracy",
                    "How often predictions equal labels exactly." + _ARGS)
BinaryAccuracy = _wrapper(
    "BinaryAccuracy", binary_accuracy, "binary_accuracy",
    "How often ``y_pred > threshold`` matches 0/1 labels." + _ARGS
    + "\n        threshold: decision threshold on ``y_pred``.", threshold=0.5)
CategoricalAccuracy = _wrapper(
    "CategoricalAccuracy", categorical_accuracy, "categorical_accuracy",
    "How often the argmax of predictions matches that of one-hot labels." + _ARGS)
SparseCategoricalAccuracy = _wrapper(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy,
    "sparse_categorical_accuracy",
    "How often the argmax of predictions matches integer labels." + _ARGS)
TopKCategoricalAccuracy = _wrapper(
    "TopKCategoricalAccuracy", top_k_categorical_accuracy,
    "top_k_categorical_accuracy",
    "How often the one-hot target is in the top ``k`` predictions." + _ARGS
    + "\n        k: how many top predictions count.", k=5)
SparseTopKCategoricalAccuracy = _wrapper(
    "SparseTopKCategoricalAccuracy", sparse_top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy",
    "How often the integer target is in the top ``k`` predictions." + _ARGS
    + "\n        k: how many top predictions count.", k=5)
MeanSquaredError = _wrapper(
    "MeanSquaredError", _losses.mean_squared_error, "mean_squared_error",
    "Mean of ``mean_squared_error`` over samples." + _ARGS)
MeanAbsoluteError = _wrapper(
    "MeanAbsoluteError", _losses.mean_absolute_error, "mean_absolute_error",
    "Mean of ``mean_absolute_error`` over samples." + _ARGS)
_RMSEBase = _wrapper("RootMeanSquaredError", _squared_error,
                     "root_mean_squared_error", "")


class RootMeanSquaredError(_RMSEBase):
    """``sqrt`` of the (weighted) mean squared error over all samples.

    Args:
        name, dtype: as ``Metric``.
    """

    def result(self):
        return _out(np.sqrt(super().result()))


# -- confusion-matrix metrics ----------------------------------------------------------
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


# -- lookup --------------------------------------------------------------------------
_CLASSES = (Metric, Mean, Sum, MeanMetricWrapper, Accuracy, BinaryAccuracy,
            CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
            SparseTopKCategoricalAccuracy, MeanSquaredError, MeanAbsoluteError,
            RootMeanSquaredError, AUC, Precision, Recall)
_CLASS_NAMES: dict[str, Any] = {c.__name__: c for c in _CLASSES}
_BY_NAME: dict[str, Any] = {
    "accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
    "rmse": RootMeanSquaredError, "root_mean_squared_error": RootMeanSquaredError,
    "auc": AUC, "precision": Precision, "recall": Recall,
}
# Functions a MeanMetricWrapper may wrap: ours and every loss function.
_FUNCTIONS: dict[str, Callable] = {
    name: obj for name, obj in _losses._OBJECTS.items() if not isinstance(obj, type)
}
_FUNCTIONS.update({f.__name__: f for f in (
    accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
    top_k_categorical_accuracy, sparse_top_k_categorical_accuracy)})


def serialize(metric: Metric) -> dict:
    """``{"class_name": ..., "config": ...}`` for a metric object."""
    return serialize_object(metric)


def deserialize(config, custom_objects=None) -> Metric:
    """A new metric from a name or a class_name/config dict.

    Raises:
        ValueError: an unknown name, listing the valid ones.
    """
    if isinstance(config, str):
        return get((custom_objects or {}).get(config, config))
    return get(deserialize_object(config, _CLASS_NAMES, "metric", custom_objects))


def get(identifier) -> Metric | None:
    """Resolves a metric identifier to a new ``Metric`` object.

    Unlike Keras 3's ``metrics.get`` (which may return a function that
    ``compile`` then wraps), this always returns a ``Metric``, since the model
    needs stateful update ops.

    Args:
        identifier: None; a name: "accuracy"/"acc" (exact-match ``Accuracy``;
            the model picks the binary/categorical/sparse variant itself),
            "binary_accuracy", "categorical_accuracy",
            "sparse_categorical_accuracy", "top_k_categorical_accuracy",
            "sparse_top_k_categorical_accuracy", "mse", "mae", "rmse" /
            "root_mean_squared_error", "auc", "precision", "recall", any loss
            function name (a ``MeanMetricWrapper`` of it), or a class name; a
            config dict; a ``Metric`` (returned as is); or a function
            ``f(y_true, y_pred)`` of backend ops (wrapped in
            ``MeanMetricWrapper``).

    Returns:
        None or a ``Metric``; one built from a lower-case name is named by it
        (so logs show "mse" as Keras' do).

    Raises:
        ValueError: an unknown name, listing the valid ones. TypeError: an
        identifier of another type.
    """
    if identifier is None or isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier in _CLASS_NAMES:
            return _CLASS_NAMES[identifier]()
        if identifier in _BY_NAME:
            return _BY_NAME[identifier](name=identifier)
        if identifier in _FUNCTIONS:
            return MeanMetricWrapper(_FUNCTIONS[identifier], name=identifier)
        valid = sorted({*_CLASS_NAMES, *_BY_NAME, *_FUNCTIONS})
        raise ValueError(f"Unknown metric identifier: '{identifier}'. Valid names "
                         f"are: {', '.join(valid)}. Received: "
                         f"identifier={identifier!r}.")
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return MeanMetricWrapper(identifier, name=getattr(identifier, "__name__",
                                                          None))
    raise TypeError(f"Could not interpret metric identifier: expected None, a "
                    f"name, a config dict, a Metric or a function. Received: "
                    f"identifier={identifier!r}.")
