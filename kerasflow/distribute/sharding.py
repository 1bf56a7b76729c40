"""Auto-sharding a dataset over the input pipelines of replicas that read it
themselves (tf.data's auto-shard rewrite and tf.distribute's rebatching,
done on the pipeline's closures: there is no graph to rewrite).

``MultiWorkerMirroredStrategy.experimental_distribute_dataset`` ships a copy of
the pipeline to every replica as a :class:`DatasetShardSource`; on the replica
:func:`auto_shard` narrows it by ``options.experimental_distribute.auto_shard_policy``
(``kerasflow/data/options.py``).
"""

from __future__ import annotations

import itertools

import numpy as np

from kerasflow import tree
from kerasflow.data.options import AutoShardPolicy, file_sources, pipeline_options
from kerasflow.distribute.input_lib import InputSource, numpy_batches
from kerasflow.distribute.values import batch_len

__all__ = ["DatasetShardSource", "auto_shard", "rebatch"]


def auto_shard(dataset, num_pipelines, index):
    """Narrows ``dataset`` to input pipeline ``index`` of ``num_pipelines`` by
    its auto-shard policy (tf.data's auto-sharding; see the module doc).

    The file sources of the chain are changed in place: call it on a private
    copy of the pipeline (a replica's unpickled copy).

    Args:
        dataset: a ``Dataset``.
        num_pipelines: int, pipelines reading the dataset (replicas).
        index: int, this pipeline's index.

    Returns:
        ``(dataset, policy)`` with ``policy`` in ``"FILE"`` (this pipeline
        reads every ``num_pipelines``-th file), ``"DATA"`` (it reads
        everything and keeps its share of each global batch) or ``"OFF"``.

    Raises:
        ValueError: ``FILE`` for a pipeline with no file source, or with fewer
            files than pipelines (``AUTO`` falls back to ``DATA`` then).
    """
    policy = pipeline_options(dataset).experimental_distribute.auto_shard_policy
    if policy == AutoShardPolicy.OFF or num_pipelines == 1:
        return dataset, "OFF" if num_pipelines > 1 else "DATA"
    if policy == AutoShardPolicy.DATA:
        return dataset, "DATA"
    sources = file_sources(dataset)
    counts = [len(ds._files) for ds in sources]
    if not sources or min(counts) < num_pipelines:
        if policy == AutoShardPolicy.FILE:
            found = (f"file sources with {counts} files" if sources
                     else "no file source (TextLineDataset, CsvDataset)")
            raise ValueError(
                f"AutoShardPolicy.FILE needs a file source with at least "
                f"num_input_pipelines={num_pipelines} files in the pipeline. "
                f"Received: {found}. Use AutoShardPolicy.DATA or AUTO.")
        return dataset, "DATA"
    for ds in sources:
        ds._files = ds._files[index::num_pipelines]
    return dataset, "FILE"


class DatasetShardSource(InputSource):
    """A copy of a dataset whose pipeline a replica reads, auto-sharded there
    by ``options.experimental_distribute.auto_shard_policy``."""

    def __init__(self, dataset, rank, world):
        self.dataset, self.rank, self.world = dataset, rank, world
        self.policy = None

    def passes(self):
        if self.policy is None:  # on the replica, on its own copy
            self.dataset, self.policy = auto_shard(self.dataset, self.world,
                                                   self.rank)
            self.global_rows = self.policy == "DATA"
        if self.policy == "FILE":
            return rebatch(numpy_batches(self.dataset), self.world)
        return numpy_batches(self.dataset)


def rebatch(batches, world):
    """Batches of ``first batch size // world`` rows from a stream of batches
    (tf.distribute's rebatching of a file-sharded pipeline)."""
    first = next(batches, None)
    if first is None:
        return
    size = max(1, batch_len(first) // world)
    pending, rows = [], 0
    for batch in itertools.chain([first], batches):
        pending.append(batch)
        rows += batch_len(batch)
        while rows >= size:
            joined = tree.map_structure(lambda *a: np.concatenate(a), *pending)
            yield tree.map_structure(lambda a: a[:size], joined)
            rest = tree.map_structure(lambda a: a[size:], joined)
            rows -= size
            pending = [rest] if rows else []
    if rows:
        yield tree.map_structure(lambda *a: np.concatenate(a), *pending)
