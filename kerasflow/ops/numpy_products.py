"""Products and grids of Keras 3's ``keras.ops`` (and ``keras.ops.numpy``):
``dot``, ``vdot``, ``inner``, ``outer``, ``kron``, ``cross``, ``vander``,
``meshgrid``, ``diff`` and ``trapezoid``, composed from differentiable
backend ops (matmul, tensordot, reshape, broadcast, slicing). Source: NumPy's
semantics, as Keras 3's numpy backend wraps them.
"""

from __future__ import annotations

import builtins

import numpy as np

from kerasflow import backend as K
from kerasflow.ops.common import (
    axis_slice, dtype_of, floatx, rank, result_dtype, tensor, to_float,
)
from kerasflow.ops.numpy_array import moveaxis, ravel

__all__ = ["cross", "diff", "dot", "inner", "kron", "meshgrid", "outer",
           "trapezoid", "vander", "vdot"]


# -- products ----------------------------------------------------------------------------
def _same_dtype(x1, x2):
    dt = result_dtype(x1, x2).name
    return tensor(x1, dt), tensor(x2, dt)


def outer(x1, x2):
    """``ravel(x1)[:, None] * ravel(x2)[None, :]``."""
    a, b = _same_dtype(x1, x2)
    return K.expand_dims(ravel(a), 1) * K.expand_dims(ravel(b), 0)


def vdot(x1, x2):
    """The dot product of the flattened inputs (real inputs)."""
    a, b = _same_dtype(x1, x2)
    return K.sum(ravel(a) * ravel(b))


def inner(x1, x2):
    """Sum of products over the last axes (scalars: a product)."""
    a, b = _same_dtype(x1, x2)
    if rank(a) == 0 or rank(b) == 0:
        return a * b
    return K.tensordot(a, b, axes=([rank(a) - 1], [rank(b) - 1]))


def dot(x1, x2):
    """``numpy.dot``: a product with a scalar, the inner product of vectors,
    a matrix product, or a sum over the last axis of ``x1`` and the
    second-to-last of ``x2``."""
    a, b = _same_dtype(x1, x2)
    ra, rb = rank(a), rank(b)
    if ra == 0 or rb == 0:
        return a * b
    if ra <= 2 and rb <= 2 and ra + rb > 2:
        return K.matmul(a, b) if ra == 2 and rb == 2 else K.tensordot(
            a, b, axes=([ra - 1], [0]))
    return K.tensordot(a, b, axes=([ra - 1], [builtins.max(rb - 2, 0)]))


def kron(x1, x2):
    """The Kronecker product: blocks ``x1[i] * x2`` (ranks matched by leading
    ones); one dimension may be unknown."""
    a, b = _same_dtype(x1, x2)
    n = builtins.max(rank(a), rank(b))
    sa = (1,) * (n - rank(a)) + tuple(a.shape)
    sb = (1,) * (n - rank(b)) + tuple(b.shape)
    def known(d):
        return -1 if d is None else d

    a2 = K.reshape(a, tuple(known(d) for s in sa for d in (s, 1)))
    b2 = K.reshape(b, tuple(known(d) for s in sb for d in (1, s)))
    return K.reshape(a2 * b2, tuple(-1 if None in (p, q) else p * q
                                    for p, q in zip(sa, sb)))


def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (or 2-vectors, a missing third
    component taken as 0) along ``axisa`` / ``axisb`` (``axis`` sets all
    three), broadcast; the result's vector axis is ``axisc``."""
    a, b = _same_dtype(x1, x2)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross needs vectors of 2 or 3 components. Received: "
                         f"{na} and {nb}.")
    ca = [a[..., i] for i in range(na)]
    cb = [b[..., i] for i in range(nb)]
    z = a[..., 0] * b[..., 0] * 0
    if na == 2 and nb == 2:
        return ca[0] * cb[1] - ca[1] * cb[0]
    ca += [z] * (3 - na)
    cb += [z] * (3 - nb)
    out = K.stack([ca[1] * cb[2] - ca[2] * cb[1], ca[2] * cb[0] - ca[0] * cb[2],
                   ca[0] * cb[1] - ca[1] * cb[0]], axis=-1)
    return moveaxis(out, -1, axisc)


def meshgrid(*x, indexing="xy"):
    """Coordinate grids from 1-D ``x`` ('xy': Cartesian, the first two axes
    swapped; 'ij': matrix indexing)."""
    xs = [ravel(tensor(v)) for v in x]
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid indexing must be 'xy' or 'ij'. Received: "
                         f"indexing={indexing!r}.")
    sizes = [v.shape[0] for v in xs]
    if indexing == "xy" and len(xs) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(xs):
        pos = i
        if indexing == "xy" and len(xs) >= 2 and i < 2:
            pos = 1 - i
        shape = [1] * len(xs)
        shape[pos] = -1
        out.append(K.broadcast_to(K.reshape(v, tuple(shape)), tuple(sizes)))
    return out


def vander(x, N=None, increasing=False):  # noqa: N803
    """Columns of powers of 1-D ``x`` (``N`` columns, decreasing powers unless
    ``increasing``); the input's dtype."""
    x = tensor(x)
    dt = dtype_of(x)
    n = x.shape[0] if N is None else int(N)
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    xf = K.cast(x, np.result_type(dt, floatx()).name)
    out = K.power(K.expand_dims(xf, 1), powers.astype(np.dtype(xf.dtype)))
    return K.cast(out, dt.name)


def diff(a, n=1, axis=-1):
    """The ``n``-th discrete difference along ``axis``."""
    x = tensor(a)
    for _ in range(int(n)):
        x = axis_slice(x, axis, 1) - axis_slice(x, axis, None, -1)
    return x


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The trapezoidal-rule integral of ``y`` along ``axis`` (sample points
    ``x``, or spacing ``dx``); float."""
    y = to_float(y)
    if x is None:
        d = dx
    else:
        d = diff(tensor(x, np.dtype(y.dtype).name), axis=-1 if rank(tensor(x)) == 1
                 else axis)
        if rank(d) == 1:
            shape = [1] * rank(y)
            shape[int(axis) % rank(y)] = -1
            d = K.reshape(d, tuple(shape))
    mid = (axis_slice(y, axis, 1) + axis_slice(y, axis, None, -1)) / 2.0
    return K.sum(d * mid, axis=int(axis))
