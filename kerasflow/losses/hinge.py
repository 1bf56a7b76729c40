"""Maximum-margin losses: hinge, squared hinge and categorical hinge (Keras 3's
``keras.losses``), as functions (one value per sample) and ``Loss`` classes."""

from __future__ import annotations

from kerasflow.backend import ops
from kerasflow.losses.base import _prepare, register, wrapper_class

__all__ = ["CategoricalHinge", "Hinge", "SquaredHinge", "categorical_hinge", "hinge",
           "squared_hinge"]


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


Hinge = wrapper_class("Hinge", hinge, "Hinge loss.", __name__)
SquaredHinge = wrapper_class("SquaredHinge", squared_hinge, "Squared hinge loss.",
                             __name__)
CategoricalHinge = wrapper_class("CategoricalHinge", categorical_hinge,
                                 "Categorical hinge loss.", __name__)

register(hinge, squared_hinge, categorical_hinge, Hinge, SquaredHinge,
         CategoricalHinge)
