"""Probabilistic losses: binary, categorical and sparse cross-entropy,
Kullback-Leibler divergence and Poisson (Keras 3's ``keras.losses``).

Cross-entropies given probabilities clip them to [1e-7, 1 - 1e-7] before the
log. When ``y_pred`` is a symbolic softmax/sigmoid output carrying
``_keras_logits`` (set by ``kerasflow.activations``), they use the logits and the
fused stable backend op instead, as Keras does.
"""

from __future__ import annotations

from kerasflow.backend import name_scope, ops
from kerasflow.losses.base import (
    EPSILON,
    _is_last,
    _prepare,
    as_tensor,
    check_same_shape,
    reduce_weighted_values,
    register,
    warn_one_class,
    wrapper_class,
)

__all__ = [
    "BinaryCrossentropy", "CategoricalCrossentropy", "KLDivergence", "Poisson",
    "SparseCategoricalCrossentropy", "binary_crossentropy",
    "categorical_crossentropy", "kl_divergence", "kld", "poisson", "sparse_labels",
    "sparse_categorical_crossentropy",
]


def _logits(y_pred, sigmoid):
    # Logits recorded by a sigmoid (binary) or softmax (categorical) activation.
    # Another activation's logits would give a wrong loss: a binary loss takes
    # them only from a Sigmoid node, a categorical one from any other node.
    logits = getattr(y_pred, "_keras_logits", None)
    if logits is None or (y_pred.node.op == "Sigmoid") != sigmoid:
        return None
    return logits


def sparse_labels(y_true, y_pred):
    """Integer class labels from ``y_true`` against predictions ``y_pred``.

    A trailing size-1 axis (batch..., 1) is dropped when ``y_pred`` has the
    same rank; float labels (Keras' float label arrays) become int64.

    Raises:
        ValueError: labels with a class axis (one-hot), saying to use the
            categorical loss or integer labels.
    """
    y_true = as_tensor(y_true)
    if y_true.ndim is not None and y_true.ndim == y_pred.ndim:
        if y_true.shape[-1] not in (1, None):
            raise ValueError(
                f"Sparse losses and metrics (sparse_categorical_crossentropy, "
                f"sparse_categorical_accuracy) expect integer class labels of "
                f"shape (batch,) or (batch, 1). Received: labels of shape "
                f"{tuple(y_true.shape)} for predictions of shape "
                f"{tuple(y_pred.shape)}, one-hot labels: use "
                f"categorical_crossentropy (and categorical_accuracy), or integer "
                f"class labels (np.argmax(y, axis=-1)).")
        if y_true.shape[-1] == 1:
            y_true = ops.squeeze(y_true, -1)
    return y_true if y_true.dtype.kind in "iu" else ops.cast(y_true, "int64")


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

    Raises:
        ValueError: target and output shapes differ (after a trailing size-1
            axis is squeezed or added), as Keras.
    """
    if not from_logits:
        logits = _logits(y_pred, sigmoid=True)
        if logits is not None:
            y_pred, from_logits = logits, True
    y_true, y_pred = _prepare(y_true, y_pred)
    check_same_shape(y_true, y_pred)
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
        ValueError: ``y_true`` and ``y_pred`` of different known shapes, as
            Keras ("must have the same shape"), symbolic or eager.
    """
    if not from_logits and _is_last(y_pred, axis):
        logits = _logits(y_pred, sigmoid=False)
        if logits is not None:
            y_pred, from_logits = logits, True
    y_pred = as_tensor(y_pred)
    y_true = ops.cast(as_tensor(y_true), y_pred.dtype)
    warn_one_class("categorical_crossentropy", y_pred)
    check_same_shape(y_true, y_pred)
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
    if not _is_last(as_tensor(y_pred), axis):
        raise ValueError(
            f"sparse_categorical_crossentropy supports only the last axis. "
            f"Received: axis={axis}."
        )
    if not from_logits:
        logits = _logits(y_pred, sigmoid=False)
        if logits is not None:
            y_pred, from_logits = logits, True
    y_pred = as_tensor(y_pred)
    labels = sparse_labels(y_true, y_pred)
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


kld = KLD = kullback_leibler_divergence = kl_divergence

KLDivergence = wrapper_class("KLDivergence", kl_divergence,
                            "Kullback-Leibler divergence.", __name__)
Poisson = wrapper_class("Poisson", poisson, "Poisson negative log-likelihood.",
                        __name__)
BinaryCrossentropy = wrapper_class(
    "BinaryCrossentropy", binary_crossentropy, "Binary cross-entropy.", __name__,
    from_logits=False, label_smoothing=0.0, axis=-1)
CategoricalCrossentropy = wrapper_class(
    "CategoricalCrossentropy", categorical_crossentropy,
    "Categorical cross-entropy.", __name__, from_logits=False,
    label_smoothing=0.0, axis=-1)
_SparseBase = wrapper_class(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy, "",
    __name__, from_logits=False, ignore_class=None)


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
            labels = sparse_labels(y_true, as_tensor(y_pred))
            mask = ops.cast(ops.not_equal(labels, ignore), values.dtype)
            return reduce_weighted_values(values, sample_weight, self.reduction,
                                          mask=mask)


register(binary_crossentropy, categorical_crossentropy,
         sparse_categorical_crossentropy, kl_divergence, poisson,
         BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
         KLDivergence, Poisson, kld=kld, kullback_leibler_divergence=kl_divergence)
