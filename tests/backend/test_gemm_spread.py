"""``backend.ops.gemm.matmul_into``: every path (serial, BLAS-threaded, row,
column and batch blocks) equals ``numpy.matmul`` on plain and strided
operands and outputs, and blocked results do not depend on the thread count."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow.backend import jit
from kerasflow.backend.ops import gemm

CASES = [((8, 8), (8, 8)),                 # below SERIAL_MACS
         ((100, 90), (90, 80)),            # below SERIAL_MACS too
         ((128, 128), (128, 128)),         # serial_blas
         ((300, 250), (250, 200)),         # BLAS's threads
         ((600, 256), (256, 512)),         # row blocks
         ((70, 512), (512, 900)),          # column blocks (few rows)
         ((16, 100, 64), (64, 96)),        # stacked a, shared b
         ((16, 100, 64), (16, 64, 96))]    # stacked both


@pytest.fixture(params=["small", "default"])
def thresholds(request, monkeypatch):
    if request.param == "small":
        # Every non-trivial case takes the blocked path.
        monkeypatch.setattr(gemm, "SPREAD_MACS", 0)
        monkeypatch.setattr(jit, "SERIAL_BLAS_MACS", 0)
        monkeypatch.setattr(jit, "SPREAD_MIN", 0)
    return request.param


@pytest.mark.parametrize("sa,sb", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_numpy_matmul(sa, sb, dtype, thresholds):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    want = np.matmul(a, b)
    got = gemm.matmul_into(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    # Transposed operands and a strided output view, as the plans pass them.
    at = np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    bt = np.ascontiguousarray(np.swapaxes(b, -1, -2)).swapaxes(-1, -2)
    big = np.full((*want.shape[:-1], 2 * want.shape[-1]), np.nan, dtype)
    view = big[..., ::2]
    assert gemm.matmul_into(at, bt, view) is view
    np.testing.assert_allclose(view, want, rtol=tol, atol=tol)
    assert np.isnan(big[..., 1::2]).all()


@pytest.mark.parametrize("sa,sb", CASES[3:])
def test_blocks_do_not_depend_on_the_thread_count(sa, sb, monkeypatch):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    monkeypatch.setattr(gemm, "SPREAD_MACS", 0)
    monkeypatch.setattr(jit, "SPREAD_MIN", 0)
    got = []
    for threads in (1, 2, 3, 5):
        monkeypatch.setattr(jit, "worker_threads", lambda n=threads: n)
        got.append(gemm.matmul_into(a, b))
    for other in got[1:]:
        np.testing.assert_array_equal(got[0], other)
