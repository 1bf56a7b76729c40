"""Conv3D forward + backward against bare ``np.matmul`` on its im2col shapes.

For each case the three kernels of one training step (``Conv3D``,
``Conv3DBackpropInput``, ``Conv3DBackpropFilter``, float32, 'same' padding) are
timed eagerly, best of 5, and so are the three matrix products they reduce to
on contiguous im2col matrices: columns @ kernel (forward), grad @ kernel.T (the
column gradient, before col2im) and columns.T @ grad (the kernel gradient). The
ratio is the cost of building the strided view, its copy and col2im.

Run: python benchmarks/bench_conv3d.py   (about 10 s on an idle machine)
"""

from __future__ import annotations

import timeit

import numpy as np

from kerasflow import backend as K

CASES = [((8, 16, 16, 16, 8), (3, 3, 3, 8, 16)), ((4, 24, 24, 24, 4), (3, 3, 3, 4, 8))]


def _best(fn, repeat=5):
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def main():
    attrs = {"strides": (1, 1, 1), "padding": "SAME", "dilation_rate": (1, 1, 1)}
    for xs, ks in CASES:
        rng = np.random.default_rng(0)
        x = rng.standard_normal(xs, dtype=np.float32)
        k = rng.standard_normal(ks, dtype=np.float32)
        g = rng.standard_normal(K.apply("Conv3D", x, k, **attrs).shape,
                                dtype=np.float32)
        ours = [_best(lambda op=op, a=a: K.apply(op, *a, **attrs)) for op, a in (
            ("Conv3D", (x, k)), ("Conv3DBackpropInput", (x, k, g)),
            ("Conv3DBackpropFilter", (x, k, g)))]
        rows, taps = g.size // ks[-1], k.size // ks[-1]
        cols = rng.standard_normal((rows, taps), dtype=np.float32)
        k2, g2 = k.reshape(taps, ks[-1]), g.reshape(rows, ks[-1])
        ref = [_best(lambda: np.matmul(cols, k2)), _best(lambda: np.matmul(g2, k2.T)),
               _best(lambda: np.matmul(cols.T, g2))]
        print(f"x {xs}, kernel {ks}: im2col ({rows}, {taps}) @ ({taps}, {ks[-1]})")
        line = "  {}  fwd {:.1f}  {} {:.1f}  d_kernel {:.1f}  total {:.1f} ms"
        print(line.format("kerasflow", ours[0] * 1e3, "d_input", ours[1] * 1e3,
                          ours[2] * 1e3, sum(ours) * 1e3))
        print(line.format("np.matmul", ref[0] * 1e3, "d_cols ", ref[1] * 1e3,
                          ref[2] * 1e3, sum(ref) * 1e3))
        print(f"  ratio {sum(ours) / sum(ref):.2f}x")


if __name__ == "__main__":
    main()
