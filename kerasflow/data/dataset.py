"""``Dataset``: tf.data's input pipeline, in process (tf.data semantics).

A ``Dataset`` is immutable and re-iterable: ``iter(ds)`` starts a new pass
(and, for ``shuffle(reshuffle_each_iteration=True)``, a new order). Elements
are numpy arrays, numpy scalars or ``bytes``, or tuples/dicts of them.

Example::

    >>> import numpy as np, kerasflow as kf
    >>> ds = kf.data.Dataset.from_tensor_slices((np.arange(5), np.arange(5) * 2))
    >>> ds = ds.map(lambda x, y: (x, y + 1)).batch(2)
    >>> [y.tolist() for _, y in ds]
    [[1, 3], [5, 7], [9]]
"""

from __future__ import annotations

import glob
import itertools
from collections.abc import Callable, Iterator

import numpy as np

from kerasflow import tree
from kerasflow.data import cardinality as cd
from kerasflow.data import iterator as it_lib
from kerasflow.data import sources
from kerasflow.data import structure as st
from kerasflow.data import transforms as tr
from kerasflow.data.combinators import Combinators
from kerasflow.data.options import OptionsMixin
from kerasflow.errors import InvalidArgumentError

__all__ = ["Dataset"]


class _NumpyElements:
    """A dataset's elements as plain numpy; each iteration starts a new pass."""

    __slots__ = ("_make",)

    def __init__(self, make):
        self._make = make

    def __iter__(self):
        return iter(self._make())


class Dataset(Combinators, OptionsMixin, st.ElementSpecViews):
    """A re-iterable sequence of elements with tf.data's transformations.

    Build one with a source (``from_tensor_slices``, ``from_tensors``,
    ``from_generator``, ``range``, ``zip``, ``TextLineDataset``,
    ``CsvDataset``), chain transformations (each returns a new ``Dataset``),
    and iterate it or pass it to ``Model.fit``/``evaluate``/``predict``.

    Example::

        >>> ds = kf.data.Dataset.range(10).filter(lambda x: x % 2 == 0)
        >>> [b.tolist() for b in ds.map(lambda x: x * 10).batch(2)]
        [[0, 20], [40, 60], [80]]
        >>> ds.cardinality() == kf.data.UNKNOWN_CARDINALITY
        True
    """

    def __init__(self, make_iterator: Callable[[], Iterator], cardinality: int,
                 element_spec=None, row_range=None):
        # Internal: sources and transformations construct datasets.
        self._make_iterator = make_iterator
        self._cardinality = int(cardinality)
        self._spec = element_spec
        self._row_range = row_range  # from_tensor_slices: batches by slicing

    # -- iteration and properties ---------------------------------------------------
    def __iter__(self) -> Iterator:
        """A new pass over the elements, as TF 2's eager tensors
        (``backend.eager.EagerTensor``: numpy arrays with ``.numpy()``)."""
        return st.eager_elements(self._make_iterator())

    def as_numpy_iterator(self) -> Iterator:
        """A new pass over the elements as plain numpy values (what ``fit``
        and the transformations read)."""
        return iter(self._make_iterator())

    @property
    def _numpy(self) -> _NumpyElements:
        """This dataset as a source of plain numpy elements (transformations)."""
        return _NumpyElements(self._make_iterator)

    def __len__(self) -> int:
        """The number of elements, when finite and known.

        Raises:
            TypeError: the dataset is infinite or its length is unknown (as
                tf.data; use ``cardinality()``).
        """
        if self._cardinality == cd.INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if self._cardinality == cd.UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return self._cardinality

    def __bool__(self) -> bool:
        return True

    def cardinality(self) -> int:
        """Number of elements: an int >= 0, ``INFINITE_CARDINALITY`` (-1) or
        ``UNKNOWN_CARDINALITY`` (-2), as tf.data computes it without iterating
        (after ``filter``, for example, it is unknown)."""
        return self._cardinality

    @property
    def element_spec(self):
        """The elements' structure of ``kerasflow.backend.TensorSpec``.

        Sources and the other transformations know it; after ``map``,
        ``interleave`` or ``flat_map`` it is read from the first element (there
        is no tracing in kerasflow), so the pipeline runs once up to there.
        """
        if callable(self._spec):
            self._spec = self._spec()
        return self._spec

    def _first_spec(self):
        first = next(self.as_numpy_iterator(), None)
        return None if first is None else st.spec_of(first)

    def _derive(self, make_iterator, cardinality=None, spec=None):
        return Dataset(make_iterator,
                       self._cardinality if cardinality is None else cardinality,
                       (lambda: self.element_spec) if spec is None else spec)

    @staticmethod
    def _from_list(items: list) -> Dataset:
        """A dataset of the given elements, in order."""
        return Dataset(lambda: iter(items), len(items),
                       st.spec_of(items[0]) if items else None)

    # -- sources --------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors) -> Dataset:
        """One element per row of ``tensors`` (sliced along axis 0).

        Args:
            tensors: an array (lists are converted to one array), or a
                tuple/dict of them, all with the same length n on axis 0.

        Returns:
            A dataset of n elements, each ``tensors`` with the first axis taken.

        Raises:
            ValueError: a scalar component, or components of different lengths
                (naming them).
        """
        return Dataset(*sources.slices(tensors))

    @staticmethod
    def from_tensors(tensors) -> Dataset:
        """A dataset of exactly one element, ``tensors`` (lists become arrays)."""
        return Dataset(*sources.single(tensors))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None,
                       args=None, output_signature=None) -> Dataset:
        """Elements from ``generator()``, called anew for every pass.

        Args:
            generator: a callable returning an iterator (called with ``*args``).
            output_signature: the elements' structure of
                ``kerasflow.backend.TensorSpec`` (shape: None for any size).
                Each element is checked and cast to its dtype.
            output_types, output_shapes: TF 1's form of the signature: dtypes,
                and shapes (a tuple per component; default: any shape).

        Raises:
            TypeError: ``generator`` is not callable, or neither
                output_signature nor output_types given.
            ValueError / TypeError (while iterating): an element of another
                structure, shape or dtype than ``output_signature``.
        """
        return Dataset(*sources.generated(generator, args, output_signature,
                                          output_types, output_shapes))

    @staticmethod
    def range(*args, dtype="int64") -> Dataset:
        """``range(stop)``, ``range(start, stop)`` or ``range(start, stop, step)``
        as scalar elements of ``dtype``.

        Raises:
            ValueError: step 0 or a wrong number of arguments.
        """
        return Dataset(*sources.int_range(args, dtype))

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None) -> Dataset:
        """The file names matching ``file_pattern`` (a glob, or a list of
        them) as ``bytes`` scalars (``tf.data.Dataset.list_files``): sorted,
        then shuffled unless ``shuffle=False`` (a new order each pass; ``seed``
        as ``shuffle``'s).

        Raises:
            InvalidArgumentError: no file matches.
        """
        patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) \
            else list(file_pattern)
        names = sorted({f for p in patterns for f in glob.glob(
            p.decode() if isinstance(p, bytes) else str(p))})
        if not names:
            raise InvalidArgumentError(
                f"Expected 'file_pattern' to match at least one file. Received: "
                f"file_pattern={file_pattern!r}, which matches none.")
        ds = Dataset.from_tensor_slices(np.array([f.encode() for f in names],
                                                 dtype=object))
        return ds if shuffle is False else ds.shuffle(len(names), seed=seed)

    @staticmethod
    def zip(*datasets, name=None) -> Dataset:
        """Elements of several datasets taken together, as tuples (or the nested
        tuple/dict of datasets given); ends with the shortest.

        Raises:
            TypeError: a leaf of the structure that is not a ``Dataset``.
        """
        structure = datasets[0] if len(datasets) == 1 else datasets
        leaves = tree.flatten(structure)
        bad = [type(d).__name__ for d in leaves if not isinstance(d, Dataset)]
        if bad:
            raise TypeError(f"zip takes datasets (or a tuple/dict of them). "
                            f"Received: {bad}.")
        return Dataset(lambda: tr.zip_elements(leaves, structure),
                       cd.zipped([d.cardinality() for d in leaves]),
                       lambda: tree.map_structure(lambda d: d.element_spec,
                                                  structure))

    # -- transformations --------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None, deterministic=None,
            name=None) -> Dataset:
        """``map_func`` applied to each element (a tuple element is passed as
        positional arguments, anything else as one argument). A function of
        ``compat.v1`` graph ops is traced once per element signature and its
        compiled graph run per element, as tf.data does
        (``structure.ElementFunction``).

        Args:
            num_parallel_calls: None runs ``map_func`` in the iterating thread;
                an int > 0 or ``AUTOTUNE`` (the CPU count) runs it on that many
                threads.
            deterministic: keep input order with parallel calls (default True).

        Raises:
            ValueError: num_parallel_calls not None, AUTOTUNE or positive.
            TypeError: (while iterating) ``map_func`` returned another
                structure or dtype than for the first element (tf.data traces
                it once, so its output structure is fixed).
        """
        workers = cd.parallelism(num_parallel_calls, "num_parallel_calls")
        order = True if deterministic is None else bool(deterministic)
        map_func = st.ElementFunction(map_func)  # its traces outlive one pass

        def stream():
            if workers is None:
                out = tr.map_serial(self._numpy, map_func)
            else:
                out = tr.map_parallel(self._numpy, map_func, workers, order)
            return st.one_structure(out, "map (the function's output)")

        mapped = self._derive(stream, spec=lambda: Dataset._first_spec(mapped))
        return mapped

    def filter(self, predicate, name=None) -> Dataset:
        """The elements for which ``predicate`` (called like ``map``'s function)
        returns True; the cardinality becomes unknown."""
        predicate = st.ElementFunction(predicate)
        return self._derive(lambda: tr.filter_elements(self._numpy, predicate),
                            cd.UNKNOWN_CARDINALITY)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True,
                name=None) -> Dataset:
        """Elements in random order through a buffer of ``buffer_size`` (fill it,
        emit a random one, replace it with the next input; tf.data semantics).
        ``buffer_size`` >= the dataset size gives a uniform permutation.

        Args:
            seed: int for reproducible orders; None draws one from numpy's global
                RNG now, so ``np.random.seed`` makes it reproducible.
            reshuffle_each_iteration: a new order on every pass (pass k uses
                ``(seed, k)``); False repeats the first order.

        Raises:
            ValueError: buffer_size < 1.
        """
        buffer_size = cd.check_count(buffer_size, "buffer_size", minimum=1)
        base = int(np.random.randint(2**31)) if seed is None else int(seed)
        passes = itertools.count()

        def shuffled():
            k = next(passes) if reshuffle_each_iteration else 0
            return tr.shuffle(self._numpy, buffer_size, np.random.default_rng((base, k)))

        return self._derive(shuffled)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None) -> Dataset:
        """``batch_size`` consecutive elements stacked on a new axis 0; the last
        batch is shorter unless ``drop_remainder``.

        Raises:
            ValueError: batch_size < 1; (while iterating) elements of different
                shapes, suggesting ``padded_batch``.
        """
        size = cd.check_count(batch_size, "batch_size", minimum=1)
        dim = size if drop_remainder else None
        if self._row_range is not None:
            def batches():
                return tr.row_batches(self._row_range, self._cardinality, size,
                                      drop_remainder)
        else:
            def batches():
                return tr.batch(self._numpy, size, drop_remainder)
        return self._derive(
            batches,
            cd.batched(self._cardinality, size, drop_remainder),
            lambda: st.batched_spec(self.element_spec, dim))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None) -> Dataset:
        """Like ``batch``, padding each component to ``padded_shapes``.

        Args:
            padded_shapes: per component (same structure as an element) a shape
                whose None/-1 dims pad to the batch's largest; None: all dims so.
            padding_values: a scalar for all components or one per component;
                None: 0 (b'' for strings).

        Raises:
            ValueError: a structure mismatch, or an element larger than its
                padded shape (while iterating).
        """
        size = cd.check_count(batch_size, "batch_size", minimum=1)
        spec = self.element_spec
        n = len(tree.flatten(spec))
        shapes = ([None] * n if padded_shapes is None else
                  st.leaves_like(spec, padded_shapes, "padded_shapes"))
        values = (tree.flatten(padding_values) if tree.is_nested(padding_values)
                  else [padding_values] * n)
        if len(values) != n:
            raise ValueError(f"padding_values must be one value or one per "
                             f"component ({n}). Received: {padding_values!r}.")
        out_spec = st.batched_spec(spec, size if drop_remainder else None, shapes)
        return self._derive(
            lambda: tr.padded_batch(self._numpy, size, drop_remainder, shapes, values),
            cd.batched(self._cardinality, size, drop_remainder), out_spec)

    def unbatch(self, name=None) -> Dataset:
        """Each element split along axis 0 into elements (``batch``'s inverse)."""
        return self._derive(lambda: tr.unbatch(self._numpy), cd.UNKNOWN_CARDINALITY,
                            lambda: tree.map_structure(
                                lambda s: type(s)(s.shape[1:], s.dtype),
                                self.element_spec))

    def repeat(self, count=None, name=None) -> Dataset:
        """``count`` passes over the dataset; None or -1 repeats forever."""
        count = -1 if count is None else cd.check_count(count, "count", minimum=-1)
        return self._derive(lambda: tr.repeat(self._numpy, count),
                            cd.repeated(self._cardinality, count))

    def make_one_shot_iterator(self) -> it_lib.Iterator:
        """TF 1.x: an iterator whose ``get_next()`` tensors a compat
        ``Session.run`` feeds, one element per run (``data/iterator.py``)."""
        return it_lib.Iterator(self)

    def make_initializable_iterator(self, shared_name=None) -> it_lib.Iterator:
        """TF 1.x: like ``make_one_shot_iterator``, but each pass starts with
        ``sess.run(iterator.initializer, feed_dict=...)``, which also binds the
        placeholders a ``from_tensor_slices`` was built on."""
        return it_lib.Iterator(self, initializable=True)

    def take(self, count, name=None) -> Dataset:
        """The first ``count`` elements (all of them for -1)."""
        count = cd.check_count(count, "count", minimum=-1)
        stop = None if count == -1 else count
        return self._derive(lambda: itertools.islice(self._numpy, stop),
                            cd.taken(self._cardinality, count))

    def skip(self, count, name=None) -> Dataset:
        """All but the first ``count`` elements (none for -1)."""
        count = cd.check_count(count, "count", minimum=-1)
        if count == -1:
            return self._derive(lambda: iter(()), 0)
        return self._derive(lambda: itertools.islice(self._numpy, count, None),
                            cd.skipped(self._cardinality, count))

    def shard(self, num_shards, index, name=None) -> Dataset:
        """Every ``num_shards``-th element starting at ``index`` (elements i with
        ``i % num_shards == index``).

        Raises:
            ValueError: num_shards < 1 or index outside [0, num_shards).
        """
        num_shards = cd.check_count(num_shards, "num_shards", minimum=1)
        index = cd.check_count(index, "index", minimum=0)
        if index >= num_shards:
            raise ValueError(f"shard index must be in [0, num_shards={num_shards}). "
                             f"Received: index={index}.")
        return self._derive(lambda: itertools.islice(self._numpy, index, None, num_shards),
                            cd.sharded(self._cardinality, num_shards, index))

    def cache(self, filename="", name=None) -> Dataset:
        """The elements kept in memory after the first complete pass; later
        passes replay them (a partial first pass is not kept).

        Raises:
            NotImplementedError: a filename (file caches are not supported).
        """
        if filename:
            raise NotImplementedError(f"cache() keeps elements in memory only. "
                                      f"Received: filename={filename!r}.")
        store: dict = {}
        return self._derive(lambda: tr.cache(self._numpy, store))

    def prefetch(self, buffer_size, name=None) -> Dataset:
        """Elements read ahead by a background thread, ``buffer_size`` at a time
        (``AUTOTUNE``: 4); 0 reads nothing ahead."""
        size = 4 if buffer_size == cd.AUTOTUNE else cd.check_count(buffer_size,
                                                             "buffer_size")
        if size == 0:
            return self._derive(lambda: iter(self._numpy))
        return self._derive(lambda: tr.prefetch(self._numpy, size))

    def __repr__(self):
        return f"<{type(self).__name__} cardinality={self._cardinality}>"

