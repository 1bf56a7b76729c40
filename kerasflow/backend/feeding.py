"""Feeding: a value fed to a placeholder becomes a device array of its dtype.

Casts that numpy performs silently and lossily (float64 1e300 to float32 inf,
int64 300 to int8 44) are refused with an error naming the placeholder, as are
values that are not data (a symbolic tensor, ragged nested lists).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.graph import SymbolicTensor

__all__ = ["cast_fed"]


def cast_fed(value, dtype, name):
    """A value fed to placeholder ``name`` as a device array of ``dtype``.

    Raises:
        TypeError: a symbolic tensor, or a dtype that cannot be cast safely
            (same kind) to ``dtype``.
        ValueError: ragged nested lists; integers that would wrap around in a
            narrower dtype; finite floats that would overflow to inf.
    """
    if isinstance(value, SymbolicTensor):
        raise TypeError(
            f"Placeholder '{name}' is fed a value: an array, number or nested list. "
            f"Received: the symbolic tensor '{value.name}' (shape={value.shape}); "
            f"compute it first (Session.run) or connect it in the graph instead."
        )
    src = getattr(value, "dtype", None)
    if src is None:
        try:
            value = np.asarray(value)
        except ValueError as e:  # ragged nested lists
            raise ValueError(
                f"Placeholder '{name}' expects a rectangular array of dtype "
                f"{dtype.name}. Received: a value numpy cannot make an array of "
                f"({e})."
            ) from None
        src = value.dtype
    src = np.dtype(src)
    if not np.can_cast(src, dtype, "same_kind") or src.kind in "OSUV":
        raise TypeError(
            f"Placeholder '{name}' expects dtype {dtype.name}. Received: a "
            f"value of dtype {src.name}."
        )
    if (src.kind in "iu" and dtype.kind in "iu" and src != dtype and value.size
            and not np.can_cast(src, dtype, "safe")):  # widening cannot wrap
        # same_kind casts wrap integers around silently (int64 300 -> int8 44).
        info = np.iinfo(dtype)
        lo, hi = _array.to_numpy(value.min()), _array.to_numpy(value.max())
        if lo < info.min or hi > info.max:
            raise ValueError(
                f"Placeholder '{name}' expects values of dtype {dtype.name}, in "
                f"[{info.min}, {info.max}]. Received: values in [{lo}, {hi}] "
                f"(dtype {src.name}), which would wrap around."
            )
    if np.can_cast(src, dtype, "safe"):  # nothing can overflow
        return _array.to_device(value, dtype=dtype)
    try:
        with np.errstate(over="raise"):
            return _array.to_device(value, dtype=dtype)
    except FloatingPointError:
        big = np.abs(np.asarray(_array.to_numpy(value), dtype=np.float64))
        top = float(big[np.isfinite(big)].max())
        raise ValueError(
            f"Placeholder '{name}' expects values that fit dtype {dtype.name} "
            f"(|x| <= {float(np.finfo(dtype).max):.4g}). Received: a value of "
            f"dtype {src.name} with |x| up to {top:.4g}, which would overflow to "
            f"inf."
        ) from None
