"""Eager calls of layers and models reuse one trace per input signature: the
graph, the call records and memory stay bounded over thousands of calls."""

from __future__ import annotations

import numpy as np

import kerasflow as kf


def _mlp():
    return kf.Sequential([kf.layers.Dense(16, activation="relu", input_shape=(4,)),
                          kf.layers.Dropout(0.5), kf.layers.Dense(3)])


def test_two_thousand_model_calls_use_one_trace():
    model = _mlp()
    x = np.random.default_rng(0).random((8, 4), np.float32)
    first = model(x)
    calls = len(model._calls), [len(layer._calls) for layer in model.layers]
    for _ in range(2000):
        out = model(x)
    assert len(model._eager_traces) == 1
    assert (len(model._calls), [len(layer._calls) for layer in model.layers]) == calls
    np.testing.assert_array_equal(out, first)


def test_signature_decides_reuse_and_weights_are_read_live():
    model = _mlp()
    rng = np.random.default_rng(1)
    model(rng.random((8, 4), np.float32))
    model(rng.random((5, 4), np.float32))  # another batch size: same trace
    model(rng.random((5, 4)))  # float64 data feeds the same float32 trace
    assert len(model._eager_traces) == 1
    x = rng.random((2, 4), np.float32)
    inference = model(x)
    training = model(x, training=True)  # dropout active: a second trace
    assert len(model._eager_traces) == 2
    assert not np.allclose(training, inference)
    model.set_weights([np.zeros_like(w) for w in model.get_weights()])
    np.testing.assert_array_equal(model(x), np.zeros((2, 3), np.float32))


def test_layers_and_functional_models_cache_too():
    dense = kf.layers.Dense(2)
    x = np.ones((3, 5), np.float32)
    for _ in range(50):
        dense(x)
    assert len(dense._calls) == 1 and len(dense._eager_traces) == 1
    inp = kf.Input((5,))
    model = kf.Model(inp, kf.layers.Dense(1)(dense(inp)))
    for _ in range(50):
        y = model(x)
    assert y.shape == (3, 1) and len(model._eager_traces) == 1
    assert len(dense._calls) == 3  # eager, functional build, one eager trace


def test_changing_a_sequential_forgets_its_traces():
    model = _mlp()
    x = np.ones((2, 4), np.float32)
    assert model(x).shape == (2, 3)
    model.add(kf.layers.Dense(7))
    assert model(x).shape == (2, 7)
    model.pop()
    assert model(x).shape == (2, 3)
