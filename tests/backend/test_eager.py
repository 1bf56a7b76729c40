"""Eager op results are TF 2's eager tensors (``backend.eager.EagerTensor``)."""

from __future__ import annotations

import numpy as np

import kerasflow as kf
from kerasflow.backend import registry
from kerasflow.backend.eager import EagerTensor


def test_op_on_arrays_has_numpy():
    r = kf.ops.add(np.array([1]), 1)
    assert isinstance(r, EagerTensor) and r.shape == (1,) and r.dtype == np.int64
    plain = r.numpy()
    assert type(plain) is np.ndarray and plain.tolist() == [2]


def test_reduction_numpy_is_a_numpy_scalar():
    s = kf.ops.sum(np.array([1.0, 2.0, 4.0]))
    assert s.shape == () and type(s.numpy()) is np.float64 and s.numpy() == 7.0


def test_multi_output_op_results_have_numpy():
    outs = kf.ops.split(np.arange(4.0), 2)
    assert [o.numpy().tolist() for o in outs] == [[0.0, 1.0], [2.0, 3.0]]


def test_kernels_receive_plain_arrays(monkeypatch):
    seen = []
    opdef = registry._OPS["Add"]
    kernel = opdef.kernel

    def spy(xp, *arrays, **attrs):
        seen.extend(type(a) for a in arrays)
        return kernel(xp, *arrays, **attrs)

    monkeypatch.setattr(opdef, "kernel", spy)
    r = kf.ops.add(np.array([1.0]), 2.0)
    kf.ops.add(r, r)
    assert seen == [np.ndarray] * 4


def test_predict_returns_plain_numpy():
    model = kf.models.Sequential([kf.layers.Input((3,)), kf.layers.Dense(2)])
    assert type(model.predict(np.ones((4, 3), np.float32), verbose=0)) is np.ndarray
