"""Variable partitioners of ``ParameterServerStrategy``: how many row blocks a
large variable (an embedding table, a big kernel) is cut into across the PS
shards (``tf.distribute.experimental.partitioners``: ``FixedShardsPartitioner``
and ``MinSizePartitioner``, same names, arguments and counts; Li et al.,
OSDI 2014, §3.1: parameters are key ranges spread over the servers).

A partitioner is called as ``partitioner(shape, dtype)`` and returns TF's
per-axis partition list ``[k, 1, ..., 1]``: only axis 0 (rows) is split.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FixedShardsPartitioner", "MinSizePartitioner", "Partitioner",
           "row_bounds"]


def _check_int(name, value, low):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int. Received: {name}={value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}. Received: {name}={value}")
    return int(value)


def row_bounds(rows, k):
    """Row offsets ``[0, ..., rows]`` of ``k`` blocks, the first ``rows % k``
    one row larger (TF's partitioned variables, ``np.array_split``)."""
    base, extra = divmod(int(rows), int(k))
    out = [0]
    for j in range(int(k)):
        out.append(out[-1] + base + (1 if j < extra else 0))
    return out


class Partitioner:
    """Base class: ``__call__(shape, dtype)`` -> ``[k, 1, ...]``."""

    def num_partitions(self, shape, dtype) -> int:
        raise NotImplementedError

    def __call__(self, shape, dtype):
        shape = tuple(int(d) for d in shape)
        if not shape:
            return []
        k = max(1, min(int(self.num_partitions(shape, dtype)), shape[0]))
        return [k] + [1] * (len(shape) - 1)


class FixedShardsPartitioner(Partitioner):
    """Cuts every variable into ``num_shards`` row blocks (fewer when it has
    fewer rows), as ``tf.distribute.experimental.partitioners
    .FixedShardsPartitioner``.

    Args:
        num_shards: int >= 1.

    Raises:
        TypeError / ValueError: ``num_shards`` not an int >= 1.
    """

    def __init__(self, num_shards):
        self.num_shards = _check_int("FixedShardsPartitioner num_shards",
                                     num_shards, 1)

    def num_partitions(self, shape, dtype):
        return self.num_shards

    def __repr__(self):
        return f"FixedShardsPartitioner(num_shards={self.num_shards})"


class MinSizePartitioner(Partitioner):
    """As many row blocks as keep each at least ``min_shard_bytes``, at most
    ``max_shards`` (``tf.distribute.experimental.partitioners
    .MinSizePartitioner``: ``min(max_shards, bytes // min_shard_bytes)``,
    at least 1, at most the row count).

    Args:
        min_shard_bytes: int >= 1, bytes (default 256 KiB).
        max_shards: int >= 1.

    Raises:
        TypeError / ValueError: arguments not ints >= 1.
    """

    def __init__(self, min_shard_bytes=256 << 10, max_shards=1):
        self.min_shard_bytes = _check_int("MinSizePartitioner min_shard_bytes",
                                          min_shard_bytes, 1)
        self.max_shards = _check_int("MinSizePartitioner max_shards", max_shards, 1)

    def num_partitions(self, shape, dtype):
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return max(1, min(self.max_shards, nbytes // self.min_shard_bytes))

    def __repr__(self):
        return (f"MinSizePartitioner(min_shard_bytes={self.min_shard_bytes}, "
                f"max_shards={self.max_shards})")
