"""MaxPoolReluGrad: MaxPoolGrad + ReluGrad + the bias gradient in one pass
(backend.ops.pool_relu_grad): kernel against the numpy ops, the plan rewrite,
and a float64 gradient check through the fused plan."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend.ops import pool_relu_grad as prg
from kerasflow.backend.ops import pooling

from gradcheck import check_gradients

pytest.importorskip("numba")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, size", [((3, 8, 8, 5), (2, 2)),
                                         ((2, 7, 9, 3), (2, 2)),  # leftovers
                                         ((2, 9, 8, 4), (3, 2))])
def test_kernel_matches_numpy_ops(dtype, shape, size):
    rng = np.random.default_rng(0)
    x = np.maximum(rng.standard_normal(shape), 0).astype(dtype)  # a ReLU output
    y = pooling._max_pool(np, x, size, size, "VALID")
    g = rng.standard_normal(y.shape).astype(dtype)
    want = pooling._max_pool_grad_kernel(np, x, y, g, size, size, "VALID") * (x > 0)
    dx, db = prg.max_pool_relu_grad(x, y, g, size)
    np.testing.assert_array_equal(dx, want)  # each element: one product, as numpy
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(db, want.sum(axis=(0, 1, 2)), rtol=tol, atol=tol)
    assert dx.dtype == db.dtype == dtype and db.shape == (shape[-1],)
    plain, _ = prg.max_pool_relu_grad(x, y, g, size, relu=False)
    np.testing.assert_array_equal(
        plain, pooling._max_pool_grad_kernel(np, x, y, g, size, size, "VALID"))


def test_ties_route_to_the_first_maximum_and_zero_maxima_get_nothing():
    x = np.array([[1.0, 1.0], [0.0, 1.0]], "float32").reshape(1, 2, 2, 1)
    z = np.zeros((1, 2, 2, 1), "float32")
    g = np.array([5.0], "float32").reshape(1, 1, 1, 1)
    dx, db = prg.max_pool_relu_grad(x, np.ones_like(g), g, (2, 2))
    np.testing.assert_array_equal(dx.reshape(2, 2), [[5.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(db, [5.0])
    dx, db = prg.max_pool_relu_grad(z, np.zeros_like(g), g, (2, 2))
    assert not dx.any() and not db.any()


def test_wrong_pooled_shape_raises():
    x = np.zeros((1, 4, 4, 1), "float32")
    with pytest.raises(ValueError, match=r"y.shape=\(1, 3, 3, 1\)"):
        prg.max_pool_relu_grad(x, np.zeros((1, 3, 3, 1), "float32"),
                               np.zeros((1, 3, 3, 1), "float32"), (2, 2))


def _block(x, k, b, padding="valid"):
    return K.max_pool2d(K.relu(K.conv2d(x, k) + b), 2, padding=padding)


# Tiled windows (VALID; SAME without pad), and padded SAME windows (the
# general MaxPoolGrad kernel, then ReluGradBias).
@pytest.mark.parametrize("size, padding", [(10, "valid"), (10, "same"),
                                           (11, "same")])
def test_plan_rewrite_fuses_the_block_and_matches_unfused(always_fast, size,
                                                          padding):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((4, size, size, 3)).astype("float32")
    kv = rng.standard_normal((3, 3, 3, 6)).astype("float32")
    bv = rng.standard_normal(6).astype("float32") * 0.1
    x, k, b = (K.placeholder("float32", v.shape) for v in (xv, kv, bv))
    out = _block(x, k, b, padding)
    w = rng.standard_normal(tuple(out.shape)).astype("float32")
    grads = K.gradients(K.sum(out * w), [x, k, b])
    got = {}
    for on in (True, False):
        K.set_fusion(on)
        f = K.Function([x, k, b], grads)
        got[on] = f(xv, kv, bv)
        nodes = set(f._lines)
        assert any(n.op == "MaxPoolReluGrad" for n in nodes) == on
        # The ReLU gradient and the bias gradient's SumToLike run inside it.
        relu_grad = any("ReluGrad" in n.name for n in nodes
                        if n.op != "MaxPoolReluGrad")
        bias_sum = any(n.op == "SumToLike" and n.outputs[0].shape == (6,)
                       for n in nodes)
        assert relu_grad != on and bias_sum != on
    for a, c in zip(got[True], got[False]):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size, padding", [(8, "valid"), (9, "same")])
def test_gradients_through_the_fused_plan(float64, always_fast, size, padding):
    rng = np.random.default_rng(3)
    # Kept clear of ReLU kinks and of ties in a window.
    x = rng.permutation(2 * size * size * 2).reshape(2, size, size, 2) / 40.0 - 0.7
    k = rng.standard_normal((3, 3, 2, 3))
    b = np.array([0.1, -0.2, 0.3])
    check_gradients(lambda *a: _block(*a, padding=padding), [x, k, b], rtol=1e-6,
                    atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_bias_kernel_matches_numpy_ops(dtype):
    rng = np.random.default_rng(4)
    g = rng.standard_normal((5, 7, 6, 9)).astype(dtype)
    y = np.maximum(rng.standard_normal(g.shape), 0).astype(dtype)
    dx, db = prg.relu_grad_bias(g, y)
    np.testing.assert_array_equal(dx, g * (y > 0))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(db, (g * (y > 0)).sum(axis=(0, 1, 2)), rtol=tol,
                               atol=tol)
    assert db.shape == (9,) and db.dtype == dtype


def test_first_layer_relu_grad_and_bias_grad_become_one_node(always_fast):
    rng = np.random.default_rng(6)
    xv = rng.standard_normal((3, 9, 9, 2)).astype("float32")
    kv = rng.standard_normal((3, 3, 2, 4)).astype("float32")
    k2v = rng.standard_normal((3, 3, 4, 5)).astype("float32")
    bv = rng.standard_normal(4).astype("float32") * 0.1
    x, k, k2, b = (K.placeholder("float32", v.shape) for v in (xv, kv, k2v, bv))
    out = K.conv2d(K.relu(K.conv2d(x, k) + b), k2)
    grads = K.gradients(K.sum(out * out), [k, b])
    got = {}
    for on in (True, False):
        K.set_fusion(on)
        f = K.Function([x, k, k2, b], grads)
        got[on] = f(xv, kv, k2v, bv)
        assert any(n.op == "ReluGradBias" for n in f._lines) == on
    for a, c in zip(got[True], got[False]):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-4)


def test_gradients_through_relu_grad_bias(float64, always_fast):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 7, 7, 2))
    k = rng.standard_normal((3, 3, 2, 3))
    k2 = rng.standard_normal((2, 2, 3, 2))
    b = np.array([0.05, -0.1, 0.2])
    check_gradients(lambda a, w, c, w2: K.conv2d(K.relu(K.conv2d(a, w) + c), w2),
                    [x, k, b, k2], rtol=1e-6, atol=1e-6)
