"""The layer contract, shared by the layer-family tests: build, output shape,
eager call, config round trip (and deserialize by class name), one training
step, save/load through the model file format."""

from __future__ import annotations

import numpy as np

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L


def sample(in_shape, dtype="float32", seed=0, high=None):
    rng = np.random.RandomState(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.randint(0, high, size=in_shape).astype(dtype)
    return rng.randn(*in_shape).astype(dtype)


def check_contract(make, in_shape, out_shape, tmp_path, dtype="float32", high=None,
                   train=True, stochastic=False):
    layer = make()
    x = K.placeholder(dtype, (None,) + tuple(in_shape[1:]))
    y = layer(x)
    assert layer.built
    assert tuple(y.shape) == (None,) + tuple(out_shape[1:]), y.shape
    data = sample(in_shape, dtype, high=high)
    got = layer(data)
    assert got.shape == tuple(out_shape)
    # Config round trip, by class and by name through deserialize.
    config = layer.get_config()
    clone = L.deserialize(L.serialize(layer))
    assert type(clone) is type(layer)
    assert {**clone.get_config(), "name": config["name"]} == config
    clone(K.placeholder(dtype, (None,) + tuple(in_shape[1:])))
    if layer.weights:
        clone.set_weights(layer.get_weights())
    if not stochastic:
        np.testing.assert_allclose(clone(data), got, rtol=1e-5, atol=1e-6)
    if not train:
        return
    # One training step through a model, then save/load keeps the outputs.
    model = kf.Sequential([kf.layers.InputLayer(shape=tuple(in_shape[1:]),
                                                dtype=dtype),
                           make(), L.Flatten(), L.Dense(1)])
    model.compile(optimizer=kf.optimizers.SGD(0.05), loss="mse")
    target = np.random.RandomState(1).randn(in_shape[0], 1).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    model.train_on_batch(data, target)
    after = model.get_weights()
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    path = tmp_path / "model.kf"
    model.save(path)
    loaded = kf.models.load_model(path)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)
    if not stochastic:
        np.testing.assert_allclose(loaded.predict(data, verbose=0),
                                   model.predict(data, verbose=0), rtol=1e-5,
                                   atol=1e-6)
