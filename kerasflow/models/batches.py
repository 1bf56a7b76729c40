"""Batch sources for the training loop: arrays, generators, ``PyDataset`` and
``kerasflow.data.Dataset``, each yielding ``BatchRef``s.

Arrays are checked once (``data.standardize``) and sliced per batch; every
batch of any other source goes through the same ``standardize``.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from kerasflow.backend import floatx, set_floatx
from kerasflow.data import INFINITE_CARDINALITY, Dataset
from kerasflow.data.transforms import groups
from kerasflow.distribute.input_lib import FeedRef, ReplicaFeed, ReplicaInput
from kerasflow.distribute.ray_data import is_ray_dataset
from kerasflow.steps.batch import BatchRef

__all__ = ["ArrayBatches", "ElementConverter", "FixedShapes", "GeneratorBatches",
           "ReplicaBatches", "check_dataset_steps", "check_no_targets", "chunks",
           "is_generator", "local_input", "num_batches", "unpack_x_y_sample_weight"]


def is_generator(x):
    """True for batch sources: generators, iterators, other iterables that are
    not arrays or containers of arrays, and ``PyDataset``-like objects
    (``__len__`` + ``__getitem__`` returning batches)."""
    if isinstance(x, (np.ndarray, list, tuple, dict, str, bytes)) or x is None:
        return False
    if hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return False
    return hasattr(x, "__next__") or hasattr(x, "__iter__") or (
        hasattr(x, "__getitem__") and hasattr(x, "__len__"))


def _is_indexed_dataset(x):
    return hasattr(x, "__getitem__") and hasattr(x, "__len__") and not hasattr(
        x, "__next__")


def num_batches(x):
    """Batches per epoch of a ``PyDataset``-like source or of a ``Dataset`` of
    known finite cardinality, else None."""
    if isinstance(x, Dataset):
        n = x.cardinality()
        return n if n >= 0 else None
    return len(x) if _is_indexed_dataset(x) else None


def check_dataset_steps(x, steps, what="steps_per_epoch"):
    """Raises ``ValueError`` for an infinite ``Dataset`` without ``steps``."""
    if isinstance(x, Dataset) and steps is None and (
            x.cardinality() == INFINITE_CARDINALITY):
        raise ValueError(
            f"The dataset is infinite (cardinality() == INFINITE_CARDINALITY, "
            f"e.g. after repeat()), so an epoch never ends: pass {what}=... or "
            f"take() a finite part. Received: {what}=None.")


def check_no_targets(y):
    """Raises ``ValueError`` when targets come beside a batch source."""
    if y is not None:
        raise ValueError(
            f"When x is a generator, iterable or dataset it yields the targets "
            f"itself; y must be None. Received: y of type {type(y).__name__}.")


def unpack_x_y_sample_weight(item):
    """(x, y, sample_weight) from a batch: ``(x,)``, ``(x, y)``, ``(x, y, sw)``
    or ``x`` alone (Keras' convention; lists count as tuples).

    Raises:
        ValueError: a tuple of more than three items.
    """
    if isinstance(item, list) and len(item) in (2, 3):
        item = tuple(item)
    if not isinstance(item, tuple) or hasattr(item, "_fields"):
        return item, None, None
    if len(item) > 3:
        raise ValueError(f"A batch must be x, (x,), (x, y) or (x, y, "
                         f"sample_weight). Received: a tuple of {len(item)} items.")
    return (*item, *(None,) * (3 - len(item)))


class ArrayBatches:
    """``BatchRef``s over in-memory arrays (xs + ys + [sample weights]).

    Every batch refers to the same ``arrays`` list, so a strategy can move the
    data to its replicas once and send only row indices. Shuffling draws a
    permutation from numpy's global RNG each epoch, so ``np.random.seed`` makes
    training reproducible (as in Keras).
    """

    def __init__(self, arrays, batch_size, shuffle=False, steps=None, n_inputs=None,
                 weighted=False):
        self.arrays = arrays
        self.n_inputs = n_inputs  # how many of ``arrays`` are model inputs
        self.weighted = weighted  # the last array holds the user's weights
        self.n = len(arrays[0])
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.num_batches = -(-self.n // batch_size)
        self.steps = self.num_batches if steps is None else min(steps,
                                                                self.num_batches)

    def __iter__(self):
        bs = self.batch_size
        perm = np.random.permutation(self.n) if self.shuffle else None
        for i in range(self.steps):
            if perm is None:
                idx = np.arange(i * bs, min((i + 1) * bs, self.n))
            else:
                idx = np.sort(perm[i * bs:(i + 1) * bs])  # sorted: cache-friendly
            yield BatchRef(self.arrays, idx, self.weighted)


class GeneratorBatches:
    """``BatchRef``s from a generator, iterable, ``PyDataset`` or ``Dataset`` of
    batches: ``(x, y[, sample_weight])``, ``(x,)`` or ``x``.

    Every batch goes through ``standardize`` (the checks and reshapes arrays
    get), so a dataset batched like ``fit``'s arrays trains identically. A
    ``Dataset`` starts a new pass every epoch, unless ``steps`` differs from
    its cardinality: then, as in tf.keras, one iterator runs across epochs.

    Args:
        gen: the source.
        steps: batches per epoch; None: ``num_batches(gen)``, else until the
            source is exhausted.
        standardize: ``(x, y, sample_weight) -> Standardized``.
        inputs_only: yield the inputs alone (``predict``).
    """

    def __init__(self, gen, steps, standardize, inputs_only=False):
        self.gen = gen
        self.steps = steps if steps is not None else num_batches(gen)
        self.standardize = standardize
        self.inputs_only = inputs_only
        self.n_inputs = None  # inputs in the latest batch (the rest: y, weights)
        self._across_epochs = isinstance(gen, Dataset) and steps is not None and (
            steps != gen.cardinality())
        self._iterator = None

    def _items(self):
        src = self.gen
        if hasattr(src, "__next__"):  # an iterator continues across epochs
            return src
        # A Dataset's plain numpy batches: no eager-tensor views per batch.
        start = src.as_numpy_iterator if isinstance(src, Dataset) else \
            functools.partial(iter, src)
        if self._across_epochs:
            if self._iterator is None:
                self._iterator = start()
            return self._iterator
        if _is_indexed_dataset(src):  # keras.utils.PyDataset: index per batch
            return (src[i] for i in range(len(src)))
        return start()  # an iterable or Dataset starts over every epoch

    def __iter__(self):
        count = 0
        items = self._items()
        while self.steps is None or count < self.steps:
            try:
                item = next(items)
            except StopIteration:
                if self.steps is not None and count < self.steps:
                    raise ValueError(
                        f"The input ran out after {count} batches; "
                        f"{self.steps} steps were expected (steps_per_epoch or "
                        f"steps). Use repeat() on a dataset to go on.") from None
                return
            data = self.standardize(*unpack_x_y_sample_weight(item))
            count += 1
            self.n_inputs = len(data.xs)
            yield BatchRef(data.xs if self.inputs_only else data.arrays, None,
                           data.weighted)
        if hasattr(self.gen, "on_epoch_end"):
            self.gen.on_epoch_end()


def chunks(batches, k):
    """Groups an iterable of batches into lists of up to ``k`` (steps_per_execution)."""
    return groups(batches, k)


def local_input(x):
    """``x`` as this process reads it: a ``ReplicaInput`` (distributed dataset,
    ``kf.data.from_ray``) gives its batches read here; anything else is
    returned as is.

    Raises:
        TypeError: a bare ``ray.data.Dataset`` (its columns need names).
    """
    if is_ray_dataset(x):
        raise TypeError(
            "A ray.data.Dataset needs its feature and label columns named: pass "
            "kf.data.from_ray(ds, feature_columns=..., label_columns=..., "
            "batch_size=...). Received: a ray.data.Dataset.")
    return x.local() if isinstance(x, ReplicaInput) else x


class FixedShapes:
    """``xs -> shapes``: the model's static output shapes, fixed (picklable)."""

    def __init__(self, shapes):
        self.shapes = shapes

    def __call__(self, xs):
        return self.shapes


class ElementConverter:
    """Raw element ``(x, y[, sample_weight])`` -> step arrays, as the driver's
    ``standardize`` would make them; shipped to replicas that read their own
    input.

    Args:
        standardize: picklable ``(x, y, sample_weight) -> Standardized``
            (``data.standardize`` with the model's names and shapes bound).
    """

    def __init__(self, standardize):
        self.standardize = standardize
        self.floatx = floatx()

    def __call__(self, element):
        # The driver's floatx (sample weights are cast to it), not the replica's.
        prev = floatx()
        set_floatx(self.floatx)
        try:
            return self.standardize(*unpack_x_y_sample_weight(element)).arrays
        finally:
            set_floatx(prev)


class ReplicaBatches:
    """Markers of the steps of an input the replicas read themselves
    (``ReplicaInput``): each ``BatchRef`` holds one sample row (the input
    signature) and a ``FeedRef``; the strategy runs steps until the replicas'
    sources run out (or ``steps`` per epoch). Without ``steps`` each epoch is
    a new pass over every replica's source; with ``steps`` one pass runs
    across epochs (tf.keras).

    Args:
        source: the ``ReplicaInput``.
        strategy: a strategy with ``reads_replica_input`` (``peek_input``,
            ``node_ids``).
        steps: batches per epoch, or None (until the input runs out).
        standardize: ``(x, y, sample_weight) -> Standardized`` (the driver's).
        converter: ``Standardized sample -> ElementConverter`` for the replicas.
    """

    def __init__(self, source, strategy, steps, standardize, converter):
        self.feed = ReplicaFeed(source.sources(strategy.num_replicas_in_sync,
                                               strategy.node_ids()))
        raw = strategy.peek_input(self.feed)
        self.sample = standardize(*unpack_x_y_sample_weight(raw))
        self.feed.convert = converter(self.sample)
        self.n_inputs = len(self.sample.xs)
        self.steps = steps
        self._epochs = 0

    def __iter__(self):
        new_pass = self._epochs == 0 or self.steps is None
        self._epochs += 1
        count = itertools.count() if self.steps is None else range(self.steps)
        for i in count:
            yield BatchRef(self.sample.arrays, None, self.sample.weighted,
                           FeedRef(self.feed, new_pass and i == 0))
