"""TF 1.x Estimator programs reach tf.estimator, tf.feature_column, tf.metrics
and tf.contrib.distribute through ``import kerasflow.compat.v1 as tf``.

Ported: TF 1.x "Creating Custom Estimators" (tensorflow/models
samples/core/get_started/custom_estimator.py) on iris, with only the import
changed; the data comes from the shared iris.csv.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
import kerasflow.compat.v1 as tf

COLUMNS = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth"]


def my_model(features, labels, mode, params):
    """DNN with three hidden layers and learning_rate=0.1 (the tutorial's)."""
    net = tf.feature_column.input_layer(features, params["feature_columns"])
    for units in params["hidden_units"]:
        net = tf.layers.dense(net, units=units, activation=tf.nn.relu)
    logits = tf.layers.dense(net, params["n_classes"], activation=None)
    predicted_classes = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {"class_ids": predicted_classes[:, tf.newaxis],
                       "probabilities": tf.nn.softmax(logits), "logits": logits}
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=predicted_classes,
                                   name="acc_op")
    metrics = {"accuracy": accuracy}
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = tf.train.AdagradOptimizer(learning_rate=0.1)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _iris(data_dir):
    data = np.loadtxt(data_dir / "iris" / "iris.csv", delimiter=",", skiprows=1)
    rng = np.random.RandomState(0)
    order = rng.permutation(len(data))
    train, test = data[order[:120]], data[order[120:]]

    def split(rows):
        return ({c: rows[:, i].astype(np.float32) for i, c in enumerate(COLUMNS)},
                rows[:, 4].astype(np.int64))
    return split(train), split(test)


def test_custom_estimator_tutorial_runs_with_tf_names(data_dir, tmp_path):
    (train_x, train_y), (test_x, test_y) = _iris(data_dir)
    feature_columns = [tf.feature_column.numeric_column(key=k) for k in COLUMNS]
    classifier = tf.estimator.Estimator(
        model_fn=my_model, model_dir=str(tmp_path),
        config=tf.estimator.RunConfig(tf_random_seed=1),
        params={"feature_columns": feature_columns, "hidden_units": [10, 10],
                "n_classes": 3})

    def train_input_fn():
        ds = tf.data.Dataset.from_tensor_slices((dict(train_x), train_y))
        return ds.shuffle(1000, seed=1).repeat().batch(32)

    def eval_input_fn():
        return tf.data.Dataset.from_tensor_slices((dict(test_x), test_y)).batch(32)

    classifier.train(input_fn=train_input_fn, steps=1000)
    result = classifier.evaluate(input_fn=eval_input_fn)
    assert result["accuracy"] >= 0.9
    assert result["global_step"] == 1000


def test_contrib_distribute_names_are_kerasflow_strategies():
    assert tf.contrib.distribute.MirroredStrategy is kf.distribute.MirroredStrategy
    assert (tf.contrib.distribute.CollectiveAllReduceStrategy
            is kf.distribute.MultiWorkerMirroredStrategy)
    assert (tf.contrib.distribute.ParameterServerStrategy
            is kf.distribute.ParameterServerStrategy)
    with pytest.raises(NotImplementedError, match="tf.contrib.layers"):
        tf.contrib.layers  # noqa: B018
    with pytest.raises(NotImplementedError, match="tf.contrib.distribute.TPU"):
        tf.contrib.distribute.TPUStrategy  # noqa: B018


def test_tf_metrics_is_the_estimator_metric_module():
    assert tf.metrics.accuracy is kf.estimators.metrics.accuracy
    assert tf.estimator.Estimator is kf.estimators.Estimator
