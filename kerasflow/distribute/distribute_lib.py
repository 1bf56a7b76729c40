"""The strategy base: how a training, evaluation or prediction step runs.

Internal module; the public names are in ``kf.distribute``
(``kerasflow/distribute/__init__.py``). This sits below ``models/`` (as
TensorFlow's ``distribute_lib`` sits below Keras): the training loop exists
once and hands every batch to ``get_strategy().run_steps(step, batches)``;
strategies differ only in where the step runs. ``DefaultStrategy`` runs it in
this process (numpy or cupy); the Ray strategies (``mirrored/``,
``parameter_server/``, built on ``actor_strategy.py``) run it in actors. A step
is graph data (``kerasflow/steps/``) with ``kind`` in {"train", "eval",
"predict"}; the helpers this base calls (``input_lib``, ``custom_loop``,
``graph_loop``) take the strategy as an argument and never import this module.

Names and semantics follow tf.distribute: ``Strategy.scope()``,
``num_replicas_in_sync``, ``get_strategy()``, ``OneDeviceStrategy``.
"""

from __future__ import annotations

import contextlib
import functools
import re

from kerasflow.distribute import context, custom_loop
from kerasflow.distribute import input_lib as di
from kerasflow.distribute.context import get_strategy, has_strategy
from kerasflow.distribute.graph_loop import DistributedIterator
from kerasflow.distribute.input_lib import InputContext, check_dataset_fn

__all__ = ["DefaultStrategy", "OneDeviceStrategy", "Strategy", "get_strategy",
           "has_strategy", "training_call"]


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

        check_dataset_fn(dataset_fn)
        di.InputOptions.check("distribute_datasets_from_function", options)
        source = di.FunctionSource(dataset_fn, InputContext(
            1, 0, self.num_replicas_in_sync))
        source.passes()  # calls and checks dataset_fn
        return source.dataset

    # -- custom training loops (custom_loop.py, graph_loop.py) ---------------------
    def run(self, fn, args=(), kwargs=None):
        """Runs ``fn(*args, **kwargs)`` on every replica (tf.distribute's
        ``Strategy.run``): eagerly in one process, traced once per input
        signature and run on the replica actors otherwise; see
        :mod:`kerasflow.distribute.custom_loop` (returns, errors).

        Args:
            fn: the step function (``GradientTape``, ``apply_gradients``,
                metric updates; returns scalars on replicas).
            args, kwargs: ``PerReplica`` values (from iterating
                ``experimental_distribute_dataset``) or plain Python values.
        """

        return custom_loop.run(self, fn, args, kwargs)

    def make_dataset_iterator(self, dataset):
        """TF 1.15: an iterator over ``dataset``'s global batches for graph-mode
        ``experimental_run_v2`` (``kerasflow.distribute.graph_loop``)."""

        return DistributedIterator(self, dataset)

    def experimental_run_v2(self, fn, args=(), kwargs=None):
        """TF 1.15's name of :meth:`run`."""
        return self.run(fn, args, kwargs)

    def reduce(self, reduce_op, value, axis=None):
        """One value from a per-replica one (``ReduceOp.SUM`` / ``MEAN``,
        optionally over ``axis`` of each value too): see
        ``kerasflow.distribute.custom_loop.reduce``."""

        return custom_loop.reduce(self, reduce_op, value, axis)

    def experimental_local_results(self, value):
        """The replicas' values of ``value`` as a tuple (rank order)."""

        return custom_loop.local_results(value)

    def gather(self, value, axis=0):
        """The replicas' values concatenated along ``axis``."""

        return custom_loop.gather(value, axis)

    @contextlib.contextmanager
    def scope(self):
        """Context in which models train, evaluate and predict with this strategy."""
        with context.entered("strategy", self):
            yield self


class DefaultStrategy(Strategy):
    """One replica, in this process: ``step.run`` on each batch."""

    def run_steps(self, step, batches) -> list:
        if step.kind == "predict":
            return [step.run(b.materialize()) for b in batches]
        return [step.run(b.materialize(), b.size) for b in batches]


class OneDeviceStrategy(DefaultStrategy):
    """``tf.distribute.OneDeviceStrategy(device)``: one replica in this
    process (``run`` is eager, ``reduce`` of a plain value is itself).

    Args:
        device: ``"/cpu:0"`` or ``"/gpu:0"`` (the backend's device is set
            with ``kerasflow.backend.set_device``; this records the name).

    Raises:
        ValueError: a device string that is not ``/cpu:N`` or ``/gpu:N``.
    """

    def __init__(self, device):
        if not re.fullmatch(r"/?(?:job:\w+/)?(?:device:)?(cpu|gpu):\d+",
                            str(device).strip().lower()):
            raise ValueError(f"OneDeviceStrategy expects a device like '/cpu:0' or "
                             f"'/gpu:0'. Received: {device!r}")
        self.device = device


context.register_default(DefaultStrategy())


def training_call(method):
    """Decorates a training entry point ``method(self, ...)`` of an object with
    ``_strategy()`` (``Model.fit``): the call runs inside that strategy's
    ``training()``, so actors it starts outside a ``scope()`` end with it."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._strategy().training():
            return method(self, *args, **kwargs)
    return run
