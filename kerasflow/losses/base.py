"""The ``Loss`` base class, weighted reduction, shared helpers and the loss registry.

A loss *function* ``f(y_true, y_pred)`` returns one value per sample, reducing
only the last axis (shape ``y_pred.shape[:-1]``, e.g. (batch,)). A ``Loss``
*object* calls it and reduces with optional sample weights to a scalar, as
Keras 3's ``keras.losses.Loss``. Both run on symbolic tensors (building graph
nodes) and on arrays (computing at once).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from kerasflow.backend import (
    TapeArray,
    call_taped,
    floatx,
    name_scope,
    ops,
    tape_recording,
)
from kerasflow.backend.graph import is_symbolic
from kerasflow.utils.serialization import (
    lookup_functions,
    serialize_object,
    to_snake_case,
)

__all__ = [
    "EPSILON", "REDUCTIONS", "Loss", "LossFunctionWrapper", "Reduction", "as_tensor",
    "deserialize", "get", "loss_functions",
    "reduce_weighted_values", "serialize", "squeeze_or_expand_to_same_rank",
]

EPSILON = 1e-7
REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight",
              "none", None, "auto")


class Reduction:
    """TF 2's ``tf.keras.losses.Reduction``: the names of a ``Loss``'s
    reductions, accepted by every loss's ``reduction=``.

    ``AUTO`` is ``SUM_OVER_BATCH_SIZE`` (what TF 2 picks outside a custom
    training loop); under a strategy, TF's custom-loop tutorial passes
    ``NONE`` and divides the sum by the global batch size itself.

    Example:
        >>> MeanSquaredError(reduction=Reduction.SUM)(np.zeros((2, 1)), np.ones((2, 1)))
        2.0
    """

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple:
        """The four names, as TF 2 lists them."""
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key) -> None:
        """Raises ValueError for a name that is not a reduction."""
        if key not in REDUCTIONS:
            raise ValueError(f"Invalid Reduction Key: {key}. Expected keys are "
                             f"{cls.all()}.")

# name -> loss function or Loss class; filled by the modules defining them.
_OBJECTS: dict[str, Any] = {}


def register(*objects, **aliases) -> None:
    """Adds functions/classes (under ``__name__``) and aliases to the registry."""
    _OBJECTS.update({o.__name__: o for o in objects})
    _OBJECTS.update(aliases)


def loss_functions() -> dict[str, Callable]:
    """Every registered per-sample loss function, by name and alias."""
    return {name: obj for name, obj in _OBJECTS.items() if not isinstance(obj, type)}


# -- helpers -------------------------------------------------------------------------
def as_tensor(x):
    """A tensor or array as is; anything else (lists, numbers) as an array."""
    return x if is_symbolic(x) or hasattr(x, "shape") else np.asarray(x)


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Makes ranks equal when they differ by one trailing axis of size 1.

    As Keras: the tensor with the extra size-1 last axis is squeezed, except that
    a rank-1 partner is expanded instead when ``expand_rank_1``. Tensors of
    unknown rank are returned unchanged.
    """
    r1, r2 = x1.ndim, x2.ndim
    if r1 is None or r2 is None or r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            return x1, ops.expand_dims(x2, -1)
        return ops.squeeze(x1, -1), x2
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            return ops.expand_dims(x1, -1), x2
        return x1, ops.squeeze(x2, -1)
    return x1, x2


def _prepare(y_true, y_pred):
    y_pred = as_tensor(y_pred)
    y_true = ops.cast(as_tensor(y_true), y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def check_same_shape(y_true, y_pred) -> None:
    """Raises Keras' error when known dimensions of target and output differ.

    Raises:
        ValueError: different ranks, or a dimension known in both that differs.
    """
    s1, s2 = y_true.shape, y_pred.shape
    if s1 is None or s2 is None:
        return
    if len(s1) != len(s2) or any(a is not None and b is not None and a != b
                                 for a, b in zip(s1, s2)):
        raise ValueError(
            f"Arguments `target` and `output` must have the same shape. "
            f"Received: target.shape={tuple(s1)}, output.shape={tuple(s2)}."
        )


def warn_one_class(name, y_pred) -> None:
    """Keras' warning when a categorical loss sees (batch, 1) predictions: a
    one-class softmax is always 1, so the loss cannot train."""
    shape = getattr(y_pred, "shape", None)
    if shape is not None and len(shape) and shape[-1] == 1:
        warnings.warn(
            f"In loss {name}, expected y_pred.shape to be (batch_size, "
            f"num_classes) with num_classes > 1. Received: y_pred.shape="
            f"{tuple(shape)}. Consider using 'binary_crossentropy' if you only "
            f"have 2 classes.", SyntaxWarning, stacklevel=3)


def _is_last(x, axis):
    return axis == -1 or (x.ndim is not None and axis == x.ndim - 1)


# -- reduction and Loss objects ----------------------------------------------------
def _match_weights(values, sample_weight):
    sw = ops.cast(as_tensor(sample_weight), values.dtype)
    values, sw = squeeze_or_expand_to_same_rank(values, sw, expand_rank_1=False)
    # Per-sample weights against per-timestep losses: weights broadcast over
    # the trailing axes.
    while 0 < (sw.ndim or 0) < (values.ndim or 0):
        sw = ops.expand_dims(sw, -1)
    return values, sw


def reduce_weighted_values(values, sample_weight=None, reduction="sum_over_batch_size",
                           mask=None):
    """Weights per-sample losses and reduces them as Keras' ``Loss`` does.

    Args:
        values: per-sample losses, shape (batch, ...).
        sample_weight: None or weights broadcastable to ``values`` (a trailing
            size-1 axis is squeezed, missing trailing axes are added).
        reduction: "sum_over_batch_size"/"mean" (sum of weighted values over
            their number of elements), "sum", "mean_with_sample_weight" (over
            the sum of the weights) or "none"/None (the weighted values).
        mask: optional 0/1 tensor like ``values``; masked-out entries neither
            count nor enter the divisor.

    Returns:
        A scalar, or the weighted values for "none".
    """
    if sample_weight is not None:
        values, sample_weight = _match_weights(values, sample_weight)
    if mask is not None:
        sample_weight = mask if sample_weight is None else \
            ops.multiply(sample_weight, mask)
    if sample_weight is not None:
        values = ops.multiply(values, sample_weight)
    if reduction in (None, "none") or values.ndim == 0:
        return values
    total = ops.sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = ops.sum(ops.broadcast_like(sample_weight, values))
    elif mask is not None:
        divisor = ops.sum(ops.broadcast_like(mask, values))
    else:
        divisor = ops.reduced_count(values, None, values.dtype)
    # An empty batch (or all weight masked) reduces to 0 instead of 0 / 0.
    return ops.divide(total, ops.maximum(divisor, np.asarray(EPSILON, values.dtype)))


class Loss:
    """Base class: ``call`` gives per-sample losses, ``__call__`` reduces them.

    Args:
        reduction: "sum_over_batch_size" (default), "sum", "mean",
            "mean_with_sample_weight" or "none"/None.
        name: name of the loss (prefix of its graph nodes).
        dtype: the dtype its computations run in: given, float predictions and
            targets are cast to it; None (default) keeps the predictions'
            dtype, and ``loss.dtype`` reads ``floatx()`` (Keras 3).

    Raises:
        ValueError: an unknown reduction. TypeError: a dtype that is not a
            float type.

    Example:
        >>> class Cube(Loss):
        ...     def call(self, y_true, y_pred):
        ...         return ops.mean((y_pred - y_true) ** 3, axis=-1)
    """

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        if reduction not in REDUCTIONS:
            raise ValueError(
                f"Invalid value for argument `reduction`; expected one of "
                f"{REDUCTIONS}. Received: reduction={reduction!r}."
            )
        self.reduction = "sum_over_batch_size" if reduction == "auto" else reduction
        self.name = name or to_snake_case(type(self).__name__)
        if dtype is not None:
            dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
            if dtype.kind != "f":
                raise TypeError(f"A loss's dtype must be a float type. Received: "
                                f"dtype={dtype}.")
            dtype = dtype.name
        self._dtype = dtype

    @property
    def dtype(self) -> str:
        """The computation dtype: the one given, else ``floatx()``."""
        return self._dtype or floatx()

    def call(self, y_true, y_pred):
        """Per-sample losses of shape (batch, ...); subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__} must implement call().")

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The reduced loss.

        Args:
            y_true: targets, (batch, ...).
            y_pred: float predictions, (batch, ...).
            sample_weight: None, a scalar, (batch,) or a tensor like the losses.

        Returns:
            A scalar float tensor (array when eager), or per-sample values for
            reduction "none".
        """
        args = (y_true, y_pred) if sample_weight is None else (
            y_true, y_pred, sample_weight)
        if tape_recording() and any(isinstance(a, TapeArray) for a in args):
            # On an eager GradientTape: one traced, recorded call per signature.
            return call_taped(self, lambda yt, yp, sw=None: self(yt, yp, sw), args,
                              name=self.name)
        with name_scope(self.name):
            if self._dtype is not None:
                y_pred = ops.cast(as_tensor(y_pred), self._dtype)
                if as_tensor(y_true).dtype.kind == "f":
                    y_true = ops.cast(as_tensor(y_true), self._dtype)
            values = self.call(y_true, y_pred)
            return reduce_weighted_values(values, sample_weight, self.reduction)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction, "dtype": self._dtype}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A ``Loss`` around a per-sample function ``fn(y_true, y_pred, **kwargs)``.

    Args:
        fn: the loss function.
        reduction, name: as ``Loss`` (name defaults to ``fn.__name__``).
        **kwargs: keyword arguments passed to ``fn`` on every call.
    """

    ARGS_DOC = "reduction, name, dtype: as ``Loss``."

    def __init__(self, fn: Callable, reduction="sum_over_batch_size", name=None,
                 dtype=None, **kwargs):
        super().__init__(reduction=reduction, name=name or fn.__name__, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return wrapped_fn_config(self, LossFunctionWrapper, self.fn,
                                 super().get_config())

    @classmethod
    def from_config(cls, config):
        return wrapped_fn_from_config(cls, LossFunctionWrapper, config, deserialize)


def wrapped_fn_config(wrapper, wrapper_cls, fn, config: dict) -> dict:
    """A function wrapper's config: ``config`` plus ``fn``'s keyword arguments,
    and ``fn`` itself by name when ``wrapper`` is a plain ``wrapper_cls`` (a
    ``wrapper_class`` subclass fixes its function)."""
    config = {**config, **wrapper._fn_kwargs}
    if type(wrapper) is wrapper_cls:
        config["fn"] = serialize_object(fn)
    return config


def wrapped_fn_from_config(cls, wrapper_cls, config: dict, resolve: Callable):
    """``cls(**config)``, the function named by ``config["fn"]`` resolved by
    ``resolve`` when ``cls`` is ``wrapper_cls`` itself."""
    if cls is wrapper_cls:
        config = {**config, "fn": resolve(config["fn"])}
    return cls(**config)


def wrapper_class(cls_name, fn, summary, module, base=None, name=None, **defaults):
    """A subclass of ``base`` whose ``__init__`` takes ``base``'s own arguments
    plus ``fn``'s keyword arguments ``defaults``, as Keras 3's loss and metric
    classes do (``MeanSquaredError(reduction=..., name=...)``).

    Args:
        cls_name: the class name. fn: the per-sample function it wraps.
        summary: first line of the docstring; the arguments are appended.
        module: the defining module's ``__name__``.
        base: a function wrapper whose ``__init__(fn, ...)`` takes ``fn``
            first (default ``LossFunctionWrapper``; metrics use
            ``MeanMetricWrapper``), and whose ``ARGS_DOC`` documents the rest.
        name: the default name; ``fn.__name__`` when None.
        **defaults: ``fn``'s keyword arguments and their defaults.

    Raises:
        TypeError: (from the class) a keyword argument neither ``base`` nor
            ``fn`` takes, listing the accepted ones.
    """
    base = base or LossFunctionWrapper
    own = [p for p in inspect.signature(base.__init__).parameters
           if p not in ("self", "fn", "kwargs")]
    default_name = name or fn.__name__

    def __init__(self, *args, **kw):
        unknown = set(kw) - set(defaults) - set(own)
        if unknown:
            raise TypeError(f"{cls_name}() got unexpected keyword arguments "
                            f"{sorted(unknown)}. Accepted: {sorted(defaults)}.")
        kw = {"name": default_name, **defaults, **dict(zip(own, args)), **kw}
        base.__init__(self, fn, **kw)

    doc = f"{summary}\n\n    Args:\n        {base.ARGS_DOC}"
    if defaults:
        doc += f"\n        {', '.join(defaults)}: as ``{fn.__name__}``."
    return type(cls_name, (base,), {
        "__init__": __init__, "__doc__": doc, "__module__": module,
        "__qualname__": cls_name,
    })


# -- lookup --------------------------------------------------------------------------
_GET_DOC = """Resolves a loss identifier (Keras 3's ``losses.get``).

    Args:
        identifier: None; a function name ("mse", "binary_crossentropy"...)
            giving the per-sample *function*; a class name
            ("BinaryCrossentropy") giving a new default instance; a config
            dict; or a callable, returned as is.

    Returns:
        None, a per-sample function ``f(y_true, y_pred)`` or a ``Loss``. Wrap a
        function in ``LossFunctionWrapper`` for a sample-weighted scalar.

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
_DESERIALIZE_DOC = """A loss function (by name) or object (by class name or dict).

    Raises:
        ValueError: an unknown name, listing the valid ones.
    """
# serialize: class_name and config, in Keras' format.
serialize, deserialize, get = lookup_functions(__name__, _OBJECTS, "loss", _GET_DOC,
                                               _DESERIALIZE_DOC)


register(Loss, LossFunctionWrapper)
