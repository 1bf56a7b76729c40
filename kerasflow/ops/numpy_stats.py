"""Reductions and statistics of Keras 3's ``keras.ops`` (and
``keras.ops.numpy``): ``amax``/``amin``, ``average``, ``ptp``, ``quantile``,
``percentile`` and ``median`` (sorted values interpolated: differentiable),
the NaN-ignoring reductions, ``count_nonzero``, ``corrcoef`` and
``correlate``.

Composed from differentiable backend ops where a gradient exists; the
NaN-ignoring order statistics run ``numpy.nanquantile`` without gradient.
Source: NumPy's semantics, as Keras 3's numpy backend wraps them.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.ops.npcall import numpy_call
from kerasflow.ops.common import (
    dtype_of, floatx, rank, result_dtype, tensor, to_float,
)

__all__ = [
    "amax", "amin", "average", "corrcoef", "correlate", "count_nonzero", "median",
    "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean",
    "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd",
    "nansum", "nanvar", "percentile", "ptp", "quantile",
]


def _axis(axis):
    if axis is None or isinstance(axis, (int, np.integer)):
        return None if axis is None else int(axis)
    return tuple(int(a) for a in axis)


def amax(x, axis=None, keepdims=False):
    """The maximum over ``axis`` (``numpy.amax``)."""
    return K.max(tensor(x), axis=_axis(axis), keepdims=keepdims)


def amin(x, axis=None, keepdims=False):
    """The minimum over ``axis`` (``numpy.amin``)."""
    return K.min(tensor(x), axis=_axis(axis), keepdims=keepdims)


def ptp(x, axis=None, keepdims=False):
    """``max - min`` over ``axis`` (peak to peak)."""
    x = tensor(x)
    return K.max(x, axis=_axis(axis), keepdims=keepdims) - K.min(
        x, axis=_axis(axis), keepdims=keepdims)


def average(x, axis=None, weights=None):
    """The (weighted) mean over ``axis``; 1-D ``weights`` run along ``axis``.
    Float result.

    Raises:
        ValueError: 1-D weights with ``axis=None`` on a rank > 1 ``x``.
    """
    if weights is None:
        return K.mean(to_float(x), axis=_axis(axis))
    dt = result_dtype(x, weights, float_=True).name
    x, w = tensor(x, dt), tensor(weights, dt)
    if rank(w) != rank(x):
        if axis is None or rank(w) != 1:
            raise ValueError(f"average needs weights of x's shape, or 1-D weights "
                             f"with an int axis. Received: x.shape="
                             f"{tuple(x.shape)}, weights.shape={tuple(w.shape)}, "
                             f"axis={axis}.")
        shape = [1] * rank(x)
        shape[int(axis) % rank(x)] = -1
        w = K.reshape(w, tuple(shape))
    return K.sum(x * w, axis=_axis(axis)) / K.sum(w * K.ones_like(x),
                                                  axis=_axis(axis))


# -- order statistics -----------------------------------------------------------------------
def _q_dtype(x):
    dt = dtype_of(x)
    return dt.name if dt.kind == "f" else floatx()


def _to_last(x, axis):
    """``x`` with the reduced axes flattened onto one last axis."""
    n = rank(x)
    axes = list(range(n)) if axis is None else sorted(
        int(a) % n for a in np.atleast_1d(axis))
    keep = [a for a in range(n) if a not in axes]
    y = K.transpose(x, tuple(keep + axes))
    size = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    return K.reshape(y, tuple(-1 if x.shape[a] is None else x.shape[a]
                              for a in keep) + (size,)), axes, keep, size


def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th quantiles (``q`` in [0, 1], a scalar or 1-D) over
    ``axis`` (``numpy.quantile``): sorted values, interpolated by ``method``
    ('linear', 'lower', 'higher', 'midpoint', 'nearest'). The gradient flows to
    the selected values. The quantile axis (1-D ``q``) comes first.

    Raises:
        ValueError: an unknown ``method``, or unknown sizes on the reduced axes.
    """
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"quantile method must be 'linear', 'lower', 'higher', "
                         f"'midpoint' or 'nearest'. Received: method={method!r}.")
    x = tensor(x)
    x = K.cast(x, _q_dtype(x))
    flat, axes, keep, n = _to_last(x, axis)
    qs = np.asarray(q, np.float64)
    pos = np.atleast_1d(qs) * (n - 1)
    lo = np.floor(pos).astype("int64")
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo
    if method == "lower":
        hi, frac = lo, frac * 0
    elif method == "higher":
        lo, frac = np.ceil(pos).astype("int64"), frac * 0
        hi = lo
    elif method == "nearest":
        lo = np.round(pos).astype("int64")  # numpy rounds half to even here too
        hi, frac = lo, frac * 0
    elif method == "midpoint":
        frac = np.where(frac > 0, 0.5, 0.0)
    s = K.sort(flat, axis=-1)
    last = len(keep)
    v_lo, v_hi = K.gather(s, lo, axis=last), K.gather(s, hi, axis=last)
    out = v_lo + K.multiply(v_hi - v_lo, frac.astype(np.dtype(s.dtype)))  # (..., nq)
    out = K.transpose(out, (last,) + tuple(range(last)))  # quantiles first
    if keepdims:
        shape = [1 if a in axes else -1 if x.shape[a] is None else x.shape[a]
                 for a in range(rank(x))]
        out = K.reshape(out, (len(lo),) + tuple(shape))
    return out[0] if qs.ndim == 0 else out


def percentile(x, q, axis=None, method="linear", keepdims=False):
    """``quantile`` with ``q`` in percent (0..100)."""
    return quantile(x, np.asarray(q, np.float64) / 100.0, axis, method, keepdims)


def median(x, axis=None, keepdims=False):
    """The median over ``axis`` (float; the mean of the middle two for an
    even count)."""
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


# -- NaN-ignoring -----------------------------------------------------------------------------
def _fill_nan(x, value):
    x = tensor(x)
    return K.where(K.isnan(x), K.cast(K.ones_like(x) * value, dtype_of(x).name), x) \
        if dtype_of(x).kind == "f" else x


def nansum(x, axis=None, keepdims=False):
    """The sum over ``axis``, NaN counted as 0."""
    return K.sum(_fill_nan(x, 0.0), axis=_axis(axis), keepdims=keepdims)


def nanprod(x, axis=None, keepdims=False):
    """The product over ``axis``, NaN counted as 1."""
    return K.prod(_fill_nan(x, 1.0), axis=_axis(axis), keepdims=keepdims)


def _count(x, axis, keepdims):
    x = tensor(x)
    ok = K.cast(K.logical_not(K.isnan(x)), dtype_of(x).name)
    return K.sum(ok, axis=_axis(axis), keepdims=keepdims)


def nanmean(x, axis=None, keepdims=False):
    """The mean over ``axis`` of the non-NaN values (NaN where there are none)."""
    x = to_float(x)
    return nansum(x, axis, keepdims) / _count(x, axis, keepdims)


def nanvar(x, axis=None, keepdims=False):
    """The variance over ``axis`` of the non-NaN values."""
    x = to_float(x)
    m = nanmean(x, axis, keepdims=True)
    return nanmean(K.square(x - m), axis, keepdims)


def nanstd(x, axis=None, keepdims=False):
    """The standard deviation over ``axis`` of the non-NaN values."""
    return K.sqrt(nanvar(x, axis, keepdims))


def _nan_extremum(x, axis, keepdims, fn, fill):
    x = tensor(x)
    if dtype_of(x).kind != "f":
        return fn(x, axis=_axis(axis), keepdims=keepdims)
    out = fn(_fill_nan(x, fill), axis=_axis(axis), keepdims=keepdims)
    none = K.equal(_count(x, axis, keepdims), 0.0)
    return K.where(none, K.cast(K.ones_like(out) * np.nan, dtype_of(out).name), out)


def nanmax(x, axis=None, keepdims=False):
    """The maximum over ``axis`` ignoring NaN (NaN where all are)."""
    return _nan_extremum(x, axis, keepdims, K.max, -np.inf)


def nanmin(x, axis=None, keepdims=False):
    """The minimum over ``axis`` ignoring NaN (NaN where all are)."""
    return _nan_extremum(x, axis, keepdims, K.min, np.inf)


def _nan_arg(x, axis, keepdims, fill, name):
    x = tensor(x)
    kw = {"axis": None if axis is None else int(axis), "keepdims": bool(keepdims)}
    if dtype_of(x).kind != "f":
        return K.cast(numpy_call(name[3:], x, **kw), "int32")
    nan = K.isnan(x)
    best = numpy_call(name[3:], K.where(nan, K.cast(K.ones_like(x) * fill,
                                                    dtype_of(x).name), x), **kw)
    return K.where(numpy_call("all", nan, **kw), -1, K.cast(best, "int32"))


def nanargmax(x, axis=None, keepdims=False):
    """The index of the maximum ignoring NaN (int32, -1 where all are NaN; no
    gradient)."""
    return _nan_arg(x, axis, keepdims, -np.inf, "nanargmax")


def nanargmin(x, axis=None, keepdims=False):
    """The index of the minimum ignoring NaN (int32, -1 where all are NaN; no
    gradient)."""
    return _nan_arg(x, axis, keepdims, np.inf, "nanargmin")


def nancumsum(x, axis=None, dtype=None):
    """The cumulative sum along ``axis`` (None: flattened), NaN counted as 0."""
    y = _fill_nan(x, 0.0)
    y = y if dtype is None else K.cast(y, np.dtype(dtype).name)
    return K.cumsum(y, axis=axis)


def nancumprod(x, axis=None, dtype=None):
    """The cumulative product along ``axis`` (None: flattened), NaN as 1."""
    y = _fill_nan(x, 1.0)
    y = y if dtype is None else K.cast(y, np.dtype(dtype).name)
    return K.cumprod(y, axis=axis)


def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    """``quantile`` of the non-NaN values (``numpy.nanquantile``; no gradient)."""
    x = tensor(x)
    x = K.cast(x, _q_dtype(x))
    return K.cast(numpy_call("nanquantile", x, q=np.asarray(q).tolist(),
                             axis=_axis(axis), method=method,
                             keepdims=bool(keepdims)), dtype_of(x).name)


def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    """``percentile`` of the non-NaN values (no gradient)."""
    return nanquantile(x, np.asarray(q, np.float64) / 100.0, axis, method, keepdims)


def nanmedian(x, axis=None, keepdims=False):
    """The median of the non-NaN values (no gradient)."""
    return nanquantile(x, 0.5, axis, keepdims=keepdims)


# -- counts, correlations -------------------------------------------------------------------
def count_nonzero(x, axis=None):
    """How many elements along ``axis`` are non-zero (int32, no gradient)."""
    return K.cast(numpy_call("count_nonzero", tensor(x), axis=_axis(axis)), "int32")


def corrcoef(x):
    """Pearson correlation coefficients of the rows of ``x`` (variables) over
    its columns (observations), clipped to [-1, 1] (``numpy.corrcoef``)."""
    x = tensor(x)
    dt = dtype_of(x)
    out_dt = "float64" if dt.name in ("int64", "float64") else (
        dt.name if dt.name == "float16" else floatx())
    x = K.cast(x, out_dt)
    if rank(x) == 1:
        x = K.expand_dims(x, 0)
    c = x - K.mean(x, axis=1, keepdims=True)
    cov = K.matmul(c, c, transpose_b=True)
    d = K.sqrt(K.sum(c * c, axis=1))
    r = cov / K.expand_dims(d, 1) / K.expand_dims(d, 0)
    r = K.clip(r, -1.0, 1.0)
    return r[0, 0] if r.shape[0] == 1 else r


def correlate(x1, x2, mode="valid"):
    """The cross-correlation of 1-D sequences, ``c[k] = sum_n a[n + k] v[n]``
    (``numpy.correlate``; mode 'valid', 'same' or 'full'); float32 (float64 for
    int64/float64 inputs). A gather and a matrix product: differentiable.

    Raises:
        ValueError: an unknown mode or inputs that are not 1-D.
    """
    dt = result_dtype(x1, x2)
    dt = "float64" if dt.name in ("int64", "float64") else (
        dt.name if dt.name == "float16" else "float32")
    a, v = tensor(x1, dt), tensor(x2, dt)
    if rank(a) != 1 or rank(v) != 1 or mode not in ("valid", "same", "full"):
        raise ValueError(f"correlate takes 1-D inputs and mode 'valid', 'same' "
                         f"or 'full'. Received: shapes {tuple(a.shape)}, "
                         f"{tuple(v.shape)}, mode={mode!r}.")
    la, lv = a.shape[0], v.shape[0]
    if lv > la:  # numpy: swap and reverse
        return K.flip(correlate(v, a, mode), 0)
    if mode == "valid":
        lo, n = 0, la - lv + 1
    elif mode == "full":
        lo, n = lv - 1, la + lv - 1
    else:
        lo, n = lv // 2, la
    padded = K.pad(a, [[lo, max(n + lv - 1 - la - lo, 0)]])
    idx = (np.arange(n)[:, None] + np.arange(lv)[None, :]).astype("int64")
    windows = K.gather(padded, idx, axis=0)
    return K.squeeze(K.matmul(windows, K.expand_dims(v, 1)), 1)

