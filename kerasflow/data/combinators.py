"""``Dataset`` transformations that nest or combine datasets, and reductions:
``interleave``, ``flat_map``, ``concatenate``, ``enumerate``, ``window``,
``apply`` and ``reduce`` (tf.data semantics).

A mixin of ``Dataset``: its methods build new datasets with ``_derive``.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np

from kerasflow import tree
from kerasflow.data import cardinality as cd
from kerasflow.data import structure as st
from kerasflow.data import transforms as tr

__all__ = ["Combinators", "DatasetSpec"]


class DatasetSpec:
    """The spec of an element that is itself a dataset (``window``'s output;
    tf.data's ``DatasetSpec``).

    Attributes:
        element_spec: the inner dataset's element spec.
    """

    __slots__ = ("element_spec",)

    def __init__(self, element_spec):
        self.element_spec = element_spec

    def __repr__(self):
        return f"DatasetSpec({self.element_spec!r})"


def _window_starts(source, size: int, shift: int, stride: int):
    """Lists of elements ``[s, s+stride, ..., s+(size-1)*stride]`` for
    ``s = 0, shift, 2*shift, ...`` while ``s`` is an element index; windows
    running past the end come out short (tf.data's ``window``)."""
    span = (size - 1) * stride + 1
    buf: collections.deque = collections.deque()
    base = 0  # index of buf[0]
    start = 0
    for index, element in enumerate(source):
        buf.append(element)
        while index - start + 1 >= span:  # the window at `start` is complete
            yield [buf[start - base + k * stride] for k in range(size)]
            start += shift
            while base < start and buf:
                buf.popleft()
                base += 1
    end = base + len(buf)
    while start < end:
        yield [buf[i - base] for i in range(start, end, stride)][:size]
        start += shift
        while base < start and buf:
            buf.popleft()
            base += 1


class Combinators:
    """Dataset methods whose elements come from other datasets (a mixin)."""

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """Elements of the datasets ``map_func`` returns for each input element,
        ``cycle_length`` of them open at once, ``block_length`` elements from
        each in turn (tf.data semantics). With ``num_parallel_calls`` each open
        dataset is read ahead by its own background thread (``block_length``
        elements at a time), so slow sources such as files are read side by
        side; the order stays the deterministic one.

        Args:
            cycle_length: datasets open at once (None/AUTOTUNE: the CPU count).
            block_length: consecutive elements from each (default 1).

        Raises:
            TypeError: (while iterating) ``map_func`` returns no Dataset.
        """
        parallel = cd.parallelism(num_parallel_calls, "num_parallel_calls")
        cycle = cd.parallelism(cd.AUTOTUNE if cycle_length is None else cycle_length,
                               "cycle_length")
        block = 1 if block_length is None else cd.check_count(
            block_length, "block_length", minimum=1)

        def open_dataset(element):
            ds = st.call_unpacked(map_func, element)
            if not isinstance(ds, Combinators):
                raise TypeError(f"interleave's and flat_map's map_func must "
                                f"return a Dataset. Received: {type(ds).__name__}.")
            return ds if parallel is None else ds.prefetch(block)

        out = self._derive(lambda: tr.interleave(self._numpy, open_dataset, cycle, block),
                           cd.UNKNOWN_CARDINALITY, lambda: out._first_spec())
        return out

    def flat_map(self, map_func, name=None):
        """The elements of ``map_func(element)`` (a ``Dataset``) for each element,
        one dataset after another (``interleave`` with cycle_length=1).

        Raises:
            TypeError: (while iterating) ``map_func`` returns no Dataset.
        """
        return self.interleave(map_func, cycle_length=1, block_length=1)

    def concatenate(self, dataset, name=None):
        """This dataset's elements, then ``dataset``'s.

        Raises:
            TypeError: ``dataset`` is not a Dataset; (while iterating, or when
                ``element_spec`` is read) its elements have another structure
                or dtypes than this dataset's (shapes may differ, as tf.data).
        """
        if not isinstance(dataset, Combinators):
            raise TypeError(f"concatenate takes a Dataset. Received: "
                            f"{type(dataset).__name__}.")
        # Checked lazily: reading element_spec may run a pipeline (map), and
        # a generator source may be iterable once only.
        return self._derive(
            lambda: st.one_structure(itertools.chain(self._numpy, dataset._numpy),
                                         "concatenate"),
            cd.concatenated(self._cardinality, dataset.cardinality()),
            lambda: st.merged_spec(self.element_spec, dataset.element_spec,
                                   "concatenate"))

    def apply(self, transformation_func):
        """``transformation_func(self)``: a reusable chain of transformations."""
        return transformation_func(self)

    def enumerate(self, start=0, name=None):
        """``(index, element)`` pairs, index an int64 scalar counting from
        ``start``."""
        def pairs():
            return ((np.int64(i), e) for i, e in zip(itertools.count(start), self._numpy))
        return self._derive(pairs, spec=lambda: (st.spec_of(np.int64(0)),
                                                 self.element_spec))

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Windows of ``size`` elements, each a (structure of) dataset(s).

        Window k holds the elements at ``k*shift + j*stride`` for j < size;
        windows start at every ``shift``-th element, and those running past the
        end are shorter unless ``drop_remainder`` (tf.data's ``window``). An
        element that is a tuple or dict gives a tuple or dict of datasets, one
        per component, as in TF::

            >>> ds = kf.data.Dataset.range(7).window(3, shift=2)
            >>> [list(w) for w in ds]   # [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
            >>> kf.data.Dataset.range(7).window(3, 1, drop_remainder=True) \\
            ...     .flat_map(lambda w: w.batch(3))   # sliding windows, batched

        Args:
            size: elements per window (>= 1).
            shift: elements between window starts (default: ``size``).
            stride: elements between a window's members (default 1).
            drop_remainder: drop windows shorter than ``size``.

        Raises:
            ValueError: size, shift or stride < 1.
        """
        size = cd.check_count(size, "size", minimum=1)
        shift = size if shift is None else cd.check_count(shift, "shift", minimum=1)
        stride = cd.check_count(stride, "stride", minimum=1)

        def as_datasets(members):
            flat = [tree.flatten(m) for m in members]
            leaves = [self._from_list([f[i] for f in flat])
                      for i in range(len(flat[0]))]
            return tree.pack_sequence_as(members[0], leaves)

        def windows():
            for members in _window_starts(self._numpy, size, shift, stride):
                if len(members) == size or not drop_remainder:
                    yield as_datasets(members)

        n = self._cardinality
        if n >= 0:
            count = (max(0, -(-(n - (size - 1) * stride) // shift)) if drop_remainder
                     else -(-n // shift))
        else:
            count = n
        return self._derive(windows, count, lambda: tree.map_structure(
            lambda s: DatasetSpec(s), self.element_spec))

    def reduce(self, initial_state, reduce_func, name=None):
        """``reduce_func(state, element)`` folded over every element, starting
        from ``initial_state``; the final state, as numpy values (tf.data's
        ``reduce``).

        Example::

            >>> kf.data.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)
            10

        Raises:
            ValueError: the dataset is infinite.
            TypeError: ``reduce_func`` returns another structure than the state.
        """
        if self._cardinality == cd.INFINITE_CARDINALITY:
            raise ValueError("reduce() needs a finite dataset. Received one of "
                             "infinite cardinality.")
        state = tree.map_structure(st.to_element_leaf, initial_state)
        for element in self:
            new = reduce_func(state, element)
            try:
                tree.assert_same_structure(state, new)
            except (TypeError, ValueError):
                raise TypeError(f"reduce_func must return the state's structure "
                                f"{tree.map_structure(lambda _: '.', state)!r}. "
                                f"Received: {new!r}.") from None
            state = tree.map_structure(st.to_element_leaf, new)
        return state

