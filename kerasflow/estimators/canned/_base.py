"""What canned estimators share: feature transform, heads, optimizers, DNN."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import layers, optimizers
from kerasflow import train as train_lib
from kerasflow.estimators.canned.heads import (
    WEIGHT_KEY,
    ClassificationHead,
    RegressionHead,
)
from kerasflow.estimators.estimator import Estimator
from kerasflow.feature_column import base as fc_base
from kerasflow.feature_column import input_layer, numeric_column, transform_features

__all__ = [
    "CannedEstimator",
    "dnn_logits",
    "get_optimizer",
    "make_head",
    "minimize_all",
]


def make_head(n_classes=None, label_vocabulary=None, label_dimension=None):
    if label_dimension is not None:
        return RegressionHead(label_dimension)
    return ClassificationHead(n_classes, label_vocabulary)


def get_optimizer(opt, default_name, default_lr):
    """An optimizer from None/name/instance/callable, with TF's canned defaults."""
    if opt is None:
        opt = default_name
    if isinstance(opt, str):
        return optimizers.deserialize({"class_name": opt,
                                       "config": {"learning_rate": default_lr}})
    if isinstance(opt, optimizers.Optimizer):
        return opt
    if callable(opt):
        made = opt()
        if not isinstance(made, optimizers.Optimizer):
            raise TypeError(f"An optimizer callable must return an Optimizer. "
                            f"Received: {made!r}.")
        return made
    raise TypeError(f"optimizer must be a name, an Optimizer or a callable "
                    f"returning one. Received: {opt!r}.")


def minimize_all(loss, pairs):
    """One train op: each (optimizer, var_list) applies its part of one backprop.

    Also increments the global step. One optimizer gives ``minimize``'s
    ``TrainOp`` (which every strategy can split into compute / apply); several
    give a ``group`` run in process.
    """
    gs = train_lib.get_or_create_global_step()
    if len(pairs) == 1:
        opt, var_list = pairs[0]
        return opt.minimize(loss, global_step=gs, var_list=var_list)
    all_vars = [v for _, vs in pairs for v in vs]
    grads = K.gradients(loss, all_vars)
    updates, i = [], 0
    for opt, vs in pairs:
        g = grads[i:i + len(vs)]
        i += len(vs)
        updates += opt.apply_gradients(zip(g, vs))
    updates.append(K.assign_add(gs, 1))
    return K.group(*updates, name="train_op")


def dnn_logits(inputs, hidden_units, units, activation_fn, dropout, training,
               prefix="dnn"):
    """Hidden Dense layers (+ dropout when training) and a linear logits layer."""
    h = inputs
    for i, n in enumerate(hidden_units):
        h = layers.Dense(int(n), activation=activation_fn,
                         name=f"{prefix}_hiddenlayer_{i}")(h)
        if dropout and training:
            h = layers.Dropout(float(dropout))(h, training=True)
    return layers.Dense(units, name=f"{prefix}_logits")(h)


def _all_columns(columns):
    out, seen = [], set()
    for c in columns:
        if id(c) not in seen:
            seen.add(id(c))
            out.append(c)
    return out


class CannedEstimator(Estimator):
    """An Estimator fed through feature columns (raw dict features allowed)."""

    def __init__(self, model_fn, head, feature_columns, weight_column=None,
                 model_dir=None, config=None, warm_start_from=None):
        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)
        self._head = head
        self._columns = _all_columns(feature_columns)
        if not self._columns:
            raise ValueError("A canned estimator needs at least one feature column.")
        if isinstance(weight_column, str):
            weight_column = numeric_column(weight_column)
        self._weight_column = weight_column
        self._feature_transform = self._transform
        self._label_transform = head.transform_labels
        self._prediction_transform = head.postprocess

    def _transform(self, features):
        if not isinstance(features, dict):
            if len(self._columns) == 1 and hasattr(self._columns[0], "key"):
                features = {self._columns[0].key: features}
            else:
                raise TypeError(f"Canned estimators take a dict of features keyed "
                                f"as the feature columns. Received: "
                                f"{type(features).__name__}.")
        out = transform_features(features, self._columns)
        if self._weight_column is not None:
            w = self._weight_column.values(features)
            out[WEIGHT_KEY] = w[:, 0].astype(np.float32)
        return out


def dense_input(features, columns, scope):
    """input_layer over dense columns in variable scope ``scope``."""
    return input_layer(features, columns, state={"scope": scope})


def check_dense(columns, what):
    for c in columns:
        if not isinstance(c, fc_base.DenseColumn):
            raise TypeError(f"{what} expects dense feature columns (numeric, "
                            f"bucketized, indicator, embedding). Received: {c!r}; "
                            f"wrap categorical columns in indicator_column or "
                            f"embedding_column.")
    return list(columns)
