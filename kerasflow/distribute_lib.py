"""The strategy base: how a training, evaluation or prediction step runs.

This sits below ``models/`` (as TensorFlow's ``distribute_lib`` sits below Keras):
the training loop exists once and hands every batch to
``get_strategy().run_steps(step, batches)``; strategies differ only in where the
step runs. ``DefaultStrategy`` runs it in this process (numpy or cupy); the Ray
strategies in ``kerasflow.strategies`` run it in replica actors. A step is graph
data (``models/train_step.py``) with ``kind`` in {"train", "eval", "predict"}.

Names and semantics follow tf.distribute: ``Strategy.scope()``,
``num_replicas_in_sync``, ``ReduceOp``, ``get_strategy()``.
"""

from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple

import numpy as np

__all__ = ["BatchRef", "DefaultStrategy", "ReduceOp", "Strategy", "get_strategy"]

_current = threading.local()


class ReduceOp:
    """How values from replicas combine (tf.distribute's ``ReduceOp``)."""

    SUM = "SUM"
    MEAN = "MEAN"


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
    """

    arrays: list
    indices: np.ndarray | None
    weighted: bool = False

    def materialize(self) -> list:
        """The batch's arrays: each source array's rows ``indices``."""
        if self.indices is None:
            return list(self.arrays)
        idx = self.indices
        if len(idx) and idx[-1] - idx[0] == len(idx) - 1 and np.all(
                np.diff(idx) == 1):
            s = slice(int(idx[0]), int(idx[-1]) + 1)  # a view, no gather copy
            return [a[s] for a in self.arrays]
        return [a[idx] for a in self.arrays]

    @property
    def size(self) -> int:
        """Samples in the batch."""
        return len(self.arrays[0]) if self.indices is None else len(self.indices)


class Strategy:
    """Base class of distribution strategies (tf.distribute's ``Strategy``).

    ``scope()`` makes it the strategy that ``fit``, ``evaluate`` and ``predict``
    (and ``Estimator.train``) use inside the ``with`` block.

    Attributes:
        num_replicas_in_sync: replicas each global batch is split over.
        default_steps_per_execution: batches per ``run_steps`` call when
            ``compile(steps_per_execution=None)``.
    """

    num_replicas_in_sync = 1
    default_steps_per_execution = 1
    recoveries: tuple = ()  # strategies that recover from failures list them

    def run_steps(self, step, batches) -> list:
        """Runs ``step`` on each ``BatchRef`` in ``batches``, in order.

        Args:
            step: a ``TrainStep``, ``EvalStep`` or ``PredictStep``.
            batches: list of ``BatchRef``; each is one global batch.

        Returns:
            One result per batch: a ``StepResult`` for train/eval steps (the
            global loss, the sample count, metric variables already updated on
            this process), a list of output arrays for predict steps.
        """
        raise NotImplementedError

    def run_step(self, step, batch):
        """``run_steps(step, [batch])[0]``."""
        return self.run_steps(step, [batch])[0]

    def close(self) -> None:
        """Releases what the strategy started (actors); a no-op by default."""

    @contextlib.contextmanager
    def scope(self):
        """Context in which models train, evaluate and predict with this strategy."""
        prev = getattr(_current, "strategy", None)
        _current.strategy = self
        try:
            yield self
        finally:
            _current.strategy = prev


class DefaultStrategy(Strategy):
    """One replica, in this process: ``step.run`` on each batch."""

    def run_steps(self, step, batches) -> list:
        if step.kind == "predict":
            return [step.run(b.materialize()) for b in batches]
        return [step.run(b.materialize(), b.size) for b in batches]


_DEFAULT = DefaultStrategy()


def get_strategy() -> Strategy:
    """The strategy of the innermost ``scope()``, else the default one."""
    return getattr(_current, "strategy", None) or _DEFAULT
