"""Recurrent loops as single ops: SimpleRNN, LSTM and GRU over a whole sequence.

``RNNLoop`` runs every time step of a cell inside one kernel and
``RNNLoopGrad`` runs backpropagation through time (Werbos 1990) inside another,
so a graph holds two nodes whatever the sequence length: a 500-step LSTM
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

A mask (batch, steps) keeps the state unchanged (and repeats the previous
output) at masked steps, as Keras does. ``rmask`` (batch, units) multiplies the
state before the recurrent product (recurrent dropout, Gal & Ghahramani 2016).
"""

from __future__ import annotations

from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["rnn_loop"]

_GATES = {"simple": 1, "lstm": 4, "gru": 3}
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
    cache = {"simple": 0, "lstm": 4, "gru": 4}[cell]
    return [((n, t, units), x.dtype),
            ((n, t, units if cell == "lstm" else 0), x.dtype),
            ((n, t, cache * units), x.dtype)]


@register_op("RNNLoop", _loop_infer, num_outputs=3)
def _rnn_loop(xp, *inputs, cell, units, activation, recurrent_activation,
              has_state, has_mask, has_rmask):
    x, w, r, b, h0, c0, mask, rmask, _ = _parse(inputs, has_state, has_mask,
                                                 has_rmask, cell)
    n, t, d = x.shape
    u, dt = units, x.dtype
    act, ract = _act(activation), _act(recurrent_activation)
    bias_in = b[0] if cell == "gru" else b
    xw = (x.reshape(n * t, d) @ w).reshape(n, t, -1)
    xw += bias_in
    h = xp.zeros((n, u), dt) if h0 is None else h0.astype(dt, copy=True)
    c = None
    if cell == "lstm":
        c = xp.zeros((n, u), dt) if c0 is None else c0.astype(dt, copy=True)
    hs = xp.empty((n, t, u), dt)
    cs = xp.empty((n, t, u if cell == "lstm" else 0), dt)
    cache = xp.empty((n, t, (4 * u) if cell in ("lstm", "gru") else 0), dt)
    m = None if mask is None else mask.astype(dt)
    for s in range(t):
        hr_in = h if rmask is None else h * rmask
        if cell == "simple":
            z = xw[:, s] + hr_in @ r
            h_new = act(z, xp)
        elif cell == "lstm":
            z = xw[:, s] + hr_in @ r
            ract(z[:, :2 * u], xp)
            act(z[:, 2 * u:3 * u], xp)
            ract(z[:, 3 * u:], xp)
            i, f, g, o = z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u], z[:, 3 * u:]
            c_new = f * c + i * g
            h_new = o * act(c_new.copy(), xp)
            cache[:, s] = z
        else:  # gru
            hr = hr_in @ r + b[1]
            zr = xw[:, s, :2 * u] + hr[:, :2 * u]
            ract(zr, xp)
            zg, rg = zr[:, :u], zr[:, u:]
            hh = act(xw[:, s, 2 * u:] + rg * hr[:, 2 * u:], xp)
            h_new = zg * h + (1.0 - zg) * hh
            cache[:, s, :2 * u] = zr
            cache[:, s, 2 * u:3 * u] = hh
            cache[:, s, 3 * u:] = hr[:, 2 * u:]
        if m is not None:
            ms = m[:, s, None]
            h_new = h + ms * (h_new - h)
            if c is not None:
                c_new = c + ms * (c_new - c)
        h = h_new
        hs[:, s] = h
        if cell == "lstm":
            c = c_new
            cs[:, s] = c
    return hs, cs, cache


@register_gradient("RNNLoop")
def _rnn_loop_grad(node, g_hs, g_cs, _g_cache):
    attrs = node.attrs
    grads = apply("RNNLoopGrad", *node.inputs, *node.outputs, g_hs, g_cs, **attrs)
    dx, dw, dr, db, dh0, dc0 = grads
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
    n = None if x.shape is None else x.shape[0]
    return [(x.shape, x.dtype), (w.shape, x.dtype), (r.shape, x.dtype),
            (b.shape, x.dtype), ((n, units), x.dtype), ((n, units), x.dtype)]


@register_op("RNNLoopGrad", _grad_infer, num_outputs=6)
def _rnn_loop_grad_kernel(xp, *inputs, cell, units, activation, recurrent_activation,
                          has_state, has_mask, has_rmask):
    x, w, r, b, h0, c0, mask, rmask, rest = _parse(inputs, has_state, has_mask,
                                                    has_rmask, cell)
    hs, cs, cache, g_hs, g_cs = rest
    n, t, d = x.shape
    u, dt = units, x.dtype
    dact, dract = _dact(activation), _dact(recurrent_activation)
    k = _GATES[cell]
    dxw = xp.empty((n, t, k * u), dt)
    dr = xp.zeros_like(r)
    db_rec = xp.zeros((k * u,), dt) if cell == "gru" else None
    dh = xp.zeros((n, u), dt)
    dc = xp.zeros((n, u), dt) if cell == "lstm" else None
    zeros = xp.zeros((n, u), dt)
    h_init = zeros if h0 is None else h0.astype(dt)
    c_init = zeros if c0 is None else c0.astype(dt)
    m = None if mask is None else mask.astype(dt)
    rt = r.T
    for s in range(t - 1, -1, -1):
        h_prev = hs[:, s - 1] if s > 0 else h_init
        dh = dh + g_hs[:, s]
        if m is not None:
            ms = m[:, s, None]
            dh_new, dh_keep = dh * ms, dh * (1.0 - ms)
        else:
            dh_new, dh_keep = dh, None
        if cell == "simple":
            dz = dh_new * dact(hs[:, s])
            if m is not None:
                # masked steps stored h_prev: their dz is zero anyway (ms = 0).
                dz = dz * ms
            dxw[:, s] = dz
            dzr = dz
        elif cell == "lstm":
            c_prev = cs[:, s - 1] if s > 0 else c_init
            z = cache[:, s]
            i, f, g, o = z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u], z[:, 3 * u:]
            c_new = f * c_prev + i * g
            tc = _act(activation)(c_new.copy(), xp)
            dc = dc + g_cs[:, s]
            if m is not None:
                dc_new, dc_keep = dc * ms, dc * (1.0 - ms)
            else:
                dc_new, dc_keep = dc, None
            dct = dc_new + dh_new * o * dact(tc)
            blk = dxw[:, s]
            blk[:, :u] = dct * g * dract(i)
            blk[:, u:2 * u] = dct * c_prev * dract(f)
            blk[:, 2 * u:3 * u] = dct * i * dact(g)
            blk[:, 3 * u:] = dh_new * tc * dract(o)
            dc = dct * f if dc_keep is None else dct * f + dc_keep
            dzr = blk
        else:  # gru
            zg, rg = cache[:, s, :u], cache[:, s, u:2 * u]
            hh, hr_h = cache[:, s, 2 * u:3 * u], cache[:, s, 3 * u:]
            dah = dh_new * (1.0 - zg) * dact(hh)
            blk = dxw[:, s]
            blk[:, :u] = dh_new * (h_prev - hh) * dract(zg)
            blk[:, u:2 * u] = dah * hr_h * dract(rg)
            blk[:, 2 * u:] = dah
            dzr = blk.copy()
            dzr[:, 2 * u:] *= rg
            db_rec += dzr.sum(axis=0)
        hr_in = h_prev if rmask is None else h_prev * rmask
        dr += hr_in.T @ dzr
        back = dzr @ rt
        if rmask is not None:
            back *= rmask
        if cell == "gru":
            back += dh_new * zg
        dh = back if dh_keep is None else back + dh_keep
    flat = dxw.reshape(n * t, k * u)
    dx = (flat @ w.T).reshape(n, t, d)
    dw = x.reshape(n * t, d).T @ flat
    db_in = flat.sum(axis=0)
    db = xp.stack([db_in, db_rec]) if cell == "gru" else db_in
    dc0 = dc if cell == "lstm" else xp.zeros((n, u), dt)
    return dx, dw, dr, db.astype(dt), dh, dc0


def rnn_loop(x, kernel, recurrent_kernel, bias, *, cell, activation="tanh",
             recurrent_activation="sigmoid", initial_state=None, mask=None,
             recurrent_mask=None):
    """Runs a recurrent cell over every step of ``x`` in one op.

    Args:
        x: float tensor (batch, steps, features).
        kernel: (features, G * units); recurrent_kernel: (units, G * units),
            G = 1 (simple), 4 (lstm: i, f, c, o), 3 (gru: z, r, h).
        bias: (G * units,), or (2, 3 * units) for gru (input and recurrent).
        cell: 'simple', 'lstm' or 'gru'.
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

