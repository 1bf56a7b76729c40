"""Fused CPU kernels of the sparse softmax cross-entropy and its gradient (numba).

Registered with the fusion registry (``register_fused_kernel``) for
``SparseSoftmaxCrossEntropyWithLogits`` and ``SparseXentGrad``: in compiled
plans with fusion on, each is one compiled loop over the rows (row max, sum of
exponentials, the picked entry; for the gradient softmax - one-hot times the
incoming gradient) instead of the numpy kernels' ~10 array operations (label
range check included), which at classifier sizes (128 x 10) cost far more in
per-call overhead than in arithmetic: the fixed per-step cost that XLA removes
by fusing the loss head into one kernel.

Inputs: ``labels`` integer (...), ``logits`` float32/float64 (..., classes),
``g`` (...) of the logits' dtype. Outputs as the numpy kernels of ``nn``:
loss (...), gradient (..., classes). Values equal the numpy kernels' up to
float rounding (the row sums run left to right). Labels outside [0, classes)
make the kernel defer to the numpy kernel, which raises its ValueError naming
the range. Other array types, dtypes, or more than ``MAX_SIZE`` logits (where
numpy's vectorized exp wins) also run the numpy kernels. The loops are serial
(one thread): the arrays are small.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.ops import nn as _nn

__all__ = []

MAX_SIZE = 1 << 16

# Both kernels' row loop: a row whose label is out of range is counted (the
# caller then defers to the numpy kernel) and skipped; ``mx`` is the row max.
_ROWS = '''
def {name}({args}):
    n = z.shape[1]
    bad = 0
    for i in range(z.shape[0]):
        lab = labels[i]
        if lab < 0 or lab >= n:
            bad += 1
            continue
        mx = z[i, 0]
        for j in range(1, n):
            if z[i, j] > mx:
                mx = z[i, j]
{body}
    return bad
'''

_FORWARD = _ROWS.format(name="xent_fwd", args="z, labels, out", body='''\
        s = np.exp(z[i, 0] - mx)
        for j in range(1, n):
            s += np.exp(z[i, j] - mx)
        out[i] = np.log(s) - (z[i, lab] - mx)''')

_GRAD = _ROWS.format(name="xent_grad", args="g, z, labels, out", body='''\
        s = out[i, 0] = np.exp(z[i, 0] - mx)
        for j in range(1, n):
            e = np.exp(z[i, j] - mx)
            out[i, j] = e
            s += e
        gi = g[i]
        for j in range(n):
            v = out[i, j] / s
            if j == lab:
                v -= 1
            out[i, j] = v * gi''')


def _usable(labels, logits, *floats):
    if type(labels) is not np.ndarray or type(logits) is not np.ndarray:
        return False
    if logits.dtype not in (np.float32, np.float64) or labels.dtype.kind not in "iu":
        return False
    if logits.ndim < 1 or logits.shape[-1] == 0 or logits.size > MAX_SIZE \
            or labels.shape != logits.shape[:-1] or labels.size == 0:
        return False
    return all(type(a) is np.ndarray and a.dtype == logits.dtype
               and a.shape == labels.shape for a in floats)


def _rows(labels, logits):
    z = np.ascontiguousarray(logits).reshape(-1, logits.shape[-1])
    return z, np.ascontiguousarray(labels).reshape(-1)


def _forward_factory(xp, attrs):
    if xp is not np or jit.numba_module() is None:
        return None
    kernel = jit.kernels(_FORWARD, "xent_fwd")[0]

    def run(labels, logits):
        if _usable(labels, logits):
            z, lab = _rows(labels, logits)
            out = np.empty(lab.shape, logits.dtype)
            if kernel(z, lab, out) == 0:
                return out.reshape(labels.shape)
        return _nn._sparse_xent(np, labels, logits)

    return run


def _grad_factory(xp, attrs):
    if xp is not np or jit.numba_module() is None:
        return None
    kernel = jit.kernels(_GRAD, "xent_grad")[0]

    def run(g, labels, logits):
        if _usable(labels, logits, g):
            z, lab = _rows(labels, logits)
            out = np.empty(z.shape, logits.dtype)
            if kernel(np.ascontiguousarray(g).reshape(-1), z, lab, out) == 0:
                return out.reshape(logits.shape)
        return _nn._sparse_xent_grad_kernel(np, g, labels, logits)

    return run


fusion.register_fused_kernel("SparseSoftmaxCrossEntropyWithLogits", _forward_factory)
fusion.register_fused_kernel("SparseXentGrad", _grad_factory)
