"""Values across replicas (tf.distribute's ``values`` and ``reduce_util``):
``ReduceOp``, ``PerReplica`` (one value per replica), ``SymbolicPerReplica``
(its graph-mode form, TF 1.15) and the one rule that splits a global batch
over replicas: contiguous rows in rank order, sizes differing by at most one.
"""

from __future__ import annotations

from kerasflow import tree

__all__ = ["PerReplica", "ReduceOp", "SymbolicPerReplica", "batch_len",
           "shard_bounds", "split_batch"]


class ReduceOp:
    """How values from replicas combine (tf.distribute's ``ReduceOp``)."""

    SUM = "SUM"
    MEAN = "MEAN"


class PerReplica:
    """One value per replica (tf.distribute's ``PerReplica``).

    Attributes:
        values: tuple, entry r is replica r's value (rank order).
    """

    def __init__(self, values):
        self.values = tuple(values)

    def __len__(self):
        return len(self.values)

    def __repr__(self):
        return f"PerReplica({len(self.values)} values)"

    def _refuse(self, *_, **__):
        raise TypeError(
            f"A PerReplica value ({len(self.values)} replicas) is not one tensor: "
            f"combine it with strategy.reduce(ReduceOp.SUM or MEAN, value, axis) "
            f"or read strategy.experimental_local_results(value).")

    __array__ = __float__ = __int__ = _refuse


class SymbolicPerReplica:
    """A per-replica value in a graph: ``tensor`` holds one float per replica
    (shape ``(num_replicas,)``); ``strategy.reduce`` makes it one tensor."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __repr__(self):
        return f"SymbolicPerReplica({self.tensor!r})"


def shard_bounds(n, world, rank):
    """Rows ``[lo, hi)`` of a global batch of ``n`` that ``rank`` of ``world``
    takes: contiguous, in rank order, sizes differing by at most one."""
    return n * rank // world, n * (rank + 1) // world


def batch_len(batch):
    """Rows in a batch (the first array leaf's first axis).

    Raises:
        ValueError: an element without a batch axis.
    """
    leaves = [v for v in tree.flatten(batch) if hasattr(v, "shape")]
    if not leaves or not leaves[0].shape:
        raise ValueError(f"A distributed dataset needs batched elements (arrays "
                         f"with a batch axis) to split over replicas. Received an "
                         f"element of structure {tree.map_structure(type, batch)}.")
    return leaves[0].shape[0]


def split_batch(batch, world):
    """A global ``batch`` (a nested structure of arrays, batch axis first)
    split over ``world`` replicas, as tf.distribute yields it: the same
    structure with a ``PerReplica`` at each leaf, whose value r is replica r's
    contiguous slice (rank order)."""
    n = batch_len(batch)
    bounds = [shard_bounds(n, world, r) for r in range(world)]
    return tree.map_structure(lambda a: PerReplica(a[lo:hi] for lo, hi in bounds), batch)
