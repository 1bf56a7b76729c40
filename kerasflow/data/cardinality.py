"""Cardinality constants and arithmetic for ``kerasflow.data`` (tf.data's values).

A cardinality is an int >= 0, ``INFINITE_CARDINALITY`` (-1) or
``UNKNOWN_CARDINALITY`` (-2); each transformation derives its own without
iterating, as tf.data does.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "batched",
           "check_count", "concatenated", "parallelism", "repeated", "sharded",
           "skipped", "taken", "zipped"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
_INF, _UNKNOWN = INFINITE_CARDINALITY, UNKNOWN_CARDINALITY


def check_count(value, what: str, minimum: int = 0) -> int:
    """``value`` as an int >= ``minimum``.

    Raises:
        TypeError: not an int. ValueError: below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int. Received: {what}={value!r}.")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}. Received: {what}={value}.")
    return int(value)


def parallelism(value, what: str) -> int | None:
    """None, or the number of threads for ``value`` (AUTOTUNE: the CPU count)."""
    if value is None:
        return None
    if value == AUTOTUNE:
        return os.cpu_count() or 1
    return check_count(value, what, minimum=1)


def batched(n: int, size: int, drop_remainder: bool) -> int:
    """After ``batch(size, drop_remainder)``."""
    if n < 0:
        return n
    return n // size if drop_remainder else -(-n // size)


def repeated(n: int, count: int) -> int:
    """After ``repeat(count)`` (count < 0: forever; an empty dataset stays empty)."""
    if count < 0:
        return 0 if n == 0 else _INF
    if count == 0 or n == 0:
        return 0
    return n if n < 0 else n * count


def taken(n: int, count: int) -> int:
    """After ``take(count)`` (count < 0: all)."""
    if count < 0:
        return n
    if n == _INF:
        return count
    return n if n == _UNKNOWN else min(n, count)


def skipped(n: int, count: int) -> int:
    """After ``skip(count)`` for count >= 0."""
    return n if n < 0 else max(n - count, 0)


def sharded(n: int, num_shards: int, index: int) -> int:
    """After ``shard(num_shards, index)``: the indices i < n with i % num_shards
    == index."""
    if n < 0:
        return n
    return n // num_shards + (1 if index < n % num_shards else 0)


def concatenated(a: int, b: int) -> int:
    """After ``a.concatenate(b)``."""
    if _INF in (a, b):
        return _INF
    return _UNKNOWN if _UNKNOWN in (a, b) else a + b


def zipped(ns: list) -> int:
    """After ``zip``: the shortest; unknown when an unknown one could be shorter."""
    if _UNKNOWN in ns:
        finite = [n for n in ns if n >= 0]
        return min(finite) if finite and min(finite) == 0 else _UNKNOWN
    finite = [n for n in ns if n >= 0]
    return min(finite) if finite else _INF
