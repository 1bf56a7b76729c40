"""Top-level Keras 3 names added in round 4: ``Function``, ``Operation``,
``device``, ``SymbolicScope``, ``RematScope``/``remat``, the dtype policy and
``mixed_precision`` names, and the names excluded by design."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.keras_oracle import keras_numpy


def test_function_runs_the_graph_between_inputs_and_outputs():
    a, b = kf.Input((3,)), kf.Input((3,))
    fn = kf.Function({"a": a, "b": b}, [kf.ops.relu(a) * 2.0, a + b], name="f")
    x = np.array([[-1.0, 0.5, 2.0]], "float32")
    relu2, total = fn({"a": x, "b": np.ones((1, 3), "float32")})
    np.testing.assert_allclose(relu2, [[0.0, 1.0, 4.0]])
    np.testing.assert_allclose(total, x + 1.0)
    with pytest.raises(TypeError, match="runs on arrays"):
        fn({"a": a, "b": b})
    with pytest.raises(ValueError, match="expects 2 input arrays"):
        fn([x])


def test_function_equals_keras_function_on_the_same_ops():
    keras = keras_numpy()
    x = np.random.default_rng(0).normal(size=(2, 4)).astype("float32")
    ki = keras.Input((4,))
    ours_in = kf.Input((4,))
    ours = kf.Function(ours_in, kf.ops.softmax(kf.ops.tanh(ours_in)))
    theirs = keras.Function(ki, keras.ops.softmax(keras.ops.tanh(ki)))
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6)


class Scale(kf.Operation):
    def __init__(self, factor, name=None):
        super().__init__(name=name)
        self.factor = factor

    def call(self, x):
        return kf.ops.multiply(x, self.factor)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def test_operation_runs_eagerly_and_symbolically():
    op = Scale(3.0)
    assert op.name == "scale"
    np.testing.assert_allclose(op(np.ones(2, "float32")), [3.0, 3.0])
    x = kf.Input((2,))
    y = op(x)
    assert kf.backend.is_keras_tensor(y)
    np.testing.assert_allclose(kf.Function(x, y)(np.ones((1, 2), "float32")),
                               [[3.0, 3.0]])
    assert Scale.from_config(op.get_config()).factor == 3.0
    with pytest.raises(NotImplementedError, match="must implement call"):
        kf.Operation()(1)


def test_device_scope():
    with kf.device("cpu:0"):
        assert kf.backend.get_device() == "cpu"
    with pytest.raises(ValueError, match=r"Received: device_name='tpu:0'"):
        with kf.device("tpu:0"):
            pass
    with pytest.raises(ValueError, match="device 0"):
        with kf.device("cpu:1"):
            pass


def test_symbolic_scope_and_remat():
    from kerasflow import scopes

    assert not scopes.in_symbolic_scope()
    with kf.SymbolicScope():
        assert scopes.in_symbolic_scope()
    assert not scopes.in_symbolic_scope()
    with kf.RematScope(mode="larger_than", output_size_threshold=10) as scope:
        assert scopes.get_current_remat_mode() is scope
    assert scopes.get_current_remat_mode() is None
    with pytest.raises(ValueError, match="Invalid mode 'all'"):
        kf.RematScope(mode="all")
    f = kf.remat(lambda x: kf.ops.square(x) + 1.0)
    np.testing.assert_allclose(f(np.array([2.0])), [5.0])


def test_new_top_level_names_resolve():
    for name in ("DTypePolicy", "FloatDTypePolicy", "dtype_policies",
                 "mixed_precision", "legacy", "preprocessing", "Function",
                 "Operation", "RematScope", "SymbolicScope", "device", "remat"):
        assert getattr(kf, name) is not None
    assert kf.mixed_precision.Policy is kf.DTypePolicy


@pytest.mark.parametrize("name, match", [
    ("export", r"keras\.export is excluded .* by design: ExportArchive"),
    ("visualization", r"keras\.visualization is excluded .* by design"),
    ("distillation", r"keras\.distillation is not offered"),
    ("StatelessScope", r"keras\.StatelessScope is not offered"),
])
def test_names_not_offered_raise_not_implemented(name, match):
    with pytest.raises(NotImplementedError, match=match):
        getattr(kf, name)
