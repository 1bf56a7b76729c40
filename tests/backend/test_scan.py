"""rnn_loop: forward against a step-by-step reference built from graph ops, and
numerical gradient checks (float64) of every cell, with masks, initial states
and recurrent masks; a 500-step graph builds and compiles in constant size."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients

from kerasflow import backend as K


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _reference(x, w, r, b, cell, h0=None, c0=None, mask=None, rmask=None):
    n, t, _ = x.shape
    u = r.shape[0]
    h = np.zeros((n, u)) if h0 is None else h0
    c = np.zeros((n, u)) if c0 is None else c0
    hs = []
    for s in range(t):
        hin = h if rmask is None else h * rmask
        if cell == "simple":
            hn = np.tanh(x[:, s] @ w + hin @ r + b)
            cn = c
        elif cell == "lstm":
            z = x[:, s] @ w + hin @ r + b
            i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
            cn = _sig(f) * c + _sig(i) * np.tanh(g)
            hn = _sig(o) * np.tanh(cn)
        else:
            xz = x[:, s] @ w + b[0]
            hr = hin @ r + b[1]
            zg = _sig(xz[:, :u] + hr[:, :u])
            rg = _sig(xz[:, u:2 * u] + hr[:, u:2 * u])
            hh = np.tanh(xz[:, 2 * u:] + rg * hr[:, 2 * u:])
            hn = zg * h + (1 - zg) * hh
            cn = c
        if mask is not None:
            m = mask[:, s, None]
            hn = np.where(m, hn, h)
            cn = np.where(m, cn, c)
        h, c = hn, cn
        hs.append(h)
    return np.stack(hs, 1), c


def _weights(cell, d=3, u=4, seed=0):
    rng = np.random.RandomState(seed)
    k = {"simple": 1, "lstm": 4, "gru": 3}[cell]
    b = rng.randn(2, k * u) * 0.3 if cell == "gru" else rng.randn(k * u) * 0.3
    return rng.randn(d, k * u) * 0.5, rng.randn(u, k * u) * 0.5, b


@pytest.mark.parametrize("cell", ["simple", "lstm", "gru"])
@pytest.mark.parametrize("variant", ["plain", "state", "mask", "rmask"])
def test_rnn_loop_forward_and_gradients(float64, cell, variant):
    rng = np.random.RandomState(1)
    n, t, d, u = 2, 5, 3, 4
    x = rng.randn(n, t, d)
    w, r, b = _weights(cell, d, u)
    states = [rng.randn(n, u) * 0.5] + ([rng.randn(n, u) * 0.5]
                                        if cell == "lstm" else [])
    mask = np.array([[1, 1, 0, 1, 0], [1, 0, 1, 1, 1]], bool)
    rmask = (rng.rand(n, u) > 0.3) * 1.5
    kw = {}
    if variant == "mask":
        kw["mask"] = mask
    if variant == "rmask":
        kw["recurrent_mask"] = rmask

    def fn(*args):
        x_, w_, r_, b_, *st = args
        hs, cs, _ = K.rnn_loop(x_, w_, r_, b_, cell=cell,
                               initial_state=st or None, **kw)
        return [hs, cs[:, -1]] if cell == "lstm" else hs

    args = [x, w, r, b] + (states if variant == "state" else [])
    hs, cs, _ = K.rnn_loop(*args[:4], cell=cell,
                           initial_state=args[4:] or None, **kw)
    ref_h, ref_c = _reference(x, w, r, b, cell,
                              *(states + [None])[:2] if variant == "state" else
                              (None, None), mask=kw.get("mask"),
                              rmask=kw.get("recurrent_mask"))
    np.testing.assert_allclose(hs, ref_h, rtol=1e-10, atol=1e-12)
    if cell == "lstm":
        np.testing.assert_allclose(cs[:, -1], ref_c, rtol=1e-10, atol=1e-12)
    check_gradients(fn, args, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("act,ract", [("relu", "hard_sigmoid"),
                                      ("linear", "tanh")])
def test_rnn_loop_other_activations(float64, act, ract):
    rng = np.random.RandomState(2)
    x = rng.randn(2, 4, 3)
    w, r, b = _weights("lstm")
    check_gradients(lambda *a: K.rnn_loop(*a, cell="lstm", activation=act,
                                          recurrent_activation=ract)[0],
                    [x, w, r, b], rtol=1e-5, atol=1e-7)


def test_500_step_graph_has_constant_size():
    x = K.placeholder("float32", (None, 500, 8))
    w, r, b = (np.asarray(a, "float32") for a in _weights("lstm", 8, 16))
    wv, rv, bv = K.Variable(w), K.Variable(r), K.Variable(b)
    hs, _, _ = K.rnn_loop(x, wv, rv, bv, cell="lstm")
    loss = K.sum(hs[:, -1])
    grads = K.gradients(loss, [wv, rv, bv])
    fn = K.Function([x], [loss] + grads)
    assert len(fn._lines) < 40
    out = fn(np.random.RandomState(0).randn(2, 500, 8).astype("float32"))
    assert all(np.all(np.isfinite(o)) for o in out)


def test_rnn_loop_errors():
    w, r, b = _weights("lstm")
    with pytest.raises(ValueError, match="rank 3"):
        K.rnn_loop(np.zeros((2, 3)), w, r, b, cell="lstm")
    with pytest.raises(ValueError, match="activation"):
        K.rnn_loop(np.zeros((2, 3, 3)), w, r, b, cell="lstm", activation="gelu")
