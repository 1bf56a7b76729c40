"""Dataset options and auto-sharding (tf.data's ``Options``,
``experimental.AutoShardPolicy`` and ``experimental.DistributeOptions``).

A pipeline's options apply to the whole pipeline, wherever in the chain
``with_options`` was called (tf.data semantics): ``options()`` merges them up
the chain. When the replicas of a distribution strategy read a dataset's
pipeline themselves (``MultiWorkerMirroredStrategy.experimental_distribute_dataset``),
each one keeps its share (``kerasflow/distribute/sharding.py``), following
``options.experimental_distribute.auto_shard_policy``:

* ``FILE``: each input pipeline reads every N-th file of the file sources
  (``TextLineDataset``, ``CsvDataset``) of the chain, and the global batch is
  re-split so each replica reads ``batch / N`` rows per step;
* ``DATA``: each reads the whole pipeline and keeps its contiguous share of
  every global batch (rank order, tf.distribute's rebatching), so the
  replicas together train on exactly the global batches of one process;
* ``AUTO`` (default): ``FILE`` when the chain has a file source, else ``DATA``;
* ``OFF``: no sharding, every replica reads every element.

Example::

    options = kf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        kf.data.experimental.AutoShardPolicy.DATA)
    ds = ds.with_options(options)
"""

from __future__ import annotations

import copy
import enum

__all__ = ["AutoShardPolicy", "DistributeOptions", "Options", "OptionsMixin",
           "file_sources", "parents", "pipeline_options"]


class AutoShardPolicy(enum.IntEnum):
    """How a distributed dataset is split over input pipelines (tf.data's
    ``experimental.AutoShardPolicy``, same values)."""

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class DistributeOptions:
    """``options.experimental_distribute`` (tf.data's ``DistributeOptions``).

    Attributes:
        auto_shard_policy: an ``AutoShardPolicy`` (default ``AUTO``).
        num_devices: accepted for compatibility (unused).
    """

    def __init__(self):
        self._policy = AutoShardPolicy.AUTO
        self.num_devices = None

    @property
    def auto_shard_policy(self) -> AutoShardPolicy:
        return self._policy

    @auto_shard_policy.setter
    def auto_shard_policy(self, value):
        try:
            self._policy = AutoShardPolicy(value)
        except ValueError:
            raise ValueError(
                f"auto_shard_policy must be an AutoShardPolicy (OFF, AUTO, FILE, "
                f"DATA, HINT). Received: {value!r}.") from None
        if self._policy == AutoShardPolicy.HINT:
            raise NotImplementedError("AutoShardPolicy.HINT is not supported: "
                                      "use FILE, DATA, AUTO or OFF.")
        self._set = True

    def __eq__(self, other):
        return isinstance(other, DistributeOptions) and (
            self._policy == other._policy)


class Options:
    """Options of a dataset (tf.data's ``Options``); attach them with
    ``Dataset.with_options``.

    Attributes:
        experimental_distribute: ``DistributeOptions`` (auto-sharding).
        deterministic: None or bool; accepted (``map``'s ``deterministic``
            argument decides order here).
        experimental_optimization, threading: accepted for compatibility.
    """

    def __init__(self):
        self.experimental_distribute = DistributeOptions()
        self.deterministic = None

    def merge(self, other: Options) -> Options:
        """A copy of these options with the values ``other`` set (tf.data's
        ``Options.merge``: later options win).

        Raises:
            TypeError: ``other`` is not an ``Options``.
        """
        if not isinstance(other, Options):
            raise TypeError(f"Options.merge takes an Options. Received: "
                            f"{type(other).__name__}.")
        out = copy.deepcopy(self)
        if getattr(other.experimental_distribute, "_set", False):
            out.experimental_distribute = copy.deepcopy(other.experimental_distribute)
        if other.deterministic is not None:
            out.deterministic = other.deterministic
        return out

    def __eq__(self, other):
        return isinstance(other, Options) and (
            self.experimental_distribute == other.experimental_distribute
            and self.deterministic == other.deterministic)

    def __repr__(self):
        return (f"Options(auto_shard_policy="
                f"{self.experimental_distribute.auto_shard_policy.name}, "
                f"deterministic={self.deterministic})")


# -- the chain of a pipeline ---------------------------------------------------------
def _datasets_in(value, cls, seen, out, depth=0):
    """Datasets reachable from ``value`` through containers and closures."""
    if id(value) in seen or depth > 12:
        return
    seen.add(id(value))
    if isinstance(value, cls):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _datasets_in(v, cls, seen, out, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            _datasets_in(v, cls, seen, out, depth + 1)
    elif callable(value) and getattr(value, "__closure__", None):
        for cell in value.__closure__:
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            _datasets_in(content, cls, seen, out, depth + 1)


def parents(dataset) -> list:
    """The datasets ``dataset`` reads from (its transformations close over
    their input: a dataset is a chain of closures, there is no graph)."""
    from kerasflow.data.dataset import Dataset  # dataset.py imports this module

    out: list = []
    _datasets_in(getattr(dataset, "_make_iterator", None), Dataset, {id(dataset)},
                 out)
    return out


def _chain(dataset) -> list:
    """``dataset`` and every dataset upstream of it, each once (downstream
    first)."""
    out, todo, seen = [], [dataset], set()
    while todo:
        ds = todo.pop(0)
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        out.append(ds)
        todo.extend(parents(ds))
    return out


def pipeline_options(dataset) -> Options:
    """The options of ``dataset``'s whole chain, upstream ``with_options``
    first and downstream ones winning (tf.data)."""
    merged = Options()
    for ds in reversed(_chain(dataset)):
        own = ds.__dict__.get("_options")
        if own is not None:
            merged = merged.merge(own)
    return merged


def file_sources(dataset) -> list:
    """The file-reading datasets (those with a ``_files`` list) of the chain."""
    return [ds for ds in _chain(dataset) if isinstance(ds.__dict__.get("_files"),
                                                       list)]


class OptionsMixin:
    """``with_options`` and ``options`` of ``Dataset``."""

    def with_options(self, options, name=None):
        """This dataset with ``options`` set (merged with options set
        upstream; tf.data's ``Dataset.with_options``).

        Args:
            options: a ``kerasflow.data.Options``.

        Returns:
            A ``Dataset`` with the same elements.

        Raises:
            TypeError: ``options`` is not an ``Options``.
        """
        if not isinstance(options, Options):
            raise TypeError(f"with_options takes a kerasflow.data.Options. "
                            f"Received: {type(options).__name__}.")
        out = self._derive(lambda: iter(self._numpy))
        out._options = copy.deepcopy(options)
        return out

    def options(self) -> Options:
        """The options of the whole pipeline (tf.data's ``Dataset.options``)."""
        return pipeline_options(self)

