"""Winograd F(2x2, 3x3) convolution for the fused CPU kernels (``conv_fast``).

Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016:
each 2x2 output tile of a 3x3, stride-1 convolution is computed from a 4x4
input tile with 16 multiplications per (input, output) channel pair instead of
36, i.e. 2.25x fewer FLOPs. Per slice of the batch's rows of tiles:

1. input transform ``V = B^T d B`` of every 4x4 tile (numba), laid out as
   (16, tiles, Cin);
2. 16 GEMMs ``M[e] = V[e] @ U[e]`` with ``U = G k G^T`` (16, Cin, Cout),
   one batched ``np.matmul``;
3. output transform ``Y = A^T M A`` (numba), 2x2 outputs per tile.

The forward convolution and the input gradient (a 'full' correlation of the
padded gradient with the flipped, transposed kernel) both run through it; the
filter gradient runs through the adjoints of the three steps
(``winograd_filter_grad``: the same input transform, the output transform's
adjoint on the gradient, 16 GEMMs ``V[e]^T dM[e]`` summed over the slices,
then ``G^T dU G``). Values match im2col's up to float rounding (a few ulps of
the products' scale).

Threads (``jit.spread``): each takes every so-many slice and runs all of its
steps, BLAS on one thread, so no op hands the cores between BLAS's and
numba's pools; the filter gradient sums its slices with ``jit.spread_sum``
(fixed groups of slices, each summed in order, then the groups in order).
The filter gradient's GEMMs, (Cin, tiles) @ (tiles, Cout) with few outputs
(32 x 32 in the resnet benchmark), split badly over BLAS's threads: 1.2x one
thread's speed on 2 cores, and several times slower while another process
holds a core; one per core they scale. That benchmark's 3x3 32 -> 32 layer
(batch 128, 32x32, float32, 2 cores), each kernel timed alone: forward 20 ->
11 ms, filter gradient 30 -> 11 ms. Slices are cut by sizes alone, so results
do not depend on the thread count.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import jit

__all__ = ["winograd_conv"]

# V and M of one slice of tile rows (see conv_fast.COLUMN_BYTES): 2 MiB ran
# the resnet benchmark's 3x3 layers (32 and 64 channels) and 128 / 256-channel
# ones at 8x8 within ~10% of the best of 0.5 - 8 MiB, on 2 threads.
SLICE_BYTES = 2 * 2**20
# Slices at least, so that threads share them (``_row_slices``; a constant:
# results do not depend on the thread count).
MIN_SLICES = 8

_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])

# B^T and A^T as (index, sign) terms per row: each transformed value is a
# signed sum of a few inputs. The kernels are generated with one channel loop
# per output plane (a few loads, one store): loops that LLVM vectorizes, where
# one loop storing all 16 planes is not.
_BT = [((0, 1), (2, -1)), ((1, 1), (2, 1)), ((2, 1), (1, -1)), ((1, 1), (3, -1))]
_AT = [((0, 1), (1, 1), (2, 1)), ((1, 1), (2, -1), (3, -1))]


def _signed_sum(terms):
    code = ""
    for k, (sign, ref) in enumerate(terms):
        code += (ref if sign > 0 else "-" + ref) if k == 0 else (
            f" + {ref}" if sign > 0 else f" - {ref}")
    return code


def _tile_loop(header, setup, tiles, corner):
    """A kernel's first lines: ``def header:``, the ``setup`` lines, then the
    parallel loop over the tiles ``t`` of ``tiles`` (16, tiles, C): whole rows
    of ``tw`` tiles from row ``r0`` of the batch's ``n * th`` tile rows, with
    the image ``n`` and the tile's top-left (row, column) named by
    ``corner``."""
    return [f"def {header}:", *setup,
            f"    for t in prange({tiles}.shape[1]):",
            "        rr = r0 + t // tw",
            "        n = rr // th",
            f"        {corner[0]} = 2 * (rr % th)",
            f"        {corner[1]} = 2 * (t % tw)"]


def _input_source():
    lines = _tile_loop("wino_in(xp, v, r0, th, tw)", ["    c = xp.shape[3]"], "v",
                       ("h0", "w0"))
    for i, rows in enumerate(_BT):
        for j, cols in enumerate(_BT):
            terms = [(sa * sb, f"xp[n, h0 + {a}, w0 + {b}, q]")
                     for a, sa in rows for b, sb in cols]
            lines += ["        for q in range(c):",
                      f"            v[{4 * i + j}, t, q] = {_signed_sum(terms)}"]
    return "\n".join(lines) + "\n"


def _output_source(bias_relu=False):
    """``wino_out``; with ``bias_relu``, ``wino_out_br`` storing
    relu(value + bias[q]) (the Relu op's NaN rule)."""
    name = "wino_out_br(m, y, r0, th, tw, bias)" if bias_relu else \
        "wino_out(m, y, r0, th, tw)"
    lines = _tile_loop(name, ["    oh, ow, f = y.shape[1], y.shape[2], y.shape[3]"],
                       "m", ("i0", "j0"))
    for i, rows in enumerate(_AT):
        for j, cols in enumerate(_AT):
            terms = [(sa * sb, f"m[{4 * a + b}, t, q]")
                     for a, sa in rows for b, sb in cols]
            ind = "        "
            if i or j:  # the last row / column of tiles may stick out
                cond = " and ".join(c for c, on in (("i0 + 1 < oh", i),
                                                    ("j0 + 1 < ow", j)) if on)
                lines.append(f"        if {cond}:")
                ind += "    "
            store = f"y[n, i0 + {i}, j0 + {j}, q]"
            if bias_relu:
                lines += [f"{ind}for q in range(f):",
                          f"{ind}    v = {_signed_sum(terms)} + bias[q]",
                          f"{ind}    {store} = v if (v >= 0 or v != v) else 0"]
            else:
                lines += [f"{ind}for q in range(f):",
                          f"{ind}    {store} = {_signed_sum(terms)}"]
    return "\n".join(lines) + "\n"


def _output_adjoint_source():
    """``wino_out_adj``: the adjoint of the output transform, dM = A dY A^T per
    2x2 tile of the (even-sized) output gradient, laid out as (16, tiles, C)."""
    cols = [[(i, sign) for i, row in enumerate(_AT) for a, sign in row if a == e]
            for e in range(4)]
    lines = _tile_loop("wino_out_adj(g, dm, r0, th, tw)", [], "dm", ("i0", "j0"))
    for a in range(4):
        for b in range(4):
            terms = [(si * sj, f"g[n, i0 + {i}, j0 + {j}, q]")
                     for i, si in cols[a] for j, sj in cols[b]]
            lines += ["        for q in range(g.shape[3]):",
                      f"            dm[{4 * a + b}, t, q] = {_signed_sum(terms)}"]
    return "\n".join(lines) + "\n"


def _transform_lines(src, ind):
    """The 16 plane loops of the input transform reading ``src(a, b)``."""
    lines = []
    for i, rows in enumerate(_BT):
        for j, cols in enumerate(_BT):
            terms = [(sa * sb, src(a, b)) for a, sa in rows for b, sb in cols]
            lines += [f"{ind}for q in range(c):",
                      f"{ind}    v[{4 * i + j}, t, q] = {_signed_sum(terms)}"]
    return lines


def _input_padded_source():
    """``wino_in_pad``: the input transform of x zero-padded by (pt, pl) (and
    at the far sides as the tiles need) without a padded copy: inner tiles
    read x, border tiles a (4, 4, C) patch filled with bounds checks."""
    lines = ["def wino_in_pad(x, v, r0, th, tw, pt, pl):",
             "    h, w, c = x.shape[1], x.shape[2], x.shape[3]",
             "    for rr in prange(v.shape[1] // tw):",
             "        n = (r0 + rr) // th",
             "        h0 = 2 * ((r0 + rr) % th) - pt",
             "        patch = np.empty((4, 4, c), x.dtype)",
             "        for tj in range(tw):",
             "            t = rr * tw + tj",
             "            w0 = 2 * tj - pl",
             "            if h0 >= 0 and h0 + 4 <= h and w0 >= 0 and w0 + 4 <= w:"]
    lines += _transform_lines(lambda a, b: f"x[n, h0 + {a}, w0 + {b}, q]",
                              " " * 16)
    lines += ["            else:",
              "                for a in range(4):",
              "                    for b in range(4):",
              "                        hi, wi = h0 + a, w0 + b",
              "                        inside = (hi >= 0 and hi < h and wi >= 0"
              " and wi < w)",
              "                        for q in range(c):",
              "                            patch[a, b, q] = x[n, hi, wi, q] if inside "
              "else 0"]
    lines += _transform_lines(lambda a, b: f"patch[{a}, {b}, q]", " " * 16)
    return "\n".join(lines) + "\n"


_INPUT = _input_source()
_INPUT_PADDED = _input_padded_source()
_OUTPUT_ADJOINT = _output_adjoint_source()
_OUTPUT = _output_source()
_OUTPUT_BIAS_RELU = _output_source(bias_relu=True)


def _filter_transform(kernel):
    """U = G k G^T per channel pair: (16, Cin, Cout), in the kernel's dtype."""
    g = _G.astype(kernel.dtype)
    u = np.einsum("ia,abcf,jb->ijcf", g, kernel, g)
    return np.ascontiguousarray(u.reshape(16, *kernel.shape[2:]))


def _padded(a, size, pads):
    """``a`` (N, H, W, C) placed at ``pads`` in zeros of spatial ``size`` (every
    tile reads whole 4x4 inputs), or ``a`` itself where it fits exactly."""
    n, h, w, c = a.shape
    if tuple(pads) == (0, 0) and (h, w) == tuple(size):
        return a
    out = np.zeros((n, *size, c), a.dtype)
    rows, cols = min(h, size[0] - pads[0]), min(w, size[1] - pads[1])
    out[:, pads[0]:pads[0] + rows, pads[1]:pads[1] + cols] = a[:, :rows, :cols]
    return out


def _row_slices(rows, tw, channels, itemsize):
    """(tile rows per slice, the slices' first rows) over ``rows`` rows of
    ``tw`` tiles: V and M of a slice (``channels`` = Cin + Cout) within
    ``SLICE_BYTES``, and at least ``MIN_SLICES`` slices where they would still
    hold 1/8 of that; the same for any thread count."""
    row_bytes = 16 * tw * channels * itemsize
    step = min(rows, max(1, SLICE_BYTES // 8 // row_bytes,
                         min(-(-rows // MIN_SLICES), SLICE_BYTES // row_bytes)))
    return step, range(0, rows, step)


def winograd_conv(x, kernel, out, pads, bias=None):
    """3x3 stride-1 correlation of NHWC ``x`` with zero padding.

    ``y[n, i, j, f] = sum_{a, b, c} x[n, i + a - pt, j + b - pl, c] *
    kernel[a, b, c, f]`` (zero outside x) for i < oh, j < ow.

    Args:
        x: C-contiguous float array (N, H, W, Cin).
        kernel: (3, 3, Cin, Cout), x's dtype.
        out: (oh, ow), the output size.
        pads: (pt, pl), the zero rows / columns before x.
        bias: None, or a (Cout,) array of x's dtype: then the result is
            ``relu(y + bias)`` (a conv layer's bias and ReLU, applied as the
            output tiles are stored).
    """
    wino_in = jit.kernels(_INPUT, "wino_in")[0]
    if bias is None:
        wino_out, extra = jit.kernels(_OUTPUT, "wino_out")[0], ()
    else:
        wino_out = jit.kernels(_OUTPUT_BIAS_RELU, "wino_out_br")[0]
        extra = (bias,)
    n, h, w, cin = x.shape
    cout = kernel.shape[-1]
    th, tw = -(-out[0] // 2), -(-out[1] // 2)
    exact = tuple(pads) == (0, 0) and (h, w) == (2 * th + 2, 2 * tw + 2)
    if not exact:  # zero padding read in the transform: no padded copy
        wino_in = jit.kernels(_INPUT_PADDED, "wino_in_pad")[0]
    u = _filter_transform(kernel)
    y = np.empty((n, *out, cout), x.dtype)
    rows = n * th
    step, slices = _row_slices(rows, tw, cin + cout, x.itemsize)

    def run(starts):
        v_buf = np.empty(16 * step * tw * cin, x.dtype)
        m_buf = np.empty(16 * step * tw * cout, x.dtype)
        for r0 in starts:
            tiles = min(step, rows - r0) * tw
            v = v_buf[:16 * tiles * cin].reshape(16, tiles, cin)
            m = m_buf[:16 * tiles * cout].reshape(16, tiles, cout)
            wino_in(x, v, r0, th, tw, *(() if exact else pads))
            np.matmul(v, u, out=m)
            wino_out(m, y, r0, th, tw, *extra)

    jit.spread(slices, run, 16 * rows * tw * (cin + cout))
    return y


def winograd_filter_grad(x, g, out, pads):
    """The filter gradient of :func:`winograd_conv` (no bias) in the Winograd
    domain: ``dU[e] = sum over tiles of V[e]^T dM[e]``, then ``dK = G^T dU G``
    (the adjoints of the three steps), 2.25x fewer multiplications than the
    im2col GEMM.

    ``dU`` is summed over the slices by ``jit.spread_sum``: each thread
    transforms its slices' tiles and gradient tiles and runs their 16 GEMMs,
    BLAS on one thread (see the module's notes on threads).

    Args:
        x: C-contiguous float array (N, H, W, Cin).
        g: C-contiguous (N, oh, ow, Cout) gradient of the output, x's dtype.
        out: (oh, ow); pads: (pt, pl), as for ``winograd_conv``.

    Returns:
        (3, 3, Cin, Cout) array of x's dtype.
    """
    wino_in = jit.kernels(_INPUT, "wino_in")[0]
    adjoint = jit.kernels(_OUTPUT_ADJOINT, "wino_out_adj")[0]
    n, cin, cout = x.shape[0], x.shape[-1], g.shape[-1]
    th, tw = -(-out[0] // 2), -(-out[1] // 2)
    exact = tuple(pads) == (0, 0) and x.shape[1:3] == (2 * th + 2, 2 * tw + 2)
    if not exact:
        wino_in = jit.kernels(_INPUT_PADDED, "wino_in_pad")[0]
    extra = () if exact else tuple(pads)
    gp = _padded(g, (2 * th, 2 * tw), (0, 0))  # tiles sticking out: dY = 0
    rows = n * th
    step, slices = _row_slices(rows, tw, cin + cout, x.itemsize)

    def make():
        v_buf = np.empty(16 * step * tw * cin, x.dtype)
        m_buf = np.empty(16 * step * tw * cout, x.dtype)

        def product(r0, dst):
            tiles = min(step, rows - r0) * tw
            v = v_buf[:16 * tiles * cin].reshape(16, tiles, cin)
            dm = m_buf[:16 * tiles * cout].reshape(16, tiles, cout)
            wino_in(x, v, r0, th, tw, *extra)
            adjoint(gp, dm, r0, th, tw)
            # v.transpose is a view: BLAS reads it in place.
            np.matmul(v.transpose(0, 2, 1), dm, out=dst)

        return product

    du = jit.spread_sum(slices, (16, cin, cout), x.dtype,
                        16 * rows * tw * (cin + cout), make)
    gm = _G.astype(x.dtype)
    dk = np.einsum("ia,ijcf,jb->abcf", gm, du.reshape(4, 4, cin, cout), gm)
    return np.ascontiguousarray(dk, dtype=x.dtype)


def applies(kernel_shape, strides, dilation_rate, channels):
    """True where Winograd is used: 3x3, stride 1, undilated, >= 16 channels
    in and out (fewer: the GEMMs are too thin to gain)."""
    return (tuple(kernel_shape[:2]) == (3, 3) and tuple(strides) == (1, 1)
            and tuple(dilation_rate) == (1, 1) and min(channels,
                                                       kernel_shape[-1]) >= 16)


def flipped(kernel):
    """The kernel of the input gradient: spatially flipped, in/out swapped."""
    return np.ascontiguousarray(kernel[::-1, ::-1].transpose(0, 1, 3, 2))
