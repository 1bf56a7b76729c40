"""The fused bias-gradient sum (backend.ops.sum_fast): bitwise numpy's
``g.sum(axis=0)`` in float32 and float64, the registry kernel for every other
case, and a Dense model's gradients with fusion on equal to fusion off."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend import fusion
from kerasflow.backend.autodiff import _sum_to_like

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _reset_switch():
    yield
    fusion.set_fusion(None)


def _kernel():
    return fusion._FACTORIES["SumToLike"](np, {})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(128, 512), (128, 10), (1, 7), (1000, 3)])
def test_bias_sum_is_bitwise_numpy(dtype, shape):
    rng = np.random.default_rng(0)
    # Magnitudes over six decades: a different summation order would show.
    g = (rng.standard_normal(shape) * 10 ** rng.uniform(-3, 3, shape)).astype(dtype)
    got = _kernel()(g, np.zeros(shape[1], dtype))
    want = g.sum(axis=0)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_signed_zeros_and_small_values_by_hand():
    g = np.array([[-0.0, 1.0, 2.5], [-0.0, -1.0, 0.5]], np.float32)
    got = _kernel()(g, np.zeros(3, np.float32))
    np.testing.assert_array_equal(got, [0.0, 0.0, 3.0])
    assert np.signbit(got[0])  # -0.0 + -0.0, as numpy gives


@pytest.mark.parametrize("case", ["same", "rank3", "keepdims", "int", "strided"])
def test_other_cases_take_the_registry_kernel(case):
    rng = np.random.default_rng(1)
    g = rng.standard_normal((6, 4)).astype(np.float32)
    x = np.zeros(4, np.float32)
    if case == "same":
        x = np.zeros((6, 4), np.float32)
    elif case == "rank3":
        g = rng.standard_normal((2, 3, 4)).astype(np.float32)
    elif case == "keepdims":
        x = np.zeros((1, 4), np.float32)
    elif case == "int":
        g = rng.integers(0, 9, (6, 4))
    else:
        g = rng.standard_normal((6, 8)).astype(np.float32)[:, ::2]
    got = _kernel()(g, x)
    want = _sum_to_like(np, g, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if case == "same":
        assert got is g


def test_dense_gradients_fused_equal_unfused():
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((32, 16)).astype(np.float32)
    wv = rng.standard_normal((16, 8)).astype(np.float32)
    bv = rng.standard_normal(8).astype(np.float32)
    results = []
    for on in (True, False):
        fusion.set_fusion(on)
        x = K.placeholder("float32", (None, 16))
        w, b = K.Variable(wv), K.Variable(bv)
        loss = K.sum(K.square(K.relu(K.matmul(x, w) + b)))
        fn = K.Function([x], K.gradients(loss, [w, b]))
        nodes = {id(n): n for n in fn._lines}.values()
        sums = [n for n in nodes if n.op == "SumToLike"]
        kernels = [fn._run.__globals__[f"k{n.id}"] for n in sums]
        fused = [k for k in kernels if getattr(k, "__name__", "") == "run"]
        assert bool(fused) == on
        results.append(fn(xv))
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)
