"""The fused numba kernels of conv2d and max_pool2d (backend.ops.conv_fast):
values against the numpy kernels, float64 gradient checks through compiled
plans, and the fallbacks to numpy."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend import jit
from kerasflow.backend.ops import conv as conv_module
from kerasflow.backend.ops import conv_direct, conv_fast, conv_winograd
from kerasflow.backend.ops import pooling as pool_module

from gradcheck import check_gradients

pytest.importorskip("numba")

# (x shape, kernel shape, strides, padding, dilation)
CONV_CASES = [
    ((5, 9, 8, 3), (3, 3, 3, 4), (1, 1), "VALID", (1, 1)),
    ((4, 9, 8, 3), (3, 2, 3, 5), (2, 1), "SAME", (1, 1)),
    ((3, 10, 11, 2), (3, 3, 2, 4), (2, 3), "SAME", (2, 1)),
    ((3, 10, 11, 1), (2, 2, 1, 4), (1, 1), "SAME", (2, 2)),
    ((3, 7, 7, 1), (1, 1, 1, 3), (2, 2), "VALID", (1, 1)),
    # Many channels: the per-tap im2col (few channels use the run copy).
    ((2, 7, 8, 17), (3, 2, 17, 5), (2, 1), "SAME", (1, 2)),
    ((2, 7, 8, 20), (3, 3, 20, 6), (1, 1), "VALID", (1, 1)),
    # <= conv_direct.MAX_OUT output channels: the direct (GEMM-free) loops.
    ((3, 9, 8, 5), (3, 3, 5, 1), (1, 1), "SAME", (1, 1)),
    ((3, 10, 11, 7), (3, 2, 7, 2), (2, 1), "SAME", (2, 1)),
    ((2, 7, 7, 20), (3, 3, 20, 1), (2, 2), "VALID", (1, 1)),
    # 3x3, stride 1, >= 16 channels in and out: Winograd F(2x2, 3x3), with
    # odd output sizes (tiles that stick out) and SAME padding.
    ((3, 10, 11, 16), (3, 3, 16, 17), (1, 1), "VALID", (1, 1)),
    ((2, 9, 8, 16), (3, 3, 16, 16), (1, 1), "SAME", (1, 1)),
    ((1, 7, 9, 18), (3, 3, 18, 16), (1, 1), "SAME", (1, 1)),  # batch 1
]
WINOGRAD = CONV_CASES[-3:]
DIRECT = CONV_CASES[-6:-3]
POOL_CASES = [
    ((3, 8, 8, 5), (2, 2), (2, 2), "VALID"),
    ((2, 7, 9, 3), (3, 2), (3, 2), "VALID"),  # tiled (unrolled), with leftovers
    ((2, 8, 6, 3), (2, 2), (2, 2), "SAME"),  # tiled: SAME adds no pad here
    ((2, 7, 9, 3), (2, 2), (2, 2), "SAME"),  # padded: the general kernel
    ((3, 9, 7, 5), (3, 2), (2, 1), "SAME"),  # overlapping windows
    ((2, 9, 9, 3), (3, 3), (2, 2), "SAME"),
    ((2, 9, 9, 3), (2, 2), (3, 3), "VALID"),  # elements in no window
]
TOL = {np.float32: 2e-5, np.float64: 1e-12}


def _close(got, want, dtype):
    scale = max(float(np.max(np.abs(want))), 1.0)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)
    assert got.dtype == want.dtype and got.shape == want.shape


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("column_bytes", [2**30, 1])  # whole batch; image by image
def test_conv_kernels_match_numpy(monkeypatch, dtype, case, column_bytes):
    monkeypatch.setattr(conv_fast, "COLUMN_BYTES", column_bytes)
    monkeypatch.setattr(conv_winograd, "SLICE_BYTES", column_bytes)
    shape, kshape, strides, padding, dilation = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    k = rng.standard_normal(kshape).astype(dtype)
    attrs = (strides, padding, dilation)
    y = conv_module._conv(np, x, k, *attrs)
    g = rng.standard_normal(y.shape).astype(dtype)
    _close(conv_fast.conv2d_forward(x, k, *attrs), y, dtype)
    _close(conv_fast.conv2d_backprop_input(x.shape, k, g, *attrs),
           conv_module._conv_backprop_input(np, x, k, g, *attrs), dtype)
    _close(conv_fast.conv2d_backprop_filter(x, k, g, *attrs),
           conv_module._conv_backprop_filter(np, x, k, g, *attrs), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_kernels_match_numpy(dtype, case):
    shape, size, strides, padding = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    x[0, :3, :3, 0] = 1.0  # ties: only the first maximum gets the gradient
    x[1, 1, 1, 1] = np.nan  # a NaN wins its windows, as np.maximum
    y = pool_module._max_pool(np, x, size, strides, padding)
    np.testing.assert_array_equal(conv_fast.max_pool2d_forward(x, size, strides,
                                                               padding), y)
    g = rng.standard_normal(y.shape).astype(dtype)
    _close(conv_fast.max_pool2d_grad(x, y, g, size, strides, padding),
           pool_module._max_pool_grad_kernel(np, x, y, g, size, strides, padding),
           dtype)


def test_max_pool_gradient_goes_to_the_first_maximum_only():
    x = np.ones((1, 2, 2, 1), np.float32)
    y = conv_fast.max_pool2d_forward(x, (2, 2), (2, 2), "VALID")
    dx = conv_fast.max_pool2d_grad(x, y, np.full(y.shape, 3.0, np.float32),
                                   (2, 2), (2, 2), "VALID")
    np.testing.assert_array_equal(dx[0, :, :, 0], [[3.0, 0.0], [0.0, 0.0]])


def _convnet(x, k):
    y = K.relu(K.conv2d(x, k, strides=(1, 2), padding="same"))
    return K.max_pool2d(y, 2, strides=2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_plan_with_fused_kernels_matches_unfused(monkeypatch, dtype):
    monkeypatch.setattr(conv_fast, "MIN_SIZE", 0)
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((4, 10, 9, 3)).astype(dtype)
    kv = rng.standard_normal((3, 3, 3, 6)).astype(dtype)
    x, k = K.placeholder(dtype, xv.shape), K.placeholder(dtype, kv.shape)
    out = _convnet(x, k)
    loss = K.sum(out * out)
    outs = [out, *K.gradients(loss, [x, k])]
    got = {}
    for on in (True, False):
        K.set_fusion(on)
        try:
            got[on] = K.Function([x, k], outs)(xv, kv)
        finally:
            K.set_fusion(None)
    for a, b in zip(got[True], got[False]):
        _close(np.asarray(a), np.asarray(b), np.dtype(dtype).type)


def test_winograd_applies_to_3x3_stride_1_with_16_channels():
    assert all(conv_winograd.applies(k, s, d, x[-1]) for x, k, s, _, d in WINOGRAD)
    assert not any(conv_winograd.applies(k, s, d, x[-1])
                   for x, k, s, _, d in CONV_CASES[:-3])


def _conv_and_grads(x, k, g, attrs):
    """Forward, input gradient and filter gradient of the fast kernels."""
    return (conv_fast.conv2d_forward(x, k, *attrs),
            conv_fast.conv2d_backprop_input(x.shape, k, g, *attrs),
            conv_fast.conv2d_backprop_filter(x, k, g, *attrs))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES[:2] + CONV_CASES[5:7] + WINOGRAD)
@pytest.mark.parametrize("sum_groups", [8, 2])  # filter gradients' partial sums
def test_conv_results_do_not_depend_on_the_thread_count(monkeypatch, dtype, case,
                                                        sum_groups):
    # Slices of one image (im2col) or one tile row (Winograd), spread over the
    # threads; the filter gradients sum them in fixed groups, in order.
    monkeypatch.setattr(conv_fast, "COLUMN_BYTES", 1)
    monkeypatch.setattr(jit, "SUM_GROUPS", sum_groups)
    monkeypatch.setattr(conv_winograd, "SLICE_BYTES", 1)
    monkeypatch.setattr(jit, "SPREAD_MIN", 0)  # threads for these small arrays
    shape, kshape, strides, padding, dilation = case
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(dtype)
    k = rng.standard_normal(kshape).astype(dtype)
    attrs = (strides, padding, dilation)
    g = rng.standard_normal(conv_module._conv(np, x, k, *attrs).shape).astype(dtype)
    got = {}
    for threads in (1, 2, 3, 5):
        monkeypatch.setattr(jit, "worker_threads", lambda t=threads: t)
        got[threads] = _conv_and_grads(x, k, g, attrs)
    for threads in (2, 3, 5):
        for a, b in zip(got[1], got[threads]):
            np.testing.assert_array_equal(a, b)


def test_direct_loops_apply_to_few_output_channels():
    assert all(conv_direct.applies(k) for _, k, _, _, _ in DIRECT)
    assert not any(conv_direct.applies(c[1]) for c in CONV_CASES if c not in DIRECT)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", DIRECT)
def test_direct_loops_match_im2col(monkeypatch, dtype, case):
    shape, kshape, strides, padding, dilation = case
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(dtype)
    k = rng.standard_normal(kshape).astype(dtype)
    attrs = (strides, padding, dilation)
    g = rng.standard_normal(conv_module._conv(np, x, k, *attrs).shape).astype(dtype)
    got = {}
    for max_out in (conv_direct.MAX_OUT, 0):  # direct, then im2col + GEMM
        monkeypatch.setattr(conv_direct, "MAX_OUT", max_out)
        got[max_out] = _conv_and_grads(x, k, g, attrs)
    for a, b in zip(*got.values()):
        _close(a, b, dtype)


@pytest.mark.parametrize("case", CONV_CASES[:4] + DIRECT + WINOGRAD)
def test_fused_conv_gradients(float64, always_fast, case):
    shape, kshape, strides, padding, dilation = case
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, *shape[1:]))
    k = rng.standard_normal(kshape)
    check_gradients(lambda a, b: K.conv2d(a, b, strides, padding.lower(), dilation),
                    [x, k], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", POOL_CASES)
def test_fused_max_pool_gradients(float64, always_fast, case):
    shape, size, strides, padding = case
    # Distinct values, so no window has a tie that a difference would split.
    x = np.random.default_rng(4).permutation(np.prod(shape)).reshape(shape) / 7.0
    check_gradients(lambda a: K.max_pool2d(a, size, strides, padding.lower()), [x])


def test_kernels_fall_back_to_numpy_for_what_they_do_not_handle(always_fast):
    factory = conv_fast._factory(
        lambda *a, **k: pytest.fail("fast path taken"), pool_module._max_pool,
        lambda a: a, lambda a: a[0].size)
    kernel = factory(np, {"pool_size": (2, 2), "strides": (2, 2),
                          "padding": "VALID"})
    ints = np.arange(32, dtype=np.int32).reshape(1, 4, 4, 2)
    np.testing.assert_array_equal(kernel(ints),
                                  pool_module._max_pool(np, ints, (2, 2), (2, 2),
                                                        "VALID"))
    assert factory(object(), {}) is None  # another array module: its own kernels
