"""Fused CPU kernels for the LSTM and GRU loops (``RNNLoop`` / ``RNNLoopGrad``),
via numba (the GRU's are in ``rnn_fast_gru``).

The cuDNN / oneDNN idea of a fused LSTM cell, on numpy + numba: per time step
one BLAS product ``h @ R`` (numpy, into a preallocated buffer) and ONE numba
kernel call over the (batch, units) gate block that adds the input
projection, applies the four gate activations, updates ``c`` and ``h``,
applies the mask and writes what backpropagation needs, where the numpy
kernel of ``scan.py`` makes about ten numpy passes (numpy's float32 ``tanh``
of the (128, 512) gate block alone, 0.4 ms, costs more than the product on
our 2-core CPU). Backpropagation through time is the same: per step one numba
call for the gate gradients, then ``dz @ R^T``; the weight gradients stay one
product over all steps (as in ``scan_grad.py``), and the input gradient is
the separate ``RNNLoopInputGrad`` node, skipped when nothing needs it.

Registered with the fusion registry (``register_fused_kernel``), so compiled
plans use them when fusion is on and numba is importable. They cover the LSTM
and the reset-after GRU with Keras' default activations (tanh, sigmoid; gate
orders i, f, c, o and z, r, h of Keras 3) in float32 and float64, with masks,
initial states, recurrent dropout masks and any sequence direction the layer
builds; everything else (SimpleRNN, the reset-before GRU, other activations,
eager calls, GPU arrays, mixed dtypes, zero steps) runs the numpy kernels.
Fused and numpy LSTM kernels use the same layout, (i, f, o, c) columns with i, f, o
pre-scaled by 1/2 (``scan._fast_layout``), and the same cache, so a fused
forward pairs with a numpy gradient and the reverse.

Values: each element goes through the numpy kernel's operations in the same
order and dtype, except tanh in float32, a rational approximation
``x P(x^2) / Q(x^2)`` (degrees 9 / 8, fitted here; at most 6 float32 ulp from
the true tanh, numpy's is within 1.4, relative error < 4e-7) that LLVM
vectorizes, where a libm ``tanhf`` call per element is 8x slower than numpy.
float64 uses ``np.tanh``.
Sigmoid is ``(tanh(v / 2) + 1) / 2`` in both kernels.
"""

from __future__ import annotations

import functools

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.ops import scan as _scan
from kerasflow.backend.ops import scan_grad as _scan_grad

__all__ = ["lstm_backward", "lstm_forward"]

# tanh(x) ~ x P(s) / Q(s), s = x^2, |x| clamped to 9 (tanh(9) rounds to 1 in
# float32): a weighted least-squares fit of the relative error on [0, 9].
_P = (0.9999999949338064, 0.13394107143189843, 0.0035110734595932506,
      2.086197324097398e-05, 1.3701588363890238e-08)
_Q = (1.0, 0.4672742893442247, 0.025936024441275282, 0.00033108749160886493,
      7.919281729308614e-07)
_CLAMP = 9.0


def _horner(coefs, var, cast):
    code = cast(coefs[-1])
    for c in coefs[-2::-1]:
        code = f"({code} * {var} + {cast(c)})"
    return code


def _tanh(dst, src, f32, tag):
    """Statements setting ``dst = tanh(src)`` (NaN in, NaN out; +-inf -> +-1)."""
    if not f32:
        return [f"{dst} = np.tanh({src})"]
    cast = lambda v: f"np.float32({v!r})"  # noqa: E731
    x, s = f"_x{tag}", f"_s{tag}"
    lim = cast(_CLAMP)
    return [
        f"{x} = {lim} if {src} > {lim} else (-{lim} if {src} < -{lim} else {src})",
        f"{s} = {x} * {x}",
        f"{dst} = {x} * {_horner(_P, s, cast)} / {_horner(_Q, s, cast)}",
        f"{dst} = _ONE if {dst} > _ONE else (-_ONE if {dst} < -_ONE else {dst})",
    ]


# Each loop stores to one array per plane: LLVM vectorizes such loops, and
# gives up on one storing several gate planes of the same array (their
# distance is a runtime value). Phase 1 activates the gates in place in ``z``
# (and copies them into the cache), phase 2 updates c and h.
_FWD = '''
{head}
        for j in range(3 * u):
            v = z[a, j] + xw[a, j]
{sig}
            t = t * _HALF + _HALF
            z[a, j] = t
            cache[a, j] = t
        for j in range(u):
            v = z[a, 3 * u + j] + xw[a, 3 * u + j]
{tanh}
            z[a, 3 * u + j] = t
            cache[a, 3 * u + j] = t
        for j in range(u):
            cp = c_prev[a, j]
            cn = z[a, u + j] * cp + z[a, j] * z[a, 3 * u + j]
{cell}
            hn = z[a, 2 * u + j] * tc
{mask}
            cache[a, 4 * u + j] = tc
            c_out[a, j] = cn
            h_out[a, j] = hn
'''
_FWD_MASK = '''
            hp = h_prev[a, j]
            hn = (hn - hp) * m + hp
            cn = (cn - cp) * m + cp'''

# One step of backpropagation through time (the numpy kernel's operations, in
# its order): dh = back (* rmask) (+ the masked-out part kept) + g_hs[s]; then
# one loop per gate plane of dz.
_BWD = '''
{head}
        for j in range(u):
            dh = back[a, j]
{rmask}
{keep}
            dh = dh + gh[a, s, j]
            dcc = dc[a, j] + gc[a, s, j]
            dhn = dh
            dcn = dcc
{split}
            tc = cache[a, 4 * u + j]
            dct = (_ONE - tc * tc) * cache[a, 2 * u + j] * dhn + dcn
            dnew = dct * cache[a, u + j]
{dc_keep}
            dc[a, j] = dnew
            dct_buf[a, j] = dct
            dhn_buf[a, j] = dhn
        for j in range(u):
            i = cache[a, j]
            blk[a, j] = dct_buf[a, j] * cache[a, 3 * u + j] * ((_ONE - i) * i)
        for j in range(u):
            f = cache[a, u + j]
            blk[a, u + j] = dct_buf[a, j] * c_prev[a, j] * ((_ONE - f) * f)
        for j in range(u):
            o = cache[a, 2 * u + j]
            blk[a, 2 * u + j] = dhn_buf[a, j] * cache[a, 4 * u + j] * ((_ONE - o) * o)
        for j in range(u):
            g = cache[a, 3 * u + j]
            blk[a, 3 * u + j] = dct_buf[a, j] * cache[a, j] * (_ONE - g * g)
'''


def _indent(lines, n=12):
    return "\n".join(" " * n + line for line in lines)


def _fields(cell, kind, f32, masked, has_rmask, args):
    """The template fields the LSTM and GRU kernels share: the name, the
    ``head`` (``def name(args):``, n and u, the constants ``_ONE`` and
    (forward) ``_HALF`` in the kernel's dtype, the parallel loop over the
    batch rows ``a`` with their step mask ``m``), and, forward, the gate
    activations ``sig`` and ``tanh`` of ``v`` into ``t``; backward, the
    recurrent-dropout and masked-step terms of dh, ``rmask`` and ``keep``."""
    name = (f"{cell}_{kind}_{'f32' if f32 else 'f64'}_m{int(masked)}"
            f"_r{int(has_rmask)}")
    one = "np.float32(1.0)" if f32 else "1.0"
    if kind == "fwd":
        consts = f"_ONE, _HALF = {one}, {'np.float32(0.5)' if f32 else '0.5'}"
    else:
        consts = f"_ONE = {one}"
    head = (f"def {name}({args}):\n"
            f"    n, u = {'h_out' if kind == 'fwd' else 'back'}.shape\n"
            f"    {consts}\n    for a in prange(n):\n        m = ms[a, 0]")
    if kind == "fwd":
        return name, dict(head=head, sig=_indent(_tanh("t", "v", f32, "s")),
                          tanh=_indent(_tanh("t", "v", f32, "t")))
    ind = " " * 12
    return name, dict(head=head,
                      rmask=ind + "dh = dh * rm[a, j]" if has_rmask else "",
                      keep=ind + "dh = dh + keep[a, j]" if masked else "")


def _source(kind, f32, masked, has_rmask=False):
    if kind == "fwd":
        name, fields = _fields("lstm", kind, f32, masked, has_rmask,
                               "z, xw, c_prev, h_prev, ms, cache, c_out, h_out")
        return _FWD.format(**fields, cell=_indent(_tanh("tc", "cn", f32, "c")),
                           mask=_FWD_MASK if masked else ""), name
    name, fields = _fields(
        "lstm", kind, f32, masked, has_rmask,
        "cache, c_prev, back, rm, keep, gh, gc, s, dc, ms, dct_buf, dhn_buf, blk")
    ind = " " * 12
    return _BWD.format(
        **fields,
        split="\n".join(ind + line for line in (
            "dhn = dh * m", "keep[a, j] = dh - dhn", "dcn = dcc * m"))
        if masked else "",
        dc_keep=ind + "dnew = dnew + (dcc - dcn)" if masked else ""), name


def compile_kernel(source, kind, dtype, masked, has_rmask=False):
    """The serial numba kernel of ``source(kind, f32, masked, has_rmask)``
    (this module's LSTM or ``rnn_fast_gru``'s GRU): per step the (batch,
    units) blocks are far below ``jit.PARALLEL_MIN``, and the
    ``parallel=True`` variant measured slower at (128, 128) on 2 cores (the
    thread pool's wake-up costs more than the 40-70 us of work, and the second
    core serves the BLAS)."""
    if jit.numba_module() is None:
        raise ImportError("rnn_fast needs numba (pip install numba).")
    src, name = source(kind, dtype == np.float32, masked, has_rmask)
    return jit.kernels(src, name)[0]


_kernel = functools.partial(compile_kernel, _source)


def _step_inputs(x, w, r, b, h0, c0, mask, u):
    """The numpy kernel's fast-layout weights and input projection (scan.py)."""
    n, t, d = x.shape
    dt = x.dtype
    perm, scale = _scan._fast_layout(np, u, dt)
    w, r, b = w[:, perm] * scale, r[:, perm] * scale, b[perm] * scale
    xw = (_scan._time_major(np, x).reshape(t * n, d) @ w).reshape(t, n, -1)
    xw += b
    h = np.zeros((n, u), dt) if h0 is None else h0.astype(dt, copy=True)
    c = np.zeros((n, u), dt) if c0 is None else c0.astype(dt, copy=True)
    ms = None if mask is None else _scan._time_major(np, mask.astype(dt))[..., None]
    return r, xw, h, c, ms


def lstm_forward(x, w, r, b, h0=None, c0=None, mask=None, rmask=None):
    """The LSTM over every step of ``x``: ``RNNLoop``'s values, fused.

    Args:
        x: float32 or float64 array (batch, steps, features); w (features,
            4 * units), r (units, 4 * units), b (4 * units,) in Keras' gate
            order (i, f, c, o), of x's dtype.
        h0, c0: (batch, units) initial states or None (zeros).
        mask: (batch, steps) bool/0-1, True for real steps, or None.
        rmask: (batch, units) multiplier of h before ``h @ R``, or None.

    Returns:
        (hs, cs, cache) as ``RNNLoop``: hs, cs (batch, steps, units) views of
        time-major buffers, cache (steps, batch, 5 * units): the gates
        (i, f, o, tanh(c~)) and tanh(c) per step.

    Raises:
        ImportError: numba is not importable (the fusion factory checks first).
    """
    n, t, _ = x.shape
    u, dt = r.shape[0], x.dtype
    fwd = _kernel("fwd", dt, mask is not None)
    r, xw, h, c, ms = _step_inputs(x, w, r, b, h0, c0, mask, u)
    hs = np.empty((t, n, u), dt)
    cs = np.empty((t, n, u), dt)
    cache = np.empty((t, n, 5 * u), dt)
    z = np.empty((n, 4 * u), dt)
    hin = np.empty((n, u), dt) if rmask is not None else None
    ones = np.ones((n, 1), dt)
    with jit.small_products(n * u * 4 * u):
        for s in range(t):
            np.matmul(h if rmask is None else np.multiply(h, rmask, out=hin), r,
                      out=z)
            fwd(z, xw[s], c, h, ones if ms is None else ms[s], cache[s], cs[s],
                hs[s])
            h, c = hs[s], cs[s]
    return hs.swapaxes(0, 1), cs.swapaxes(0, 1), cache


def lstm_backward(x, w, r, b, h0, c0, mask, rmask, hs, cs, cache, g_hs, g_cs):
    """``RNNLoopGrad`` of the LSTM, fused: (dz, dw, dr, db, dh0, dc0).

    Args:
        x, w, r, b, h0, c0, mask, rmask: the forward's inputs (see
            ``lstm_forward``).
        hs, cs, cache: the forward's outputs.
        g_hs, g_cs: (batch, steps, units) gradients of hs and cs.

    Returns:
        dz (steps, batch, 4 * units): the gradient of ``x W + b`` in the
        (i, f, o, c) column order (``RNNLoopInputGrad`` turns it into dx);
        dw, dr, db in Keras' order; dh0, dc0 (batch, units).
    """
    n, t, _ = x.shape
    u, dt = r.shape[0], x.dtype
    bwd = _kernel("bwd", dt, mask is not None, rmask is not None)
    perm, _ = _scan._fast_layout(np, u, dt)
    inverse = np.argsort(perm)
    rt = np.ascontiguousarray(r[:, perm].T)
    hs, cs = hs.swapaxes(0, 1), cs.swapaxes(0, 1)      # time-major again
    g_hs, g_cs = np.ascontiguousarray(g_hs), np.ascontiguousarray(g_cs)
    c_init = np.zeros((n, u), dt) if c0 is None else c0.astype(dt)
    ms = None if mask is None else _scan._time_major(np, mask.astype(dt))[..., None]
    ones = np.ones((n, 1), dt)
    rm = ones if rmask is None else np.ascontiguousarray(rmask, dtype=dt)
    dz = np.empty((t, n, 4 * u), dt)
    back = np.zeros((n, u), dt)
    keep = np.zeros((n, u), dt)
    dc = np.zeros((n, u), dt)
    dct, dhn = np.empty((n, u), dt), np.empty((n, u), dt)
    with jit.small_products(n * u * 4 * u):
        for s in range(t - 1, -1, -1):
            bwd(cache[s], cs[s - 1] if s > 0 else c_init, back, rm, keep, g_hs,
                g_cs, s, dc, ones if ms is None else ms[s], dct, dhn, dz[s])
            np.matmul(dz[s], rt, out=back)
    dh0 = back if rmask is None else back * rm
    if ms is not None:
        dh0 = dh0 + keep
    # dR = sum over steps of h_{s-1}^T dz_s: one product over all steps (the
    # zero initial state adds nothing).
    if rmask is None:
        dr = hs[:t - 1].reshape(-1, u).T @ dz[1:].reshape(-1, 4 * u)
        if h0 is not None:
            dr += h0.astype(dt).T @ dz[0]
    else:
        h_init = np.zeros((n, u), dt) if h0 is None else h0.astype(dt)
        h_prevs = np.concatenate([h_init[None], hs[:-1]], axis=0) * rm
        dr = h_prevs.reshape(t * n, u).T @ dz.reshape(t * n, 4 * u)
    flat = dz.reshape(t * n, 4 * u)
    dw = _scan._time_major(np, x).reshape(t * n, -1).T @ flat
    db = flat.sum(axis=0)
    return dz, dw[:, inverse], dr[:, inverse], db[inverse], dh0, dc


# -- registration with the fusion pass ------------------------------------------------
_CELLS = ("lstm", "gru")


def _covered(attrs, arrays):
    """True when the fused kernels handle this call (else: numpy kernels)."""
    if attrs["cell"] not in _CELLS or attrs["activation"] != "tanh" \
            or attrs["recurrent_activation"] != "sigmoid":
        return False
    dt = arrays[0].dtype
    if dt not in (np.float32, np.float64) or arrays[0].shape[1] == 0:
        return False
    return all(type(a) is np.ndarray and (a.dtype == dt or a.dtype == np.bool_)
               for a in arrays)


def _forward(cell, x, w, r, b, h0, c0, mask, rmask, _):
    if cell == "gru":
        from kerasflow.backend.ops import rnn_fast_gru

        return rnn_fast_gru.gru_forward(x, w, r, b, h0, mask, rmask)
    return lstm_forward(x, w, r, b, h0, c0, mask, rmask)


def _backward(cell, x, w, r, b, h0, c0, mask, rmask, rest):
    if cell == "gru":
        from kerasflow.backend.ops import rnn_fast_gru

        hs, _, cache, g_hs, _ = rest
        return rnn_fast_gru.gru_backward(x, w, r, b, h0, mask, rmask, hs, cache, g_hs)
    return lstm_backward(x, w, r, b, h0, c0, mask, rmask, *rest)


def _factory(numpy_kernel, fused):
    """A fusion factory: ``fused`` for the calls ``_covered`` accepts, the
    numpy kernel otherwise; None (the registry's kernel) off numpy or numba."""
    def make(xp, attrs):
        cell = attrs["cell"]
        if xp is not np or cell not in _CELLS or jit.numba_module() is None:
            return None

        def kernel(*inputs):
            if not _covered(attrs, inputs):
                return numpy_kernel(np, *inputs, **attrs)
            return fused(cell, *_scan._parse(inputs, attrs["has_state"],
                                             attrs["has_mask"], attrs["has_rmask"], cell))

        return kernel

    return make


_forward_factory = _factory(_scan._rnn_loop, _forward)
_backward_factory = _factory(_scan_grad._rnn_loop_grad_kernel, _backward)


fusion.register_fused_kernel("RNNLoop", _forward_factory)
fusion.register_fused_kernel("RNNLoopGrad", _backward_factory)
