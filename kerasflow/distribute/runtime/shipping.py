"""Moving a call's training arrays to a group of actors once: they go into
Ray's object store one time, and later batches travel as row indices only.
``ArrayCache`` keys them by content, so a repeated ``fit`` on the same arrays
ships nothing (``ship_arrays`` keys by the identity of one call's list)."""

from __future__ import annotations

import hashlib
import time

import numpy as np

__all__ = ["ArrayCache", "fingerprint", "ship_arrays"]


def ship_arrays(group, batches, shipped):
    """Loads the batches' source arrays on every actor of ``group`` once.

    Args:
        group: a ``WorkerGroup`` whose actors have ``load_data(key, ref)`` and
            ``drop_data(key)``.
        batches: list of ``BatchRef``; their shared ``arrays`` list is shipped.
        shipped: ``(arrays, key)`` of what is loaded already, or None.

    Returns:
        ``(key, shipped)``: the key the actors know the arrays by (None when
        the batches carry their arrays themselves: generators) and the new
        ``shipped`` record for the next call.
    """
    if batches[0].indices is None:
        return None, shipped
    arrays = batches[0].arrays
    if shipped is None or shipped[0] is not arrays:
        if shipped is not None:
            group.execute("drop_data", shipped[1])
        key = f"d{time.time_ns()}"
        group.execute("load_data", key, group.put(list(arrays)))
        shipped = (arrays, key)
    return shipped[1], shipped


_FULL_HASH_BYTES = 4 << 20   # arrays up to this size are hashed whole
_SAMPLE_ROWS = 64


def fingerprint(array) -> str:
    """A content key for one training array (a repeated ``fit`` on the same
    arrays finds them on the replicas instead of shipping them again).

    Arrays of up to 4 MB are hashed whole (BLAKE2b). Larger ones are keyed by
    their memory (data address, shape, strides, dtype) plus a hash of 64 rows
    spread over them: cheap (microseconds), but an in-place change that
    misses every sampled row keeps the old key -- pass a new array (or call
    ``strategy.forget_data()``) after editing training data in place.

    Args:
        array: a numpy array (any shape and dtype).

    Returns:
        A hex string (shape and dtype included).
    """
    a = np.asarray(array)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((a.shape, a.dtype.str)).encode())
    if a.nbytes <= _FULL_HASH_BYTES:
        h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data)
    else:
        info = a.__array_interface__
        h.update(repr((info["data"][0], a.strides)).encode())
        step = max(1, len(a) // _SAMPLE_ROWS)
        h.update(np.ascontiguousarray(a[::step]).view(np.uint8).reshape(-1).data)
    return h.hexdigest()


class ArrayCache:
    """The driver's record of the training arrays its replicas hold, by
    content (:func:`fingerprint`), for ``Replica.load_named``.

    Attributes:
        shipped_arrays / shipped_bytes: arrays and bytes sent to the
            replicas so far (a repeated ``fit`` on the same arrays adds 0).
        current: ``(fingerprints, data key)`` of what the replicas hold.
    """

    def __init__(self):
        self.shipped_arrays = self.shipped_bytes = 0
        self.current = None
        self.arrays = None  # the driver's arrays of ``current`` (re-shipping)

    def reset(self):
        """The replicas hold nothing any more (a new group)."""
        self.current = None

    def ship(self, group, arrays):
        """Has every replica hold ``arrays`` (one ``fit``'s at a time); ships
        only those it does not hold yet.

        Returns:
            The data key the replicas know the list by.
        """
        if self.current is not None and arrays is self.arrays:
            return self.current[1]  # the same call's list: no hashing per call
        keys = tuple(fingerprint(a) for a in arrays)
        if self.current is not None and self.current[0] == keys:
            self.arrays = arrays
            return self.current[1]
        held = set(self.current[0]) if self.current is not None else set()
        named = []
        for k, a in zip(keys, arrays):
            if k in held:
                named.append((k, None))
            else:
                named.append((k, a))
                self.shipped_arrays += 1
                self.shipped_bytes += int(np.asarray(a).nbytes)
        data_key = f"d{time.time_ns()}"
        group.execute("load_named", data_key, group.put(named))
        self.current, self.arrays = (keys, data_key), arrays
        return data_key
