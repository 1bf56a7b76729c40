"""A small model_fn and data shared by the estimator tests."""

from __future__ import annotations

import numpy as np

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.estimators import EstimatorSpec, ModeKeys, metrics


def model_fn(features, labels, mode, params):
    x = features["x"]
    h = kf.layers.Dense(8, activation="relu")(x)
    logits = kf.layers.Dense(3)(h)
    cls = K.argmax(logits, -1)
    preds = {"class_ids": cls, "probabilities": K.softmax(logits)}
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions=preds)
    loss = K.mean(K.sparse_softmax_cross_entropy_with_logits(labels, logits))
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss, predictions=preds,
                             eval_metric_ops={"accuracy": metrics.accuracy(labels,
                                                                           cls)})
    opt = kf.optimizers.Adam(params.get("lr", 0.01))
    op = opt.minimize(loss, global_step=kf.train.get_or_create_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=op, predictions=preds)


def data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = ((x[:, 0] > 0).astype(int) + (x[:, 1] > 0)).astype(np.int64)
    return x, y


def train_input(x, y, batch_size=32, seed=0):
    return kf.estimators.inputs.numpy_input_fn({"x": x}, y, batch_size=batch_size,
                                               num_epochs=None, shuffle=True,
                                               seed=seed)


def eval_input(x, y):
    return kf.estimators.inputs.numpy_input_fn({"x": x}, y, batch_size=100,
                                               shuffle=False)
