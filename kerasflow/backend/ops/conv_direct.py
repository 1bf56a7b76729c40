"""Direct (GEMM-free) CPU kernels for 2-D convolutions with few output channels.

Used by ``conv_fast`` when the kernel has at most ``MAX_OUT`` output channels,
like the last layer of keras.io's convolutional autoencoder (Conv2D 32 -> 1,
3x3, 'same'). There im2col + GEMM is a matrix-*vector* product: the columns
(kh * kw times the input, 115 MB for a (128, 28, 28, 32) batch) are written
and read once for 2 FLOPs per element read, so the op is bound by memory
traffic. These loops instead read the input where it lies (a window's rows
stay in cache), with the channel loop innermost so that LLVM vectorizes it
(the dot product over channels accumulates into a per-channel vector, summed
at the end of each output element): the same loop structure as oneDNN's direct
convolution for small channel counts.

All take NHWC float32/float64 C-contiguous arrays, ``kt`` = the kernel as
(kh, kw, Cout, Cin) (C-contiguous), and TF's geometry (strides, dilation, pad
top/left, zero padding elsewhere via bounds checks). Results equal the numpy
kernels of ``conv`` up to float rounding (the sums run in another order).
Every output element is written by one loop iteration (the filter gradient
sums ``CHUNKS`` fixed batch chunks afterwards in a fixed order), so results do
not depend on the thread count.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import jit

__all__ = ["INPUT_GRAD_LOOPS", "MAX_OUT", "applies", "backprop_filter",
           "backprop_input", "forward", "window_taps"]

# Output channels up to which the direct loops replace im2col + GEMM.
MAX_OUT = 2
# Batch chunks of the filter gradient (partial sums added in order).
CHUNKS = 16


def window_taps(depth, size=("kh", "kw"), rows="i * sh + a * dh - ph",
                cols="j * sw + b * dw - pw"):
    """Kernel source of the loops over the taps (a, b) of output (i, j)'s
    window that fall inside the (h, w) input, at input row ``hi = rows`` and
    column ``wi = cols``; the first loop indented by ``depth``, the statements
    after it (indented ``depth + 8``) run for each tap (here and in
    ``conv_fast``'s pooling kernels)."""
    pad = " " * depth
    return (f"{pad}for a in range({size[0]}):\n"
            f"{pad}    hi = {rows}\n"
            f"{pad}    if hi < 0 or hi >= h:\n"
            f"{pad}        continue\n"
            f"{pad}    for b in range({size[1]}):\n"
            f"{pad}        wi = {cols}\n"
            f"{pad}        if wi < 0 or wi >= w:\n"
            f"{pad}            continue\n")


_FORWARD = '''
def direct_fwd(x, kt, y, sh, sw, dh, dw, ph, pw):
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    kh, kw, f = kt.shape[0], kt.shape[1], kt.shape[2]
    oh, ow = y.shape[1], y.shape[2]
    for r in prange(y.shape[0] * oh):
        n = r // oh
        i = r % oh
        acc = np.empty((f, c), x.dtype)
        for j in range(ow):
            acc[:] = 0
''' + window_taps(12) + '''\
                    for o in range(f):
                        for q in range(c):
                            acc[o, q] += x[n, hi, wi, q] * kt[a, b, o, q]
            for o in range(f):
                s = acc[o, 0]
                for q in range(1, c):
                    s += acc[o, q]
                y[n, i, j, o] = s
'''

# The loops of an input gradient (here and ``conv_fast``'s col2im), as a
# gather so that each element of dx (N, H, W, C) is written by one iteration:
# dx[n, hi, wi] sums ``{body}`` over the taps (a, b) that read it from output
# (i, j). The kernel's header defines h, w, c, kh, kw, oh, ow.
INPUT_GRAD_LOOPS = '''
    for r in prange(dx.shape[0] * h):
        n = r // h
        hi = r % h
        for wi in range(w):
            for q in range(c):
                dx[n, hi, wi, q] = 0
            for a in range(kh):
                ti = hi + ph - a * dh
                if ti < 0 or ti % sh != 0 or ti // sh >= oh:
                    continue
                i = ti // sh
                for b in range(kw):
                    tj = wi + pw - b * dw
                    if tj < 0 or tj % sw != 0 or tj // sw >= ow:
                        continue
                    j = tj // sw
{body}
'''

_INPUT = '''
def direct_bpi(g, kt, dx, sh, sw, dh, dw, ph, pw):
    h, w, c = dx.shape[1], dx.shape[2], dx.shape[3]
    kh, kw, f = kt.shape[0], kt.shape[1], kt.shape[2]
    oh, ow = g.shape[1], g.shape[2]''' + INPUT_GRAD_LOOPS.format(body='''\
                    for o in range(f):
                        gv = g[n, i, j, o]
                        for q in range(c):
                            dx[n, hi, wi, q] += gv * kt[a, b, o, q]''')

_FILTER = '''
def direct_bpf(x, g, part, sh, sw, dh, dw, ph, pw):
    nb, h, w, c = x.shape
    kh, kw, f = part.shape[1], part.shape[2], part.shape[3]
    oh, ow = g.shape[1], g.shape[2]
    chunks = part.shape[0]
    for p in prange(chunks):
        part[p] = 0
        for n in range(p * nb // chunks, (p + 1) * nb // chunks):
            for i in range(oh):
                for j in range(ow):
''' + window_taps(20) + '''\
                            for o in range(f):
                                gv = g[n, i, j, o]
                                for q in range(c):
                                    part[p, a, b, o, q] += x[n, hi, wi, q] * gv
'''


def applies(kernel_shape) -> bool:
    """True when the direct loops run: at most ``MAX_OUT`` output channels."""
    return kernel_shape[-1] <= MAX_OUT


def _kt(kernel):
    """(kh, kw, Cin, Cout) -> C-contiguous (kh, kw, Cout, Cin)."""
    return np.ascontiguousarray(kernel.transpose(0, 1, 3, 2))


def forward(x, kernel, out, strides, dilation, pads):
    """y (N, oh, ow, Cout) = correlation of x (N, H, W, Cin) with kernel.

    Args:
        x: C-contiguous float32/float64 (N, H, W, Cin).
        kernel: (kh, kw, Cin, Cout), x's dtype.
        out: (oh, ow). strides, dilation: pairs. pads: (pad top, pad left).
    """
    k = jit.kernels(_FORWARD, "direct_fwd")
    y = np.empty((x.shape[0], *out, kernel.shape[-1]), x.dtype)
    jit.launch(k, y.size * x.shape[-1], x, _kt(kernel), y, *strides, *dilation,
               *pads)
    return y


def backprop_input(shape, kernel, g, strides, dilation, pads):
    """dx of NHWC ``shape``: ``g`` (N, oh, ow, Cout) spread back through kernel."""
    k = jit.kernels(_INPUT, "direct_bpi")
    dx = np.empty(shape, g.dtype)
    jit.launch(k, dx.size, g, _kt(kernel), dx, *strides, *dilation, *pads)
    return dx


def backprop_filter(x, kernel_shape, g, strides, dilation, pads):
    """dK (kh, kw, Cin, Cout) = sum over the batch of x windows times g."""
    k = jit.kernels(_FILTER, "direct_bpf")
    kh, kw, cin, cout = kernel_shape
    part = np.empty((min(CHUNKS, x.shape[0]), kh, kw, cout, cin), g.dtype)
    jit.launch(k, x.size * kh * kw * cout, x, g, part, *strides, *dilation, *pads)
    dk = part[0].copy()
    for p in range(1, part.shape[0]):
        dk += part[p]
    return np.ascontiguousarray(dk.transpose(0, 1, 3, 2))
