"""The fused sparse softmax cross-entropy kernels (backend.ops.xent_fast):
values against the numpy kernels (float32 1e-6 relative, float64 1e-12),
compiled plans with fusion on against off, bad labels, fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend import fusion
from kerasflow.backend.ops import nn as nn_module
from kerasflow.backend.ops import xent_fast

pytest.importorskip("numba")

TOL = {np.float32: 1e-6, np.float64: 1e-12}
SHAPES = [(128, 10), (4, 3, 7), (5, 1)]


def _kernels():
    return (fusion._FACTORIES["SparseSoftmaxCrossEntropyWithLogits"](np, {}),
            fusion._FACTORIES["SparseXentGrad"](np, {}))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_fused_kernels_match_numpy(dtype, shape, label_dtype):
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(shape) * 4).astype(dtype)
    labels = rng.integers(0, shape[-1], shape[:-1]).astype(label_dtype)
    g = rng.random(shape[:-1]).astype(dtype)
    fwd, grad = _kernels()
    for got, want in ((fwd(labels, z), nn_module._sparse_xent(np, labels, z)),
                      (grad(g, labels, z),
                       nn_module._sparse_xent_grad_kernel(np, g, labels, z))):
        np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])
        assert got.dtype == want.dtype and got.shape == want.shape


def test_nan_and_large_logits_behave_as_numpy():
    z = np.array([[1e30, 0.0, -1e30], [np.nan, 0.0, 1.0], [3.0, 3.0, 3.0]],
                 np.float32)
    labels = np.array([0, 1, 2])
    g = np.ones(3, np.float32)
    fwd, grad = _kernels()
    np.testing.assert_array_equal(fwd(labels, z), nn_module._sparse_xent(np, labels, z))
    np.testing.assert_allclose(grad(g, labels, z),
                               nn_module._sparse_xent_grad_kernel(np, g, labels, z),
                               rtol=1e-6, equal_nan=True)


def test_bad_labels_raise_the_numpy_error():
    fwd, _ = _kernels()
    with pytest.raises(ValueError, match=r"sparse labels must lie in \[0, 3\)"):
        fwd(np.array([0, 3]), np.zeros((2, 3), np.float32))


def test_falls_back_to_numpy_for_what_it_does_not_handle(monkeypatch):
    calls = []
    monkeypatch.setattr(nn_module, "_sparse_xent",
                        lambda *a: calls.append(1) or "numpy")
    fwd, _ = _kernels()
    assert fwd(np.array([0, 1]), np.zeros((2, 3), np.float16)) == "numpy"
    monkeypatch.setattr(xent_fast, "MAX_SIZE", 4)
    assert fwd(np.array([0, 1]), np.zeros((2, 3), np.float32)) == "numpy"
    assert len(calls) == 2
    assert fusion._FACTORIES["SparseXentGrad"](object(), {}) is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_plan_fused_matches_unfused(dtype):
    rng = np.random.default_rng(1)
    zv = rng.standard_normal((16, 10)).astype(dtype)
    lv = rng.integers(0, 10, 16)
    z = K.placeholder(dtype, zv.shape)
    labels = K.placeholder("int64", lv.shape)
    loss = K.sparse_softmax_cross_entropy_with_logits(labels, z)
    outs = [loss, K.gradients(K.sum(loss * loss), [z])[0]]
    got = {}
    for on in (True, False):
        K.set_fusion(on)
        try:
            got[on] = K.Function([labels, z], outs)(lv, zv)
        finally:
            K.set_fusion(None)
    tol = TOL[np.dtype(dtype).type]
    for a, b in zip(got[True], got[False]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
