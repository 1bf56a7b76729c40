"""Focal, overlap and sequence losses: binary and categorical focal
cross-entropy (Lin et al., "Focal Loss for Dense Object Detection", ICCV 2017),
Dice and Tversky (Salehi et al., 2017), and CTC (Graves et al., ICML 2006), as
Keras 3 defines them."""

from __future__ import annotations

from kerasflow.backend import ops
from kerasflow.losses.base import (
    EPSILON,
    _prepare,
    as_tensor,
    register,
    warn_one_class,
    wrapper_class,
)

__all__ = ["BinaryFocalCrossentropy", "CTC", "CategoricalFocalCrossentropy", "Dice",
           "Tversky", "ctc", "binary_focal_crossentropy", "categorical_focal_crossentropy",
           "dice", "tversky"]


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False,
                              alpha=0.25, gamma=2.0, from_logits=False,
                              label_smoothing=0.0, axis=-1):
    """Binary cross-entropy scaled by ``(1 - p_t) ** gamma``, mean over ``axis``.

    ``p_t`` is the probability given to the true class; easy examples (p_t
    near 1) count less. With ``apply_class_balancing`` positives are weighted
    ``alpha`` and negatives ``1 - alpha``.

    Args:
        y_true: targets in [0, 1], shape like ``y_pred`` (a trailing size-1 axis
            may differ). y_pred: probabilities, or logits with ``from_logits``.
        gamma: focusing exponent >= 0 (0: plain binary cross-entropy).
        label_smoothing: targets become ``y * (1 - s) + 0.5 * s``.

    Returns:
        Tensor of ``y_pred``'s shape without ``axis``.
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = ops.sigmoid(y_pred)
    p = ops.clip(y_pred, EPSILON, 1.0 - EPSILON)
    bce = -(y_true * ops.log(p) + (1.0 - y_true) * ops.log(1.0 - p))
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = ops.power(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return ops.mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0,
                                   from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    """``sum(alpha * (1 - p) ** gamma * -y_true * log(p), axis)``: categorical
    cross-entropy with easy classes down-weighted.

    Args:
        y_true: one-hot or probability targets, (batch, classes).
        y_pred: probabilities (renormalized, clipped to [1e-7, 1 - 1e-7]) or
            logits with ``from_logits``; same shape.
        alpha: weighting factor; gamma: focusing exponent >= 0.
        label_smoothing: targets become ``y * (1 - s) + s / classes``.

    Returns:
        Tensor of shape (batch,).
    """
    y_pred = as_tensor(y_pred)
    y_true = ops.cast(as_tensor(y_true), y_pred.dtype)
    warn_one_class("categorical_focal_crossentropy", y_pred)
    if label_smoothing:
        classes = ops.reduced_count(y_pred, axis, y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        y_pred = ops.softmax(y_pred, axis=axis)
    p = ops.clip(y_pred / ops.sum(y_pred, axis=axis, keepdims=True),
                 EPSILON, 1.0 - EPSILON)
    focal = alpha * ops.power(1.0 - p, gamma) * (-y_true * ops.log(p))
    return ops.sum(focal, axis=axis)


def dice(y_true, y_pred, axis=None):
    """``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + eps)``
    over ``axis`` (None: every axis, one scalar for the batch, as Keras).

    Args:
        y_true: targets in [0, 1]; y_pred: predictions in [0, 1]; same shape.
        axis: axes summed over; e.g. ``(1, 2)`` for one loss per image.
    """
    y_pred = as_tensor(y_pred)
    y_true = ops.cast(as_tensor(y_true), y_pred.dtype)
    intersection = ops.sum(y_true * y_pred, axis=axis)
    total = ops.sum(y_true, axis=axis) + ops.sum(y_pred, axis=axis) + EPSILON
    return 1.0 - 2.0 * intersection / total


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """``1 - TP / (TP + alpha * A + beta * B + eps)`` with ``TP = sum(y_true *
    y_pred)``, ``A = sum(y_true * (1 - y_pred))`` and ``B = sum((1 - y_true) *
    y_pred)`` over ``axis``, as Keras 3 computes it (alpha = beta = 0.5 is
    Dice).

    Args:
        y_true, y_pred: as ``dice``. alpha, beta: the two error weights.
    """
    y_pred = as_tensor(y_pred)
    y_true = ops.cast(as_tensor(y_true), y_pred.dtype)
    tp = ops.sum(y_true * y_pred, axis=axis)
    a = ops.sum(y_true * (1.0 - y_pred), axis=axis)
    b = ops.sum((1.0 - y_true) * y_pred, axis=axis)
    return 1.0 - tp / (tp + alpha * a + beta * b + EPSILON)


def ctc(y_true, y_pred):
    """CTC negative log-likelihood of each sequence (Keras 3's ``ctc``).

    Args:
        y_true: int (batch, max_label_length) label ids, padded with 0 (class 0
            is the blank, Keras' ``mask_index``), so labels use ids >= 1.
        y_pred: float (batch, steps, classes) logits for every step.

    Returns:
        float (batch,).

    Raises:
        ValueError: y_true not of rank 2 or y_pred not of rank 3 (naming the
            shapes).
    """
    y_pred = as_tensor(y_pred)
    y_true = as_tensor(y_true)
    if y_true.ndim != 2 or y_pred.ndim != 3:
        raise ValueError(f"CTC expects y_true (batch_size, max_length) int labels "
                         f"and y_pred (batch_size, max_length, num_classes) "
                         f"logits. Received: y_true.shape={y_true.shape}, "
                         f"y_pred.shape={y_pred.shape}.")
    labels = ops.cast(y_true, "int64")
    label_length = ops.sum(ops.cast(ops.not_equal(labels, 0), "int64"), axis=-1)
    steps = ops.sum(ops.ones_like(y_pred[:, :, 0]), axis=-1)
    return ops.ctc_loss(labels, y_pred, label_length, ops.cast(steps, "int64"),
                        blank_index=0)


BinaryFocalCrossentropy = wrapper_class(
    "BinaryFocalCrossentropy", binary_focal_crossentropy,
    "Binary focal cross-entropy (Lin et al., 2017).", __name__,
    apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
    label_smoothing=0.0, axis=-1)
CategoricalFocalCrossentropy = wrapper_class(
    "CategoricalFocalCrossentropy", categorical_focal_crossentropy,
    "Categorical focal cross-entropy (Lin et al., 2017).", __name__, alpha=0.25,
    gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1)
Dice = wrapper_class("Dice", dice, "Dice loss.", __name__, axis=None)
CTC = wrapper_class("CTC", ctc, "Connectionist temporal classification loss.",
                    __name__)
Tversky = wrapper_class("Tversky", tversky, "Tversky loss.", __name__, alpha=0.5,
                        beta=0.5, axis=None)

register(binary_focal_crossentropy, categorical_focal_crossentropy, dice, tversky,
         ctc, BinaryFocalCrossentropy, CategoricalFocalCrossentropy, Dice, Tversky, CTC)
