"""Distributed input: what an input pipeline is told and the datasets
strategies hand out (tf.distribute's ``input_lib``: ``InputContext``,
``DistributedDataset``, ``InputOptions``).

Internal module; the public names are in ``kf.distribute``. It takes the
strategy's numbers as arguments (never imports ``distribute_lib``) and knows
datasets only by duck typing (something iterable yielding batches), so both
``Model.fit`` and the strategies can use it.

Two ways an input reaches the replicas:

* **read by the driver, split per replica** (``experimental_distribute_dataset``
  under ``MirroredStrategy``, tf.distribute's rebatching): every global batch
  is split contiguously, in rank order, into one slice per replica;
* **read on the replicas** (:class:`ReplicaInput`): each replica actor gets a
  small picklable *source* (``InputSource``) once, builds its own pipeline
  from it (``distribute_datasets_from_function``'s ``dataset_fn``, an
  auto-sharded copy of a dataset, a Ray Data split) and reads its own rows;
  per driver call only the step count and one flag cross the driver.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

import numpy as np

from kerasflow import tree
from kerasflow.distribute.values import PerReplica, split_batch
from kerasflow.errors import OutOfRangeError

__all__ = ["DistributedDataset", "DistributedDatasetsFromFunction",
           "DistributedDatasetIterator", "FeedRef",
           "FunctionSource", "InputContext", "InputOptions", "InputSource", "numpy_batches",
           "ReplicaFeed", "ReplicaInput", "check_dataset", "check_dataset_fn"]


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


def numpy_batches(dataset):
    """A new pass over ``dataset`` as plain arrays (a ``kerasflow.data.Dataset``
    yields eager-tensor views to users; training reads the arrays)."""
    plain = getattr(dataset, "as_numpy_iterator", None)
    return plain() if callable(plain) else iter(dataset)


def check_dataset_fn(dataset_fn):
    """Raises ``TypeError`` when ``dataset_fn`` is not callable."""
    if not callable(dataset_fn):
        raise TypeError(f"distribute_datasets_from_function expects a callable "
                        f"dataset_fn(input_context) returning a Dataset. Received: "
                        f"{type(dataset_fn).__name__}.")


class InputOptions:
    """Options of a distributed dataset (tf.distribute's ``InputOptions``).

    Accepted for compatibility; replicas run on the host (CPU) or stage batches
    to their device themselves, so none of them changes behaviour here.

    Args:
        experimental_fetch_to_device, experimental_replication_mode,
        experimental_place_dataset_on_device, experimental_per_replica_buffer_size:
            as in TF.
    """

    def __init__(self, experimental_fetch_to_device=None,
                 experimental_replication_mode="PER_WORKER",
                 experimental_place_dataset_on_device=False,
                 experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = experimental_per_replica_buffer_size

    @staticmethod
    def check(owner, options):
        """``options`` when None or an ``InputOptions``.

        Raises:
            TypeError: anything else, naming ``owner``.
        """
        if options is not None and not isinstance(options, InputOptions):
            raise TypeError(f"{owner} expects options to be a "
                            f"kf.distribute.InputOptions or None. Received: "
                            f"{type(options).__name__}.")
        return options


def check_dataset(value, owner):
    """``value`` when it can be iterated as a dataset of batches.

    Raises:
        TypeError: not iterable (or a plain array/list), naming ``owner``.
    """
    if isinstance(value, (np.ndarray, str, bytes, dict)) or not hasattr(
            value, "__iter__"):
        raise TypeError(f"{owner} expects a kerasflow.data.Dataset (or another "
                        f"iterable of batches). Received: {type(value).__name__}.")
    return value


# -- read on the replicas ---------------------------------------------------------
class InputSource:
    """What one replica reads (built on the driver, pickled to its actor).

    Subclasses implement ``passes()``: a new pass over this replica's batches,
    each a raw element ``(x, y[, sample_weight])``; ``global_rows`` is True
    when each element is a whole *global* batch that the replica slices
    itself (its rows ``shard_bounds(n, world, rank)``), False when each is
    already this replica's share.
    """

    global_rows = False

    def passes(self):
        raise NotImplementedError


class FunctionSource(InputSource):
    """``dataset_fn(InputContext)``, called once, on the replica (tf.distribute's
    ``distribute_datasets_from_function``)."""

    def __init__(self, dataset_fn, context):
        self.dataset_fn, self.context = dataset_fn, context
        self.dataset = None

    def passes(self):
        if self.dataset is None:
            ds = self.dataset_fn(self.context)
            if not hasattr(ds, "__iter__") or isinstance(ds, (np.ndarray, dict,
                                                             str, bytes)):
                raise TypeError(
                    f"distribute_datasets_from_function's dataset_fn must return a "
                    f"kerasflow.data.Dataset. Received: {type(ds).__name__} (input "
                    f"pipeline {self.context.input_pipeline_id}, pid {os.getpid()}).")
            self.dataset = ds
        return numpy_batches(self.dataset)


class ReplicaFeed:
    """One ``fit`` call's replica-side input: the per-rank sources and how a
    raw element becomes a step's arrays.

    Attributes:
        key: str, names the sources on the replicas.
        sources: list of ``InputSource``, one per rank.
        convert: picklable callable, raw element -> list of arrays in step
            input order (inputs, targets, sample weights); set by the model
            once it has seen a sample (``Model.fit``).
    """

    def __init__(self, sources):
        self.key = f"in{time.time_ns()}"
        self.sources = list(sources)
        self.convert = None


class FeedRef(NamedTuple):
    """A ``BatchRef``'s pointer to replica-side input.

    Attributes:
        feed: the ``ReplicaFeed``.
        new_pass: start a new pass over each replica's source first (epoch
            start).
    """

    feed: ReplicaFeed
    new_pass: bool = False


class ReplicaInput:
    """Input that replicas of a synchronous strategy read themselves.

    Subclasses give ``sources(num_replicas, node_ids=None)`` (one
    ``InputSource`` per rank; ``node_ids``: the Ray node of each rank, for
    locality) and ``local()`` (the same batches read in this process, for strategies
    without replica actors).

    Attributes:
        on_replicas: False when ``fit`` should read ``local()`` in the driver
            even under a replica strategy.
    """

    on_replicas = True

    def sources(self, num_replicas, node_ids=None) -> list:
        raise NotImplementedError

    def local(self):
        raise NotImplementedError


class DistributedDatasetsFromFunction(ReplicaInput):
    """What ``distribute_datasets_from_function`` returns: ``dataset_fn`` runs
    on each replica, once per input pipeline (one pipeline per replica).

    Pass it to ``Model.fit``. The batches a replica's dataset yields are that
    replica's share of the global batch (use
    ``input_context.get_per_replica_batch_size(global_batch_size)``).
    """

    def __init__(self, dataset_fn, num_replicas, options=None):
        self.dataset_fn, self.num_replicas = dataset_fn, int(num_replicas)
        self.options = options

    def sources(self, num_replicas, node_ids=None):
        return [FunctionSource(self.dataset_fn,
                               InputContext(num_replicas, r, num_replicas))
                for r in range(num_replicas)]

    def local(self):
        """One pipeline in this process: ``dataset_fn(InputContext(1, 0, 1))``
        (re-iterable, e.g. for ``evaluate`` or ``validation_data``)."""
        source = FunctionSource(self.dataset_fn, InputContext(1, 0, 1))
        source.passes()  # calls and checks dataset_fn
        return source.dataset

    def __iter__(self):
        """Per-replica batches for a custom loop (TF's distributed-input guide:
        ``for x in dist: strategy.run(step, args=(x,))``): the ``num_replicas``
        pipelines ``dataset_fn(InputContext(n, r, n))`` are built here and read
        in step; each element has a ``PerReplica`` at each leaf, value r from
        pipeline r. Ends with the shortest pipeline. ``Model.fit`` still reads
        the pipelines on the replicas (``sources``).
        """
        n = self.num_replicas
        datasets = []
        for r in range(n):
            source = FunctionSource(self.dataset_fn, InputContext(n, r, n))
            source.passes()  # calls and checks dataset_fn
            datasets.append(source.dataset)

        def per_replica():
            for elements in zip(*datasets):
                yield tree.map_structure(lambda *v: PerReplica(v), *elements)
        return DistributedDatasetIterator(per_replica())

    def __repr__(self):
        return (f"<DistributedDatasetsFromFunction num_input_pipelines="
                f"{self.num_replicas}>")


class DistributedDatasetIterator:
    """What ``iter()`` of a distributed dataset returns (tf.distribute's
    ``DistributedIterator``): ``next(it)`` or ``it.get_next()`` gives the next
    element, a ``PerReplica`` at each leaf.

    Raises:
        StopIteration / OutOfRangeError: (``next`` / ``get_next``) the end.
    """

    def __init__(self, elements):
        self._elements = iter(elements)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._elements)

    def get_next(self):
        """The next element (TF 2's ``iterator.get_next()``)."""
        try:
            return next(self._elements)
        except StopIteration:
            raise OutOfRangeError("End of sequence: the distributed dataset has no "
                                  "more elements.") from None


class DistributedDataset(ReplicaInput):
    """What ``experimental_distribute_dataset`` returns (tf.distribute's
    ``DistributedDataset``).

    Iterating it yields each global batch of ``dataset`` with a
    ``PerReplica`` at each leaf: the batch split contiguously in rank order
    (sizes differ by at most one), as tf.distribute yields it.
    ``Model.fit`` trains on it as on ``dataset``. With ``make_source`` (a
    multi-worker strategy, as TF shards across workers) every replica reads
    its own copy of the pipeline, ``make_source(dataset, rank, world)`` (an
    ``InputSource``: auto-sharded, ``kerasflow/distribute/sharding.py``), instead of
    the driver reading it.

    Attributes:
        dataset: the global-batch dataset.
        num_replicas_in_sync: replicas each batch is split over.
    """

    def __init__(self, dataset, num_replicas, options=None, make_source=None):
        self.dataset = dataset
        self.num_replicas_in_sync = int(num_replicas)
        self.options = options
        self.make_source = make_source
        self.on_replicas = make_source is not None

    def __iter__(self):
        n = self.num_replicas_in_sync
        return DistributedDatasetIterator(
            split_batch(batch, n) for batch in numpy_batches(self.dataset))

    def make_initializable_iterator(self):
        """TF 1.15's graph-mode iterator (``strategy.make_dataset_iterator``)."""
        return self.strategy.make_dataset_iterator(self.dataset)

    def make_one_shot_iterator(self):
        """As ``make_initializable_iterator``, already started."""
        it = self.make_initializable_iterator()
        it._restart(self.dataset)
        return it

    @property
    def element_spec(self):
        return getattr(self.dataset, "element_spec", None)

    def cardinality(self) -> int:
        card = getattr(self.dataset, "cardinality", None)
        return card() if callable(card) else -2

    def sources(self, num_replicas, node_ids=None):
        return [self.make_source(self.dataset, r, num_replicas)
                for r in range(num_replicas)]

    def local(self):
        return self.dataset

    def __repr__(self):
        return (f"<DistributedDataset num_replicas_in_sync="
                f"{self.num_replicas_in_sync} on_replicas={self.on_replicas}>")
