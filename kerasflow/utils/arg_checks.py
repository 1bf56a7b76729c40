"""Argument checks shared by optimizers and callbacks: counts, finite reals."""

from __future__ import annotations

import math
import numbers

__all__ = ["check_count", "check_real"]


def check_count(owner: str, name: str, value) -> int:
    """``value`` as an int >= 0; TypeError / ValueError naming ``owner``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner} expects `{name}` as an integer >= 0. Received: "
                        f"{name}={value!r} of type {type(value).__name__}.")
    if value < 0:
        raise ValueError(f"{owner} expects `{name}` >= 0. Received: {name}={value}.")
    return int(value)


def check_real(owner: str, name: str, value, low=None, high=None,
               high_open=False) -> float:
    """``value`` as a finite float in [low, high] (or [low, high)).

    Raises:
        TypeError: not a real number. ValueError: NaN, infinite or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner} expects `{name}` as a float. Received: "
                        f"{name}={value!r} of type {type(value).__name__}.")
    value = float(value)
    bad = not math.isfinite(value) or (low is not None and value < low) or (
        high is not None and (value >= high if high_open else value > high))
    if bad:
        lo = "" if low is None else f"{low} <= "
        hi = "" if high is None else (f" < {high}" if high_open else f" <= {high}")
        rng = f" with {lo}{name}{hi}" if lo or hi else ""
        raise ValueError(f"{owner} expects `{name}` as a finite float{rng}. "
                         f"Received: {name}={value}.")
    return value
