"""Conv2DTranspose through the fused conv kernels (backend.ops.conv_fast):
values against the numpy kernel in float32 (2e-5 of the values' scale) and
float64 (1e-12), compiled plans with fusion on against off (values and
gradients), and float64 gradient checks of the fused plan."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend.ops import conv, conv_direct, conv_fast

from gradcheck import check_gradients

pytest.importorskip("numba")

# (x shape, kernel (kh, kw, out, in), output size, strides, padding, dilation)
CASES = [
    ((3, 7, 7, 5), (3, 3, 4, 5), (14, 14), (2, 2), "SAME", (1, 1)),  # autoencoder
    ((2, 5, 6, 3), (3, 2, 6, 3), (11, 12), (2, 2), "VALID", (1, 1)),
    ((2, 6, 5, 4), (3, 3, 3, 4), (6, 5), (1, 1), "SAME", (2, 1)),
    ((2, 4, 5, 2), (2, 3, 5, 2), (8, 15), (2, 3), "SAME", (1, 1)),  # direct (2 in)
    ((2, 6, 6, 16), (3, 3, 16, 16), (6, 6), (1, 1), "SAME", (1, 1)),  # Winograd
]
TOL = {np.float32: 2e-5, np.float64: 1e-12}


def _close(got, want, dtype):
    scale = max(float(np.max(np.abs(want))), 1.0)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)
    assert got.dtype == want.dtype and got.shape == want.shape


def _attrs(case):
    _, _, size, strides, padding, dilation = case
    return {"strides": strides, "padding": padding, "dilation_rate": dilation,
            "output_shape": size}


def test_the_cases_cover_the_direct_loops():
    # In conv2d's terms the transposed kernel maps out -> in: x's channels are
    # the conv's output channels.
    assert [conv_direct.applies(c[1]) for c in CASES] == [False] * 3 + [True, False]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_fused_kernel_matches_numpy(dtype, case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case[0]).astype(dtype)
    k = rng.standard_normal(case[1]).astype(dtype)
    want = conv._conv2d_transpose(np, x, k, **_attrs(case))
    _close(conv_fast.conv2d_transpose(x, k, **_attrs(case)), want, dtype)


def test_plans_use_the_fused_kernel(monkeypatch):
    monkeypatch.setattr(conv_fast, "MIN_SIZE", 0)
    called = []
    real = conv_fast.conv2d_backprop_input
    monkeypatch.setattr(conv_fast, "conv2d_backprop_input",
                        lambda *a, **k: called.append(1) or real(*a, **k))
    case = CASES[0]
    x = K.placeholder("float32", case[0])
    k = K.placeholder("float32", case[1])
    y = K.conv2d_transpose(x, k, case[2], case[3], case[4].lower(), case[5])
    K.set_fusion(True)
    try:
        K.Function([x, k], [y])(np.ones(case[0], "float32"),
                                np.ones(case[1], "float32"))
    finally:
        K.set_fusion(None)
    assert called


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES)
def test_plan_fused_matches_unfused(monkeypatch, dtype, case):
    monkeypatch.setattr(conv_fast, "MIN_SIZE", 0)
    rng = np.random.default_rng(1)
    xv = rng.standard_normal(case[0]).astype(dtype)
    kv = rng.standard_normal(case[1]).astype(dtype)
    x, k = K.placeholder(dtype, xv.shape), K.placeholder(dtype, kv.shape)
    y = K.relu(K.conv2d_transpose(x, k, case[2], case[3], case[4].lower(),
                                  case[5]))
    outs = [y, *K.gradients(K.sum(y * y), [x, k])]
    got = {}
    for on in (True, False):
        K.set_fusion(on)
        try:
            got[on] = K.Function([x, k], outs)(xv, kv)
        finally:
            K.set_fusion(None)
    for a, b in zip(got[True], got[False]):
        _close(np.asarray(a), np.asarray(b), np.dtype(dtype).type)


@pytest.mark.parametrize("case", CASES)
def test_fused_gradients(float64, monkeypatch, case):
    monkeypatch.setattr(conv_fast, "MIN_SIZE", 0)
    K.set_fusion(True)
    try:
        rng = np.random.default_rng(3)
        x = rng.standard_normal(case[0])
        k = rng.standard_normal(case[1])
        check_gradients(
            lambda a, b: K.conv2d_transpose(a, b, case[2], case[3],
                                            case[4].lower(), case[5]),
            [x, k], rtol=1e-6, atol=1e-6)
    finally:
        K.set_fusion(None)
