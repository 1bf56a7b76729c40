"""Reading scalar values out of callback logs."""

from __future__ import annotations

import numbers
from typing import Any


def as_scalar(value: Any) -> float | None:
    """``value`` as a float if it is a real scalar (incl. 0-d arrays), else None."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    dtype = getattr(value, "dtype", None)
    if getattr(value, "ndim", None) == 0 and getattr(dtype, "kind", "") in "fiu":
        return float(value)
    return None
