"""The LSTM cell of ``RNNLoop`` as ONE CUDA kernel per time step (cupy).

On the GPU the numpy-style loop of ``scan._rnn_loop`` launches about eleven
kernels per step after the recurrent product (bias add, tanh, two scalings,
three products, a sum, a copy, tanh, a product): at 28 steps the launches, not
the arithmetic, bound an MNIST-sized LSTM. Here everything after ``h @ R`` is
one elementwise kernel over the (batch, units) cells, the fused-cell idea of
cuDNN's and oneDNN's LSTM: it reads the step's recurrent product (in the
cache), the input projection and the previous cell state once, and writes the
activated gates and ``tanh(c)`` (the cache the backward pass reads), ``c`` and
``h``.

Layout and values as ``scan._rnn_loop``'s fast path (tanh / sigmoid cells):
gate columns (i, f, o, c) with i, f, o pre-scaled by 1/2 so that
``sigmoid(v) = tanh(v / 2) / 2 + 1/2``; the same operations in the same order
(the compiler may contract a multiply-add: float64 agrees to ~1e-15).
"""

from __future__ import annotations

import numpy as np

__all__ = ["lstm_cell", "lstm_cell_grad"]

_KERNELS = {}

_BODY = """
const ptrdiff_t a = i / u, j = i % u;
const ptrdiff_t zb = a * 5 * u + j, xb = a * 4 * u + j;
const T half = 0.5;
T gi = tanh(cache[zb] + xw[xb]) * half + half;
T gf = tanh(cache[zb + u] + xw[xb + u]) * half + half;
T go = tanh(cache[zb + 2 * u] + xw[xb + 2 * u]) * half + half;
T gc = tanh(cache[zb + 3 * u] + xw[xb + 3 * u]);
cache[zb] = gi;
cache[zb + u] = gf;
cache[zb + 2 * u] = go;
cache[zb + 3 * u] = gc;
T cn = gf * c_prev[i] + gi * gc;
T tc = tanh(cn);
cache[zb + 4 * u] = tc;
c_new = cn;
h_new = go * tc;
"""


# One step of backpropagation through time (scan_grad's fast LSTM branch, its
# operations in its order): dct = dc + dh o (1 - tanh(c)^2); the gate
# gradients times the gates' derivatives from their outputs; dc_prev = dct f.
_GRAD_BODY = """
const ptrdiff_t a = i / u, j = i % u;
const ptrdiff_t zb = a * 5 * u + j, bb = a * 4 * u + j;
const T one = 1;
T gi = cache[zb], gf = cache[zb + u], go = cache[zb + 2 * u];
T gg = cache[zb + 3 * u], tc = cache[zb + 4 * u];
T dhv = dh[i];
T dct = (one - tc * tc) * go * dhv + dc[i];
blk[bb] = dct * gg * ((one - gi) * gi);
blk[bb + u] = dct * c_prev[i] * ((one - gf) * gf);
blk[bb + 2 * u] = dhv * tc * ((one - go) * go);
blk[bb + 3 * u] = dct * gi * (one - gg * gg);
dc_out = dct * gf;
"""

_SPECS = {
    "fwd": ("raw T xw, raw T c_prev, int32 u", "raw T cache, T c_new, T h_new",
            _BODY, "kerasflow_lstm_cell"),
    "bwd": ("raw T dh, raw T dc, raw T cache, raw T c_prev, int32 u",
            "raw T blk, T dc_out", _GRAD_BODY, "kerasflow_lstm_cell_grad"),
}


def _kernel(which):
    if which not in _KERNELS:
        import cupy  # noqa: PLC0415  (only reached with cupy arrays)

        _KERNELS[which] = cupy.ElementwiseKernel(*_SPECS[which])
    return _KERNELS[which]


def _usable(arrays):
    dt = arrays[0].dtype
    return dt.name in ("float32", "float64") and all(
        a.dtype == dt and a.flags.c_contiguous for a in arrays)


def lstm_cell(xw, c_prev, cache, c_new, h_new):
    """One LSTM step after the recurrent product, in one launch.

    Args:
        xw: (batch, 4 units) C-contiguous, the step's input projection + bias.
        c_prev: (batch, units) C-contiguous previous cell state.
        cache: (batch, 5 units) C-contiguous: columns [0, 4u) hold ``h @ R`` on
            entry and the activated gates (i, f, o, c) on exit; [4u, 5u)
            receives ``tanh(c)``.
        c_new, h_new: (batch, units) outputs.

    Returns:
        False (nothing done) unless every array is C-contiguous, float32 or
        float64 and of one dtype; True after the launch.
    """
    if not _usable((cache, xw, c_prev, c_new, h_new)):
        return False
    _kernel("fwd")(xw, c_prev, np.int32(c_new.shape[1]), cache, c_new, h_new)
    return True


def lstm_cell_grad(dh, dc, cache, c_prev, blk, dc_out):
    """One LSTM step of backpropagation through time, in one launch.

    Args:
        dh, dc: (batch, units) gradients reaching the step's h and c (live
            part, after the mask).
        cache: (batch, 5 units), what ``lstm_cell`` wrote for the step.
        c_prev: (batch, units) the previous cell state.
        blk: (batch, 4 units) output: the gradient of the gates' inputs
            (i, f, o, c layout, pre-scaling included in the derivative).
        dc_out: (batch, units) output: the gradient reaching ``c_prev``.

    Returns:
        False (nothing done) unless every array is C-contiguous, float32 or
        float64 and of one dtype; True after the launch.
    """
    if not _usable((cache, dh, dc, c_prev, blk, dc_out)):
        return False
    _kernel("bwd")(dh, dc, cache, c_prev, np.int32(dc_out.shape[1]), blk, dc_out)
    return True
