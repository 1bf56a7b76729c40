"""``keras.backend`` and ``keras.config`` names (Keras 3): dtype promotion and
names against Keras, unique ids and clear_session, the config switches, the
epoch/step caps in fit, and dtype policies (values and layer use)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as B
from kerasflow import config
from tests.keras_oracle import keras_numpy

PAIRS = [("float64",), ("float64", "float64"), ("int64", "float32"),
         ("int32", float), ("bfloat16", int), ("uint8", "int8"), ("bool", int),
         (int, float), ("complex64", int), (), ("int16", "uint32"),
         (None, "int8"), ("float16", "bfloat16"), (bool,), ("uint64", "int64"),
         ("int8", "float16"), ("uint16", "int16", "float32"), ("bool", "bool")]


@pytest.mark.parametrize("dtypes", PAIRS, ids=str)
def test_result_type_equals_keras(dtypes):
    keras = keras_numpy()
    assert B.result_type(*dtypes) == keras.backend.result_type(*dtypes)


def test_result_type_errors():
    with pytest.raises(ValueError, match="float8"):
        B.result_type("float8_e4m3fn", "float32")
    with pytest.raises(ValueError, match="Invalid dtype: float"):
        B.result_type("float")


@pytest.mark.parametrize("dtype", ["int", int, float, bool, "uint8", "bfloat16",
                                   np.float64, np.dtype("int16"), None, "string"])
def test_dtype_names_equal_keras(dtype):
    keras = keras_numpy()
    kb = keras.backend
    assert B.standardize_dtype(dtype) == kb.standardize_dtype(dtype)
    if dtype != "string":
        assert B.is_float_dtype(dtype) == kb.is_float_dtype(dtype)
        assert B.is_int_dtype(dtype) == kb.is_int_dtype(dtype)


def test_backend_name_and_keras_tensor():
    assert B.backend() == config.backend() == "numpy"
    x = kf.Input((3,))
    assert B.is_keras_tensor(x) and not B.is_keras_tensor(np.ones(3))
    assert kf.utils.is_keras_tensor is B.is_keras_tensor


def test_get_uid_and_clear_session_restart_layer_names():
    B.clear_session()
    assert B.get_uid("thing") == 1 and B.get_uid("thing") == 2
    assert kf.layers.Dense(1).name == "dense"
    assert kf.layers.Dense(1).name == "dense_1"
    kf.utils.clear_session()
    assert B.get_uid("thing") == 1
    assert kf.layers.Dense(1).name == "dense"
    with B.uid_scope():
        assert kf.layers.Dense(1).name == "dense"
    assert kf.layers.Dense(1).name == "dense_1"


def test_config_switches():
    assert config.is_traceback_filtering_enabled() is True
    config.disable_traceback_filtering()
    assert config.is_traceback_filtering_enabled() is False
    config.enable_traceback_filtering()
    assert config.is_flash_attention_enabled() is None
    config.enable_flash_attention()
    assert config.is_flash_attention_enabled() is True
    config.disable_flash_attention()
    assert config.is_flash_attention_enabled() is False
    assert config.is_nnx_enabled() is False
    config.enable_unsafe_deserialization()
    assert config.is_unsafe_deserialization_enabled()
    config.set_backend("numpy")
    with pytest.raises(ValueError, match=r"one backend, 'numpy'.*Received: "
                                         r"backend='jax'"):
        config.set_backend("jax")
    with pytest.raises(ValueError, match=r"Received: max_epochs=0"):
        config.set_max_epochs(0)


def test_max_epochs_and_steps_cap_fit_and_evaluate():
    rng = np.random.default_rng(0)
    x = rng.random((64, 3)).astype("float32")
    y = x.sum(1, keepdims=True)
    model = kf.Sequential([kf.layers.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    seen = []
    cb = kf.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b),
                                     on_test_batch_end=lambda b, logs: seen.append(
                                         -1 - b))
    config.set_max_epochs(2)
    config.set_max_steps_per_epoch(3)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            history = model.fit(x, y, epochs=5, batch_size=8, verbose=0,
                                callbacks=[cb])
            model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[cb])
        assert config.max_epochs() == 2 and config.max_steps_per_epoch() == 3
    finally:
        config.set_max_epochs(None)
        config.set_max_steps_per_epoch(None)
    assert len(history.history["loss"]) == 2
    assert seen == [0, 1, 2, 0, 1, 2, -1, -2, -3]
    messages = {str(w.message) for w in caught}
    assert "Limiting epochs to 2" in messages
    assert "Limiting steps_per_epoch to 3" in messages
    assert len(model.fit(x, y, epochs=2, batch_size=8, verbose=0)
               .history["loss"]) == 2


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16",
                                  "mixed_float16", "mixed_bfloat16"])
def test_dtype_policy_equals_keras(name):
    keras = keras_numpy()
    ours, theirs = kf.DTypePolicy(name), keras.DTypePolicy(name)
    assert (ours.name, ours.compute_dtype, ours.variable_dtype,
            ours.quantization_mode) == (theirs.name, theirs.compute_dtype,
                                        theirs.variable_dtype,
                                        theirs.quantization_mode)
    assert ours.get_config() == theirs.get_config()
    assert kf.dtype_policies.serialize(ours) == keras.dtype_policies.serialize(
        theirs)
    assert kf.dtype_policies.deserialize(kf.dtype_policies.serialize(ours)) == ours
    assert repr(ours) == repr(theirs)


def test_dtype_policy_errors_and_defaults():
    keras = keras_numpy()
    with pytest.raises(ValueError, match="Cannot convert 'int32'"):
        kf.DTypePolicy("int32")
    with pytest.raises(TypeError, match="'name' must be a string"):
        kf.DTypePolicy(3)
    assert kf.FloatDTypePolicy is kf.DTypePolicy
    assert kf.config.dtype_policy() == kf.DTypePolicy("float32")
    assert repr(kf.config.dtype_policy()) == repr(keras.config.dtype_policy())


def test_global_policy_sets_layer_dtypes():
    try:
        kf.config.set_dtype_policy("float64")
        layer = kf.layers.Dense(2)
        out = layer(np.ones((1, 3)))
        assert layer.dtype == "float64" and layer.kernel.dtype == np.float64
        assert np.asarray(out).dtype == np.float64
        kf.mixed_precision.set_global_policy(kf.mixed_precision.Policy("float32"))
        assert kf.mixed_precision.global_policy().name == "float32"
    finally:
        kf.config.set_dtype_policy("float32")
    assert kf.layers.Dense(2, dtype=kf.DTypePolicy("float16")).dtype == "float16"
    # A Keras 3 layer config's dtype entry (a serialized policy) is understood.
    keras_dtype = {"module": "keras", "class_name": "DTypePolicy",
                   "config": {"name": "float64"}, "registered_name": None}
    assert kf.layers.Dense(2, dtype=keras_dtype).dtype == "float64"
    with pytest.raises(NotImplementedError, match=r"no mixed precision.*Received: "
                                                  r"dtype policy 'mixed_float16'"):
        kf.layers.Dense(2, dtype="mixed_float16")
    assert kf.mixed_precision.LossScaleOptimizer is kf.optimizers.LossScaleOptimizer
