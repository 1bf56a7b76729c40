"""Layers called inside another layer's call: on arrays (keras.io's position
embedding, ``self.pos_emb(ops.arange(n))``) they stay in the graph and train;
nested layers' weights are listed depth first, as Keras 3 lists them."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.keras_oracle import keras_numpy


def _classes(lib):
    class PositionEmbedding(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.proj = lib.layers.Dense(4)
            self.pos = lib.layers.Embedding(3, 4)

        def call(self, x):
            return self.proj(x) + self.pos(lib.ops.arange(0, 3, 1))

    class Block(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.emb = PositionEmbedding()
            self.ffn = lib.Sequential([lib.layers.Dense(5), lib.layers.Dense(4)])
            self.norm = lib.layers.LayerNormalization()

        def call(self, x):
            return self.norm(self.ffn(self.emb(x)))
    return Block


def _model(lib):
    inputs = lib.layers.Input(shape=(3, 2))
    x = _classes(lib)()(inputs)
    x = lib.layers.GlobalAveragePooling1D()(x)
    return lib.Model(inputs, lib.layers.Dense(2)(x))


def test_a_layer_called_on_arrays_inside_a_call_trains(float64):
    model = _model(kf)
    pos = [w for w in model.weights if "embedding" in w.name][0]
    before = pos.numpy().copy()
    model.compile(kf.optimizers.SGD(0.5), "mse")
    x = np.random.RandomState(0).standard_normal((8, 3, 2))
    model.train_on_batch(x, np.ones((8, 2)))
    assert np.abs(pos.numpy() - before).max() > 1e-3  # it received gradients


def test_nested_weights_are_ordered_as_keras():
    keras = keras_numpy()
    kf_model, k_model = _model(kf), _model(keras)
    assert [w.shape for w in kf_model.get_weights()] == [
        tuple(w.shape) for w in k_model.get_weights()]
    kf_model.set_weights(k_model.get_weights())  # Keras' weights load in order
    x = np.random.RandomState(1).standard_normal((4, 3, 2)).astype("float32")
    np.testing.assert_allclose(kf_model.predict(x, verbose=0),
                               np.asarray(k_model.predict(x, verbose=0)), atol=1e-5)


def test_first_argument_by_its_name_in_call_as_keras():
    """Keras 3's ``Layer.__call__`` takes the first argument by any name: the
    name ``call`` gives it, for kerasflow's layers and users' alike."""
    keras = keras_numpy()
    x = np.arange(6, dtype="float32").reshape(2, 3)

    def scale_class(lib):
        class Scale(lib.layers.Layer):
            def call(self, features, factor=2.0):
                return features * factor
        return Scale

    ours, theirs = scale_class(kf)(), scale_class(keras)()
    np.testing.assert_allclose(ours(features=x, factor=3.0),
                               np.asarray(theirs(features=x, factor=3.0)))
    np.testing.assert_allclose(kf.layers.Dense(2, kernel_initializer="ones")(
        inputs=x), np.asarray(keras.layers.Dense(2, kernel_initializer="ones")(
            inputs=x)))
    inputs = kf.Input((3,))
    model = kf.Model(inputs, ours(features=inputs, factor=0.5))
    np.testing.assert_allclose(model(inputs=x), x * 0.5)
    with pytest.raises(TypeError, match=r"first input positionally or as "
                                        r"`features=`.*\['feature'\]"):
        ours(feature=x)
