"""Model structure: pass-through layers on inputs, frozen and nested models, training
mode propagation, single-element lists, subclassed call signatures, config round trips."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import layers as L


def _data(n=16, seed=0):
    rng = np.random.RandomState(seed)
    return (rng.rand(n, 3).astype("float32"), rng.rand(n, 1).astype("float32"))


def test_passthrough_layer_on_model_input_keeps_input_history():
    # Dropout returns its input unchanged at build time; the model must still
    # accept kf.Input as its input and be the identity at predict time.
    x, _ = _data()
    inp = kf.Input((3,))
    model = kf.Model(inp, L.Dropout(0.5)(inp))
    np.testing.assert_allclose(model.predict(x, verbose=0), x)


def test_frozen_nested_model_is_not_trained():
    x, y = _data()
    inner = kf.Sequential([L.Dense(4, input_shape=(3,))])
    inner.trainable = False
    model = kf.Sequential([inner, L.Dense(1)])
    model.compile("adam", "mse")
    before = inner.get_weights()
    model.fit(x, y, epochs=2, verbose=0)
    assert len(model.trainable_weights) == 2  # the outer Dense only
    assert len(model.non_trainable_weights) == 2
    for a, b in zip(before, inner.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_nested_sequential_inherits_training_mode():
    x = np.ones((20, 3), "float32")
    inner = kf.Sequential([L.Dropout(0.5, input_shape=(3,))])
    model = kf.Sequential([inner])
    assert (np.asarray(model(x, training=True)) == 0).any()
    np.testing.assert_allclose(model.predict(x, verbose=0), x)


def test_single_element_lists_for_single_input_and_output():
    x, y = _data()
    seq = kf.Sequential([L.Dense(1, input_shape=(3,))])
    seq.compile("sgd", "mse")
    seq.fit([x], [y], verbose=0)
    inp = kf.Input((3,))
    fn = kf.Model(inp, L.Dense(1)(inp))
    fn.compile("sgd", "mse")
    fn.fit([x], y, verbose=0)
    assert fn.predict([x], verbose=0).shape == (16, 1)


def test_subclassed_model_call_without_training_argument():
    x, y = _data()

    class Net(kf.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(1)

        def call(self, inputs):
            return self.dense(inputs)

    model = Net()
    model.compile("sgd", "mse")
    model.fit(x, y, verbose=0)
    assert model.predict(x, verbose=0).shape == (16, 1)


def test_dense_constraints_survive_config_round_trip():
    d = L.Dense(2, kernel_constraint="non_neg",
                bias_constraint=kf.constraints.MaxNorm(1.5, axis=0))
    d2 = L.Dense.from_config(d.get_config())
    assert isinstance(d2.kernel_constraint, kf.constraints.NonNeg)
    assert isinstance(d2.bias_constraint, kf.constraints.MaxNorm)
    assert d2.bias_constraint.max_value == 1.5


def test_train_on_batch_without_targets_names_the_problem():
    x, _ = _data()
    model = kf.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="target"):
        model.train_on_batch(x)
