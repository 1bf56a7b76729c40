"""The fused numba LSTM / GRU kernels (backend.ops.rnn_fast, rnn_fast_gru):
values and gradients
against the numpy kernels of ``RNNLoop`` / ``RNNLoopGrad`` in float32 and
float64, compiled plans with fusion on and off, a float64 numerical gradient
check through a fused plan, the fallbacks, and the float32 tanh."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.backend import jit
from kerasflow.backend.ops import rnn_fast, rnn_fast_gru, scan, scan_grad

from gradcheck import check_gradients

pytest.importorskip("numba")

TOL = {np.float32: 1e-5, np.float64: 1e-12}
VARIANTS = ["plain", "state", "mask", "rmask", "all"]


def _close(got, want, dtype):
    scale = max(float(np.max(np.abs(want))), 1.0) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)
    assert got.dtype == want.dtype and got.shape == want.shape


def _case(dtype, variant, n=5, t=7, d=3, u=6, seed=0, cell="lstm"):
    rng = np.random.default_rng(seed)
    k = 4 if cell == "lstm" else 3
    x = rng.standard_normal((n, t, d)).astype(dtype)
    w = (rng.standard_normal((d, k * u)) * 0.5).astype(dtype)
    r = (rng.standard_normal((u, k * u)) * 0.5).astype(dtype)
    b = (rng.standard_normal((k * u,) if cell == "lstm" else (2, k * u))
         * 0.3).astype(dtype)
    h0 = c0 = mask = rmask = None
    if variant in ("state", "all"):
        h0 = rng.standard_normal((n, u)).astype(dtype)
        if cell == "lstm":
            c0 = rng.standard_normal((n, u)).astype(dtype)
    if variant in ("mask", "all"):
        mask = rng.random((n, t)) > 0.3
        mask[0, -1] = False  # a masked last step
    if variant in ("rmask", "all"):
        rmask = ((rng.random((n, u)) > 0.3) * 1.5).astype(dtype)
    inputs = [x, w, r, b] + [v for v in (h0, c0, mask, rmask) if v is not None]
    attrs = dict(cell=cell, units=u, activation="tanh",
                 recurrent_activation="sigmoid", has_state=h0 is not None,
                 has_mask=mask is not None, has_rmask=rmask is not None)
    g_hs = rng.standard_normal((n, t, u)).astype(dtype)
    g_cs = rng.standard_normal((n, t, u if cell == "lstm" else 0)).astype(dtype)
    return inputs, attrs, (x, w, r, b, h0, c0, mask, rmask), g_hs, g_cs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", VARIANTS)
def test_gru_kernels_match_numpy(dtype, variant):
    inputs, attrs, args, g_hs, g_cs = _case(dtype, variant, cell="gru")
    x, w, r, b, h0, _, mask, rmask = args
    want = scan._rnn_loop(np, *inputs, **attrs)
    got = rnn_fast_gru.gru_forward(x, w, r, b, h0, mask, rmask)
    for a, b_ in zip(got, want):
        _close(np.asarray(a), np.asarray(b_), dtype)
    want_g = scan_grad._rnn_loop_grad_kernel(np, *inputs, *want, g_hs, g_cs, **attrs)
    for fwd in (want, got):
        got_g = rnn_fast_gru.gru_backward(x, w, r, b, h0, mask, rmask, fwd[0],
                                          fwd[2], g_hs)
        for a, b_ in zip(got_g, want_g):
            _close(np.asarray(a), np.asarray(b_), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", VARIANTS)
def test_kernels_match_numpy(dtype, variant):
    inputs, attrs, args, g_hs, g_cs = _case(dtype, variant)
    want = scan._rnn_loop(np, *inputs, **attrs)
    got = rnn_fast.lstm_forward(*args)
    for a, b in zip(got, want):
        _close(np.asarray(a), np.asarray(b), dtype)
    # Both gradient kernels on the same forward values (either forward may
    # pair with either gradient), then the whole fused chain.
    want_g = scan_grad._rnn_loop_grad_kernel(np, *inputs, *want, g_hs, g_cs, **attrs)
    for fwd in (want, got):
        got_g = rnn_fast.lstm_backward(*args, *fwd, g_hs, g_cs)
        for a, b in zip(got_g, want_g):
            _close(np.asarray(a), np.asarray(b), dtype)
    back = scan_grad._rnn_loop_grad_kernel(np, *inputs, *got, g_hs, g_cs, **attrs)
    for a, b in zip(back, want_g):
        _close(np.asarray(a), np.asarray(b), dtype)


def test_one_step_and_batch_one():
    for n, t in ((1, 1), (1, 5), (3, 1)):
        inputs, attrs, args, g_hs, g_cs = _case(np.float64, "all", n=n, t=t)
        want = scan._rnn_loop(np, *inputs, **attrs)
        got = rnn_fast.lstm_forward(*args)
        for a, b in zip(got, want):
            _close(np.asarray(a), np.asarray(b), np.float64)
        want_g = scan_grad._rnn_loop_grad_kernel(np, *inputs, *want, g_hs, g_cs,
                                                 **attrs)
        for a, b in zip(rnn_fast.lstm_backward(*args, *got, g_hs, g_cs), want_g):
            _close(np.asarray(a), np.asarray(b), np.float64)


@pytest.fixture
def fused_calls(monkeypatch):
    """Counts calls of the fused forward and backward."""
    calls = {"fwd": 0, "bwd": 0}

    def counted(module, name, key):
        original = getattr(module, name)

        def wrapper(*a):
            calls[key] += 1
            return original(*a)

        monkeypatch.setattr(module, name, wrapper)

    counted(rnn_fast, "lstm_forward", "fwd")
    counted(rnn_fast, "lstm_backward", "bwd")
    counted(rnn_fast_gru, "gru_forward", "fwd")
    counted(rnn_fast_gru, "gru_backward", "bwd")
    yield calls
    K.set_fusion(None)


def _plan(dtype, variant, fusion, acts=("tanh", "sigmoid"), cell="lstm"):
    """Outputs and gradients of rnn_loop through a Function compiled with or
    without fusion."""
    inputs, attrs, args, _, _ = _case(dtype, variant, cell=cell)
    x, w, r, b, h0, c0, mask, rmask = args
    K.set_fusion(fusion)
    try:
        name = np.dtype(dtype).name
        phs = [K.placeholder(name, a.shape) for a in (x, w, r, b)]
        state = None if h0 is None else [
            K.placeholder(name, v.shape) for v in (h0, c0) if v is not None]
        hs, cs, _ = K.rnn_loop(*phs, cell=cell, activation=acts[0],
                               recurrent_activation=acts[1], initial_state=state,
                               mask=mask, recurrent_mask=rmask)
        rng = np.random.default_rng(3)
        loss = K.sum(hs * rng.standard_normal(hs.shape).astype(dtype))
        if cell == "lstm":
            loss = loss + K.sum(cs[:, -1] * rng.standard_normal(
                (x.shape[0], r.shape[0])).astype(dtype))
        wrt = phs + (state or [])
        fn = K.Function(wrt, [hs, cs] + K.gradients(loss, wrt))
        feed = [x, w, r, b] + [v for v in (h0, c0) if v is not None]
        return [K.to_numpy(v) for v in fn(*feed)]
    finally:
        K.set_fusion(None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_compiled_plan_fused_vs_unfused(fused_calls, dtype, variant, cell):
    want = _plan(dtype, variant, False, cell=cell)
    assert fused_calls == {"fwd": 0, "bwd": 0}
    got = _plan(dtype, variant, True, cell=cell)
    assert fused_calls == {"fwd": 1, "bwd": 1}
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _close(a, b, dtype)


def test_other_activations_fall_back(fused_calls):
    want = _plan(np.float64, "mask", False, ("relu", "hard_sigmoid"))
    got = _plan(np.float64, "mask", True, ("relu", "hard_sigmoid"))
    assert fused_calls == {"fwd": 0, "bwd": 0}
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_factories_decline_other_cells_and_gpu():
    attrs = dict(cell="simple", units=4, activation="tanh",
                 recurrent_activation="sigmoid", has_state=False, has_mask=False,
                 has_rmask=False)
    assert rnn_fast._forward_factory(np, attrs) is None
    assert rnn_fast._backward_factory(np, attrs) is None
    assert rnn_fast._forward_factory(np, dict(attrs, cell="gru_v1")) is None
    assert rnn_fast._forward_factory(object(), dict(attrs, cell="lstm")) is None


def test_float16_and_mixed_dtypes_use_numpy(fused_calls):
    inputs, attrs, _, _, _ = _case(np.float32, "plain")
    kernel = rnn_fast._forward_factory(np, attrs)
    half = [a.astype(np.float16) for a in inputs]
    np.testing.assert_array_equal(kernel(*half)[0], scan._rnn_loop(np, *half, **attrs)[0])
    mixed = [inputs[0].astype(np.float64)] + inputs[1:]
    np.testing.assert_array_equal(kernel(*mixed)[0],
                                  scan._rnn_loop(np, *mixed, **attrs)[0])
    assert fused_calls["fwd"] == 0


@pytest.mark.parametrize("variant", ["plain", "all"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_numerical_gradients_through_fused_plan(float64, fused_calls, variant, cell):
    inputs, _, args, _, _ = _case(np.float64, variant, n=2, t=4, d=3, u=3, cell=cell)
    x, w, r, b, h0, c0, mask, rmask = args
    K.set_fusion(True)

    def fn(*a):
        x_, w_, r_, b_, *st = a
        hs, cs, _ = K.rnn_loop(x_, w_, r_, b_, cell=cell, initial_state=st or None,
                               mask=mask, recurrent_mask=rmask)
        return [hs, cs[:, -1]] if cell == "lstm" else hs

    check_gradients(fn, [x, w, r, b] + [v for v in (h0, c0) if v is not None],
                    rtol=1e-5, atol=1e-7)
    assert fused_calls["fwd"] >= 1 and fused_calls["bwd"] == 1


def _train(fusion, layer_kwargs, mask_zeros, layer="LSTM"):
    K.set_fusion(fusion)
    try:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((6, 5, 3)).astype("float32")
        if mask_zeros:
            x[1, 3:] = 0.0
            x[4, :2] = 0.0
        y = rng.standard_normal((6, 2)).astype("float32")
        np.random.seed(0)
        layers = [kf.layers.Masking(0.0, input_shape=(5, 3))] if mask_zeros else []
        seq = layer_kwargs.get("return_sequences", False)
        model = kf.Sequential(layers + [
            getattr(kf.layers, layer)(4, input_shape=(5, 3), **layer_kwargs),
            kf.layers.Flatten() if seq else kf.layers.Lambda(lambda v: v),
            kf.layers.Dense(2)])
        model.compile(optimizer=kf.optimizers.SGD(0.1), loss="mse")
        losses = [float(model.train_on_batch(x, y)) for _ in range(3)]
        return losses, [v.numpy() for v in model.trainable_variables]
    finally:
        K.set_fusion(None)


@pytest.mark.parametrize("layer_kwargs,mask_zeros", [
    ({}, False),
    ({"go_backwards": True, "return_sequences": True}, False),
    ({"return_sequences": True}, True),
    ({"go_backwards": True}, True),
])
@pytest.mark.parametrize("layer", ["LSTM", "GRU"])
def test_layer_training_fused_vs_unfused(fused_calls, layer_kwargs, mask_zeros, layer):
    loss0, w0 = _train(False, layer_kwargs, mask_zeros, layer)
    assert fused_calls["fwd"] == 0
    loss1, w1 = _train(True, layer_kwargs, mask_zeros, layer)
    assert fused_calls["fwd"] >= 1 and fused_calls["bwd"] >= 1
    np.testing.assert_allclose(loss1, loss0, rtol=1e-5)
    for a, b in zip(w1, w0):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_recurrent_dropout_layer_trains_fused(fused_calls):
    loss, weights = _train(True, {"recurrent_dropout": 0.3, "dropout": 0.2}, True)
    assert fused_calls["bwd"] >= 1
    assert all(np.isfinite(v).all() for v in weights) and np.isfinite(loss).all()


def test_float32_tanh():
    src = ("def tanh32(v, out):\n    _ONE = np.float32(1.0)\n"
           "    for k in range(v.shape[0]):\n        x = v[k]\n"
           + "".join(f"        {line}\n" for line in rnn_fast._tanh("t", "x", True, "q"))
           + "        out[k] = t\n")
    kernel = jit.kernels(src, "tanh32")[0]
    v = np.concatenate([np.linspace(-12, 12, 200001), np.geomspace(1e-8, 20, 20001),
                        -np.geomspace(1e-8, 20, 20001), [0.0, np.inf, -np.inf]])
    v = v.astype(np.float32)
    out = np.empty_like(v)
    kernel(v, out)
    exact = np.tanh(v.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(out - exact) / ulp) <= 8
    assert np.all(np.abs(out) <= 1) and out[-2] == 1 and out[-1] == -1
    nan = np.array([np.nan], np.float32)
    kernel(nan, out[:1])
    assert np.isnan(out[0])


def _numpy_blas_threads():
    """Thread counts of the BLAS numpy's matmul calls (numba may load a second
    OpenBLAS, scipy's, which the step products never use)."""
    infos = [i for i in threadpool_info() if i["user_api"] == "blas"]
    mine = [i for i in infos if "numpy" in i["filepath"]] or infos
    return max(i["num_threads"] for i in mine)


def test_serial_blas_runs_the_step_products_in_one_thread_and_restores():
    with threadpool_limits(limits=2, user_api="blas"):
        before = _numpy_blas_threads()
        if before < 2:
            pytest.skip("this BLAS runs one thread at most: nothing to serialize")
        inner = []

        def nested():
            with jit.serial_blas:
                inner.append(_numpy_blas_threads())

        with jit.serial_blas:
            inner.append(_numpy_blas_threads())
            worker = threading.Thread(target=nested)
            worker.start()
            worker.join()
            inner.append(_numpy_blas_threads())  # the other thread's exit kept 1
        assert inner == [1, 1, 1]
        assert _numpy_blas_threads() == before
    assert jit.small_products(jit.SERIAL_BLAS_MACS - 1) is jit.serial_blas
    assert jit.small_products(jit.SERIAL_BLAS_MACS) is not jit.serial_blas
