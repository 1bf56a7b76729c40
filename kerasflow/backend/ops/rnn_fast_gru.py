"""Fused CPU kernels for the GRU loop (``cell='gru'``, Keras 3's default
``reset_after=True``; gates z, r, h), via numba: the scheme of ``rnn_fast``.

Per time step one BLAS product ``h @ R`` and one numba pass that adds the
recurrent bias and the input projection, applies the gates (sigmoid as
``(tanh(v / 2) + 1) / 2``, as the numpy kernel does), forms the candidate
``tanh(x W_h + r * (h R_h + b_h))`` and the new state ``(h - hh) z + hh``
(Cho et al. 2014, in Keras' reset-after form, as cuDNN's GRU), masks it and
writes the cache; backpropagation through time is one numba pass per step for
the gate gradients, then ``dz @ R^T``. ``rnn_fast``'s fusion factories call
these for GRU nodes with tanh / sigmoid activations in float32 and float64;
the values follow the numpy kernels of ``scan.py`` / ``scan_grad.py``
operation by operation (float32 tanh: see ``rnn_fast``).
"""

from __future__ import annotations

import functools

import numpy as np

from kerasflow.backend import jit
from kerasflow.backend.ops import scan as _scan
from kerasflow.backend.ops.rnn_fast import _fields, compile_kernel

__all__ = ["gru_backward", "gru_forward"]

# Loops store one gate plane each (see rnn_fast: LLVM vectorizes those).
_FWD = '''
{head}
        for j in range(2 * u):
            v = (xw[a, j] + (hr[a, j] + b1[j])) * _HALF
{sig}
            t = (t + _ONE) * _HALF
            gates[a, j] = t
            cache[a, j] = t
        for j in range(u):
            cache[a, 3 * u + j] = hr[a, 2 * u + j] + b1[2 * u + j]
        for j in range(u):
            v = gates[a, u + j] * (hr[a, 2 * u + j] + b1[2 * u + j]) + xw[a, 2 * u + j]
{tanh}
            hp = h_prev[a, j]
            hn = (hp - t) * gates[a, j] + t
{mask}
            cache[a, 2 * u + j] = t
            h_out[a, j] = hn
'''

_BWD = '''
{head}
        for j in range(u):
            dh = back[a, j]
{rmask}
            dh = dh + carry[a, j]
{keep}
            dh = dh + gh[a, s, j]
            dhn = dh
{split}
            z = cache[a, j]
            hh = cache[a, 2 * u + j]
            dah[a, j] = (_ONE - hh * hh) * (_ONE - z) * dhn
            carry[a, j] = dhn * z
            dhn_buf[a, j] = dhn
        for j in range(u):
            z = cache[a, j]
            blk[a, j] = (h_prev[a, j] - cache[a, 2 * u + j]) * dhn_buf[a, j] * (
                (_ONE - z) * z)
        for j in range(u):
            r = cache[a, u + j]
            blk[a, u + j] = dah[a, j] * cache[a, 3 * u + j] * ((_ONE - r) * r)
        for j in range(u):
            blk[a, 2 * u + j] = dah[a, j]
        for j in range(2 * u):
            rec[a, j] = blk[a, j]
        for j in range(u):
            rec[a, 2 * u + j] = dah[a, j] * cache[a, u + j]
'''


def _source(kind, f32, masked, has_rmask=False):
    ind = " " * 12
    if kind == "fwd":
        name, fields = _fields("gru", kind, f32, masked, has_rmask,
                               "hr, b1, xw, h_prev, ms, gates, cache, h_out")
        return _FWD.format(
            **fields, mask=ind + "hn = (hn - hp) * m + hp" if masked else ""), name
    name, fields = _fields(
        "gru", kind, f32, masked, has_rmask,
        "cache, h_prev, back, rm, carry, keep, gh, s, ms, dah, dhn_buf, blk, rec")
    return _BWD.format(
        **fields, split=(ind + "dhn = dh * m\n" + ind + "keep[a, j] = dh - dhn")
        if masked else ""), name


_kernel = functools.partial(compile_kernel, _source)


def gru_forward(x, w, r, b, h0=None, mask=None, rmask=None):
    """The GRU (reset_after) over every step of ``x``: ``RNNLoop``'s values.

    Args:
        x: float32 or float64 (batch, steps, features); w (features, 3 * units),
            r (units, 3 * units), b (2, 3 * units) (input, recurrent), Keras'
            gate order (z, r, h), of x's dtype.
        h0: (batch, units) initial state or None; mask: (batch, steps) or
            None; rmask: (batch, units) recurrent dropout multiplier or None.

    Returns:
        (hs, cs, cache): hs (batch, steps, units), cs (batch, steps, 0),
        cache (steps, batch, 4 * units): z, r, the candidate, h R_h + b_h.
    """
    n, t, d = x.shape
    u, dt = r.shape[0], x.dtype
    fwd = _kernel("fwd", dt, mask is not None)
    xw = (_scan._time_major(np, x).reshape(t * n, d) @ w).reshape(t, n, -1)
    xw += b[0]
    b1 = np.ascontiguousarray(b[1])
    h = np.zeros((n, u), dt) if h0 is None else h0.astype(dt, copy=True)
    ms = None if mask is None else _scan._time_major(np, mask.astype(dt))[..., None]
    ones = np.ones((n, 1), dt)
    hs = np.empty((t, n, u), dt)
    cache = np.empty((t, n, 4 * u), dt)
    hr, gates = np.empty((n, 3 * u), dt), np.empty((n, 2 * u), dt)
    hin = np.empty((n, u), dt) if rmask is not None else None
    with jit.small_products(n * u * 3 * u):
        for s in range(t):
            np.matmul(h if rmask is None else np.multiply(h, rmask, out=hin), r,
                      out=hr)
            fwd(hr, b1, xw[s], h, ones if ms is None else ms[s], gates, cache[s],
                hs[s])
            h = hs[s]
    return hs.swapaxes(0, 1), np.empty((n, t, 0), dt), cache


def gru_backward(x, w, r, b, h0, mask, rmask, hs, cache, g_hs):
    """``RNNLoopGrad`` of the GRU: (dz, dw, dr, db, dh0, zeros).

    dz (steps, batch, 3 * units) is the gradient of ``x W + b[0]``; db is
    (2, 3 * units); the inputs are ``gru_forward``'s and its outputs.
    """
    n, t, _ = x.shape
    u, dt = r.shape[0], x.dtype
    bwd = _kernel("bwd", dt, mask is not None, rmask is not None)
    rt = np.ascontiguousarray(r.T)
    hs = hs.swapaxes(0, 1)
    g_hs = np.ascontiguousarray(g_hs)
    h_init = np.zeros((n, u), dt) if h0 is None else h0.astype(dt)
    ms = None if mask is None else _scan._time_major(np, mask.astype(dt))[..., None]
    ones = np.ones((n, 1), dt)
    rm = ones if rmask is None else np.ascontiguousarray(rmask, dtype=dt)
    dz, rec = np.empty((t, n, 3 * u), dt), np.empty((t, n, 3 * u), dt)
    back, carry, keep = (np.zeros((n, u), dt) for _ in range(3))
    dah, dhn = np.empty((n, u), dt), np.empty((n, u), dt)
    with jit.small_products(n * u * 3 * u):
        for s in range(t - 1, -1, -1):
            bwd(cache[s], hs[s - 1] if s > 0 else h_init, back, rm, carry, keep,
                g_hs, s, ones if ms is None else ms[s], dah, dhn, dz[s], rec[s])
            np.matmul(rec[s], rt, out=back)
    dh0 = back if rmask is None else back * rm
    dh0 = dh0 + carry
    if ms is not None:
        dh0 += keep
    h_prevs = np.concatenate([h_init[None], hs[:-1]], axis=0)
    if rmask is not None:
        h_prevs = h_prevs * rm
    dr = h_prevs.reshape(t * n, u).T @ rec.reshape(t * n, 3 * u)
    flat = dz.reshape(t * n, 3 * u)
    dw = _scan._time_major(np, x).reshape(t * n, -1).T @ flat
    db = np.stack([flat.sum(axis=0), rec.reshape(t * n, 3 * u).sum(axis=0)])
    return dz, dw, dr, db, dh0, np.zeros((n, u), dt)
