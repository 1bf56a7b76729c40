"""Dtype policies (Keras 3's ``DTypePolicy``, ``keras.config.dtype_policy``,
``keras.mixed_precision``): values and serialization against Keras, errors and
defaults, and the global policy in layers."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.keras_oracle import keras_numpy


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
        # Back to "unset" (the policy follows floatx), not a pinned float32:
        # later tests switch floatx to float64 and expect layers to follow.
        kf.dtype_policies._GLOBAL[0] = None
    assert kf.layers.Dense(2, dtype=kf.DTypePolicy("float16")).dtype == "float16"
    # A Keras 3 layer config's dtype entry (a serialized policy) is understood.
    keras_dtype = {"module": "keras", "class_name": "DTypePolicy",
                   "config": {"name": "float64"}, "registered_name": None}
    assert kf.layers.Dense(2, dtype=keras_dtype).dtype == "float64"
    assert kf.mixed_precision.LossScaleOptimizer is kf.optimizers.LossScaleOptimizer


def test_mixed_policy_keeps_float32_weights_and_computes_in_float16():
    keras = keras_numpy()
    ours = kf.layers.Dense(2, dtype="mixed_float16")
    theirs = keras.layers.Dense(2, dtype="mixed_float16")
    for attr in ("dtype", "compute_dtype", "variable_dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert ours.dtype_policy == kf.DTypePolicy("mixed_float16")
    x = np.linspace(-2, 2, 6, dtype="float32").reshape(2, 3)
    out = np.asarray(ours(x))
    theirs(x)
    theirs.set_weights(ours.get_weights())
    assert ours.kernel.dtype == np.float32 and out.dtype == np.float16
    np.testing.assert_allclose(out, np.asarray(theirs(x)), rtol=1e-3, atol=1e-3)
    # A symbolic float32 input is cast to float16 (Keras' input autocast).
    y = ours(kf.backend.placeholder("float32", (None, 3)))
    assert y.dtype == np.float16
    clone = kf.layers.Dense.from_config(ours.get_config())
    assert clone.get_config()["dtype"] == "mixed_float16"
    assert clone.compute_dtype == "float16"
    with pytest.raises(NotImplementedError, match=r"no bfloat16.*Received: "
                                                  r"dtype policy 'mixed_bfloat16'"):
        kf.layers.Dense(2, dtype="mixed_bfloat16")
