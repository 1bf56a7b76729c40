"""Distributed input: per-replica values and the datasets strategies hand out
(tf.distribute's ``DistributedDataset``, ``PerReplica``, ``InputOptions``).

Internal module; the public names are in ``kf.distribute``. It sits beside
``distribute_lib`` (below ``models/``) and knows datasets only by duck typing
(something iterable yielding batches), so both ``Model.fit`` and the
strategies can use it.

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
from kerasflow.distribute_lib import InputContext

__all__ = ["DistributedDataset", "DistributedDatasetsFromFunction", "FeedRef",
           "FunctionSource", "InputOptions", "InputSource", "PerReplica",
           "ReplicaFeed", "ReplicaInput", "batch_len", "check_dataset",
           "shard_bounds", "split_batch"]


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
        return iter(self.dataset)


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
        raise TypeError(
            "A dataset from distribute_datasets_from_function is read on the "
            "replicas: pass it to Model.fit. For a custom loop (strategy.run), "
            "iterate strategy.experimental_distribute_dataset(dataset).")

    def __repr__(self):
        return (f"<DistributedDatasetsFromFunction num_input_pipelines="
                f"{self.num_replicas}>")


class DistributedDataset(ReplicaInput):
    """What ``experimental_distribute_dataset`` returns (tf.distribute's
    ``DistributedDataset``).

    Iterating it yields each global batch of ``dataset`` with a
    ``PerReplica`` at each leaf: the batch split contiguously in rank order
    (sizes differ by at most one), as tf.distribute yields it.
    ``Model.fit`` trains on it as on ``dataset``. With ``make_source`` (a
    multi-worker strategy, as TF shards across workers) every replica reads
    its own copy of the pipeline, ``make_source(dataset, rank, world)`` (an
    ``InputSource``: auto-sharded, ``kerasflow/data/sharding.py``), instead of
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
        for batch in self.dataset:
            yield split_batch(batch, self.num_replicas_in_sync)

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
