"""kerasflow.saving: the registry names, model files, and models.clone_model."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.utils import serialization
from tests.keras_oracle import keras_numpy


@kf.saving.register_keras_serializable(package="kf_tests")
class Scale(kf.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class Unregistered(Scale):
    pass


def _model(layer):
    x = kf.Input((3,))
    return kf.Model(x, layer(kf.layers.Dense(2, name="d")(x)))


def test_registered_layer_round_trips_without_custom_objects(tmp_path):
    model = _model(Scale(3.0, name="scale"))
    path = tmp_path / "m.keras"
    kf.saving.save_model(model, path)
    loaded = kf.saving.load_model(path)
    assert isinstance(loaded.get_layer("scale"), Scale)
    assert loaded.get_layer("scale").factor == 3.0
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(loaded.predict(x, verbose=0),
                               model.predict(x, verbose=0), rtol=1e-6)


def test_unregistered_layer_needs_custom_objects_or_a_scope(tmp_path):
    path = tmp_path / "u.keras"
    kf.models.save_model(_model(Unregistered(name="u")), path)
    with pytest.raises(ValueError, match="Unknown layer class: 'Unregistered'"):
        kf.saving.load_model(path)
    with kf.saving.custom_object_scope({"Unregistered": Unregistered}):
        assert isinstance(kf.saving.load_model(path).get_layer("u"), Unregistered)
    with pytest.raises(ValueError, match="Unregistered"):
        kf.saving.load_model(path)  # the scope ended
    loaded = kf.saving.load_model(path, custom_objects={"Unregistered": Unregistered})
    assert isinstance(loaded.get_layer("u"), Unregistered)


def test_registered_names_match_keras():
    keras = keras_numpy()

    @keras.saving.register_keras_serializable(package="kf_tests")
    class Scale(keras.layers.Layer):  # noqa: F811  (Keras' twin of ours)
        pass

    ours = kf.saving.get_registered_name(globals()["Scale"])
    assert ours == keras.saving.get_registered_name(Scale) == "kf_tests>Scale"
    assert kf.saving.get_registered_name(kf.layers.Dense) == "Dense" == \
        keras.saving.get_registered_name(keras.layers.Dense)
    assert kf.saving.get_registered_object("kf_tests>Scale") is globals()["Scale"]
    assert kf.saving.get_registered_object("nope") is None
    assert kf.utils.get_custom_objects() is kf.saving.get_custom_objects()
    assert "kf_tests>Scale" in kf.saving.get_custom_objects()


def test_get_custom_objects_is_the_live_table():
    def swish2(x):
        return x

    kf.saving.get_custom_objects()["swish2"] = swish2
    try:
        assert kf.saving.deserialize_keras_object("swish2") is swish2
        assert kf.activations.get("swish2") is swish2
    finally:
        del kf.saving.get_custom_objects()["swish2"]


def test_serialize_keras_object_round_trips():
    s = kf.saving.serialize_keras_object
    d = kf.saving.deserialize_keras_object
    layer = d(s(Scale(4.0, name="s4")))
    assert isinstance(layer, Scale) and layer.factor == 4.0
    assert s(Scale(1.0))["registered_name"] == "kf_tests>Scale"
    assert isinstance(d(s(kf.losses.MeanSquaredError())), kf.losses.MeanSquaredError)
    assert isinstance(d(s(kf.metrics.MeanSquaredError())),
                      kf.metrics.MeanSquaredError)
    assert d({"class_name": "function", "config": "relu"}) is kf.activations.relu
    assert s([1, "a", (2, 3), None]) == [1, "a", (2, 3), None]
    assert d("not_registered") == "not_registered"  # as Keras: the string
    with pytest.raises(TypeError, match="Cannot serialize"):
        s(object())


def test_register_rejects_a_class_without_get_config():
    with pytest.raises(ValueError, match="get_config"):
        kf.saving.register_keras_serializable()(type("NoConfig", (), {}))
    with pytest.raises(TypeError, match="should be dicts"):
        kf.saving.custom_object_scope(["x"])


def test_save_and_load_weights(tmp_path):
    model = _model(Scale(name="s"))
    kf.saving.save_weights(model, tmp_path / "w.npz")
    other = _model(Scale(name="s"))
    kf.saving.load_weights(other, tmp_path / "w.npz")
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(NotImplementedError, match="skip_mismatch=True"):
        kf.saving.load_weights(other, tmp_path / "w.npz", skip_mismatch=True)


# -- clone_model ----------------------------------------------------------------------
def test_clone_sequential_new_weights_same_architecture():
    model = kf.Sequential([kf.layers.Dense(4, input_shape=(3,), name="a"),
                           kf.layers.Dense(2, name="b")])
    clone = kf.models.clone_model(model)
    assert isinstance(clone, kf.Sequential)
    assert [layer.name for layer in clone.layers] == ["a", "b"]
    assert all(n is not o for n, o in zip(clone.layers, model.layers))
    assert [w.shape for w in clone.weights] == [w.shape for w in model.weights]
    assert not np.allclose(clone.get_weights()[0], model.get_weights()[0])
    clone.set_weights(model.get_weights())
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(clone.predict(x, verbose=0),
                               model.predict(x, verbose=0), rtol=1e-6)


def test_clone_functional_with_clone_function_and_input_tensors():
    x = kf.Input((3,), name="x")
    h = kf.layers.Dense(4, name="h")(x)
    model = kf.Model(x, kf.layers.Add(name="sum")([kf.layers.Dense(4, name="g")(h),
                                                   h]))
    seen = []

    def relu_dense(layer):
        seen.append(layer.name)
        config = layer.get_config()
        if isinstance(layer, kf.layers.Dense):
            config["activation"] = "relu"
        return layer.__class__.from_config(config)

    clone = kf.models.clone_model(model, clone_function=relu_dense)
    assert type(clone) is kf.Model and sorted(seen) == ["g", "h", "sum"]
    assert clone.get_layer("h").get_config()["activation"] == "relu"
    clone.set_weights([-np.abs(w) for w in model.get_weights()])
    out = clone.predict(np.ones((1, 3), "float32"), verbose=0)
    np.testing.assert_array_equal(out, np.zeros((1, 4)))  # relu of negatives
    new_input = kf.Input((3,), name="new")
    rebuilt = kf.models.clone_model(model, input_tensors=[new_input])
    assert rebuilt.inputs[0] is new_input
    shared = kf.models.clone_model(model, clone_function=lambda layer: layer)
    assert shared.get_layer("h") is model.get_layer("h")


def test_clone_errors():
    class Sub(kf.Model):
        def call(self, x):
            return x

    with pytest.raises(ValueError, match="only supported for Sequential"):
        kf.models.clone_model(Sub(), clone_function=lambda layer: layer)
    model = kf.Sequential([kf.layers.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match="must return a Layer"):
        kf.models.clone_model(model, clone_function=lambda layer: 3)
    with pytest.raises(ValueError, match="one input"):
        kf.models.clone_model(model, input_tensors=[kf.Input((3,)), kf.Input((3,))])


def test_registry_is_the_one_serialization_module():
    assert kf.saving.register_keras_serializable is \
        serialization.register_keras_serializable
    assert kf.utils.custom_object_scope is kf.saving.custom_object_scope
