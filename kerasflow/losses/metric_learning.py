"""Keras 3's newer losses: ``Circle`` (metric learning on embeddings, Sun et
al., CVPR 2020) and ``CategoricalGeneralizedCrossEntropy`` (robust to noisy
labels, Zhang & Sabuncu, NeurIPS 2018), as functions and ``Loss`` classes.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import ops
from kerasflow.losses.base import (
    Loss,
    LossFunctionWrapper,
    as_tensor,
    reduce_weighted_values,
    register,
)

__all__ = ["CategoricalGeneralizedCrossEntropy", "Circle",
           "categorical_generalized_cross_entropy", "circle"]


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """``(1 - p**q) / q`` with ``p`` the predicted probability of the true
    class: cross-entropy as ``q -> 0``, MAE at ``q = 1``.

    Args:
        y_true: integer labels, (batch,).
        y_pred: class probabilities, (batch, classes), float.
        q: in (0, 1).

    Returns:
        (batch,) losses, y_pred's dtype.
    """
    y_pred = as_tensor(y_pred)
    depth = y_pred.shape[-1]
    one_hot = ops.one_hot(ops.cast(as_tensor(y_true), "int64"), depth,
                          np.dtype(y_pred.dtype).name)
    p = ops.sum(ops.multiply(y_pred, one_hot), axis=-1)
    return ops.divide(ops.subtract(1.0, ops.power(p, float(q))), float(q))


def _masks(labels, ref_labels, remove_diagonal):
    positive = ops.equal(ops.expand_dims(labels, 1), ops.expand_dims(ref_labels, 0))
    negative = ops.logical_not(positive)
    if remove_diagonal:
        n, m = labels.shape[0], ref_labels.shape[0]
        if n is None or m is None:
            raise ValueError("circle(remove_diagonal=True) needs known batch sizes."
                             f" Received: {n} labels, {m} reference labels.")
        positive = ops.logical_and(positive, np.logical_not(np.eye(n, m, dtype=bool)))
    return positive, negative


def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None,
           remove_diagonal=True, gamma=80, margin=0.4):
    """Circle loss per sample (Keras 3's ``keras.losses.circle``): pairs of
    L2-normalized embeddings with the same label are pulled together, others
    pushed apart, each pair weighted by how far it is from its optimum.

    Args:
        y_true: integer labels, (batch,).
        y_pred: L2-normalized embeddings, (batch, d).
        ref_labels, ref_embeddings: the pairs' other side (default: the batch).
        remove_diagonal: leave out each sample paired with itself.
        gamma: scale factor. margin: relaxation margin.

    Returns:
        (batch,) losses (0 for samples without a positive or negative pair).
    """
    y_pred = as_tensor(y_pred)
    labels = ops.cast(as_tensor(y_true), "int32")
    ref = y_pred if ref_embeddings is None else as_tensor(ref_embeddings)
    ref_labels = labels if ref_labels is None else ops.cast(as_tensor(ref_labels),
                                                            "int32")
    distances = ops.maximum(ops.subtract(1.0, ops.matmul(y_pred, ref,
                                                         transpose_b=True)), 0.0)
    positive, negative = _masks(labels, ref_labels, remove_diagonal)
    dtype = np.dtype(distances.dtype).name
    pos_w = ops.maximum(ops.multiply(ops.add(margin, distances),
                                     ops.cast(positive, dtype)), 0.0)
    neg_w = ops.maximum(ops.multiply(ops.subtract(1.0 + margin, distances),
                                     ops.cast(negative, dtype)), 0.0)
    pos = ops.multiply(-float(gamma), ops.multiply(pos_w, ops.subtract(margin,
                                                                        distances)))
    neg = ops.multiply(float(gamma), ops.multiply(neg_w, ops.subtract(1.0 - margin,
                                                                      distances)))
    minus_inf = np.asarray(-np.inf, dtype)
    p_loss = ops.logsumexp(ops.where(positive, pos, minus_inf), axis=1)
    n_loss = ops.logsumexp(ops.where(negative, neg, minus_inf), axis=1)
    return ops.softplus(ops.add(p_loss, n_loss))


class Circle(Loss):
    """``circle`` as a ``Loss``; the reduction averages over the samples with
    a non-zero loss (Keras 3 masks the others out).

    Args:
        gamma, margin, remove_diagonal: as ``circle``.
        reduction, name, dtype: as ``Loss``.
    """

    def __init__(self, gamma=80.0, margin=0.4, remove_diagonal=True,
                 reduction="sum_over_batch_size", name="circle", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)
        self.gamma, self.margin, self.remove_diagonal = gamma, margin, \
            remove_diagonal

    def call(self, y_true, y_pred):
        return circle(y_true, y_pred, remove_diagonal=self.remove_diagonal,
                      gamma=self.gamma, margin=self.margin)

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        mask = ops.cast(ops.greater(values, 0.0), np.dtype(values.dtype).name)
        return reduce_weighted_values(values, sample_weight, self.reduction, mask)

    def get_config(self):
        return {**super().get_config(), "gamma": self.gamma, "margin": self.margin,
                "remove_diagonal": self.remove_diagonal}


class CategoricalGeneralizedCrossEntropy(LossFunctionWrapper):
    """``categorical_generalized_cross_entropy`` as a ``Loss``.

    Args:
        q: in (0, 1).
        reduction, name, dtype: as ``Loss``.

    Raises:
        ValueError: q outside (0, 1).
    """

    def __init__(self, q=0.5, reduction="sum_over_batch_size",
                 name="categorical_generalized_cross_entropy", dtype=None):
        if not 0 < q < 1:
            raise ValueError(f"q must be in the interval (0, 1). Received: q={q}")
        super().__init__(categorical_generalized_cross_entropy, reduction=reduction,
                         name=name, dtype=dtype, q=q)
        self.q = q


register(circle, categorical_generalized_cross_entropy, Circle,
         CategoricalGeneralizedCrossEntropy)
