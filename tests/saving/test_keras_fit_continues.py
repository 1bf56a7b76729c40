"""A compiled model with Adam state travels through ``.keras`` both ways and one
more ``fit`` step gives the same weights in kerasflow and in Keras 3 (issue 38).

Keras' numpy backend cannot train, so Keras trains on JAX (CPU) in a
subprocess (``tests/keras_jax_oracle.py``); all Keras work of one test runs in
one subprocess call.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.keras_jax_oracle import keras_jax_run
from tests.keras_oracle import keras_numpy

pytest.importorskip("jax")

# float32 on both sides, different kernels and summation orders.
RTOL = ATOL = 1e-5
# Adam's slots are ~1e-6..1e-2, so an absolute 1e-5 would pass most of them:
# each is compared to 1e-5 of its own largest element.
SLOT_TOL = 1e-5
NAMES = ["mlp", "conv_bn"]


def _models(lib):
    """name -> uncompiled model, built alike in Keras (``lib=keras``) and here."""
    layers = lib.layers
    mlp = lib.Sequential([lib.Input((4,)), layers.Dense(8, activation="relu"),
                          layers.Dense(3, activation="softmax")])
    # No bias before BatchNormalization: its gradient would be zero up to
    # rounding (~1e-9, differing between frameworks), which Adam (m / (sqrt(v)
    # + 1e-7)) turns into steps of ~1e-4 in either direction.
    conv_bn = lib.Sequential([
        lib.Input((6, 6, 2)), layers.Conv2D(4, 3, use_bias=False),
        layers.BatchNormalization(), layers.Activation("relu"),
        layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(3, activation="softmax"),
    ])
    return {"mlp": mlp, "conv_bn": conv_bn}


def _compile(lib, model):
    model.compile(optimizer=lib.optimizers.Adam(learning_rate=1e-2),
                  loss="sparse_categorical_crossentropy")
    return model


def _data(name):
    """8 samples, 3 classes; the steps use batches of 4 (two steps) or 8 (one)."""
    rng = np.random.default_rng(NAMES.index(name))
    shape = (8, 6, 6, 2) if name == "conv_bn" else (8, 4)
    x = rng.normal(size=shape).astype("float32")
    return x, rng.integers(0, 3, 8).astype("int32")


def _fit(model, x, y, batch_size):
    model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)


def _assert_optimizer_equal(name, kf_optimizer, theirs, iterations):
    """Keras' optimizer variables are iterations, learning_rate, then the
    (momentum, velocity) slots per trainable weight; ours skip learning_rate."""
    ours = [np.asarray(v.numpy()) for v in kf_optimizer.variables]
    assert int(ours[0]) == int(theirs[0]) == iterations
    np.testing.assert_allclose(theirs[1], 1e-2, rtol=1e-6)
    assert len(theirs) - 1 == len(ours)
    for k, (a, b) in enumerate(zip(ours[1:], theirs[2:])):
        np.testing.assert_allclose(a, b, rtol=SLOT_TOL,
                                   atol=SLOT_TOL * np.abs(b).max(),
                                   err_msg=f"{name}: optimizer slot {k}")


def _assert_weights_equal(name, ours, theirs, before):
    assert len(ours) == len(theirs) == len(before)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{name}: weight {k}")
    # The compared step did move the weights (Adam with lr 1e-2: about 1e-2 each).
    assert max(np.abs(a - b).max() for a, b in zip(ours, before)) > 1e-3


def test_kerasflow_adam_state_continues_in_keras_jax(tmp_path):
    kf.utils.set_random_seed(0)
    plan, ours = [], {}
    for name, model in _models(kf).items():
        x, y = _data(name)
        _compile(kf, model)
        _fit(model, x, y, 4)  # two steps: Adam's moments and iterations non-zero
        model.save(tmp_path / f"{name}.keras")
        saved = (model.predict(x, verbose=0), model.get_weights())
        _fit(model, x, y, 8)  # the compared step, here in memory
        ours[name] = (model, saved)
        plan += [{"load": tmp_path / f"{name}.keras"},
                 {"dump": {"name": f"{name}_loaded", "x": x}},
                 {"fit": {"x": x, "y": y, "batch_size": 8}},
                 {"dump": {"name": name}}]
    theirs = keras_jax_run(plan, tmp_path)
    for name, (model, (predicted, saved_weights)) in ours.items():
        loaded = theirs[f"{name}_loaded"]
        np.testing.assert_allclose(loaded["predict"], predicted, rtol=RTOL, atol=ATOL)
        for a, b in zip(loaded["weights"], saved_weights):
            np.testing.assert_array_equal(a, b)
        _assert_weights_equal(name, model.get_weights(), theirs[name]["weights"],
                              saved_weights)
        _assert_optimizer_equal(name, model.optimizer, theirs[name]["optimizer"], 3)
    # BatchNormalization's moving mean and variance (non-trainable) moved too.
    bn = ours["conv_bn"][0].layers[1]  # Sequential: the Input is no layer
    assert not np.allclose(bn.moving_variance.numpy(), 1.0)


def test_keras_jax_adam_state_continues_in_kerasflow(tmp_path):
    keras = keras_numpy()  # builds and compiles; JAX trains
    keras.utils.set_random_seed(0)
    plan, data = [], {}
    for name, model in _models(keras).items():
        x, y = data[name] = _data(name)
        _compile(keras, model).optimizer.build(model.trainable_variables)
        model.save(tmp_path / f"{name}_init.keras")  # Adam's zeros saved too
        plan += [{"load": tmp_path / f"{name}_init.keras"},
                 {"fit": {"x": x, "y": y, "batch_size": 4}},
                 {"save": tmp_path / f"{name}.keras"},
                 {"load": tmp_path / f"{name}.keras"},  # the next step from the file
                 {"dump": {"name": f"{name}_loaded", "x": x}},
                 {"fit": {"x": x, "y": y, "batch_size": 8}},
                 {"dump": {"name": name}}]
    theirs = keras_jax_run(plan, tmp_path)
    for name, (x, y) in data.items():
        loaded = theirs[f"{name}_loaded"]
        model = kf.models.load_model(tmp_path / f"{name}.keras")
        assert type(model.optimizer).__name__ == "Adam"
        np.testing.assert_allclose(model.predict(x, verbose=0), loaded["predict"],
                                   rtol=RTOL, atol=ATOL)
        for a, b in zip(model.get_weights(), loaded["weights"]):
            np.testing.assert_array_equal(a, b)
        _assert_optimizer_equal(name, model.optimizer, loaded["optimizer"], 2)
        _fit(model, x, y, 8)
        _assert_weights_equal(name, model.get_weights(), theirs[name]["weights"],
                              loaded["weights"])
        _assert_optimizer_equal(name, model.optimizer, theirs[name]["optimizer"], 3)
