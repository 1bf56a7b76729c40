"""Backpropagation through time for ``RNNLoop`` (``scan.py``) as one op,
``RNNLoopGrad`` (Werbos 1990): the per-step gate gradients inside one
kernel, then the weight gradients as one matrix product over all steps."""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import rnn_device
from kerasflow.backend.ops.scan import (
    _GATES,
    _dact,
    _fast_layout,
    _fast_lstm,
    _parse,
    _time_major,
)
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__: list = []


@register_gradient("RNNLoop")
def _rnn_loop_grad(node, g_hs, g_cs, _g_cache):
    attrs = node.attrs
    grads = apply("RNNLoopGrad", *node.inputs, *node.outputs, g_hs, g_cs, **attrs)
    dz, dw, dr, db, dh0, dc0 = grads
    # dx is its own node: a plan that needs no input gradient (x fed by the
    # caller) prunes it, saving a (steps * batch, G * units) x (G * units,
    # features) product.
    dx = apply("RNNLoopInputGrad", dz, node.inputs[1], **attrs)
    out = [dx, dw, dr, db]
    if attrs["has_state"]:
        out.append(dh0)
        if attrs["cell"] == "lstm":
            out.append(dc0)
    out += [None] * (len(node.inputs) - len(out))
    return tuple(out)


def _grad_infer(*specs, cell, units, activation, recurrent_activation, has_state,
                has_mask, has_rmask):
    x, w, r, b = specs[:4]
    n, t = (None, None) if x.shape is None else x.shape[:2]
    dz = (t, n, _GATES[cell] * units)  # time-major, the kernel's gate order
    return [(dz, x.dtype), (w.shape, x.dtype), (r.shape, x.dtype),
            (b.shape, x.dtype), ((n, units), x.dtype), ((n, units), x.dtype)]


def _deriv(name, y, out, xp):
    """``out = f'(.)`` of activation ``name`` given its output ``y`` (in place)."""
    if name == "sigmoid":
        xp.subtract(1.0, y, out=out)
        out *= y
    elif name == "tanh":
        xp.multiply(y, y, out=out)
        xp.subtract(1.0, out, out=out)
    else:
        out[...] = _dact(name)(y)
    return out


def _masked_split(v, m, s):
    """(the part of ``v`` at live steps of step ``s``, the rest; None unmasked)."""
    if m is None:
        return v, None
    live = v * m[s]
    return live, v - live


@register_op("RNNLoopGrad", _grad_infer, num_outputs=6)
def _rnn_loop_grad_kernel(xp, *inputs, cell, units, activation, recurrent_activation,
                          has_state, has_mask, has_rmask):
    x, w, r, b, h0, c0, mask, rmask, rest = _parse(inputs, has_state, has_mask,
                                                    has_rmask, cell)
    hs, cs, cache, g_hs, g_cs = rest
    n, t, d = x.shape
    u, dt = units, x.dtype
    k = _GATES[cell]
    hs, cs = hs.swapaxes(0, 1), cs.swapaxes(0, 1)      # time-major again
    g_hs = _time_major(xp, g_hs)
    g_cs = _time_major(xp, g_cs) if cell == "lstm" else None
    dxw = xp.empty((t, n, k * u), dt)                   # grads of x W + b
    dzr = xp.empty((t, n, k * u), dt) if cell == "gru" else dxw  # of h R (+ b1)
    deriv = xp.empty((n, k * u), dt)
    dh = xp.zeros((n, u), dt)
    dc = xp.zeros((n, u), dt) if cell == "lstm" else None
    tmp, tmp2 = xp.empty((n, u), dt), xp.empty((n, u), dt)
    h_init = xp.zeros((n, u), dt) if h0 is None else h0.astype(dt)
    c_init = xp.zeros((n, u), dt) if c0 is None else c0.astype(dt)
    m = None if mask is None else _time_major(xp, mask.astype(dt))[..., None]
    fast = _fast_lstm(cell, activation, recurrent_activation)
    if fast:  # the forward's cache and this dxw use the (i, f, o, c) order
        perm, _ = _fast_layout(xp, u, dt)
        inverse = xp.argsort(perm)
        w, r = w[:, perm], r[:, perm]
    rt = xp.ascontiguousarray(r.T)
    for s in range(t - 1, -1, -1):
        h_prev = hs[s - 1] if s > 0 else h_init
        dh += g_hs[s]
        dh_new, dh_keep = _masked_split(dh, m, s)
        blk = dxw[s]
        if cell == "simple":
            _deriv(activation, hs[s], blk, xp)
            blk *= dh_new
            if m is not None:
                blk *= m[s]  # masked steps stored h_prev: no gradient through f
        elif cell == "lstm":
            c_prev = cs[s - 1] if s > 0 else c_init
            z = cache[s]
            tc = z[:, 4 * u:]
            dc += g_cs[s]
            dc_new, dc_keep = _masked_split(dc, m, s)
            if fast and xp is not np and rnn_device.lstm_cell_grad(
                    dh_new, dc_new, z, c_prev, blk, tmp2):  # one CUDA kernel
                dc, tmp2 = (tmp2, dc) if dc_keep is None else (tmp2 + dc_keep, dc)
            elif fast:  # the (i, f, o, c) layout
                i, f, o, g = (z[:, j * u:(j + 1) * u] for j in range(4))
                xp.multiply(tc, tc, out=tmp2)            # dct = dc + dh o (1 - tc^2)
                xp.subtract(1.0, tmp2, out=tmp2)
                tmp2 *= o
                tmp2 *= dh_new
                tmp2 += dc_new
                xp.multiply(tmp2, g, out=blk[:, :u])
                xp.multiply(tmp2, c_prev, out=blk[:, u:2 * u])
                xp.multiply(dh_new, tc, out=blk[:, 2 * u:3 * u])
                xp.multiply(tmp2, i, out=blk[:, 3 * u:])
                ifo, dv = z[:, :3 * u], deriv[:, :3 * u]
                xp.subtract(1.0, ifo, out=dv)            # sigmoid' = y (1 - y)
                dv *= ifo
                _deriv("tanh", g, deriv[:, 3 * u:], xp)
                blk *= deriv
                tmp2 *= f
                dc, tmp2 = (tmp2, dc) if dc_keep is None else (tmp2 + dc_keep, dc)
            else:
                i, f, g, o = (z[:, j * u:(j + 1) * u] for j in range(4))
                _deriv(activation, tc, tmp2, xp)         # dct = dc + dh o act'(c)
                tmp2 *= o
                tmp2 *= dh_new
                tmp2 += dc_new
                dct = tmp2
                xp.multiply(dct, g, out=blk[:, :u])
                xp.multiply(dct, c_prev, out=blk[:, u:2 * u])
                xp.multiply(dct, i, out=blk[:, 2 * u:3 * u])
                xp.multiply(dh_new, tc, out=blk[:, 3 * u:])
                _deriv(recurrent_activation, z[:, :2 * u], deriv[:, :2 * u], xp)
                _deriv(activation, g, deriv[:, 2 * u:3 * u], xp)
                _deriv(recurrent_activation, o, deriv[:, 3 * u:], xp)
                blk *= deriv
                dct *= f
                dc = dct.copy() if dc_keep is None else dct + dc_keep
        else:  # gru, gru_v1
            z = cache[s]
            zg, rg, hh = z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u]
            _deriv(activation, hh, tmp, xp)             # dah = dh (1 - z) act'
            xp.subtract(1.0, zg, out=tmp2)
            tmp *= tmp2
            tmp *= dh_new
            dah = blk[:, 2 * u:]
            dah[...] = tmp
            xp.subtract(h_prev, hh, out=blk[:, :u])    # dz = dh (h - hh)
            blk[:, :u] *= dh_new
            if cell == "gru":  # dr = dah (h R_h + b_h), cached
                xp.multiply(dah, z[:, 3 * u:], out=blk[:, u:2 * u])
            else:
                h_in = h_prev if rmask is None else h_prev * rmask
                drh = dah @ rt[2 * u:]                  # d(r * h_in)
                xp.multiply(drh, h_in, out=blk[:, u:2 * u])
            _deriv(recurrent_activation, z[:, :2 * u], deriv[:, :2 * u], xp)
            blk[:, :2 * u] *= deriv[:, :2 * u]
            if cell == "gru":
                rec = dzr[s]
                rec[:, :2 * u] = blk[:, :2 * u]
                xp.multiply(dah, rg, out=rec[:, 2 * u:])
        if cell == "gru_v1":
            back = blk[:, :2 * u] @ rt[:2 * u]
            drh *= rg
            back += drh
        else:
            back = dzr[s] @ rt
        if rmask is not None:
            back *= rmask
        if cell in ("gru", "gru_v1"):
            xp.multiply(dh_new, zg, out=tmp)
            back += tmp
        dh = back if dh_keep is None else back + dh_keep
    # The recurrent kernel's gradient: one product over all steps.
    h_prevs = xp.concatenate([h_init[None], hs[:-1]], axis=0)
    if rmask is not None:
        h_prevs = h_prevs * rmask
    if cell == "gru_v1":  # the candidate's product reads r * h, cached
        dr = xp.concatenate([
            h_prevs.reshape(t * n, u).T @ dxw[..., :2 * u].reshape(t * n, 2 * u),
            cache[..., 3 * u:].reshape(t * n, u).T
            @ dxw[..., 2 * u:].reshape(t * n, u)], axis=1)
    else:
        dr = h_prevs.reshape(t * n, u).T @ dzr.reshape(t * n, k * u)
    flat = dxw.reshape(t * n, k * u)
    dw = _time_major(xp, x).reshape(t * n, d).T @ flat
    db_in = flat.sum(axis=0)
    db = xp.stack([db_in, dzr.reshape(t * n, k * u).sum(axis=0)]) \
        if cell == "gru" else db_in
    if fast:
        dw, dr, db = dw[:, inverse], dr[:, inverse], db[inverse]
    dc0 = dc if cell == "lstm" else xp.zeros((n, u), dt)
    return dxw, dw, dr.astype(dt), db.astype(dt), dh, dc0


def _input_grad_infer(dz, w, *, cell, units, activation, recurrent_activation,
                      has_state, has_mask, has_rmask):
    t, n = (None, None) if dz.shape is None else dz.shape[:2]
    return (n, t, w.shape[0] if w.shape is not None else None), dz.dtype


@register_op("RNNLoopInputGrad", _input_grad_infer)
def _rnn_loop_input_grad(xp, dz, w, *, cell, units, activation, recurrent_activation,
                         has_state, has_mask, has_rmask):
    """dx (batch, steps, features) = dz @ W^T, dz the time-major (steps, batch,
    G * units) gradient of ``x W + b`` that ``RNNLoopGrad`` returns, in the
    column order of its kernel ((i, f, o, c) for the fast LSTM)."""
    t, n, k = dz.shape
    if _fast_lstm(cell, activation, recurrent_activation):
        perm, _ = _fast_layout(xp, units, w.dtype)
        w = w[:, perm]
    return (dz.reshape(t * n, k) @ w.T).reshape(t, n, -1).swapaxes(0, 1)
