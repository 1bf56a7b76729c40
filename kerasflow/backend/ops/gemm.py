"""Matrix products on the package's own threads, BLAS on one thread each.

OpenBLAS splits a product over its threads and then keeps them spinning for
a while (its ``THREAD_TIMEOUT``, ~0.1 s): the kernels that follow, which
spread their own work over the cores (``jit.spread``: convolutions, fused
attention, numba kernels), then share a core with a spinning BLAS thread and
run at half speed. Measured with ``benchmarks/profile_step.py`` (10 steps,
load ~1.2), ms per step with OpenBLAS's defaults against
``OPENBLAS_THREAD_TIMEOUT=4`` (its shortest spin, settable only before numpy
loads): the transformer block 246 vs 170, the Conv1D text convnet 103 vs 62,
the MLP 4.5 vs 3.9. So ``matmul_into`` wakes BLAS's threads only for
mid-sized products:

* products up to ``SERIAL_MACS`` multiply-adds run as ``numpy.matmul``
  (OpenBLAS keeps the smallest on the calling thread; for the rest, switching
  BLAS to one thread costs more than it saves);
* up to ``jit.SERIAL_BLAS_MACS`` they run inside ``jit.serial_blas`` (one
  thread is about as fast there, and faster under load);
* up to ``SPREAD_MACS`` BLAS's threads run them (faster than blocks at those
  sizes; their spin is the price);
* bigger ones are cut into at most ``PIECES`` blocks of rows (of columns
  for a product of few rows, of the leading batch axis for stacked ones),
  which ``jit.spread`` shares out, each block one BLAS call on one thread;
  a product that cannot be cut runs inside ``jit.serial_blas``.

The blocks depend on the shapes only, never on the thread count, so results
do not either. Callers pass numpy arrays; other array modules keep
``xp.matmul``.
"""

from __future__ import annotations

import math

import numpy as np

from kerasflow.backend import jit

__all__ = ["matmul_into"]

# Up to here plain ``numpy.matmul``: OpenBLAS keeps products up to 256K
# multiply-adds on the calling thread, and up to 1M entering and leaving
# ``serial_blas`` (~4 us) costs more than BLAS's threads lose (a (128, 70) x
# (70, 100) product, the wide & deep model's: 19.6 us threaded, 27.1 us through
# serial_blas, quiet machine).
SERIAL_MACS = 1 << 20
# From here products are cut into blocks on the package's threads; between
# jit.SERIAL_BLAS_MACS and this, BLAS's threads do better (the MLP's 33-51M
# multiply-add products: 0.39-0.59 ms threaded, 0.54-0.83 ms in blocks, where
# a block per thread packs the other operand whole and the hand-off costs
# tens of microseconds).
SPREAD_MACS = 1 << 26
# Blocks per product at most, and rows per block at least (2-D products).
PIECES = 4
MIN_ROWS = 64


def matmul_into(a, b, out=None):
    """``numpy.matmul(a, b, out=out)``, small and big products without waking
    BLAS's threads (see the module docstring).

    Args:
        a: (..., M, K) numpy array (a transposed view is fine); b: (..., K, N)
            or (K, N); out: None or an array of the product's shape and dtype
            (a strided view is fine).

    Returns:
        The product (``out`` when given).
    """
    m, k = a.shape[-2:]
    n = b.shape[-1]
    macs = m * k * n * math.prod(a.shape[:-2])   # per call: no numpy reduction
    if macs <= SERIAL_MACS:
        return np.matmul(a, b, out=out)
    if macs < jit.SERIAL_BLAS_MACS:
        with jit.serial_blas:
            return np.matmul(a, b, out=out)
    if macs < SPREAD_MACS:
        return np.matmul(a, b, out=out)
    cols = False
    if a.ndim == 2 and b.ndim == 2:
        # Each block packs the other operand whole: blocks of rows copy b's
        # packing, blocks of columns a's; cut the side that copies less.
        cols = m < n
        pieces = max(1, min(PIECES, (n if cols else m) // MIN_ROWS))
        whole_b = True
    elif a.ndim >= 3 and (b.ndim == 2 or (b.ndim == a.ndim
                                          and b.shape[:-2] == a.shape[:-2])):
        pieces = min(PIECES, a.shape[0])
        whole_b = b.ndim == 2
    else:
        pieces = 1
    if pieces == 1:
        with jit.serial_blas:
            return np.matmul(a, b, out=out)
    if out is None:
        out = np.empty((*a.shape[:-1], n), np.result_type(a, b))
    extent = n if cols else a.shape[0]
    bounds = [extent * i // pieces for i in range(pieces + 1)]
    spans = [(bounds[i], bounds[i + 1]) for i in range(pieces)]

    def work(share):
        for i, j in share:
            if cols:
                np.matmul(a, b[:, i:j], out=out[:, i:j])
            else:
                np.matmul(a[i:j], b if whole_b else b[i:j], out=out[i:j])

    jit.spread(spans, work, macs)
    return out
