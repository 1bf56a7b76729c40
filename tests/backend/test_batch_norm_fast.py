"""The fused batch-norm kernels (backend.ops.batch_norm_fast): values against
the numpy kernels in float64 (1e-10) and against a float64 reference in
float32, a mean far from zero, serial and parallel variants bitwise equal,
compiled plans with fusion on against off, and the fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend import fusion, jit
from kerasflow.backend.ops import batch_norm_fast
from kerasflow.backend.ops import normalization as bn

pytest.importorskip("numba")

CASES = [((64, 8, 8, 32), (0, 1, 2)), ((4096, 16), (0,)), ((33, 7, 9, 5), (0, 1, 2)),
         ((20, 30, 40), (0,))]


def _channels(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _kernels(axes, eps=1e-3):
    attrs = {"axes": axes, "epsilon": eps}
    return (fusion._FACTORIES["FusedBatchNorm"](np, attrs),
            fusion._FACTORIES["FusedBatchNormGrad"](np, attrs))


@pytest.mark.parametrize("shape,axes", CASES)
def test_float64_equals_the_numpy_kernels(shape, axes):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 2 + 0.5
    ch = _channels(shape, axes)
    gamma, beta = rng.standard_normal(ch), rng.standard_normal(ch)
    gy = rng.standard_normal(shape)
    fwd, grad = _kernels(axes)
    got = fwd(x, gamma, beta)
    want = bn._fused_batch_norm(np, x, gamma, beta, axes, 1e-3)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    mean, var = want[1], want[2]
    got = grad(x, gamma, mean, var, gy)
    want = bn._fused_batch_norm_grad_kernel(np, x, gamma, mean, var, gy, axes, 1e-3)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("loc", [0.0, 1e3])
def test_float32_is_as_accurate_as_float64_allows(loc):
    # The float64 kernels on the same float32 data are the reference; the
    # numpy float32 kernel's own error is of the same order (1e-4 here).
    shape, axes = (128, 16, 16, 32), (0, 1, 2)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 2 + loc).astype(np.float32)
    gamma = rng.standard_normal(32).astype(np.float32)
    beta = rng.standard_normal(32).astype(np.float32)
    gy = rng.standard_normal(shape).astype(np.float32)
    fwd, grad = _kernels(axes)
    y, mean, var = fwd(x, gamma, beta)
    ref = bn._fused_batch_norm(np, x.astype(np.float64), gamma.astype(np.float64),
                               beta.astype(np.float64), axes, 1e-3)
    assert y.dtype == mean.dtype == var.dtype == np.float32
    np.testing.assert_allclose(mean, ref[1], rtol=1e-6)
    np.testing.assert_allclose(var, ref[2], rtol=1e-5)
    np.testing.assert_allclose(y, ref[0], rtol=1e-4, atol=1e-4 * (1 + loc / 100))
    dx, dgamma, dbeta = grad(x, gamma, mean, var, gy)
    ref = bn._fused_batch_norm_grad_kernel(
        np, x.astype(np.float64), gamma.astype(np.float64), ref[1], ref[2],
        gy.astype(np.float64), axes, 1e-3)
    scale = np.abs(ref[0]).max()
    np.testing.assert_allclose(dx, ref[0], atol=1e-4 * scale * (1 + loc / 100))
    np.testing.assert_allclose(dgamma, ref[1], rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(dbeta, ref[2], rtol=1e-5, atol=1e-2)


def test_serial_and_parallel_variants_agree_bitwise():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5000, 24)).astype(np.float32)
    shift = x[0].astype(np.float64)
    sums = []
    for variant in jit.kernels(batch_norm_fast._STATS, "bn_stats"):
        part_s, part_q = batch_norm_fast._blocks(*x.shape)
        variant(x, shift, part_s, part_q)
        sums.append((part_s.sum(axis=0), part_q.sum(axis=0)))
    np.testing.assert_array_equal(sums[0][0], sums[1][0])
    np.testing.assert_array_equal(sums[0][1], sums[1][1])


def _plan_outputs(dtype, on):
    rng = np.random.default_rng(3)
    xv = (rng.standard_normal((32, 8, 8, 16)) + 3).astype(dtype)
    x = K.placeholder(dtype, xv.shape)
    gamma = K.constant(rng.standard_normal(16).astype(dtype))
    beta = K.constant(rng.standard_normal(16).astype(dtype))
    y, mean, var = bn.fused_batch_norm(x, gamma, beta, (0, 1, 2))
    loss = K.sum(K.square(y) * K.constant(rng.standard_normal(16).astype(dtype)))
    outs = [y, mean, var, *K.gradients(loss, [x, gamma, beta])]
    K.set_fusion(on)
    try:
        return K.Function([x], outs)(xv)
    finally:
        K.set_fusion(None)


def test_plan_fused_matches_unfused():
    fused, unfused = _plan_outputs("float64", True), _plan_outputs("float64", False)
    for a, b in zip(fused, unfused):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
    # float32: the fused plan is no further from the float64 result than the
    # numpy kernels are (dx is a small difference of larger terms).
    f32 = _plan_outputs("float32", True), _plan_outputs("float32", False)
    for ref, got, numpy_kernels in zip(fused, *f32):
        err = np.abs(got - ref).max()
        assert err <= 2 * np.abs(numpy_kernels - ref).max() + 1e-6 * np.abs(ref).max()


def test_falls_back_to_numpy_for_what_it_does_not_handle():
    rng = np.random.default_rng(4)
    fwd, grad = _kernels((0, 1, 2))
    cases = [rng.standard_normal((64, 8, 8, 4)).astype(np.float16),   # dtype
             rng.standard_normal((2, 3, 3, 4)),                       # small
             np.asfortranarray(rng.standard_normal((64, 8, 8, 32)))]  # layout
    for x in cases:
        assert batch_norm_fast.batch_norm_forward(x, np.ones(x.shape[-1]),
                                                  np.zeros(x.shape[-1]), (0, 1, 2),
                                                  1e-3) is None
        got = fwd(x, np.ones(x.shape[-1], x.dtype), np.zeros(x.shape[-1], x.dtype))
        want = bn._fused_batch_norm(np, x, np.ones(x.shape[-1], x.dtype),
                                    np.zeros(x.shape[-1], x.dtype), (0, 1, 2), 1e-3)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    # Axes that are not the leading ones (channels-first statistics).
    x = rng.standard_normal((64, 32, 8, 8))
    assert batch_norm_fast.batch_norm_forward(x, np.ones(32), np.zeros(32), (0, 2, 3),
                                              1e-3) is None
    assert fusion._FACTORIES["FusedBatchNormGrad"](object(), {}) is None
