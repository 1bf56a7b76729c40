"""``tf.losses`` (TF1): weighted mean losses and the loss collections.

Each loss is the mean over all elements (TF1's default reduction
``SUM_BY_NONZERO_WEIGHTS`` with a scalar weight), scaled by ``weights``, and
is added to ``GraphKeys.LOSSES``, from which ``get_total_loss`` sums.
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1._missing import missing_attribute

__all__ = ["mean_squared_error", "absolute_difference", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy", "sigmoid_cross_entropy", "add_loss",
           "get_losses", "get_regularization_loss", "get_regularization_losses",
           "get_total_loss"]

_t = G.as_tensor


def _finish(per_element, weights, loss_collection):
    loss = K.mean(K.multiply(per_element, _t(weights, per_element.dtype)))
    if loss_collection:
        G.add_to_collection(loss_collection, loss)
    return G.track(loss)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=G.GraphKeys.LOSSES, reduction=None):
    predictions = _t(predictions)
    diff = K.subtract(K.cast(_t(labels), predictions.dtype), predictions)
    return _finish(K.square(diff), weights, loss_collection)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=G.GraphKeys.LOSSES, reduction=None):
    predictions = _t(predictions)
    diff = K.subtract(K.cast(_t(labels), predictions.dtype), predictions)
    return _finish(K.abs(diff), weights, loss_collection)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=G.GraphKeys.LOSSES,
                          reduction=None):
    logits = _t(logits)
    labels = K.cast(_t(onehot_labels), logits.dtype)
    if label_smoothing:
        n = logits.shape[-1]
        labels = K.add(K.multiply(labels, 1.0 - label_smoothing),
                       label_smoothing / n)
    return _finish(K.softmax_cross_entropy_with_logits(labels, logits), weights,
                   loss_collection)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=G.GraphKeys.LOSSES,
                                 reduction=None):
    return _finish(K.sparse_softmax_cross_entropy_with_logits(_t(labels),
                                                              _t(logits)),
                   weights, loss_collection)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0,
                          label_smoothing=0, scope=None,
                          loss_collection=G.GraphKeys.LOSSES, reduction=None):
    logits = _t(logits)
    labels = K.cast(_t(multi_class_labels), logits.dtype)
    if label_smoothing:
        labels = K.add(K.multiply(labels, 1.0 - label_smoothing),
                       0.5 * label_smoothing)
    return _finish(K.sigmoid_cross_entropy_with_logits(labels, logits), weights,
                   loss_collection)


def add_loss(loss, loss_collection=G.GraphKeys.LOSSES):
    if loss_collection:
        G.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=G.GraphKeys.LOSSES) -> list:
    return G.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    return G.get_collection(G.GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """Sum of the regularization losses (0.0 if none)."""
    losses = get_regularization_losses(scope)
    return G.track(K.add_n(losses)) if losses else G.as_tensor(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """Sum of ``get_losses()`` (plus the regularization losses).

    Raises:
        ValueError: no losses at all.
    """
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses found.")
    return G.track(K.add_n(losses))


__getattr__ = missing_attribute("tf.losses", globals())
