"""The strategy base: how a training, evaluation or prediction step runs.

Internal module; the public names are in ``kf.distribute``
(``kerasflow/distribute.py``). This sits below ``models/`` (as TensorFlow's
``distribute_lib`` sits below Keras): the training loop exists once and hands
every batch to ``get_strategy().run_steps(step, batches)``; strategies differ
only in where the step runs. ``DefaultStrategy`` runs it in this process (numpy
or cupy); the Ray strategies (``kerasflow.strategies``, also internal) run it
in actors. A step is graph data (``models/train_step.py``) with ``kind`` in
{"train", "eval", "predict"}; what a train or eval step returns
(``StepResult``) and what an input pipeline is told (``InputContext``) live
here, so strategies need nothing from ``models/``.

Names and semantics follow tf.distribute: ``Strategy.scope()``,
``num_replicas_in_sync``, ``ReduceOp``, ``InputContext``, ``get_strategy()``.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import NamedTuple

import numpy as np

__all__ = ["BatchRef", "DefaultStrategy", "InputContext", "ReduceOp", "StepResult",
           "Strategy", "check_dataset_fn", "get_strategy", "has_strategy", "take_rows",
           "training_call"]

_current = threading.local()


class ReduceOp:
    """How values from replicas combine (tf.distribute's ``ReduceOp``)."""

    SUM = "SUM"
    MEAN = "MEAN"


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


class InputContext:
    """Which slice of the input a pipeline reads (``tf.distribute.InputContext``).

    An Estimator ``input_fn`` with an ``input_context`` argument, and the
    ``dataset_fn`` of ``distribute_datasets_from_function``, receive one.

    Args:
        num_input_pipelines: int, input pipelines in the job (1 in process).
        input_pipeline_id: int, this pipeline's index.
        num_replicas_in_sync: int, replicas each global batch is split over.
    """

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0,
                 num_replicas_in_sync=1):
        self.num_input_pipelines = int(num_input_pipelines)
        self.input_pipeline_id = int(input_pipeline_id)
        self.num_replicas_in_sync = int(num_replicas_in_sync)

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """``global_batch_size // num_replicas_in_sync``.

        Raises:
            ValueError: the global batch does not divide evenly.
        """
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The global batch size must be divisible by "
                             f"num_replicas_in_sync={self.num_replicas_in_sync}. "
                             f"Received: global_batch_size={global_batch_size}")
        return global_batch_size // self.num_replicas_in_sync


def check_dataset_fn(dataset_fn):
    """Raises ``TypeError`` when ``dataset_fn`` is not callable."""
    if not callable(dataset_fn):
        raise TypeError(f"distribute_datasets_from_function expects a callable "
                        f"dataset_fn(input_context) returning a Dataset. Received: "
                        f"{type(dataset_fn).__name__}.")


def take_rows(arrays, idx) -> list:
    """Rows ``idx`` (int64, sorted or not) of each array of ``arrays``: a view
    when the rows are contiguous and ascending, else a gather copy."""
    if len(idx) and idx[-1] - idx[0] == len(idx) - 1 and np.all(np.diff(idx) == 1):
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
    def training(self):
        """Context around one ``Model.fit`` or ``Estimator.train``: actors the
        run starts are released when it ends (returns or raises), unless a
        ``scope()`` of this strategy is still open -- then leaving the scope
        releases them (tf.distribute: compile in the scope, fit anywhere).
        A no-op for strategies that start nothing."""
        yield self

    # Strategies whose replicas read ``ReplicaInput`` themselves set this True
    # and implement ``peek_input(feed)`` and ``node_ids()``.
    reads_replica_input = False

    def experimental_distribute_dataset(self, dataset, options=None):
        """``dataset`` (of global batches) distributed over the replicas
        (tf.distribute's ``experimental_distribute_dataset``).

        Args:
            dataset: a ``kerasflow.data.Dataset`` (or iterable) of global
                batches (arrays or nested tuples/dicts of them, batch axis first).
            options: a ``kf.distribute.InputOptions`` or None.

        Returns:
            A ``DistributedDataset``: iterating it yields ``PerReplica`` values
            (each global batch split contiguously in rank order); pass it to
            ``Model.fit`` to train as on ``dataset``.

        Raises:
            TypeError: ``dataset`` is not iterable, or bad ``options``.
        """
        from kerasflow import distribute_input as di  # it imports this module

        di.InputOptions.check("experimental_distribute_dataset", options)
        di.check_dataset(dataset, "experimental_distribute_dataset")
        dist = di.DistributedDataset(dataset, self.num_replicas_in_sync, options,
                                     make_source=self.dataset_source)
        dist.strategy = self  # for make_initializable_iterator (TF 1.15)
        return dist

    # Multi-worker strategies: ``(dataset, rank, world) -> InputSource``, so the
    # replicas read (and auto-shard) a distributed dataset's pipeline
    # themselves, as TF's workers do; None: the driver reads it.
    dataset_source = None

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """The datasets ``dataset_fn(InputContext)`` builds, one per input
        pipeline (tf.distribute's ``distribute_datasets_from_function``). Here,
        in one process: ``dataset_fn`` is called once, now, and its dataset
        returned; replica strategies call it on each replica instead.

        Args:
            dataset_fn: callable ``InputContext -> Dataset`` of per-replica
                batches.
            options: a ``kf.distribute.InputOptions`` or None.

        Raises:
            TypeError: ``dataset_fn`` is not callable, or returns no dataset.
        """
        from kerasflow import distribute_input as di

        check_dataset_fn(dataset_fn)
        di.InputOptions.check("distribute_datasets_from_function", options)
        source = di.FunctionSource(dataset_fn, InputContext(
            1, 0, self.num_replicas_in_sync))
        source.passes()  # calls and checks dataset_fn
        return source.dataset

    # -- custom training loops (kerasflow.replica_fn) ------------------------------
    def run(self, fn, args=(), kwargs=None):
        """Runs ``fn(*args, **kwargs)`` on every replica (tf.distribute's
        ``Strategy.run``): eagerly in one process, traced once per input
        signature and run on the replica actors otherwise; see
        :mod:`kerasflow.replica_fn` (returns, errors).

        Args:
            fn: the step function (``GradientTape``, ``apply_gradients``,
                metric updates; returns scalars on replicas).
            args, kwargs: ``PerReplica`` values (from iterating
                ``experimental_distribute_dataset``) or plain Python values.
        """
        from kerasflow import replica_fn

        return replica_fn.run(self, fn, args, kwargs)

    def make_dataset_iterator(self, dataset):
        """TF 1.15: an iterator over ``dataset``'s global batches for graph-mode
        ``experimental_run_v2`` (``kerasflow.replica_fn_graph``)."""
        from kerasflow.replica_fn_graph import DistributedIterator

        return DistributedIterator(self, dataset)

    def experimental_run_v2(self, fn, args=(), kwargs=None):
        """TF 1.15's name of :meth:`run`."""
        return self.run(fn, args, kwargs)

    def reduce(self, reduce_op, value, axis=None):
        """One value from a per-replica one (``ReduceOp.SUM`` / ``MEAN``,
        optionally over ``axis`` of each value too): see
        ``kerasflow.replica_fn.reduce``."""
        from kerasflow import replica_fn

        return replica_fn.reduce(self, reduce_op, value, axis)

    def experimental_local_results(self, value):
        """The replicas' values of ``value`` as a tuple (rank order)."""
        from kerasflow import replica_fn

        return replica_fn.local_results(value)

    def gather(self, value, axis=0):
        """The replicas' values concatenated along ``axis``."""
        from kerasflow import replica_fn

        return replica_fn.gather(value, axis)

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


def training_call(method):
    """Decorates a training entry point ``method(self, ...)`` of an object with
    ``_strategy()`` (``Model.fit``): the call runs inside that strategy's
    ``training()``, so actors it starts outside a ``scope()`` end with it."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._strategy().training():
            return method(self, *args, **kwargs)
    return run


def get_strategy() -> Strategy:
    """The strategy of the innermost ``scope()``, else the default one."""
    return getattr(_current, "strategy", None) or _DEFAULT


def has_strategy() -> bool:
    """True inside a strategy's ``scope()`` (tf.distribute.has_strategy)."""
    return getattr(_current, "strategy", None) is not None
