"""The ``Metric`` base class, ``Sum``/``Mean``/``MeanMetricWrapper`` and the lookup.

A metric keeps its state in backend ``Variable``s. ``update_state`` given any
symbolic input returns a list of update ops (``assign_add`` nodes) for the caller
to run with each batch, e.g. as ``Function(..., updates=...)``; given arrays it
updates the state at once and returns ``[]``. ``result()`` reads the Variables on
the host and returns a Python float (a numpy array for vector results), so
logging a metric costs microseconds; ``reset_state()`` zeroes the state.

Keras' contract for custom metrics holds as well (keras.io, "Training &
evaluation with the built-in methods", ``CategoricalTruePositives``): an
``update_state`` that calls ``self.v.assign_add(x)`` and returns nothing still
has its update applied. While ``update_state`` runs on symbolic inputs, every
assignment to one of the metric's state Variables is recorded and returned with
the ops ``update_state`` returned itself; ``result()`` may return a Variable or
an array, read to a float.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from kerasflow import losses as _losses
from kerasflow.backend import Variable, floatx, ops
from kerasflow.backend.graph import is_symbolic
from kerasflow.losses import base as _loss_base
from kerasflow.losses.base import as_tensor as _tensor
from kerasflow.metrics.state import MetricVariable, host_result, recording_update
from kerasflow.utils.serialization import (
    deserialize_object,
    did_you_mean,
    serialize_object,
    to_snake_case,
)

__all__ = ["Mean", "MeanMetricWrapper", "Metric", "Sum", "deserialize", "get",
           "serialize"]

EPSILON = 1e-7
_same_rank = _losses.squeeze_or_expand_to_same_rank
# (y_true cast to y_pred's dtype, y_pred) as tensors of matched rank.
_pair = _loss_base._prepare


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

    Example (keras.io's custom metric runs unchanged, with backend ops):
        >>> class Count(Metric):
        ...     def __init__(self, name="count"):
        ...         super().__init__(name=name)
        ...         self.n = self.add_variable(shape=(), name="n")
        ...     def update_state(self, values, sample_weight=None):
        ...         self.n.assign_add(ops.reduced_count(values))
        ...     def result(self):
        ...         return self.n
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for attr, wrap in (("update_state", recording_update),
                           ("merge_state", recording_update),
                           ("result", host_result)):
            fn = cls.__dict__.get(attr)
            if fn is not None and not getattr(fn, "_records_updates", False):
                setattr(cls, attr, wrap(fn))

    def __init__(self, name=None, dtype=None):
        self.name = name or to_snake_case(type(self).__name__)
        self.dtype = np.dtype(dtype or floatx()).name
        self._variables: list[Variable] = []
        self._initial: list[np.ndarray] = []

    def add_variable(self, shape=(), initializer="zeros", name=None, dtype=None,
                     aggregation="sum"):
        """A non-trainable state Variable "<metric>/<name>", initialized on host.

        Args:
            shape: tuple of ints (default a scalar).
            initializer: "zeros", "ones", a callable ``f(shape, dtype)`` or a value.
            name: name of the variable.
            dtype: dtype; default the metric's.
            aggregation: how replicas combine the state; only "sum" (Keras'
                default), since strategies sum metric deltas.

        Raises:
            ValueError: another aggregation.
        """
        if aggregation != "sum":
            raise ValueError(f"Metric variables aggregate by 'sum' only. "
                             f"Received: aggregation={aggregation!r}.")
        dtype = np.dtype(dtype or self.dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if isinstance(initializer, str) and initializer in ("zeros", "ones"):
            value = (np.zeros if initializer == "zeros" else np.ones)(shape, dtype)
        elif callable(initializer):
            value = np.asarray(initializer(shape, dtype), dtype)
        else:
            value = np.broadcast_to(np.asarray(initializer, dtype), shape).copy()
        var = MetricVariable(value, trainable=False,
                             name=f"{self.name}/{name or 'var'}", dtype=dtype)
        self._variables.append(var)
        self._initial.append(value)
        return var

    def add_weight(self, name=None, shape=(), initializer="zeros", dtype=None,
                   aggregation="sum"):
        """``add_variable`` with tf.keras' argument order (``name`` first)."""
        if name is not None and not isinstance(name, str):  # Keras 3: shape first
            name, shape = None, name
        return self.add_variable(shape, initializer, name, dtype, aggregation)

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    def _accumulate(self, deltas, symbolic):
        """Adds each delta to its Variable: update ops if symbolic, else at once."""
        if symbolic:
            return [ops.assign_add(var, delta) for var, delta in deltas]
        for var, delta in deltas:
            Variable.assign_add(var, delta)
        return []

    def update_state(self, *args, **kwargs):
        """Accumulates a batch; returns update ops (symbolic inputs) or []."""
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  f"update_state().")

    def result(self):
        """The metric value from the current state: float or numpy array."""
        raise NotImplementedError(f"{type(self).__name__} must implement result().")

    def merge_state(self, metrics):
        """Merges the state of ``metrics`` into this metric's (Keras'
        ``Metric.merge_state``): by default each state variable adds the
        others' (right for the sums and counts every built-in metric keeps).

        Override it for state that does not add up, with backend ops so it
        also traces (replicas merge with it, ``kerasflow/metrics/merge.py``);
        a running maximum: ``self.best.assign(ops.maximum(self.best, m.best))``
        for each ``m`` in ``metrics``.

        Args:
            metrics: metrics of this class with state of the same shapes.

        Raises:
            ValueError: a metric with another number of state variables.
        """
        for metric in metrics:
            others = metric.variables
            if len(others) != len(self._variables):
                raise ValueError(
                    f"Metric '{self.name}' cannot merge the state of metric "
                    f"'{metric.name}': it has {len(self._variables)} state variables. "
                    f"Received: {len(others)}.")
            for var, other in zip(self._variables, others):
                var.assign_add(other)

    def reset_state(self) -> None:
        """Sets every state Variable back to its initial value, eagerly."""
        for var, value in zip(self._variables, self._initial):
            Variable.assign(var, value)

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


# The base class is no subclass of itself: wrap its merge_state here.
Metric.merge_state = recording_update(Metric.merge_state)


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

    ARGS_DOC = "name, dtype: as ``Metric``."

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

        Raises:
            TypeError: ``fn`` returned arrays for symbolic inputs.
        """
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        symbolic = any(is_symbolic(x) for x in (y_true, y_pred, sample_weight))
        if symbolic and not is_symbolic(values):  # e.g. a numpy-only custom fn
            raise TypeError(f"Metric '{self.name}': fn returned {type(values)} "
                            f"for symbolic inputs; it must use backend ops.")
        return Mean.update_state(self, values, sample_weight)

    def get_config(self):
        return _loss_base.wrapped_fn_config(self, MeanMetricWrapper, self._fn,
                                            super().get_config())

    @classmethod
    def from_config(cls, config):
        return _loss_base.wrapped_fn_from_config(
            cls, MeanMetricWrapper, config,
            lambda name: deserialize_object(name, _FUNCTIONS, "metric"))


# The loss wrapper factory, with ``MeanMetricWrapper`` as the base.
wrapper_class = functools.partial(_loss_base.wrapper_class, base=MeanMetricWrapper)


# -- lookup --------------------------------------------------------------------------
_CLASS_NAMES: dict[str, Any] = {}  # class name -> class
_BY_NAME: dict[str, Any] = {}  # lower-case name -> class, named by that name
# Functions a MeanMetricWrapper may wrap: ours and every loss function.
_FUNCTIONS: dict[str, Callable] = _losses.loss_functions()


def register(classes=(), functions=(), **names) -> None:
    """Adds metric classes (by class name), per-sample functions (by
    ``__name__``) and lower-case names of classes to the lookup tables."""
    _CLASS_NAMES.update({c.__name__: c for c in classes})
    _FUNCTIONS.update({f.__name__: f for f in functions})
    _BY_NAME.update(names)


register((Metric, Mean, Sum, MeanMetricWrapper))


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
        hint = did_you_mean(identifier, {*_CLASS_NAMES, *_BY_NAME, *_FUNCTIONS},
                            "kerasflow.metrics")
        raise ValueError(f"Unknown metric identifier: '{identifier}'.{hint} "
                         f"Received: identifier={identifier!r}.")
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
