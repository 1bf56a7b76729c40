"""Shape and dtype inference helpers shared by the op families.

Shapes are tuples with None for unknown dims, or None for unknown rank.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import array as _array


def fmt(spec) -> str:
    return f"shape={spec.shape}, dtype={spec.dtype.name}"


def broadcast_dims(a, b):
    """Static broadcast of two shapes; raises ValueError when incompatible."""
    if a is None or b is None:
        return None
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(
                f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast together."
            )
    return tuple(reversed(out))


def result_dtype(*specs):
    return np.result_type(*[s.dtype for s in specs])


def broadcast(*specs, **_):
    shape = specs[0].shape
    for s in specs[1:]:
        shape = broadcast_dims(shape, s.shape)
    return shape, result_dtype(*specs)


def broadcast_float(*specs, **_):
    shape, dtype = broadcast(*specs)
    return shape, dtype if dtype.kind in "fc" else np.dtype(_array.floatx())


def broadcast_bool(*specs, **_):
    return broadcast(*specs)[0], np.dtype(bool)


def same(x, *_, **__):
    return x.shape, x.dtype


def same_float(x, *_, **__):
    if x.dtype.kind not in "fc":
        raise TypeError(f"expects a float input. Received: {fmt(x)}.")
    return x.shape, x.dtype


def norm_axis(axis, ndim):
    """Normalizes an int/tuple axis against a rank; returns a sorted tuple."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for rank {ndim}.")
        out.append(a % ndim)
    return tuple(sorted(set(out)))


def reduced(x, axis=None, keepdims=False, dtype=None):
    if x.shape is None:
        return None, dtype or x.dtype
    axes = norm_axis(axis, len(x.shape))
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return shape, np.dtype(dtype or x.dtype)
