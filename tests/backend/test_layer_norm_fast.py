"""The layer normalization ops (``fused_layer_norm``: LayerNorm, LayerNormGrad)
and their fused numba kernels (backend.ops.layer_norm_fast): the formula by
hand, float64 gradients to second order, fused kernels against the numpy
kernels (float32 1e-5 relative, float64 1e-12), thread-count independence,
fallbacks, compiled plans with fusion on against off, errors, and the
LayerNormalization layer built on them (against Keras 3)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.backend import fusion, jit
from kerasflow.backend.graph import walk
from kerasflow.backend.ops import layer_norm_fast
from kerasflow.backend.registry import get_op
from tests.backend.gradcheck import check_gradients, grad_fn
from tests.keras_oracle import assert_same_forward, keras_numpy

pytest.importorskip("numba")

TOL = {np.float32: 1e-5, np.float64: 1e-12}
# (x shape, number of trailing normalized axes): the transformer's rows of 64,
# one array big enough for the parallel kernels, several normalized axes,
# rows shorter than the 4-way unrolled loop, one row, one element.
SHAPES = [((16, 20, 64), 1), ((64, 64, 64), 1), ((3, 4, 5), 2), ((6, 3), 1),
          ((5,), 1), ((1, 1), 1), ((2, 3, 2, 5), 3)]


def _inputs(shape, k, dtype, seed=0, affine=True):
    rng = np.random.RandomState(seed)
    x = (rng.randn(*shape) * 3 + 1).astype(dtype)
    p = shape[len(shape) - k:]
    if affine:
        gamma, beta = rng.randn(*p).astype(dtype), rng.randn(*p).astype(dtype)
    else:  # a layer with scale=False, center=False passes these constants
        gamma, beta = np.ones(p, dtype), np.zeros(p, dtype)
    return x, gamma, beta, tuple(range(len(shape) - k, len(shape)))


def _fused(op, attrs):
    return fusion._FACTORIES[op](np, attrs)


def test_formula_by_hand():
    x = np.array([[1.0, 2.0, 3.0, 6.0], [-1.0, -1.0, 1.0, 1.0]])
    gamma, beta = np.array([1.0, 2.0, 1.0, 1.0]), np.array([0.0, 0.0, 0.0, 0.5])
    y, mean, inv = K.fused_layer_norm(x, gamma, beta, (1,), epsilon=0.0)
    # Row 0: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5.
    np.testing.assert_allclose(mean, [[3.0], [0.0]])
    np.testing.assert_allclose(inv, [[1 / np.sqrt(3.5)], [1.0]])
    np.testing.assert_allclose(y[1], [-1.0, -2.0, 1.0, 1.5])
    # (x - 3) / sqrt(3.5) * gamma + beta: gamma doubles the second entry.
    np.testing.assert_allclose(y[0], np.array([-2.0, -2.0, 0.0, 3.0]) / np.sqrt(3.5)
                               + beta)


@pytest.mark.parametrize("shape, k", [((4, 3, 5), 1), ((4, 3, 5), 2), ((5,), 1)])
def test_forward_matches_numpy_formula_and_negative_axes(float64, shape, k):
    x, gamma, beta, axes = _inputs(shape, k, np.float64)
    y, mean, inv = K.fused_layer_norm(x, gamma, beta, tuple(a - len(shape)
                                                            for a in axes), 1e-3)
    mu, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    np.testing.assert_allclose(y, (x - mu) / np.sqrt(var + 1e-3) * gamma + beta,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean, mu, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(inv, 1 / np.sqrt(var + 1e-3), rtol=1e-12)
    assert mean.shape == inv.shape == shape[:len(shape) - k] + (1,) * k


@pytest.mark.parametrize("shape, k", [((3, 4, 5), 1), ((3, 4, 5), 2), ((5,), 1)])
def test_gradients(float64, shape, k):
    x, gamma, beta, axes = _inputs(shape, k, np.float64)
    check_gradients(lambda a, g, b: K.fused_layer_norm(a, g, b, axes, 1e-3)[0],
                    [x, gamma, beta])
    # Through the mean and inverse std outputs too.
    check_gradients(lambda a, g, b: list(K.fused_layer_norm(a, g, b, axes, 1e-3)),
                    [x, gamma, beta])


@pytest.mark.parametrize("k", [1, 2])
def test_second_order_gradients(float64, k):
    x, gamma, beta, axes = _inputs((3, 4, 5), k, np.float64)

    def fn(a, g, b):
        return K.fused_layer_norm(a, g, b, axes, 1e-3)[0]

    # Incoming gradients of dx, dgamma and dbeta, with dy a constant...
    check_gradients(grad_fn(fn), [x, gamma, beta], rtol=1e-4, atol=1e-6)

    # ... and with dy an input (its gradient through LayerNormGrad).
    def first(a, g, b, w):
        y = fn(a, g, b)
        return K.gradients(K.sum(y * w), [a, g, b])

    w = np.random.RandomState(3).randn(3, 4, 5)
    check_gradients(first, [x, gamma, beta, w], rtol=1e-4, atol=1e-6)
    # Only dx used: the gradients of dgamma and dbeta arrive as zeros.
    check_gradients(lambda a, g, b, w: first(a, g, b, w)[0],
                    [x, gamma, beta, w], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, k", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_fused_kernels_match_numpy(dtype, shape, k, affine):
    x, gamma, beta, axes = _inputs(shape, k, dtype, affine=affine)
    gy = np.random.RandomState(1).randn(*shape).astype(dtype)
    tol = TOL[dtype]
    want = get_op("LayerNorm").kernel(np, x, gamma, beta, axes=axes, epsilon=1e-3)
    got = _fused("LayerNorm", {"axes": axes, "epsilon": 1e-3})(x, gamma, beta)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    mean, inv = want[1], want[2]
    want = get_op("LayerNormGrad").kernel(np, x, gamma, mean, inv, gy, axes=axes)
    got = _fused("LayerNormGrad", {"axes": axes})(x, gamma, mean, inv, gy)
    # dgamma and dbeta sum over the rows: numpy in x's dtype, the kernel in
    # float64, so their tolerance grows with the sum of the terms' sizes.
    terms = np.abs(gy).reshape(-1, gamma.size).sum(axis=0).max() * 4
    for a, b, atol in zip(got, want, (tol, tol * terms, tol * terms)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=atol)


def test_constant_rows_and_nan_rows():
    x = np.array([[2.0, 2.0, 2.0, 2.0, 2.0], [1.0, np.nan, 0.0, 1.0, 2.0]],
                 np.float32)
    gamma, beta = np.ones(5, np.float32), np.full(5, 0.5, np.float32)
    y, mean, inv = _fused("LayerNorm", {"axes": (1,), "epsilon": 1e-3})(x, gamma, beta)
    np.testing.assert_allclose(y[0], 0.5)
    np.testing.assert_allclose(inv[0], 1 / np.sqrt(np.float32(1e-3)), rtol=1e-6)
    assert np.isnan(y[1]).all() and np.isnan(mean[1]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_do_not_depend_on_the_thread_count(dtype):
    # The serial and the parallel (prange) kernels give the same bits.
    x, gamma, beta, _ = _inputs((300, 48), 1, dtype)
    gy = np.random.RandomState(2).randn(300, 48).astype(dtype)
    fwd = jit.kernels(layer_norm_fast._FORWARD, "ln_fwd")
    grad = jit.kernels(layer_norm_fast._GRAD.replace(
        "{T}", f"np.{np.dtype(dtype).name}"), "ln_grad")
    outs = []
    for variant in (0, 1):
        y, mean, inv = (np.empty((300, 48), dtype), np.empty(300, dtype),
                        np.empty(300, dtype))
        fwd[variant](x, gamma, beta, 1e-3, y, mean, inv)
        blocks = -(-300 // layer_norm_fast.BLOCK)
        dx, pg, pb = np.empty_like(x), np.empty((blocks, 48)), np.empty((blocks, 48))
        grad[variant](x, gamma, mean, inv, gy, dx, pg, pb, layer_norm_fast.BLOCK)
        outs.append((y, mean, inv, dx, pg, pb))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_falls_back_to_numpy_for_what_it_does_not_handle(monkeypatch):
    calls = []
    for op in ("LayerNorm", "LayerNormGrad"):
        opdef = get_op(op)
        monkeypatch.setattr(opdef, "kernel", lambda xp, *a, _k=opdef.kernel, **kw:
                            calls.append(1) or _k(xp, *a, **kw))
    fwd = _fused("LayerNorm", {"axes": (1,), "epsilon": 1e-3})
    grad = _fused("LayerNormGrad", {"axes": (1,)})
    x16, g16, b16, _ = _inputs((4, 6), 1, np.float16)
    y, mean, inv = fwd(x16, g16, b16)  # float16: numpy, statistics in float32
    assert y.dtype == np.float16 and np.isfinite(y).all()
    grad(x16, g16, mean, inv, y)
    x, gamma, beta, _ = _inputs((0, 6), 1, np.float32)
    assert fwd(x, gamma, beta)[0].shape == (0, 6)  # empty
    x, gamma, beta, _ = _inputs((4, 6), 1, np.float32)
    fwd(x, gamma.astype(np.float64), beta)  # parameters of another dtype
    assert len(calls) == 4
    assert fusion._FACTORIES["LayerNorm"](object(), {"axes": (1,),
                                                     "epsilon": 1e-3}) is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_plan_fused_matches_unfused(dtype, monkeypatch):
    built = []
    for op in ("LayerNorm", "LayerNormGrad"):
        factory = fusion._FACTORIES[op]
        monkeypatch.setitem(fusion._FACTORIES, op, lambda xp, attrs, f=factory:
                            built.append(1) or f(xp, attrs))
    x, gamma, beta, axes = _inputs((8, 7, 12), 1, dtype)
    w = np.random.RandomState(4).randn(8, 7, 12).astype(dtype)
    phs = [K.placeholder(dtype, v.shape) for v in (x, gamma, beta, w)]
    y = K.fused_layer_norm(phs[0], phs[1], phs[2], axes, 1e-3)[0]
    outs = [y] + K.gradients(K.sum(y * phs[3]), phs[:3])
    got = {}
    for on in (True, False):
        K.set_fusion(on)
        try:
            got[on] = K.Function(phs, outs)(x, gamma, beta, w)
        finally:
            K.set_fusion(None)
    assert len(built) == 2  # both fused kernels, in the plan with fusion on
    tol = TOL[np.dtype(dtype).type]
    for a, b in zip(got[True], got[False]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 100)


def test_errors():
    x = K.placeholder("float32", (None, 4, 5))
    g = np.ones((5,), np.float32)
    with pytest.raises(ValueError, match="normalizes trailing axes"):
        K.fused_layer_norm(x, np.ones((4,), np.float32), np.zeros(4, np.float32), (1,))
    with pytest.raises(ValueError, match="gamma of the"):
        K.fused_layer_norm(x, np.ones((4,), np.float32), g, (2,))
    with pytest.raises(TypeError, match="beta of x's dtype float32"):
        K.fused_layer_norm(x, g, np.zeros(5), (2,))
    with pytest.raises(TypeError, match="expects a float x"):
        K.fused_layer_norm(np.ones((2, 5), np.int32), g, g, (1,))


# -- the layer --------------------------------------------------------------------------
def _ops(t):
    return [n.op for n in walk([t])]


def test_layer_uses_one_op_for_trailing_axes_only():
    x = K.placeholder("float32", (None, 4, 5))
    ops = _ops(kf.layers.LayerNormalization()(x))
    assert "LayerNorm" in ops and "Mean" not in ops
    assert "LayerNorm" in _ops(kf.layers.LayerNormalization(axis=[1, 2])(x))
    ops = _ops(kf.layers.LayerNormalization(axis=1)(x))
    assert "LayerNorm" not in ops and "Mean" in ops


@pytest.mark.parametrize("center, scale", [(True, True), (False, True),
                                           (True, False), (False, False)])
@pytest.mark.parametrize("axis", [-1, [1, 2], (2, -1)])
def test_layer_matches_keras(center, scale, axis):
    keras = keras_numpy()
    x = np.random.RandomState(0).randn(2, 3, 4, 5).astype("float32") * 3 + 1
    init = {"gamma_initializer": "random_uniform", "beta_initializer": "random_uniform"}
    ours = kf.layers.LayerNormalization(axis=axis, center=center, scale=scale,
                                        epsilon=1e-6, **init)
    theirs = keras.layers.LayerNormalization(axis=axis, center=center, scale=scale,
                                             epsilon=1e-6)
    assert_same_forward(ours, theirs, x, rtol=1e-4, atol=1e-5)


def test_layer_mixed_float16_matches_keras(mixed_float16):
    keras = mixed_float16
    # x**2 up to ~1e6 overflows float16: the statistics are taken in float32.
    x = (np.random.RandomState(1).randn(4, 6, 8) * 300 + 50).astype("float32")
    ours, theirs = kf.layers.LayerNormalization(), keras.layers.LayerNormalization()
    out = assert_same_forward(ours, theirs, x, rtol=0, atol=4e-3)
    assert out.dtype == np.float16 and np.isfinite(out).all()
    assert [w.dtype for w in ours.weights] == [np.float32, np.float32]
    assert ours(K.placeholder("float32", (None, 6, 8))).dtype == np.float16
