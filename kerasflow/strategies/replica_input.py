"""A replica's own input: the sources it reads rows from (the replica side of
``distribute_datasets_from_function``, of a dataset read on the replicas and
of Ray Data splits; see ``kerasflow/distribute_input.py``)."""

from __future__ import annotations

import itertools

from kerasflow import tree
from kerasflow.distribute_input import shard_bounds

__all__ = ["InputReader"]


class InputReader:
    """Mixin of ``Replica``: keeps input sources by key and reads them.

    Each source is an ``InputSource`` (unpickled here); a pass over it is an
    iterator of raw elements ``(x, y[, sample_weight])``.
    """

    def _inputs(self):
        if not hasattr(self, "inputs"):
            self.inputs = {}  # key -> [source, iterator or None, fresh]
        return self.inputs

    def load_input(self, key, source):
        """Keeps ``source`` under ``key`` (its pipeline is built on first read)."""
        self._inputs()[key] = [source, None, False]
        return True

    def drop_input(self, key):
        self._inputs().pop(key, None)
        return True

    def peek_input(self, key):
        """One row of the first element of a new pass (the input signature);
        the element is kept for the first step.

        Returns:
            The raw element's structure with every array cut to one row.

        Raises:
            ValueError: the source yields no element.
        """
        entry = self._inputs()[key]
        it = entry[0].passes()
        first = next(it, None)
        if first is None:
            raise ValueError(f"The input of replica {self.rank} yielded no batch "
                             f"(its source: {type(entry[0]).__name__}).")
        entry[1], entry[2] = itertools.chain([first], it), True
        return tree.map_structure(lambda a: a[:1] if getattr(a, "ndim", 0) else a,
                                  first)

    def input_rows(self, key, convert, k, new_pass):
        """Up to ``k`` ``(n, arrays)`` pairs: ``arrays`` this replica's rows
        (None once its source is exhausted) and ``n`` the global batch size
        when known (sources of whole global batches), else None."""
        entry = self._inputs()[key]
        source = entry[0]
        if entry[1] is None or (new_pass and not entry[2]):
            entry[1] = source.passes()
        entry[2] = False
        for _ in range(k):
            raw = next(entry[1], None)
            if raw is None:
                yield None, None
                continue
            arrays = convert(raw)
            if not source.global_rows:
                yield None, arrays
                continue
            n = len(arrays[0])
            lo, hi = shard_bounds(n, self.world, self.rank)
            yield n, [a[lo:hi] for a in arrays]
