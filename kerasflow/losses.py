"""Loss functions and classes (Keras 3's ``keras.losses``).

A loss *function* ``f(y_true, y_pred)`` returns one value per sample, reducing
only the last axis (shape ``y_pred.shape[:-1]``, e.g. (batch,)). A ``Loss``
*object* calls it and reduces with optional sample weights to a scalar. Both run
on symbolic tensors (building graph nodes) and on arrays (computing at once).

Cross-entropies given probabilities clip them to [1e-7, 1 - 1e-7] before the
log. When ``y_pred`` is a symbolic softmax/sigmoid output carrying
``_keras_logits`` (set by ``kerasflow.activations``), they use the logits and the
fused stable backend op instead, as Keras does.

Example:
    >>> MeanSquaredError()(np.array([[0.0], [1.0]]), np.array([[1.0], [1.0]]))
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from kerasflow.backend import name_scope, ops
from kerasflow.backend.graph import is_symbolic
from kerasflow.utils.serialization import (
    deserialize_object,
    get_object,
    serialize_object,
    to_snake_case,
)

__all__ = [
    "BinaryCrossentropy", "CategoricalCrossentropy", "CategoricalHinge",
    "CosineSimilarity", "Hinge", "Huber", "KLDivergence", "LogCosh", "Loss",
    "LossFunctionWrapper", "MeanAbsoluteError", "MeanAbsolutePercentageError",
    "MeanSquaredError", "MeanSquaredLogarithmicError", "Poisson",
    "SparseCategoricalCrossentropy", "SquaredHinge", "binary_crossentropy",
    "categorical_crossentropy", "categorical_hinge", "cosine_similarity", "deserialize",
    "get", "hinge", "huber", "kl_divergence", "kld", "log_cosh", "mae", "mape",
    "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error",
    "mean_squared_logarithmic_error", "mse", "msle", "poisson", "serialize",
    "sparse_categorical_crossentropy", "squared_hinge",
    "squeeze_or_expand_to_same_rank",
]

EPSILON = 1e-7
REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight",
              "none", None)


# -- helpers -------------------------------------------------------------------------
def _tensor(x):
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
    y_pred = _tensor(y_pred)
    y_true = ops.cast(_tensor(y_true), y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def _logits(y_pred, sigmoid):
    # Logits recorded by a sigmoid (binary) or softmax (categorical) activation.
    # Another activation's logits would give a wrong loss: a binary loss takes
    # them only from a Sigmoid node, a categorical one from any other node.
    logits = getattr(y_pred, "_keras_logits", None)
    if logits is None or (y_pred.node.op == "Sigmoid") != sigmoid:
        return None
    return logits


def _is_last(x, axis):
    return axis == -1 or (x.ndim is not None and axis == x.ndim - 1)


def _l2_normalize(x, axis):
    return ops.multiply(x, ops.rsqrt(ops.maximum(
        ops.sum(ops.square(x), axis=axis, keepdims=True), 1e-12)))


def _sparse_labels(y_true, y_pred):
    # (batch..., 1) -> (batch...,); floats (as Keras' float label arrays) -> int64.
    y_true = _tensor(y_true)
    if y_true.ndim is not None and y_true.ndim == y_pred.ndim and \
            y_true.shape[-1] == 1:
        y_true = ops.squeeze(y_true, -1)
    return y_true if y_true.dtype.kind in "iu" else ops.cast(y_true, "int64")


# -- functions -----------------------------------------------------------------------
def mean_squared_error(y_true, y_pred):
    """``mean(square(y_true - y_pred), axis=-1)``.

    Args:
        y_true: targets, shape (batch, d...); cast to y_pred's dtype.
        y_pred: float predictions of the same shape.

    Returns:
        Tensor of shape (batch, ...) without the last axis.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    return ops.mean(ops.square(ops.subtract(y_true, y_pred)), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``; shapes as ``mean_squared_error``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return ops.mean(ops.abs(ops.subtract(y_true, y_pred)), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7), axis=-1)``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    diff = ops.divide(ops.abs(ops.subtract(y_true, y_pred)),
                      ops.maximum(ops.abs(y_true), EPSILON))
    return ops.multiply(100.0, ops.mean(diff, axis=-1))


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean(square(log(1 + y_pred) - log(1 + y_true)), axis=-1)``, inputs
    floored at 1e-7."""
    y_true, y_pred = _prepare(y_true, y_pred)
    first = ops.log(ops.add(ops.maximum(y_pred, EPSILON), 1.0))
    second = ops.log(ops.add(ops.maximum(y_true, EPSILON), 1.0))
    return ops.mean(ops.square(ops.subtract(first, second)), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """Huber loss (Huber, 1964), mean over the last axis.

    ``0.5 * e**2`` where ``|e| <= delta``, else ``delta * |e| - 0.5 * delta**2``,
    with ``e = y_true - y_pred``.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    err = ops.subtract(y_pred, y_true)
    abs_err = ops.abs(err)
    quad = ops.multiply(0.5, ops.square(err))
    lin = ops.subtract(ops.multiply(float(delta), abs_err), 0.5 * delta * delta)
    return ops.mean(ops.where(ops.less_equal(abs_err, float(delta)), quad, lin),
                    axis=-1)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, as
    ``x + softplus(-2x) - log 2`` so it stays finite for large errors."""
    y_true, y_pred = _prepare(y_true, y_pred)
    x = ops.subtract(y_pred, y_true)
    lc = ops.add(x, ops.softplus(ops.multiply(-2.0, x)))
    return ops.mean(ops.subtract(lc, math.log(2.0)), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                        axis=-1):
    """Binary cross-entropy, mean over ``axis``.

    Args:
        y_true: targets in [0, 1], shape (batch, d) or (batch,) against
            (batch, 1) predictions.
        y_pred: probabilities (clipped to [1e-7, 1 - 1e-7]) or, with
            ``from_logits``, logits; same shape.
        from_logits: interpret ``y_pred`` as logits.
        label_smoothing: in [0, 1]; targets become ``y * (1 - s) + 0.5 * s``.
        axis: the axis averaged over.

    Returns:
        Tensor of the shape of ``y_pred`` without ``axis``.
    """
    if not from_logits:
        logits = _logits(y_pred, sigmoid=True)
        if logits is not None:
            y_pred, from_logits = logits, True
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing),
                         0.5 * label_smoothing)
    if from_logits:
        bce = ops.sigmoid_cross_entropy_with_logits(y_true, y_pred)
    else:
        p = ops.clip(y_pred, EPSILON, 1.0 - EPSILON)
        bce = ops.negative(ops.add(
            ops.multiply(y_true, ops.log(p)),
            ops.multiply(ops.subtract(1.0, y_true), ops.log(ops.subtract(1.0, p)))))
    return ops.mean(bce, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                             axis=-1):
    """Categorical cross-entropy ``-sum(y_true * log(y_pred), axis)``.

    Args:
        y_true: one-hot or probability targets, shape (batch, classes).
        y_pred: probabilities (renormalized to sum 1, then clipped to
            [1e-7, 1 - 1e-7]) or, with ``from_logits``, logits; same shape.
        from_logits: interpret ``y_pred`` as logits.
        label_smoothing: in [0, 1]; targets become ``y * (1 - s) + s / classes``.
        axis: the class axis.

    Returns:
        Tensor of shape (batch,).

    Raises:
        ValueError: ``y_true`` and ``y_pred`` of different static shapes.
    """
    if not from_logits and _is_last(y_pred, axis):
        logits = _logits(y_pred, sigmoid=False)
        if logits is not None:
            y_pred, from_logits = logits, True
    y_pred = _tensor(y_pred)
    y_true = ops.cast(_tensor(y_true), y_pred.dtype)
    if label_smoothing:
        classes = ops.reduced_count(y_pred, axis, y_pred.dtype)
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing),
                         ops.divide(label_smoothing, classes))
    if from_logits and _is_last(y_pred, axis):
        return ops.softmax_cross_entropy_with_logits(y_true, y_pred)
    if from_logits:
        log_p = ops.log_softmax(y_pred, axis=axis)
    else:
        p = ops.divide(y_pred, ops.sum(y_pred, axis=axis, keepdims=True))
        log_p = ops.log(ops.clip(p, EPSILON, 1.0 - EPSILON))
    return ops.negative(ops.sum(ops.multiply(y_true, log_p), axis=axis))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False,
                                    ignore_class=None, axis=-1):
    """Cross-entropy with integer class labels.

    Args:
        y_true: class indices, shape (batch,) or (batch, 1), any int or float
            dtype (cast to int64).
        y_pred: probabilities (renormalized, clipped to [1e-7, 1 - 1e-7]) or,
            with ``from_logits``, logits; shape (batch, classes).
        from_logits: interpret ``y_pred`` as logits.
        ignore_class: a label whose samples get loss 0 (e.g. padding).
        axis: must be the last axis.

    Returns:
        Tensor of shape (batch,).

    Raises:
        ValueError: ``axis`` not last; labels outside [0, classes) (at run time).
    """
    if not _is_last(_tensor(y_pred), axis):
        raise ValueError(
            f"sparse_categorical_crossentropy supports only the last axis. "
            f"Received: axis={axis}."
        )
    if not from_logits:
        logits = _logits(y_pred, sigmoid=False)
        if logits is not None:
            y_pred, from_logits = logits, True
    y_pred = _tensor(y_pred)
    labels = _sparse_labels(y_true, y_pred)
    if ignore_class is not None:
        valid = ops.not_equal(labels, ignore_class)
        labels = ops.where(valid, labels, 0)
    if from_logits:
        out = ops.sparse_softmax_cross_entropy_with_logits(labels, y_pred)
    else:
        p = ops.divide(y_pred, ops.sum(y_pred, axis=-1, keepdims=True))
        log_p = ops.log(ops.clip(p, EPSILON, 1.0 - EPSILON))
        # The fused op gives -log_p[label] + logsumexp(log_p); removing the
        # logsumexp leaves exactly -log_p[label], with range-checked labels.
        out = ops.subtract(ops.sparse_softmax_cross_entropy_with_logits(labels, log_p),
                           ops.logsumexp(log_p, axis=-1))
    if ignore_class is not None:
        out = ops.multiply(out, ops.cast(valid, out.dtype))
    return out


def kl_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to
    [1e-7, 1] (Kullback & Leibler, 1951)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = ops.clip(y_true, EPSILON, 1.0)
    y_pred = ops.clip(y_pred, EPSILON, 1.0)
    return ops.sum(ops.multiply(y_true, ops.log(ops.divide(y_true, y_pred))),
                   axis=-1)


def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)``."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return ops.mean(ops.subtract(
        y_pred, ops.multiply(y_true, ops.log(ops.add(y_pred, EPSILON)))), axis=-1)


def _hinge_labels(y_true):
    # Keras: labels given as {0, 1} become {-1, 1}; other labels are kept.
    is_binary = ops.min(ops.cast(ops.logical_or(
        ops.equal(y_true, 0.0), ops.equal(y_true, 1.0)), y_true.dtype))
    return ops.where(ops.greater(is_binary, 0.5),
                     ops.subtract(ops.multiply(2.0, y_true), 1.0), y_true)


def hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0), axis=-1)``; labels in {-1, 1} or
    {0, 1} (converted)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    margin = ops.subtract(1.0, ops.multiply(_hinge_labels(y_true), y_pred))
    return ops.mean(ops.maximum(margin, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """``mean(square(max(1 - y_true * y_pred, 0)), axis=-1)``; labels as hinge."""
    y_true, y_pred = _prepare(y_true, y_pred)
    margin = ops.subtract(1.0, ops.multiply(_hinge_labels(y_true), y_pred))
    return ops.mean(ops.square(ops.maximum(margin, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """``max(neg - pos + 1, 0)`` with ``pos = sum(y_true * y_pred)`` and
    ``neg = max((1 - y_true) * y_pred)`` over the last axis; one-hot targets."""
    y_true, y_pred = _prepare(y_true, y_pred)
    pos = ops.sum(ops.multiply(y_true, y_pred), axis=-1)
    neg = ops.max(ops.multiply(ops.subtract(1.0, y_true), y_pred), axis=-1)
    return ops.maximum(ops.add(ops.subtract(neg, pos), 1.0), 0.0)


def cosine_similarity(y_true, y_pred, axis=-1):
    """Negative cosine similarity ``-sum(l2n(y_true) * l2n(y_pred), axis)``: -1
    for parallel vectors, 0 for orthogonal ones, as Keras' loss."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return ops.negative(ops.sum(ops.multiply(
        _l2_normalize(y_true, axis), _l2_normalize(y_pred, axis)), axis=axis))


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh


# -- reduction and Loss objects ----------------------------------------------------
def _match_weights(values, sample_weight):
    sw = ops.cast(_tensor(sample_weight), values.dtype)
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
    return ops.divide(total, ops.maximum(divisor, EPSILON))


class Loss:
    """Base class: ``call`` gives per-sample losses, ``__call__`` reduces them.

    Args:
        reduction: "sum_over_batch_size" (default), "sum", "mean",
            "mean_with_sample_weight" or "none"/None.
        name: name of the loss (prefix of its graph nodes).

    Raises:
        ValueError: an unknown reduction.

    Example:
        >>> class Cube(Loss):
        ...     def call(self, y_true, y_pred):
        ...         return ops.mean((y_pred - y_true) ** 3, axis=-1)
    """

    def __init__(self, reduction="sum_over_batch_size", name=None):
        if reduction not in REDUCTIONS:
            raise ValueError(
                f"Invalid value for argument `reduction`; expected one of "
                f"{REDUCTIONS}. Received: reduction={reduction!r}."
            )
        self.reduction = reduction
        self.name = name or to_snake_case(type(self).__name__)

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
        with name_scope(self.name):
            values = self.call(y_true, y_pred)
            return reduce_weighted_values(values, sample_weight, self.reduction)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

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

    def __init__(self, fn: Callable, reduction="sum_over_batch_size", name=None,
                 **kwargs):
        super().__init__(reduction=reduction, name=name or fn.__name__)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = {**super().get_config(), **self._fn_kwargs}
        if type(self) is LossFunctionWrapper:
            config["fn"] = serialize_object(self.fn)
        return config

    @classmethod
    def from_config(cls, config):
        if cls is LossFunctionWrapper:
            config = dict(config)
            config["fn"] = deserialize(config["fn"])
        return cls(**config)


def _wrapper(cls_name, fn, default_name, doc, **defaults):
    # One Loss class per function: __init__ takes the function's keyword
    # arguments (with their defaults) plus reduction and name, as in Keras 3.
    def __init__(self, reduction="sum_over_batch_size", name=default_name, **kw):
        unknown = set(kw) - set(defaults)
        if unknown:
            raise TypeError(f"{cls_name}() got unexpected keyword arguments "
                            f"{sorted(unknown)}. Accepted: {sorted(defaults)}.")
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name,
                                     **{**defaults, **kw})

    return type(cls_name, (LossFunctionWrapper,), {
        "__init__": __init__, "__doc__": doc, "__module__": __name__,
        "__qualname__": cls_name,
    })


_COMMON = """

    Args:
        reduction: as ``Loss``.
        name: name of the loss."""
MeanSquaredError = _wrapper(
    "MeanSquaredError", mean_squared_error, "mean_squared_error",
    "Mean of squares of errors (``mean_squared_error``)." + _COMMON)
MeanAbsoluteError = _wrapper(
    "MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
    "Mean of absolute errors (``mean_absolute_error``)." + _COMMON)
MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error",
    "Mean absolute percentage error (``mape``)." + _COMMON)
MeanSquaredLogarithmicError = _wrapper(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error",
    "Mean squared logarithmic error (``msle``)." + _COMMON)
Huber = _wrapper("Huber", huber, "huber_loss", "Huber loss (``huber``)." + _COMMON
                 + "\n        delta: where the loss turns from quadratic to linear.",
                 delta=1.0)
LogCosh = _wrapper("LogCosh", log_cosh, "log_cosh",
                   "Logarithm of the hyperbolic cosine of the error." + _COMMON)
KLDivergence = _wrapper("KLDivergence", kl_divergence, "kl_divergence",
                        "Kullback-Leibler divergence (``kl_divergence``)." + _COMMON)
Poisson = _wrapper("Poisson", poisson, "poisson",
                   "Poisson negative log-likelihood (``poisson``)." + _COMMON)
Hinge = _wrapper("Hinge", hinge, "hinge", "Hinge loss (``hinge``)." + _COMMON)
SquaredHinge = _wrapper("SquaredHinge", squared_hinge, "squared_hinge",
                        "Squared hinge loss (``squared_hinge``)." + _COMMON)
CategoricalHinge = _wrapper(
    "CategoricalHinge", categorical_hinge, "categorical_hinge",
    "Categorical hinge loss (``categorical_hinge``)." + _COMMON)
CosineSimilarity = _wrapper(
    "CosineSimilarity", cosine_similarity, "cosine_similarity",
    "Negative cosine similarity (``cosine_similarity``)." + _COMMON
    + "\n        axis: the axis along which similarity is computed.", axis=-1)
BinaryCrossentropy = _wrapper(
    "BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
    "Binary cross-entropy (``binary_crossentropy``)." + _COMMON
    + "\n        from_logits, label_smoothing, axis: as ``binary_crossentropy``.",
    from_logits=False, label_smoothing=0.0, axis=-1)
CategoricalCrossentropy = _wrapper(
    "CategoricalCrossentropy", categorical_crossentropy, "categorical_crossentropy",
    "Categorical cross-entropy (``categorical_crossentropy``)." + _COMMON
    + "\n        from_logits, label_smoothing, axis: as the function.",
    from_logits=False, label_smoothing=0.0, axis=-1)
_SparseBase = _wrapper(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy", "", from_logits=False, ignore_class=None)


class SparseCategoricalCrossentropy(_SparseBase):
    """Cross-entropy with integer labels (``sparse_categorical_crossentropy``).

    With ``ignore_class``, samples of that label get loss 0 and are left out of
    the "sum_over_batch_size" divisor, as Keras' masking does.

    Args:
        from_logits, ignore_class: as the function.
        reduction: as ``Loss``.
        name: name of the loss.
    """

    def __call__(self, y_true, y_pred, sample_weight=None):
        ignore = self._fn_kwargs["ignore_class"]
        if ignore is None:
            return super().__call__(y_true, y_pred, sample_weight)
        with name_scope(self.name):
            values = self.call(y_true, y_pred)
            labels = _sparse_labels(y_true, _tensor(y_pred))
            mask = ops.cast(ops.not_equal(labels, ignore), values.dtype)
            return reduce_weighted_values(values, sample_weight, self.reduction,
                                          mask=mask)


# -- lookup --------------------------------------------------------------------------
_FUNCTIONS = (mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
              mean_squared_logarithmic_error, huber, log_cosh, binary_crossentropy,
              categorical_crossentropy, sparse_categorical_crossentropy,
              kl_divergence, poisson, hinge, squared_hinge, categorical_hinge,
              cosine_similarity)
_CLASSES = (Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Huber,
            LogCosh, BinaryCrossentropy, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, KLDivergence, Poisson, Hinge,
            SquaredHinge, CategoricalHinge, CosineSimilarity)
_OBJECTS: dict[str, Any] = {f.__name__: f for f in _FUNCTIONS}
_OBJECTS.update({c.__name__: c for c in _CLASSES})
_OBJECTS.update(mse=mse, mae=mae, mape=mape, msle=msle, kld=kld, logcosh=log_cosh,
                kullback_leibler_divergence=kl_divergence)


def serialize(loss) -> Any:
    """The name of a loss function, or the class_name/config dict of an object."""
    return serialize_object(loss)


def deserialize(config, custom_objects=None) -> Any:
    """A loss function (from its name) or object (from a class name or dict).

    Raises:
        ValueError: an unknown name, listing the valid ones.
    """
    return deserialize_object(config, _OBJECTS, "loss", custom_objects)


def get(identifier) -> Callable | None:
    """Resolves a loss identifier (Keras 3's ``losses.get``).

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
    return get_object(identifier, _OBJECTS, "loss")
