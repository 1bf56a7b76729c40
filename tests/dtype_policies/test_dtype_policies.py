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


def _regression(seed=0):
    """(x, y) of a small linear problem whose float16 gradients from a zero
    kernel, times Keras' initial loss scale 2**15, stay finite (|y| ~ 0.2)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(64, 3)).astype("float32")
    return x, (x @ np.float32([[0.1], [-0.2], [0.05]]) + 0.03).astype("float32")


def test_compile_wraps_the_optimizer_for_loss_scaling_under_mixed_float16(
        mixed_float16):
    keras = mixed_float16
    ours = kf.Sequential([kf.Input((3,)),
                          kf.layers.Dense(1, kernel_initializer="zeros")])
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    ours.compile(optimizer=kf.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    assert type(ours.optimizer).__name__ == type(theirs.optimizer).__name__ \
        == "LossScaleOptimizer"
    assert ours.optimizer.name == theirs.optimizer.name == "loss_scale_optimizer"
    assert isinstance(ours.optimizer.inner_optimizer, kf.optimizers.SGD)
    x, y = _regression()
    losses = ours.fit(x, y, batch_size=16, epochs=5, verbose=0).history["loss"]
    assert losses[-1] < 0.1 * losses[0]
    # 20 finite steps: every one applied, the scale untouched (2000 to grow).
    assert int(ours.optimizer.iterations.numpy()) == 20
    assert float(ours.optimizer.dynamic_scale.numpy()) == 2.0 ** 15
    # A LossScaleOptimizer is kept as given; auto_scale_loss=False opts out.
    own = kf.optimizers.LossScaleOptimizer(kf.optimizers.SGD(0.1), 256.0)
    ours.compile(optimizer=own, loss="mse")
    assert ours.optimizer is own
    ours.compile(optimizer="sgd", loss="mse", auto_scale_loss=False)
    assert type(ours.optimizer) is kf.optimizers.SGD
    # The model's own policy decides (Keras), not its layers' nor the global.
    plain = kf.Sequential([kf.Input((3,)), kf.layers.Dense(1)], dtype="float32")
    plain.compile(optimizer="sgd", loss="mse")
    assert type(plain.optimizer) is kf.optimizers.SGD


def test_compile_keeps_the_optimizer_under_float32():
    model = kf.Sequential([kf.Input((3,)),
                           kf.layers.Dense(1, kernel_initializer="zeros")])
    assert model.dtype_policy.name == "float32"
    sgd = kf.optimizers.SGD(0.1)
    model.compile(optimizer=sgd, loss="mse")
    assert model.optimizer is sgd
    x, y = _regression(1)
    losses = model.fit(x, y, batch_size=16, epochs=5, verbose=0).history["loss"]
    assert losses[-1] < 0.1 * losses[0]
