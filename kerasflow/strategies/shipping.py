"""Moving a call's training arrays to a group of actors once: they go into
Ray's object store one time, and later batches travel as row indices only."""

from __future__ import annotations

import time

__all__ = ["ship_arrays"]


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
