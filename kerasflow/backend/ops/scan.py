"""Recurrent loops as single ops: SimpleRNN, LSTM and GRU over a whole sequence.

``RNNLoop`` runs every time step of a cell inside one kernel and
``RNNLoopGrad`` runs backpropagation through time (Werbos 1990) inside another,
(``scan_grad.py``), so a graph holds two nodes whatever the sequence length: a 500-step LSTM
builds and compiles as fast as a 5-step one. The input projection of all
steps is one matrix product before the loop (and its gradient one after it);
inside the loop each step costs one (batch, units) x (units, gates * units)
product plus elementwise work.

Cells follow Keras 3 exactly (gate order, bias layout):

- ``simple``: ``h = act(x W + h R + b)``.
- ``lstm`` (Hochreiter & Schmidhuber 1997; gates i, f, c, o):
  ``z = x W + h R + b``; ``c = f * c + i * act(z_c)``; ``h = o * act(c)``,
  with ``rec_act`` on i, f, o.
- ``gru`` (Cho et al. 2014; gates z, r, h; ``reset_after=True``, bias (2, 3U)):
  ``xz = x W + b[0]``, ``hr = h R + b[1]``; ``z, r = rec_act(xz + hr)``;
  ``hh = act(xz_h + r * hr_h)``; ``h = z * h + (1 - z) * hh``.
- ``gru_v1`` (``reset_after=False``, Keras' original GRU; bias (3U,)): ``z, r =
  rec_act(x W_zr + h R_zr + b_zr)``; ``hh = act(x W_h + (r * h) R_h + b_h)``;
  ``h = z * h + (1 - z) * hh``.

A mask (batch, steps) keeps the state unchanged (and repeats the previous
output) at masked steps, as Keras does. ``rmask`` (batch, units) multiplies the
state before the recurrent product (recurrent dropout, Gal & Ghahramani 2016).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import rnn_device
from kerasflow.backend.registry import apply, register_op

__all__ = ["rnn_loop"]

_GATES = {"simple": 1, "lstm": 4, "gru": 3, "gru_v1": 3}
_CACHE = {"simple": 0, "lstm": 5, "gru": 4, "gru_v1": 4}  # units per step
# activation: (forward f(x, xp), derivative from the output y)
_ACTS = {
    "tanh": (lambda x, xp: xp.tanh(x, out=x), lambda y: 1.0 - y * y),
    "sigmoid": (lambda x, xp: _sigmoid(x, xp), lambda y: y * (1.0 - y)),
    "relu": (lambda x, xp: xp.maximum(x, 0, out=x), lambda y: (y > 0).astype(y.dtype)),
    "linear": (lambda x, xp: x, lambda y: 1.0),
    "hard_sigmoid": (lambda x, xp: _hard_sigmoid(x, xp),
                     lambda y: ((y > 0) & (y < 1)).astype(y.dtype) / 6.0),
}


def _sigmoid(x, xp):
    # 1 / (1 + exp(-x)), via tanh: no overflow warning for large |x|.
    x *= 0.5
    xp.tanh(x, out=x)
    x += 1.0
    x *= 0.5
    return x


def _hard_sigmoid(x, xp):
    # clip(x / 6 + 0.5, 0, 1) in place (Keras 3's definition).
    x /= 6.0
    x += 0.5
    return xp.clip(x, 0.0, 1.0, out=x)


def _act(name):
    return _ACTS[name][0]


def _dact(name):
    return _ACTS[name][1]


def _parse(inputs, has_state, has_mask, has_rmask, cell):
    x, w, r, b, *rest = inputs
    h0 = c0 = mask = rmask = None
    if has_state:
        h0 = rest.pop(0)
        if cell == "lstm":
            c0 = rest.pop(0)
    if has_mask:
        mask = rest.pop(0)
    if has_rmask:
        rmask = rest.pop(0)
    return x, w, r, b, h0, c0, mask, rmask, rest


def _loop_infer(*specs, cell, units, activation, recurrent_activation, has_state,
                has_mask, has_rmask):
    x = specs[0]
    if x.shape is not None and len(x.shape) != 3:
        raise ValueError(f"rnn_loop expects x of rank 3 (batch, steps, features). "
                         f"Received: x.shape={x.shape}.")
    if x.dtype.kind != "f":
        raise TypeError(f"rnn_loop expects a float x. Received: {x.dtype.name}.")
    n, t = (None, None) if x.shape is None else x.shape[:2]
    cache = _CACHE[cell]
    return [((n, t, units), x.dtype),
            ((n, t, units if cell == "lstm" else 0), x.dtype),
            ((t, n, cache * units), x.dtype)]  # the cache is time-major


def _fast_lstm(cell, activation, recurrent_activation):
    return cell == "lstm" and activation == "tanh" and \
        recurrent_activation == "sigmoid"


def _fast_layout(xp, u, dt):
    """Column order (i, f, o, c) of Keras' (i, f, c, o), and the pre-scales."""
    perm = xp.concatenate([xp.arange(0, 2 * u), xp.arange(3 * u, 4 * u),
                           xp.arange(2 * u, 3 * u)])
    scale = xp.concatenate([xp.full(3 * u, 0.5, dt), xp.ones(u, dt)])
    return perm, scale


def _time_major(xp, a):
    """(batch, steps, ...) -> a contiguous (steps, batch, ...) copy."""
    return xp.ascontiguousarray(a.swapaxes(0, 1))


@register_op("RNNLoop", _loop_infer, num_outputs=3)
def _rnn_loop(xp, *inputs, cell, units, activation, recurrent_activation,
              has_state, has_mask, has_rmask):
    x, w, r, b, h0, c0, mask, rmask, _ = _parse(inputs, has_state, has_mask,
                                                 has_rmask, cell)
    n, t, d = x.shape
    u, dt = units, x.dtype
    act, ract = _act(activation), _act(recurrent_activation)
    fast = _fast_lstm(cell, activation, recurrent_activation)
    if fast:
        # Gates reordered (i, f, o, c) and i, f, o pre-scaled by 1/2, so that
        # one tanh over all gates gives sigmoid(v) = (tanh(v / 2) + 1) / 2 for
        # i, f, o after two more passes: 3 elementwise passes instead of 9.
        perm, scale = _fast_layout(xp, u, dt)
        w, r, b = w[:, perm] * scale, r[:, perm] * scale, b[perm] * scale
    # Time-major buffers: every per-step slice below is contiguous.
    xw = (_time_major(xp, x).reshape(t * n, d) @ w).reshape(t, n, -1)
    xw += b[0] if cell == "gru" else b
    h = xp.zeros((n, u), dt) if h0 is None else h0.astype(dt, copy=True)
    c = None
    if cell == "lstm":
        c = xp.zeros((n, u), dt) if c0 is None else c0.astype(dt, copy=True)
    hs = xp.empty((t, n, u), dt)
    cs = xp.empty((t, n, u if cell == "lstm" else 0), dt)
    cache = xp.empty((t, n, _CACHE[cell] * u), dt)
    tmp = xp.empty((n, u), dt)
    hr = xp.empty((n, 3 * u), dt) if cell == "gru" else None
    m = None if mask is None else _time_major(xp, mask.astype(dt))[..., None]
    # On the GPU the fast LSTM cell is one kernel per step (rnn_device).
    device_cell = fast and xp is not np
    for s in range(t):
        hr_in = h if rmask is None else h * rmask
        h_new = hs[s]
        if cell == "simple":
            xp.matmul(hr_in, r, out=h_new)
            h_new += xw[s]
            act(h_new, xp)
        elif cell == "lstm":
            z = cache[s, :, :4 * u]
            xp.matmul(hr_in, r, out=z)
            c_new = cs[s]
            if not (device_cell and rnn_device.lstm_cell(xw[s], c, cache[s], c_new,
                                                         h_new)):
                z += xw[s]
                if fast:
                    xp.tanh(z, out=z)
                    ifo = z[:, :3 * u]
                    ifo *= 0.5
                    ifo += 0.5
                    i, f, o, g = z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u], z[:, 3 * u:]
                else:
                    ract(z[:, :2 * u], xp)
                    act(z[:, 2 * u:3 * u], xp)
                    ract(z[:, 3 * u:], xp)
                    i, f, g, o = z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u], z[:, 3 * u:]
                xp.multiply(f, c, out=c_new)
                xp.multiply(i, g, out=tmp)
                c_new += tmp
                tc = cache[s, :, 4 * u:]
                tc[...] = c_new
                xp.multiply(o, act(tc, xp), out=h_new)
        elif cell == "gru_v1":  # reset before the recurrent product
            zc = cache[s]
            zr = zc[:, :2 * u]
            xp.matmul(hr_in, r[:, :2 * u], out=zr)
            zr += xw[s, :, :2 * u]
            ract(zr, xp)
            zg, rg = zr[:, :u], zr[:, u:]
            rh = zc[:, 3 * u:]
            xp.multiply(rg, hr_in, out=rh)
            hh = zc[:, 2 * u:3 * u]
            xp.matmul(rh, r[:, 2 * u:], out=hh)
            hh += xw[s, :, 2 * u:]
            act(hh, xp)
            xp.subtract(h, hh, out=h_new)      # h_new = hh + z * (h - hh)
            h_new *= zg
            h_new += hh
        else:  # gru
            xp.matmul(hr_in, r, out=hr)
            hr += b[1]
            zc = cache[s]
            zr = zc[:, :2 * u]
            xp.add(xw[s, :, :2 * u], hr[:, :2 * u], out=zr)
            ract(zr, xp)
            zg, rg = zr[:, :u], zr[:, u:]
            hh = zc[:, 2 * u:3 * u]
            xp.multiply(rg, hr[:, 2 * u:], out=hh)
            hh += xw[s, :, 2 * u:]
            act(hh, xp)
            zc[:, 3 * u:] = hr[:, 2 * u:]
            xp.subtract(h, hh, out=h_new)      # h_new = hh + z * (h - hh)
            h_new *= zg
            h_new += hh
        if m is not None:
            ms = m[s]
            h_new -= h                         # h_new = h + ms * (h_new - h)
            h_new *= ms
            h_new += h
            if c is not None:
                c_new -= c
                c_new *= ms
                c_new += c
        h = h_new
        if cell == "lstm":
            c = c_new
    # Batch-major views of the time-major buffers (the cache stays time-major).
    return hs.swapaxes(0, 1), cs.swapaxes(0, 1), cache


def rnn_loop(x, kernel, recurrent_kernel, bias, *, cell, activation="tanh",
             recurrent_activation="sigmoid", initial_state=None, mask=None,
             recurrent_mask=None):
    """Runs a recurrent cell over every step of ``x`` in one op.

    Args:
        x: float tensor (batch, steps, features).
        kernel: (features, G * units); recurrent_kernel: (units, G * units),
            G = 1 (simple), 4 (lstm: i, f, c, o), 3 (gru: z, r, h).
        bias: (G * units,), or (2, 3 * units) for gru (input and recurrent).
        cell: 'simple', 'lstm', 'gru' (reset_after=True) or 'gru_v1'
            (reset_after=False; bias (3 * units,)).
        activation, recurrent_activation: one of 'tanh', 'sigmoid', 'relu',
            'linear', 'hard_sigmoid'.
        initial_state: list of (batch, units) tensors: [h] or, for lstm, [h, c];
            None for zeros.
        mask: bool (batch, steps), True for real steps; None for all.
        recurrent_mask: (batch, units) multiplier of the state before the
            recurrent product (recurrent dropout); None for none.

    Returns:
        (hs, cs, cache): hs (batch, steps, units) the output at every step
        (the final state is ``hs[:, -1]``), cs the lstm cell states (width 0
        for other cells), cache the gate values the gradient reuses.

    Raises:
        ValueError: unknown cell or activation, x not of rank 3.
    """
    if cell not in _GATES:
        raise ValueError(f"rnn_loop cell must be one of {sorted(_GATES)}. "
                         f"Received: cell={cell!r}.")
    for name, a in (("activation", activation),
                    ("recurrent_activation", recurrent_activation)):
        if a not in _ACTS:
            raise ValueError(f"rnn_loop supports {name} in {sorted(_ACTS)}. "
                             f"Received: {name}={a!r}.")
    units = recurrent_kernel.shape[0]
    inputs = [x, kernel, recurrent_kernel, bias]
    state = list(initial_state or [])
    inputs += state
    if mask is not None:
        inputs.append(mask)
    if recurrent_mask is not None:
        inputs.append(recurrent_mask)
    return apply("RNNLoop", *inputs, cell=cell, units=int(units),
                 activation=activation, recurrent_activation=recurrent_activation,
                 has_state=bool(state), has_mask=mask is not None,
                 has_rmask=recurrent_mask is not None)

