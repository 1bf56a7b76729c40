"""The LSTM cell as one CUDA kernel per step (backend.ops.rnn_device) against
the numpy kernels of ``RNNLoop``: values and the backward pass reading its
cache, float32 and float64, with states, masks and recurrent dropout
(``gpu``-marked: skipped without cupy and a CUDA device)."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend.ops import scan, scan_grad

pytestmark = [pytest.mark.gpu]

TOL = {np.float32: 2e-6, np.float64: 1e-12}


def _case(dtype, variant, n=5, t=7, d=3, u=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, t, d)).astype(dtype)
    w = (rng.standard_normal((d, 4 * u)) * 0.5).astype(dtype)
    r = (rng.standard_normal((u, 4 * u)) * 0.5).astype(dtype)
    b = (rng.standard_normal((4 * u,)) * 0.3).astype(dtype)
    h0 = c0 = mask = rmask = None
    if variant in ("state", "all"):
        h0 = rng.standard_normal((n, u)).astype(dtype)
        c0 = rng.standard_normal((n, u)).astype(dtype)
    if variant in ("mask", "all"):
        mask = rng.random((n, t)) > 0.3
        mask[0, -1] = False
    if variant in ("rmask", "all"):
        rmask = ((rng.random((n, u)) > 0.3) * 1.5).astype(dtype)
    inputs = [x, w, r, b] + [v for v in (h0, c0, mask, rmask) if v is not None]
    attrs = dict(cell="lstm", units=u, activation="tanh",
                 recurrent_activation="sigmoid", has_state=h0 is not None,
                 has_mask=mask is not None, has_rmask=rmask is not None)
    grads = [rng.standard_normal((n, t, u)).astype(dtype) for _ in range(2)]
    return inputs, attrs, grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", ["plain", "state", "mask", "rmask", "all"])
def test_fused_cell_matches_numpy(dtype, variant):
    import cupy

    inputs, attrs, grads = _case(dtype, variant)
    want = scan._rnn_loop(np, *inputs, **attrs)
    dev = [cupy.asarray(a) for a in inputs]
    got = scan._rnn_loop(cupy, *dev, **attrs)
    for a, b in zip(got, want):
        a = K.to_numpy(a)
        scale = max(float(np.max(np.abs(b))), 1.0)
        np.testing.assert_allclose(a, b, rtol=TOL[dtype], atol=TOL[dtype] * scale)
    want_g = scan_grad._rnn_loop_grad_kernel(np, *inputs, *want, *grads, **attrs)
    got_g = scan_grad._rnn_loop_grad_kernel(
        cupy, *dev, *got, *(cupy.asarray(g) for g in grads), **attrs)
    for a, b in zip(got_g, want_g):
        if b is None:
            continue
        a = K.to_numpy(a)
        scale = max(float(np.max(np.abs(b))), 1.0)
        np.testing.assert_allclose(a, b, rtol=TOL[dtype], atol=TOL[dtype] * scale)
