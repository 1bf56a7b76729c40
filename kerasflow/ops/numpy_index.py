"""Indexing, searching, scattering and tests of Keras 3's ``keras.ops``
(and ``keras.ops.numpy``): ``select``, ``isin``, ``isclose``,
``searchsorted``, ``digitize``, ``argpartition``, ``unravel_index``,
``bincount``/``histogram``/``nonzero``/``unique`` (value-dependent shapes:
eager only), ``slice``/``slice_update``, ``scatter``/``scatter_update``, the
``segment_*`` reductions, ``saturate_cast``, ``view`` and ``vectorize``.

``select``, ``slice``, ``slice_update``, ``scatter``, ``scatter_update`` and
``segment_sum`` are composed from differentiable ops (gather, scatter-add,
where); the searches and tests return integers or bools without gradient.
Source: Keras 3's ops on its numpy backend (NumPy's semantics).
"""

from __future__ import annotations

import builtins

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.ops.npcall import host, numpy_call, register_kernel, require_eager
from kerasflow.ops.common import arg, dtype_of, rank, tensor

__all__ = [
    "allclose", "argpartition", "bincount", "digitize", "dtype", "get_item",
    "histogram", "is_tensor", "isclose", "isin", "nonzero", "saturate_cast",
    "scatter", "scatter_update", "searchsorted", "segment_max", "segment_min",
    "segment_prod", "segment_sum", "select", "slice", "slice_update", "unique",
    "unravel_index", "vectorize", "view",
]


def select(condlist, choicelist, default=0):
    """Per element, the value of the first ``choicelist`` entry whose
    condition in ``condlist`` holds, else ``default`` (``numpy.select``)."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"select needs as many conditions as choices. Received: "
                         f"{len(condlist)} and {len(choicelist)}.")
    choices = [tensor(c) for c in choicelist]
    out = K.zeros_like(choices[0]) + arg(default)
    for c, v in zip(reversed(condlist), reversed(choices)):
        out = K.where(K.cast(c, "bool"), v, out)
    return out


def isin(x1, x2, assume_unique=False, invert=False):
    """Whether each element of ``x1`` occurs in ``x2`` (bool, ``x1``'s shape)."""
    return numpy_call("isin", tensor(x1), tensor(x2), assume_unique=assume_unique,
                      invert=invert)


def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """``|x1 - x2| <= atol + rtol * |x2|`` elementwise (bool, broadcast)."""
    return numpy_call("isclose", arg(x1), arg(x2), rtol=float(rtol),
                      atol=float(atol), equal_nan=bool(equal_nan))


def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether ``isclose`` holds everywhere (a bool scalar)."""
    return K.all(isclose(x1, x2, rtol, atol, equal_nan))


def searchsorted(sorted_sequence, values, side="left"):
    """Insertion indices of ``values`` into 1-D ``sorted_sequence`` (int32).

    Raises:
        ValueError: a ``sorted_sequence`` that is not 1-D.
    """
    seq = tensor(sorted_sequence)
    if rank(seq) != 1:
        raise ValueError(f"`searchsorted` only supports 1-D sorted sequences. "
                         f"Received: sorted_sequence.shape={tuple(seq.shape)}.")
    return K.cast(numpy_call("searchsorted", seq, tensor(values), side=side),
                  "int32")


def digitize(x, bins):
    """The index of the bin of each value (``numpy.digitize``; int32)."""
    return K.cast(numpy_call("digitize", tensor(x), tensor(bins)), "int32")


def argpartition(x, kth, axis=-1):
    """Indices that partition ``x`` around its ``kth`` element along ``axis``
    (numpy's introselect; int32)."""
    return K.cast(numpy_call("argpartition", tensor(x), kth=int(kth),
                             axis=int(axis)), "int32")


def unravel_index(indices, shape):
    """Flat ``indices`` as a tuple of coordinate arrays for ``shape`` (the
    indices' dtype)."""
    idx = tensor(indices)
    shape = tuple(int(s) for s in shape)
    out = []
    for i, s in enumerate(shape):
        stride = int(np.prod(shape[i + 1:], dtype=np.int64))
        out.append(K.mod(K.floor_divide(idx, stride), s))
    return tuple(out)


def bincount(x, weights=None, minlength=0, sparse=False):
    """Counts of each non-negative int in 1-D ``x`` (rows of 2-D ``x``):
    int32, or the (weighted) sums in the weights' dtype. Eager only.

    Raises:
        ValueError: symbolic inputs, or ``sparse=True``.
    """
    require_eager("bincount", x, weights)
    if sparse:
        raise ValueError("bincount: sparse=True is not supported.")
    x = host(x)
    w = None if weights is None else host(weights)
    dt = "int32" if w is None else (w.dtype if w.dtype.kind == "f" else
                                    np.result_type(x.dtype, w.dtype))
    if x.ndim == 2:
        n = builtins.max(int(minlength), int(x.max()) + 1 if x.size else 0)
        return np.stack([np.bincount(r, None if w is None else wr, n)
                         for r, wr in zip(x, w if w is not None else x)]).astype(dt)
    return np.bincount(x, w, int(minlength)).astype(dt)


def histogram(x, bins=10, range=None):  # noqa: A002  (numpy's name)
    """(counts, bin_edges) of the values of ``x`` (``numpy.histogram``).
    Eager only."""
    require_eager("histogram", x)
    return np.histogram(host(x), bins=bins, range=range)


def nonzero(x):
    """The indices of the non-zero elements, one int32 array per axis.
    Eager only (the count depends on the values)."""
    require_eager("nonzero", x)
    return tuple(i.astype("int32") for i in np.nonzero(host(x)))


def unique(x, sorted=True, return_index=False, return_inverse=False,  # noqa: A002
           return_counts=False, axis=None, size=None, fill_value=None):
    """The sorted unique values (and optionally first indices, the inverse and
    counts), as ``numpy.unique``; ``size`` pads with ``fill_value`` (0) or
    truncates. Eager only."""
    require_eager("unique", x)
    x = host(x)
    out = np.unique(x, return_index=return_index, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis, equal_nan=False)
    extra = return_index or return_inverse or return_counts
    out = list(out) if extra else [out]
    if size is not None:
        dim = 0 if axis is None else int(axis) % x.ndim
        n = out[0].shape[dim]
        if n > size:
            out[0] = np.take(out[0], np.arange(size), axis=dim)
            for i, flag in ((1, return_index), (-1, return_counts)):
                if flag:
                    out[i] = out[i][:size]
        elif n < size:
            pad = [(0, 0)] * out[0].ndim
            pad[dim] = (0, size - n)
            fill = 0 if fill_value is None else fill_value
            out[0] = np.pad(out[0], pad, constant_values=fill)
            if return_counts:
                out[-1] = np.pad(out[-1], (0, size - n))
            if return_index:
                out[1] = np.pad(out[1], (0, size - n))
    return tuple(out) if extra else out[0]


def get_item(x, key):
    """``x[key]`` (Keras 3's ``get_item``)."""
    return K.getitem(tensor(x), key)


def slice(inputs, start_indices, shape):  # noqa: A001  (Keras' name)
    """The block of ``shape`` starting at ``start_indices`` (ints)."""
    x = tensor(inputs)
    if len(start_indices) != len(shape):
        raise ValueError(f"Length of `start_indices` must match length of "
                         f"`shape`. Received: start_indices={start_indices}, "
                         f"shape={shape}.")
    key = tuple(builtins.slice(int(s), int(s) + int(n))
                for s, n in zip(start_indices, shape))
    return K.getitem(x, key)


def slice_update(inputs, start_indices, updates):
    """``inputs`` with the block at ``start_indices`` replaced by ``updates``
    (a new tensor; differentiable in both)."""
    x, u = tensor(inputs), tensor(updates)
    u = K.cast(u, dtype_of(x).name)
    pads = []
    for s, n, d in zip(start_indices, u.shape, x.shape):
        pads.append([int(s), int(d) - int(s) - int(n)])
    mask = np.zeros(tuple(x.shape), bool)
    mask[tuple(builtins.slice(p[0], p[0] + n) for p, n in zip(pads, u.shape))] = True
    return K.where(mask, K.pad(u, pads), x)


def _scatter_add(values, linear, rows, dtype):
    """(rows, *value_shape) zeros plus ``values`` added at rows ``linear``."""
    like = np.zeros((rows,) + tuple(values.shape[1:]), dtype)
    return K.apply("GatherGrad", values, like, linear, axis=0)


def _linear(indices, shape):
    idx = K.cast(tensor(indices), "int64")
    n = idx.shape[-1]
    strides = [int(np.prod(shape[i + 1:n], dtype=np.int64)) for i in range(n)]
    return K.reshape(K.sum(K.multiply(idx, np.asarray(strides, "int64")), axis=-1),
                     (-1,)), n


def scatter(indices, values, shape):
    """A zero tensor of ``shape`` with ``values`` added at ``indices`` (int,
    (..., k) addressing the first k axes); repeated indices add up."""
    shape = tuple(int(s) for s in shape)
    v = tensor(values)
    linear, n = _linear(indices, shape)
    v = K.reshape(v, (-1,) + shape[n:])
    rows = int(np.prod(shape[:n], dtype=np.int64))
    return K.reshape(_scatter_add(v, linear, rows, dtype_of(v)), shape)


def scatter_update(inputs, indices, updates, reduction=None):
    """``inputs`` with ``updates`` written at ``indices`` (int, (N, k)):
    replaced (``reduction=None``; differentiable, a repeated index takes the
    sum of its updates) or combined by 'add' (differentiable), 'max', 'min'
    or 'mul' (no gradient).

    Raises:
        ValueError: an unknown reduction.
    """
    x = tensor(inputs)
    shape = tuple(x.shape)
    u = K.cast(tensor(updates), dtype_of(x).name)
    if reduction in ("max", "min", "mul"):
        return numpy_call("kf.scatter_reduce", x, K.cast(tensor(indices), "int64"),
                          u, reduction=reduction)
    if reduction not in (None, "add"):
        raise ValueError(f"Unsupported reduction: {reduction!r}. Expected None, "
                         f"'add', 'max', 'min' or 'mul'.")
    added = scatter(indices, u, shape)
    if reduction == "add":
        return x + added
    hit = scatter(indices, K.ones_like(u), shape)
    return K.where(K.greater(hit, 0), added, x)


@register_kernel("scatter_reduce")
def _scatter_reduce(xp, x, indices, updates, reduction):
    out = x.copy()
    fn = {"max": np.maximum, "min": np.minimum, "mul": np.multiply}[reduction]
    fn.at(out, tuple(np.asarray(indices).T), updates)
    return out


def _segment_ids(segment_ids, num_segments, name):
    ids = K.cast(tensor(segment_ids), "int64")
    if num_segments is None:
        require_eager(f"{name} without num_segments", ids)
        ids_host = host(ids)
        num_segments = int(ids_host.max()) + 1 if ids_host.size else 0
    return ids, int(num_segments)


def segment_sum(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Sums of the rows of ``data`` per id of ``segment_ids`` (ids -1
    ignored), ``num_segments`` rows (default max id + 1: eager only).
    Differentiable."""
    d = tensor(data)
    ids, n = _segment_ids(segment_ids, num_segments, "segment_sum")
    keep = K.cast(K.greater_equal(ids, 0), dtype_of(d).name)
    keep = K.reshape(keep, (-1,) + (1,) * (rank(d) - 1))
    return _scatter_add(d * keep, K.maximum(ids, 0), n, dtype_of(d))


def _segment(kind, data, segment_ids, num_segments):
    d = tensor(data)
    ids, n = _segment_ids(segment_ids, num_segments, f"segment_{kind}")
    return numpy_call("kf.segment", d, ids, kind=kind, num_segments=n)


@register_kernel("segment")
def _segment_kernel(xp, data, ids, kind, num_segments):
    fn, init = {"max": (np.maximum, -np.inf), "min": (np.minimum, np.inf),
                "prod": (np.multiply, 1)}[kind]
    valid = ids >= 0
    out = np.full((num_segments,) + data.shape[1:], init, data.dtype)
    fn.at(out, ids[valid], data[valid])
    return out


def segment_max(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Maxima per segment (-inf for empty ones; no gradient)."""
    return _segment("max", data, segment_ids, num_segments)


def segment_min(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Minima per segment (+inf for empty ones; no gradient)."""
    return _segment("min", data, segment_ids, num_segments)


def segment_prod(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Products per segment (1 for empty ones; no gradient)."""
    return _segment("prod", data, segment_ids, num_segments)


def saturate_cast(x, dtype):
    """``x`` clipped to ``dtype``'s range, then cast (no wrap-around)."""
    x = tensor(x)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        src = dtype_of(x)
        lo = builtins.max(info.min, np.iinfo(src).min if src.kind in "iu" else
                          info.min)
        hi = builtins.min(info.max, np.iinfo(src).max if src.kind in "iu" else
                          info.max)
        if src.kind == "f":
            lo, hi = float(lo), float(hi)
        x = K.clip(x, lo, hi)
    elif dt.kind == "f" and dtype_of(x).kind == "f":
        info = np.finfo(dt)
        x = K.clip(x, float(info.min), float(info.max))
    return K.cast(x, dt.name)


def view(x, dtype=None):
    """The same bytes read as ``dtype`` (the last axis rescaled by the item
    sizes; no gradient)."""
    return numpy_call("kf.view", tensor(x), dtype=np.dtype(dtype).name)


@register_kernel("view")
def _view(xp, x, dtype):
    return xp.ascontiguousarray(x).view(dtype)


def vectorize(pyfunc, *, excluded=None, signature=None):
    """``pyfunc`` mapped over array elements (``numpy.vectorize``); eager."""
    return np.vectorize(pyfunc, excluded=excluded, signature=signature)


def is_tensor(x) -> bool:
    """Whether ``x`` is an array or a symbolic tensor."""
    return K.is_tensor(x)


def dtype(x) -> str:
    """The dtype's name ("float32")."""
    return dtype_of(x).name
