"""A custom ``model_fn`` Estimator: an MLP on MNIST with eval_metric_ops.

``model_fn`` builds the network from the features with kerasflow layers, and
returns an ``EstimatorSpec`` per mode: predictions, the loss, a train op from
``optimizer.minimize(loss, global_step=...)`` and an accuracy metric pair.

Run: KERASFLOW_DATA_DIR=../shared/data python examples/custom_estimator.py
(prints the test accuracy; about 0.98)
"""

import os
import tempfile

import numpy as np

import kerasflow as kf
from kerasflow import backend as K

ModeKeys = kf.estimator.ModeKeys


def model_fn(features, labels, mode, params):
    net = features["image"]
    for units in params["hidden_units"]:
        net = kf.layers.Dense(units, activation="relu")(net)
        net = kf.layers.Dropout(params["dropout"])(net,
                                                  training=mode == ModeKeys.TRAIN)
    logits = kf.layers.Dense(10)(net)
    predicted_classes = K.argmax(logits, axis=-1)

    if mode == ModeKeys.PREDICT:
        predictions = {"class_ids": predicted_classes,
                       "probabilities": K.softmax(logits),
                       "logits": logits}
        return kf.estimator.EstimatorSpec(mode, predictions=predictions)

    loss = K.mean(K.sparse_softmax_cross_entropy_with_logits(labels, logits))
    accuracy = kf.estimator.metrics.accuracy(labels=labels,
                                             predictions=predicted_classes)
    if mode == ModeKeys.EVAL:
        return kf.estimator.EstimatorSpec(mode, loss=loss,
                                          eval_metric_ops={"accuracy": accuracy})

    optimizer = kf.optimizers.Adam(learning_rate=params["learning_rate"])
    train_op = optimizer.minimize(loss,
                                  global_step=kf.train.get_or_create_global_step())
    return kf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(epochs=10, batch_size=128, data=None, model_dir=None, seed=0,
         train_limit=None):
    data = data or os.path.join(os.environ.get("KERASFLOW_DATA_DIR",
                                               "../shared/data"), "mnist")
    (x_train, y_train), (x_test, y_test) = kf.datasets.mnist.load_data(path=data)
    x_train = x_train.reshape(-1, 784).astype(np.float32) / 255.0
    x_test = x_test.reshape(-1, 784).astype(np.float32) / 255.0
    if train_limit:
        x_train, y_train = x_train[:train_limit], y_train[:train_limit]

    classifier = kf.estimator.Estimator(
        model_fn=model_fn,
        model_dir=model_dir or tempfile.mkdtemp(prefix="mnist_model_"),
        params={"hidden_units": [512, 512], "dropout": 0.2, "learning_rate": 1e-3},
        config=kf.estimator.RunConfig(tf_random_seed=seed,
                                      save_checkpoints_steps=2000))
    classifier.train(kf.estimator.inputs.numpy_input_fn(
        {"image": x_train}, y_train.astype(np.int64), batch_size=batch_size,
        num_epochs=epochs, shuffle=True, seed=seed))
    results = classifier.evaluate(kf.estimator.inputs.numpy_input_fn(
        {"image": x_test}, y_test.astype(np.int64), batch_size=1000,
        shuffle=False))
    print(f"test loss {results['loss']:.4f} - test accuracy "
          f"{results['accuracy']:.4f} - global step {results['global_step']}")
    return results["accuracy"]


if __name__ == "__main__":
    main()
