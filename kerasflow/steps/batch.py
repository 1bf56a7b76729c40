"""What flows into and out of a step: a batch as rows of source arrays
(``BatchRef``) and what one train or eval step returns (``StepResult``).

A step (``kerasflow/steps/step.py``) is picklable graph data; strategies
(``kerasflow/distribute/``) move ``BatchRef`` rows to where the step runs and
combine the ``StepResult`` values that come back, so neither side needs the
other's classes. Source: the compute/apply split of Keras 3's JAX trainer and
tf.distribute's per-replica steps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["BatchRef", "StepResult", "take_rows"]


class StepResult(NamedTuple):
    """What one step on one (replica's) batch returns.

    Attributes:
        loss: float, this replica's scaled loss; summed over replicas it is the
            loss of the global batch.
        count: int, samples in this replica's batch.
        grads: 1-D array (``layout.size``,) of gradients, or None (eval, run).
        metric_deltas: list of arrays, one per ``metric_variables`` entry, to add
            (summed over replicas) to the metric state; [] when already applied.
        output_losses: list of floats, each output's scaled loss (several
            outputs only, else []).
    """

    loss: float
    count: int
    grads: object = None
    metric_deltas: list = []
    output_losses: list = []


def take_rows(arrays, idx) -> list:
    """Rows ``idx`` (int64, sorted or not) of each array of ``arrays``: a view
    when the rows are contiguous and ascending, else a gather copy."""
    # n strictly increasing integers spanning n - 1 are consecutive.
    if len(idx) and idx[-1] - idx[0] == len(idx) - 1 and (idx[1:] > idx[:-1]).all():
        s = slice(int(idx[0]), int(idx[-1]) + 1)
        return [a[s] for a in arrays]
    return [a[idx] for a in arrays]


class BatchRef(NamedTuple):
    """One batch, as rows of source arrays (so data can move to replicas once).

    Attributes:
        arrays: the full source arrays in step input order (inputs, targets, then
            sample weights; (n, ...) each). The same list object is used for
            every batch of one ``fit``/``evaluate``/``predict`` call, so a
            strategy may ship it once (keyed by ``id(arrays)``) and send only
            ``indices`` afterwards.
        indices: int64 (batch,) row numbers of this batch, or None when
            ``arrays`` already are the batch (generators).
        weighted: True when the sample weights (the last array) came from the
            user (sample or class weights): metrics are then weighted too, as
            in Keras; False when they are the unit weights put in their place.
        feed: a ``distribute_input.FeedRef`` when the replicas read their own
            rows (``ReplicaInput``); ``arrays`` then holds one sample row only
            (the input signature).
    """

    arrays: list
    indices: np.ndarray | None
    weighted: bool = False
    feed: object = None

    def materialize(self) -> list:
        """The batch's arrays: each source array's rows ``indices``."""
        if self.indices is None:
            return list(self.arrays)
        return take_rows(self.arrays, self.indices)

    @property
    def size(self) -> int:
        """Samples in the batch."""
        return len(self.arrays[0]) if self.indices is None else len(self.indices)
