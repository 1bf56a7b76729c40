"""Array construction and rearrangement ops of Keras 3's ``keras.ops`` (and
``keras.ops.numpy``): constructors (``eye``, ``tri``, windows, ``logspace``),
stacking and splitting, axis moves and diagonals (products, ``meshgrid``,
``diff`` and ``trapezoid`` are in ``numpy_products``).

All are composed from differentiable backend ops (reshape, transpose, gather,
pad, matmul...), so they run eagerly and in graphs with gradients; the
constructors return arrays. Shapes must be static where an op needs sizes.
Source: NumPy's semantics, as Keras 3's numpy backend wraps them.
"""

from __future__ import annotations

import builtins

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.keras_ops import array as _array
from kerasflow.ops.common import (
    arg, axis_slice, dtype_of, floatx, is_sym, rank, result_dtype, tensor,
)

__all__ = [
    "append", "array_split", "bartlett", "blackman", "copy", "diag",
    "diagflat", "diagonal", "dsplit", "dstack", "empty",
    "empty_like", "eye", "fliplr", "flipud", "full_like", "geomspace", "hamming",
    "hanning", "hsplit", "hstack", "kaiser", "logspace",
    "moveaxis", "ndim", "ravel", "rot90", "size", "swapaxes",
    "trace", "tri", "unstack", "vsplit", "vstack",
]


def _dt(dtype):
    return np.dtype(floatx() if dtype is None else dtype)


# -- constructors ---------------------------------------------------------------------
def eye(N, M=None, k=0, dtype=None):  # noqa: N803  (numpy's names)
    """An (N, M) array with ones on diagonal ``k`` (floatx by default)."""
    return _array(np.eye(int(N), None if M is None else int(M), int(k), _dt(dtype)))


def tri(N, M=None, k=0, dtype=None):  # noqa: N803
    """An (N, M) array with ones at and below diagonal ``k``."""
    return _array(np.tri(int(N), None if M is None else int(M), int(k), _dt(dtype)))


def empty(shape, dtype=None):
    """An array of ``shape`` (zero-filled here, so that it is deterministic)."""
    return _array(np.zeros(shape, _dt(dtype)))


def empty_like(x, dtype=None):
    """Like ``zeros_like``: ``empty`` is zero-filled here."""
    return K.zeros_like(tensor(x), dtype=None if dtype is None else np.dtype(
        dtype).name)


def full_like(x, fill_value, dtype=None):
    """A tensor of ``x``'s shape filled with ``fill_value`` (``x``'s dtype by
    default)."""
    x = tensor(x)
    dt = dtype_of(x) if dtype is None else np.dtype(dtype)
    return K.cast(K.ones_like(x, dtype=dt.name) * K.cast(arg(fill_value), dt.name),
                  dt.name)


def copy(x):
    """A copy of ``x`` (an identity node on symbolic tensors)."""
    x = tensor(x)
    return K.identity(x) if is_sym(x) else np.array(x, copy=True)


def _window(fn, n, *args):
    return _array(getattr(np, fn)(int(n), *args).astype(floatx()))


def hamming(x):
    """The Hamming window of ``x`` points (floatx). Source: NumPy."""
    return _window("hamming", x)


def hanning(x):
    """The Hann window of ``x`` points (floatx). Source: NumPy."""
    return _window("hanning", x)


def bartlett(x):
    """The Bartlett (triangular) window of ``x`` points (floatx)."""
    return _window("bartlett", x)


def blackman(x):
    """The Blackman window of ``x`` points (floatx)."""
    return _window("blackman", x)


def kaiser(x, beta):
    """The Kaiser window of ``x`` points and shape ``beta`` (floatx)."""
    return _window("kaiser", x, float(beta))


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)`` (floatx unless ``dtype``)."""
    return _array(np.logspace(start, stop, num, endpoint, base, _dt(dtype), axis))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values evenly spaced on a log scale (floatx unless ``dtype``)."""
    return _array(np.geomspace(start, stop, num, endpoint, _dt(dtype), axis))


# -- sizes, axes, flips -------------------------------------------------------------------
def ndim(x) -> int:
    """The number of dimensions (an int)."""
    return rank(tensor(x))


def size(x):
    """The number of elements (an int; None when a dimension is unknown)."""
    shape = tuple(tensor(x).shape)
    return None if None in shape else int(np.prod(shape, dtype=np.int64))


def ravel(x):
    """``x`` flattened to one dimension."""
    return K.reshape(tensor(x), (-1,))


def moveaxis(x, source, destination):
    """``x`` with axes ``source`` moved to ``destination`` (ints or lists)."""
    x = tensor(x)
    n = rank(x)
    src = [int(s) % n for s in np.atleast_1d(source)]
    dst = [int(d) % n for d in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis needs as many destinations as sources. "
                         f"Received: source={source}, destination={destination}.")
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return K.transpose(x, tuple(order))


def swapaxes(x, axis1, axis2):
    """``x`` with ``axis1`` and ``axis2`` exchanged."""
    x = tensor(x)
    perm = list(range(rank(x)))
    a, b = int(axis1) % len(perm), int(axis2) % len(perm)
    perm[a], perm[b] = perm[b], perm[a]
    return K.transpose(x, tuple(perm))


def flipud(x):
    """``x`` reversed along axis 0."""
    return K.flip(tensor(x), 0)


def fliplr(x):
    """``x`` reversed along axis 1 (rank >= 2)."""
    return K.flip(tensor(x), 1)


def rot90(array, k=1, axes=(0, 1)):
    """``array`` rotated by 90 degrees ``k`` times in the plane ``axes``
    (from the first axis toward the second), as ``numpy.rot90``."""
    m = tensor(array)
    n = rank(m)
    a0, a1 = int(axes[0]) % n, int(axes[1]) % n
    if a0 == a1:
        raise ValueError(f"rot90 needs two different axes. Received: axes={axes}.")
    k = int(k) % 4
    if k == 0:
        return m
    if k == 2:
        return K.flip(K.flip(m, a0), a1)
    perm = list(range(n))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return K.transpose(K.flip(m, a1), tuple(perm))
    return K.flip(K.transpose(m, tuple(perm)), a1)


# -- joining and splitting ---------------------------------------------------------------
def append(x1, x2, axis=None):
    """``x2`` appended to ``x1`` along ``axis`` (None: both flattened)."""
    dt = result_dtype(x1, x2).name
    a, b = tensor(x1, dt), tensor(x2, dt)
    if axis is None:
        return K.concatenate([ravel(a), ravel(b)], axis=0)
    return K.concatenate([a, b], axis=int(axis))


def _atleast(x, n):
    x = tensor(x)
    r = rank(x)
    if r >= n:
        return x
    if n == 2:
        return K.reshape(x, (1, -1))
    return K.reshape(x, (1, -1, 1)) if r <= 1 else K.expand_dims(x, -1)


def _join(xs, n, axis):
    xs = [_atleast(x, n) for x in xs]
    dt = result_dtype(*xs).name
    return K.concatenate([K.cast(x, dt) for x in xs], axis=axis)


def hstack(xs):
    """Tensors joined column-wise (along axis 1; axis 0 for 1-D ones)."""
    xs = [tensor(x) for x in xs]
    return _join(xs, 1, 0 if builtins.all(rank(x) <= 1 for x in xs) else 1)


def vstack(xs):
    """Tensors joined row-wise (1-D ones become rows)."""
    return _join(xs, 2, 0)


def dstack(xs):
    """Tensors joined along the third axis (lower ranks padded as numpy)."""
    return _join(xs, 3, 2)


def _split_sizes(n, indices_or_sections, exact, name):
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or (exact and n % k):
            raise ValueError(f"{name} cannot split a dimension of {n} into {k} "
                             f"equal parts. Received: indices_or_sections={k}.")
        return [n // k + (1 if i < n % k else 0) for i in range(k)]
    edges = [0] + [builtins.min(builtins.max(int(i), 0), n)
                   for i in indices_or_sections] + [n]
    return [builtins.max(b - a, 0) for a, b in zip(edges[:-1], edges[1:])]


def _split(x, indices_or_sections, axis, exact, name):
    x = tensor(x)
    axis = int(axis) % rank(x)
    n = x.shape[axis]
    if n is None:
        raise ValueError(f"{name} needs a known size along axis {axis}. Received: "
                         f"x.shape={tuple(x.shape)}.")
    sizes = _split_sizes(n, indices_or_sections, exact, name)
    out, start = [], 0
    for s in sizes:  # slices, so that empty parts work too
        out.append(axis_slice(x, axis, start, start + s))
        start += s
    return out


def array_split(x, indices_or_sections, axis=0):
    """``x`` split along ``axis`` into ``indices_or_sections`` parts (sizes
    differing by at most one, the larger first) or at the given indices."""
    return _split(x, indices_or_sections, axis, False, "array_split")


def hsplit(x, indices_or_sections):
    """``split`` along axis 1 (axis 0 for 1-D ``x``)."""
    x = tensor(x)
    return _split(x, indices_or_sections, 1 if rank(x) > 1 else 0, True, "hsplit")


def vsplit(x, indices_or_sections):
    """``split`` along axis 0 (rank >= 2)."""
    return _split(x, indices_or_sections, 0, True, "vsplit")


def dsplit(x, indices_or_sections):
    """``split`` along axis 2 (rank >= 3)."""
    return _split(x, indices_or_sections, 2, True, "dsplit")


def unstack(x, num=None, axis=0):
    """The slices of ``x`` along ``axis``, as a list (Keras 3's ``unstack``)."""
    x = tensor(x)
    axis = int(axis) % rank(x)
    n = x.shape[axis] if num is None else int(num)
    if n is None:
        raise ValueError(f"unstack needs a known size along axis {axis} or "
                         f"`num`. Received: x.shape={tuple(x.shape)}.")
    key = [slice(None)] * rank(x)
    out = []
    for i in range(n):
        key[axis] = i
        out.append(K.getitem(x, tuple(key)) if is_sym(x) else x[tuple(key)])
    return out


# -- diagonals and triangles ------------------------------------------------------------
def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal ``offset`` of the planes (``axis1``, ``axis2``), on a new
    last axis (``numpy.diagonal``); a gather, so it has a gradient."""
    x = tensor(x)
    n = rank(x)
    a1, a2 = int(axis1) % n, int(axis2) % n
    rest = [a for a in range(n) if a not in (a1, a2)]
    y = K.transpose(x, tuple(rest + [a1, a2]))
    r, c = y.shape[-2], y.shape[-1]
    if r is None or c is None:
        raise ValueError(f"diagonal needs known sizes on axes {a1}, {a2}. "
                         f"Received: x.shape={tuple(x.shape)}.")
    k = int(offset)
    rows = np.arange(builtins.max(0, -k), builtins.min(r, c - k))
    idx = rows * c + rows + k
    flat = K.reshape(y, tuple(-1 if d is None else d for d in y.shape[:-2])
                     + (r * c,))
    return K.gather(flat, idx.astype("int64"), axis=len(rest))


def trace(x, offset=0, axis1=0, axis2=1):
    """The sum along a diagonal (``numpy.trace``; small ints summed as int32)."""
    x = tensor(x)
    dt = dtype_of(x)
    if dt.name in ("bool", "int8", "int16"):
        x = K.cast(x, "int32")
    elif dt.name in ("uint8", "uint16"):
        x = K.cast(x, "uint32")
    return K.sum(diagonal(x, offset, axis1, axis2), axis=-1)


def diag(x, k=0):
    """1-D ``x``: a square matrix with ``x`` on diagonal ``k``; 2-D: that
    diagonal of ``x`` (``numpy.diag``).

    Raises:
        ValueError: ``x`` of rank other than 1 or 2.
    """
    x = tensor(x)
    k = int(k)
    if rank(x) == 2:
        return diagonal(x, k)
    if rank(x) != 1:
        raise ValueError(f"diag expects a 1-D or 2-D input. Received: "
                         f"x.shape={tuple(x.shape)}.")
    n = x.shape[0]
    m = K.expand_dims(x, 1) * np.eye(n, dtype=dtype_of(x))
    pads = [[0, k], [k, 0]] if k >= 0 else [[-k, 0], [0, -k]]
    return K.pad(m, pads)


def diagflat(x, k=0):
    """``diag`` of ``x`` flattened."""
    return diag(ravel(x), k)

