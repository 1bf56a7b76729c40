"""Fused CPU kernels for 2-D convolution and max pooling (NHWC), via numba.

Registered with the fusion registry (``register_fused_kernel``), so compiled
plans use them when fusion is on and numba is importable; eager calls, GPU
arrays, other ranks and dtypes keep the numpy kernels of ``conv`` and
``pooling``, which compute the same values up to float rounding.

Why they are faster than the numpy kernels on a 2-core CPU (the MNIST convnet's
second convolution, (128, 26, 26, 32) * (3, 3, 32, 64)):

* 3x3 stride-1 convolutions with >= 16 channels (forward, both gradients) use
  Winograd F(2x2, 3x3) (``conv_winograd``): 2.25x fewer multiplications.
* Kernels with <= 2 output channels (``conv_direct.MAX_OUT``; the
  autoencoder's last Conv2D 32 -> 1) use direct loops (``conv_direct``): there
  im2col + GEMM is a memory-bound matrix-vector product.
* Otherwise im2col runs as a numba loop (numpy copies in one thread) into a
  buffer of a few images, which is still in cache when the GEMM reads it; the
  GEMM is one plain ``(images * out pixels, kh * kw * Cin) @ (kh * kw * Cin,
  Cout)`` product with no transposed copy.
* The input gradient (outside Winograd) is one GEMM per batch slice,
  ``g @ kernel^T`` into columns, then a col2im that *gathers*: each image's
  dx rows add their window taps in a fixed order (no scatter, no
  ``np.add.at``, no padded buffer to crop), instead of one small GEMM and one
  strided add per tap.
* Outside Winograd, the filter gradient rebuilds the columns by slice (cheaper
  than keeping the forward's columns, kh * kw times the input, 85 MB here)
  and sums ``columns^T @ g`` over the slices (``jit.spread_sum``: in order
  within fixed groups of slices, then over the groups in order).
* The slices (or groups) are shared out over the threads (``jit.spread``):
  each thread runs its slices' numba loops and GEMMs, BLAS on one thread, so
  no op hands the cores between numba's and BLAS's pools, and BLAS's threads
  never spin beside the next kernel. The slicing depends on sizes only, so
  results do not depend on the thread count.
* Max pooling reads each input element once; its gradient finds each window's
  first maximum (TF's rule) in one pass and writes dx, zeros included, in the
  same pass.

* ``Conv2DTranspose`` is conv2d's input gradient (and its gradients are a
  Conv2D and a Conv2DBackpropFilter): it runs through the same kernels.

Padding (TF's SAME/VALID) is handled by bounds checks inside the loops, so no
padded copy of the input is made.
"""

from __future__ import annotations

import math

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.ops import conv as _conv
from kerasflow.backend.ops import conv_direct as _direct
from kerasflow.backend.ops import conv_winograd as _wino
from kerasflow.backend.ops import pooling as _pooling

__all__ = []

# Below this many output elements the numpy kernels run (no compile, as fast).
MIN_SIZE = 4096
# Columns of one batch slice: a few images, so that the slice is still in the
# last-level cache when the GEMM reads it (see benchmarks/profile_cnn_step.py).
COLUMN_BYTES = 4 * 2**20
# Slices per batch at least (``_images_per_slice``), so that threads share
# them even where one slice could hold the batch's columns (the resnet's 1x1
# convolutions: one slice ran on BLAS's threads, which then spun beside the
# next kernels). A constant: results do not depend on the thread count.
MIN_SLICES = 8

# Both im2col kernels: one parallel iteration per output row (n, i) of the
# slice that starts at image n0, ``{setup}`` lines after the shapes, ``{body}``
# per output element (row ``row`` of ``cols``).
_IM2COL_ROWS = '''
def {name}(x, cols, n0, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw):
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
{setup}    for r in prange(cols.shape[0] // ow):
        n = n0 + r // oh
        i = r % oh
        for j in range(ow):
            row = r * ow + j
{body}
'''

_IM2COL = _IM2COL_ROWS.format(name="im2col", setup="", body='''\
            for a in range(kh):
                hi = i * sh + a * dh - ph
                for b in range(kw):
                    wi = j * sw + b * dw - pw
                    base = (a * kw + b) * c
                    if hi >= 0 and hi < h and wi >= 0 and wi < w:
                        for q in range(c):
                            cols[row, base + q] = x[n, hi, wi, q]
                    else:
                        for q in range(c):
                            cols[row, base + q] = 0''')

# Few channels (a first layer): the kw taps of an undilated window inside the
# row are one contiguous run of kw * c values, copied as one (2x faster at
# c = 1; for many channels the per-tap loop above vectorizes better).
_IM2COL_NARROW = _IM2COL_ROWS.format(name="im2col_narrow", setup='''\
    x3 = x.reshape((x.shape[0], h, w * c))
    run = kw * c
''', body='''\
            w0 = j * sw - pw
            inside = dw == 1 and w0 >= 0 and w0 + kw <= w
            for a in range(kh):
                hi = i * sh + a * dh - ph
                if hi < 0 or hi >= h:
                    for q in range(run):
                        cols[row, a * run + q] = 0
                elif inside:
                    for q in range(run):
                        cols[row, a * run + q] = x3[n, hi, w0 * c + q]
                else:
                    for b in range(kw):
                        wi = w0 + b * dw
                        base = a * run + b * c
                        if wi >= 0 and wi < w:
                            for q in range(c):
                                cols[row, base + q] = x[n, hi, wi, q]
                        else:
                            for q in range(c):
                                cols[row, base + q] = 0''')

_COL2IM = '''
def col2im(cols, dx, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw):
    h, w, c = dx.shape[1], dx.shape[2], dx.shape[3]''' + \
    _direct.INPUT_GRAD_LOOPS.format(body='''\
                    row = (n * oh + i) * ow + j
                    base = (a * kw + b) * c
                    for q in range(c):
                        dx[n, hi, wi, q] += cols[row, base + q]''')


def _pool_taps(depth):
    """``window_taps`` of a pooling window: size (ph, pw), no dilation, pads
    (pt, pl)."""
    return _direct.window_taps(depth, ("ph", "pw"), "i * sh + a - pt",
                               "j * sw + b - pl")


_MAXPOOL = '''
def maxpool(x, y, ph, pw, sh, sw, pt, pl):
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = y.shape[1], y.shape[2]
    for r in prange(y.shape[0] * oh):
        n = r // oh
        i = r % oh
        for j in range(ow):
            first = True
''' + _pool_taps(12) + '''\
                    if first:
                        for q in range(c):
                            y[n, i, j, q] = x[n, hi, wi, q]
                        first = False
                    else:
                        for q in range(c):
                            v = x[n, hi, wi, q]
                            # np.maximum: a NaN on either side wins.
                            if v > y[n, i, j, q] or v != v:
                                y[n, i, j, q] = v
'''



def _maxpool_tiled_source(ph, pw):
    """``maxpool_PHxPW`` for windows that tile the input (strides == pool
    size, VALID): the taps unrolled, the max kept in a register, so the
    channel loop vectorizes (2.5x the generic loop's speed at 2x2)."""
    taps = [f"x[n, i * {ph} + {a}, j * {pw} + {b}, q]"
            for a in range(ph) for b in range(pw)]
    lines = [f"def maxpool_{ph}x{pw}(x, y):",
             "    oh, ow = y.shape[1], y.shape[2]",
             "    for r in prange(y.shape[0] * oh):",
             "        n, i = r // oh, r % oh",
             "        for j in range(ow):",
             "            for q in range(x.shape[3]):",
             f"                m = {taps[0]}"]
    for tap in taps[1:]:
        # np.maximum: a NaN on either side wins.
        lines += [f"                v = {tap}",
                  "                m = v if (v > m or v != v) else m"]
    lines.append("                y[n, i, j, q] = m")
    return "\n".join(lines) + "\n"


_MAXPOOL_GRAD = '''
def maxpool_grad(x, y, g, dx, ph, pw, sh, sw, pt, pl):
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = y.shape[1], y.shape[2]
    for n in prange(x.shape[0]):
        free = np.empty(c, np.bool_)
        for hi in range(h):
            for wi in range(w):
                for q in range(c):
                    dx[n, hi, wi, q] = 0
        for i in range(oh):
            for j in range(ow):
                for q in range(c):
                    free[q] = True
''' + _pool_taps(16) + '''\
                        # Only the window's first maximum (row-major taps) gets
                        # the gradient, as TF's MaxPoolGrad; branch-free, so
                        # the channel loop vectorizes.
                        for q in range(c):
                            hit = free[q] & (x[n, hi, wi, q] == y[n, i, j, q])
                            free[q] = free[q] & (not hit)
                            if hit:
                                dx[n, hi, wi, q] += g[n, i, j, q]
'''


def _usable(arrays, dtype=None):
    """True when the numba kernels handle these arrays (else: numpy kernels)."""
    dtype = dtype or arrays[0].dtype
    if dtype not in (np.float32, np.float64):
        return False
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != dtype or a.ndim != 4:
            return False
    return True


def _c(a):
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _geometry(shape, kshape, strides, padding, dilation_rate):
    """(oh, ow), (pad top, pad left) of a 2-D window over NHWC ``shape``."""
    out, pads = _conv._plan(shape, kshape[:2], strides, dilation_rate, padding)
    return out, (pads[0][0], pads[1][0])


def _im2col(channels):
    if channels < 16:
        return jit.kernels(_IM2COL_NARROW, "im2col_narrow")
    return jit.kernels(_IM2COL, "im2col")


def _images_per_slice(n, row_bytes):
    """Images per slice: columns within ``COLUMN_BYTES``, and at least
    ``MIN_SLICES`` slices where they would still hold 1/8 of that."""
    row_bytes = max(row_bytes, 1)
    return min(n, max(1, COLUMN_BYTES // 8 // row_bytes,
                      min(-(-n // MIN_SLICES), COLUMN_BYTES // row_bytes)))


def _columns(im2col, x, cols_buf, n0, nb, out, kshape, strides, dilation, pads):
    oh, ow = out
    cols = cols_buf[:nb * oh * ow]
    im2col[0](x, cols, n0, oh, ow, kshape[0], kshape[1], strides[0], strides[1],
              dilation[0], dilation[1], *pads)
    return cols


def conv2d_forward(x, kernel, strides, padding, dilation_rate):
    """Conv2D: Winograd F(2x2, 3x3) where it applies, else im2col slices
    (numba) and one GEMM per slice."""
    im2col = _im2col(x.shape[-1])
    x = _c(x)
    out, pads = _geometry(x.shape, kernel.shape, strides, padding, dilation_rate)
    if _wino.applies(kernel.shape, strides, dilation_rate, x.shape[-1]):
        return _wino.winograd_conv(x, kernel, out, pads)
    if _direct.applies(kernel.shape):
        return _direct.forward(x, kernel, out, strides, dilation_rate, pads)
    n, cout = x.shape[0], kernel.shape[-1]
    k2 = _c(kernel).reshape(-1, cout)
    y = np.empty((n, *out, cout), x.dtype)
    rows = math.prod(out)
    step = _images_per_slice(n, rows * k2.shape[0] * x.itemsize)
    y2 = y.reshape(-1, cout)

    def run(starts):
        buf = np.empty((step * rows, k2.shape[0]), x.dtype)
        for n0 in starts:
            nb = min(step, n - n0)
            cols = _columns(im2col, x, buf, n0, nb, out, kernel.shape, strides,
                            dilation_rate, pads)
            np.matmul(cols, k2, out=y2[n0 * rows:(n0 + nb) * rows])

    jit.spread(range(0, n, step), run, n * rows * k2.shape[0])
    return y


def conv2d_backprop_filter(x, kernel, g, strides, padding, dilation_rate):
    """dK = sum over batch slices of columns^T @ g (columns rebuilt by slice)."""
    im2col = _im2col(x.shape[-1])
    x = _c(x)
    out, pads = _geometry(x.shape, kernel.shape, strides, padding, dilation_rate)
    if _wino.applies(kernel.shape, strides, dilation_rate, x.shape[-1]):
        return _wino.winograd_filter_grad(x, _c(g), out, pads)
    if _direct.applies(kernel.shape):
        return _direct.backprop_filter(x, kernel.shape, _c(g), strides,
                                       dilation_rate, pads)
    n, cout = x.shape[0], kernel.shape[-1]
    taps = kernel.size // cout
    g2 = g.reshape(-1, cout)
    rows = math.prod(out)
    step = _images_per_slice(n, rows * taps * x.itemsize)

    def make():
        buf = np.empty((step * rows, taps), x.dtype)

        def product(n0, dst):
            nb = min(step, n - n0)
            cols = _columns(im2col, x, buf, n0, nb, out, kernel.shape,
                            strides, dilation_rate, pads)
            # cols.T is a transposed view: BLAS reads it in place.
            np.matmul(cols.T, g2[n0 * rows:(n0 + nb) * rows], out=dst)

        return product

    dk = jit.spread_sum(range(0, n, step), (taps, cout), g.dtype,
                        n * rows * taps, make)
    return dk.reshape(kernel.shape)


def conv2d_backprop_input(shape, kernel, g, strides, padding, dilation_rate):
    """dx of NHWC ``shape``: Winograd (the correlation of the padded g with the
    flipped kernel) where it applies, else per batch slice one GEMM g @ K^T,
    then col2im."""
    col2im = jit.kernels(_COL2IM, "col2im")
    g = _c(g)
    out, pads = _geometry(shape, kernel.shape, strides, padding, dilation_rate)
    if _wino.applies(kernel.shape, strides, dilation_rate, shape[-1]):
        return _wino.winograd_conv(g, _wino.flipped(kernel), tuple(shape[1:3]),
                                   (2 - pads[0], 2 - pads[1]))
    if _direct.applies(kernel.shape):
        return _direct.backprop_input(tuple(shape), kernel, g, strides,
                                      dilation_rate, pads)
    n, cout = shape[0], kernel.shape[-1]
    kt = _c(kernel).reshape(-1, cout).T
    rows = math.prod(out)
    step = _images_per_slice(n, rows * kt.shape[1] * g.itemsize)
    dx = np.empty(shape, g.dtype)
    g2 = g.reshape(-1, cout)
    kh, kw = kernel.shape[:2]

    def run(starts):
        buf = np.empty((step * rows, kt.shape[1]), g.dtype)
        for n0 in starts:
            nb = min(step, n - n0)
            cols = buf[:nb * rows]
            np.matmul(g2[n0 * rows:(n0 + nb) * rows], kt, out=cols)
            col2im[0](cols, dx[n0:n0 + nb], *out, kh, kw, *strides,
                      *dilation_rate, *pads)

    jit.spread(range(0, n, step), run, n * rows * kt.shape[1])
    return dx


def tiles(shape, pool_size, strides, padding):
    """True when the pooling windows tile NHWC ``shape`` without padding
    (strides == pool size; SAME only where it adds no pad)."""
    out, pads = _geometry(shape, pool_size, strides, padding, (1, 1))
    return (tuple(strides) == tuple(pool_size) and pads == (0, 0)
            and tuple(out) == (shape[1] // pool_size[0], shape[2] // pool_size[1]))


def max_pool2d_forward(x, pool_size, strides, padding):
    """2-D max pooling of NHWC ``x`` in one numba pass (Keras' ``MaxPooling2D``).

    Args:
        x: (batch, height, width, channels) float32/float64 array.
        pool_size, strides: (rows, cols) ints; padding: ``"valid"``/``"same"``.

    Returns:
        (batch, out_h, out_w, channels) array of x's dtype.
    """
    x = _c(x)
    out, pads = _geometry(x.shape, pool_size, strides, padding, (1, 1))
    y = np.empty((x.shape[0], *out, x.shape[-1]), x.dtype)
    ph, pw = (int(p) for p in pool_size)
    if tiles(x.shape, pool_size, strides, padding) and ph * pw <= 16:
        jit.launch(jit.kernels(_maxpool_tiled_source(ph, pw), f"maxpool_{ph}x{pw}"),
                   x.size, x, y)
        return y
    maxpool = jit.kernels(_MAXPOOL, "maxpool")
    jit.launch(maxpool, x.size, x, y, *pool_size, *strides, *pads)
    return y


def max_pool2d_grad(x, y, g, pool_size, strides, padding):
    """Gradient of :func:`max_pool2d_forward`: each window's ``g`` goes to the
    first input position (row-major in the window) equal to its maximum ``y``,
    as TF's ``MaxPoolGrad`` routes it to the argmax.

    Args:
        x: the pooled input (batch, h, w, c); y: its output; g: dL/dy, y's shape.

    Returns:
        dL/dx, x's shape, g's dtype.
    """
    grad = jit.kernels(_MAXPOOL_GRAD, "maxpool_grad")
    x, y, g = _c(x), _c(y), _c(g)
    _, pads = _geometry(x.shape, pool_size, strides, padding, (1, 1))
    dx = np.empty(x.shape, g.dtype)
    jit.launch(grad, x.size, x, y, g, dx, *pool_size, *strides, *pads)
    return dx


# -- registration with the fusion pass ------------------------------------------------
def _factory(fast, numpy_kernel, arrays_of, size_of):
    """A fused-kernel factory: ``fast`` for the arrays it handles, else numpy."""

    def factory(xp, attrs):
        if xp is not np or jit.numba_module() is None:
            return None

        def kernel(*args):
            arrays = arrays_of(args)
            if _usable(arrays) and size_of(args) >= MIN_SIZE:
                return fast(*args, **attrs)
            return numpy_kernel(np, *args, **attrs)

        return kernel

    return factory


def _backprop_input(x, kernel, g, **attrs):
    return conv2d_backprop_input(tuple(x.shape), kernel, g, **attrs)


def conv2d_transpose(x, kernel, strides, padding, dilation_rate, output_shape):
    """Conv2DTranspose (TF's ``conv2d_transpose``): conv2d's input gradient of
    ``x`` as g, with the kernel (kh, kw, out channels, in channels); its
    gradients (Conv2D, Conv2DBackpropFilter) use the kernels above too."""
    shape = (x.shape[0], *output_shape[:2], kernel.shape[2])
    return conv2d_backprop_input(shape, kernel, x, strides, padding, dilation_rate)


fusion.register_fused_kernel("Conv2DTranspose", _factory(
    conv2d_transpose, _conv._conv2d_transpose, lambda a: a,
    lambda a: a[0].size * a[1].shape[0] * a[1].shape[1]))
fusion.register_fused_kernel("Conv2D", _factory(
    conv2d_forward, _conv._conv, lambda a: a[:2], lambda a: a[0].size))
fusion.register_fused_kernel("Conv2DBackpropInput", _factory(
    _backprop_input, _conv._conv_backprop_input, lambda a: a[1:],
    lambda a: a[0].size))
fusion.register_fused_kernel("Conv2DBackpropFilter", _factory(
    conv2d_backprop_filter, _conv._conv_backprop_filter, lambda a: a,
    lambda a: a[2].size))
fusion.register_fused_kernel("MaxPool", _factory(
    max_pool2d_forward, _pooling._max_pool, lambda a: a, lambda a: a[0].size))
fusion.register_fused_kernel("MaxPoolGrad", _factory(
    max_pool2d_grad, _pooling._max_pool_grad_kernel, lambda a: a,
    lambda a: a[0].size))
