"""Acceptance (issue 19): the MNIST functional model with raw ops between its
layers (slicing, ``(a + b) * 0.5``, ``ops.concatenate``) trains, saves with
``model.save``, loads with ``load_model`` and predicts identically.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np

import kerasflow as kf
from kerasflow import ops

layers = kf.layers


def _model():
    image = kf.Input((28, 28), name="image")
    x = image / 255.0
    left = layers.Flatten()(x[:, :, :14])
    right = layers.Flatten()(x[:, :, 14:])
    a = layers.Dense(64, activation="relu", name="left_dense")(left)
    b = layers.Dense(64, activation="relu", name="right_dense")(right)
    h = (a + b) * 0.5
    h = ops.concatenate([h, a * b, ops.mean(x, axis=(1, 2))[:, None]], axis=-1)
    return kf.Model(image, layers.Dense(10, activation="softmax",
                                        name="digits")(h))


def test_mnist_functional_model_with_raw_ops_saves_loads_predicts_identically(
        data_dir, tmp_path):
    (x_train, y_train), (x_test, y_test) = kf.datasets.mnist.load_data()
    np.random.seed(0)
    model = _model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train[:6000], y_train[:6000], batch_size=64, epochs=2, verbose=0)
    _, accuracy = model.evaluate(x_test[:2000], y_test[:2000], verbose=0)
    assert accuracy > 0.85  # it learned through the ops

    path = tmp_path / "mnist_raw_ops.keras"
    model.save(path)
    with zipfile.ZipFile(path) as z:
        saved = json.loads(z.read("config.json"))
    ops_saved = {n["op"] for n in saved["config"]["nodes"] if "op" in n}
    assert {"StridedSlice", "Add", "Mul", "Concat", "Mean"} <= ops_saved

    loaded = kf.models.load_model(path)
    want = model.predict(x_test[:2000], verbose=0)
    np.testing.assert_array_equal(loaded.predict(x_test[:2000], verbose=0), want)
    assert [w.shape for w in loaded.get_weights()] == [
        w.shape for w in model.get_weights()]
    again = loaded.evaluate(x_test[:2000], y_test[:2000], verbose=0)
    np.testing.assert_allclose(again[1], accuracy)
