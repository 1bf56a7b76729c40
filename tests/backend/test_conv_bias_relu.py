"""Conv2DBiasRelu (backend.ops.conv_bias_relu): the fused kernel against the
numpy ops on every conv path, the plan rewrite, and a float64 gradient check
through the fused plan."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend.ops import conv as conv_module
from kerasflow.backend.ops import conv_bias_relu as cbr
from kerasflow.backend.ops import conv_direct, conv_fast, conv_winograd

from gradcheck import check_gradients
from test_conv_fast import CONV_CASES, DIRECT, WINOGRAD

pytest.importorskip("numba")

# Winograd (3x3, >= 16 channels; VALID and SAME), im2col + GEMM, the direct
# loops (<= 2 output channels).
CASES = [*WINOGRAD, CONV_CASES[1], DIRECT[0]]


def test_cases_cover_every_conv_path():
    paths = [(conv_winograd.applies(k, s, d, x[-1]), conv_direct.applies(k))
             for x, k, s, _, d in CASES]
    assert paths == [(True, False)] * len(WINOGRAD) + [(False, False), (False, True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_kernel_equals_conv_then_bias_then_relu(dtype, case):
    shape, kshape, strides, padding, dilation = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    k = rng.standard_normal(kshape).astype(dtype)
    b = rng.standard_normal(kshape[-1]).astype(dtype)
    got = cbr.conv2d_bias_relu(x, k, b, strides, padding, dilation)
    # The fused paths' convolution, then the two unfused ops: the same float
    # operations per element, so equal to the last bit.
    conv = conv_fast.conv2d_forward(x, k, strides, padding, dilation)
    np.testing.assert_array_equal(got, np.maximum(conv + b, 0))
    want = np.maximum(conv_module._conv(np, x, k, strides, padding, dilation) + b, 0)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    assert got.dtype == dtype and (got >= 0).all()


def test_nan_propagates_as_relu_does():
    x = np.ones((1, 6, 6, 16), "float32")
    x[0, 2, 2, 0] = np.nan
    k = np.ones((3, 3, 16, 16), "float32")
    got = cbr.conv2d_bias_relu(x, k, np.zeros(16, "float32"), (1, 1), "VALID",
                               (1, 1))
    assert np.isnan(got[0, 0, 0, 0]) and not np.isnan(got[0, 3, 3]).any()


def _layer(x, k, b):
    return K.relu(K.conv2d(x, k) + b)


def test_plan_rewrite_fuses_and_matches_unfused(always_fast):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((2, 8, 8, 16)).astype("float32")
    kv = rng.standard_normal((3, 3, 16, 16)).astype("float32") * 0.1
    bv = rng.standard_normal(16).astype("float32") * 0.1
    x, k, b = (K.placeholder("float32", v.shape) for v in (xv, kv, bv))
    out = _layer(x, k, b)
    fetch = [out, *K.gradients(K.sum(out * out), [x, k, b])]
    got = {}
    for on in (True, False):
        K.set_fusion(on)
        f = K.Function([x, k, b], fetch)
        got[on] = f(xv, kv, bv)
        assert any(n.op == "Conv2DBiasRelu" for n in f._lines) == on
    for a, c in zip(got[True], got[False]):
        np.testing.assert_allclose(a, c, rtol=2e-5, atol=2e-5)


def test_conv_read_elsewhere_is_not_fused(always_fast):
    x = K.placeholder("float32", (2, 6, 6, 16))
    k = K.placeholder("float32", (3, 3, 16, 16))
    c = K.conv2d(x, k)
    f = K.Function([x, k], [K.relu(c + 1.0), c])  # c itself is fetched
    assert not any(n.op == "Conv2DBiasRelu" for n in f._lines)


@pytest.mark.parametrize("case", [CASES[0], CASES[2]])
def test_gradients_through_the_fused_plan(float64, always_fast, case):
    shape, kshape, strides, padding, dilation = case
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, *shape[1:]))
    k = rng.standard_normal(kshape) * 0.3
    b = rng.standard_normal(kshape[-1]) * 0.1

    def fn(a, w, c):
        return K.relu(K.conv2d(a, w, strides, padding.lower(), dilation) + c)

    check_gradients(fn, [x, k, b], rtol=1e-6, atol=1e-6)
