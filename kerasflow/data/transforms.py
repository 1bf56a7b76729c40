"""Element streams behind ``Dataset``'s transformations (tf.data semantics).

Each function takes a source (an iterable of elements, usually a ``Dataset``:
iterating it starts a new pass) and returns a generator of output elements.
Parallel ``map`` and ``prefetch`` run on ``concurrent.futures`` threads: numpy
kernels and file reads release the GIL, and threads need no pickling of the
user's function (lambdas and closures work) nor copies of the arrays.
"""

from __future__ import annotations

import collections
import itertools
from concurrent import futures

import numpy as np

from kerasflow import tree
from kerasflow.data.structure import ElementFunction, stack, to_element_leaf, to_numpy

__all__ = ["batch", "cache", "filter_elements", "groups", "interleave",
           "map_parallel", "map_serial", "padded_batch", "prefetch", "repeat",
           "row_batches", "shuffle",
           "unbatch", "zip_elements"]

_END = object()


def _mapped(func, element):
    return tree.map_structure(to_element_leaf, func(element))


def _element_function(func) -> ElementFunction:
    return func if isinstance(func, ElementFunction) else ElementFunction(func)


def map_serial(source, func):
    """``func`` applied to each element, in this thread."""
    func = _element_function(func)
    for element in source:
        yield _mapped(func, element)


def map_parallel(source, func, workers: int, deterministic: bool):
    """``func`` applied on ``workers`` threads, up to ``2 * workers`` elements in
    flight; outputs in input order when ``deterministic``, else as they finish."""
    func = _element_function(func)
    it = iter(source)
    pool = futures.ThreadPoolExecutor(workers, thread_name_prefix="kf-data-map")
    pending: collections.deque | set = collections.deque() if deterministic else set()
    add = pending.append if deterministic else pending.add
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < 2 * workers:
                element = next(it, _END)
                if element is _END:
                    exhausted = True
                else:
                    add(pool.submit(_mapped, func, element))
            if not pending:
                return
            if deterministic:
                yield pending.popleft().result()
            else:
                done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
                for f in done:
                    pending.discard(f)
                    yield f.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def filter_elements(source, predicate):
    """The elements for which ``predicate`` (called unpacked) is true.

    Raises:
        ValueError: a predicate returning something other than one boolean.
    """
    predicate = _element_function(predicate)
    for element in source:
        keep = to_numpy(predicate(element))
        if keep.shape != () or keep.dtype != np.bool_:
            raise ValueError(f"filter's predicate must return a scalar bool. "
                             f"Received: a value of shape {keep.shape} and dtype "
                             f"{keep.dtype}.")
        if keep:
            yield element


def shuffle(source, buffer_size: int, rng: np.random.Generator):
    """tf.data's shuffle: fill a buffer of ``buffer_size`` elements, then emit a
    uniformly drawn one and put the next input in its place; drain at the end."""
    buf = []
    for element in source:
        if len(buf) < buffer_size:
            buf.append(element)
            continue
        i = int(rng.integers(len(buf)))
        out, buf[i] = buf[i], element
        yield out
    while buf:
        i = int(rng.integers(len(buf)))
        buf[i], buf[-1] = buf[-1], buf[i]
        yield buf.pop()


def groups(source, size: int, drop_remainder: bool = False):
    """Lists of ``size`` consecutive elements; a short last one unless dropped."""
    buf = []
    for element in source:
        buf.append(element)
        if len(buf) == size:
            yield buf
            buf = []
    if buf and not drop_remainder:
        yield buf


def batch(source, size: int, drop_remainder: bool):
    """Consecutive ``size`` elements stacked; a short last batch unless dropped."""
    for group in groups(source, size, drop_remainder):
        yield stack(group)


def row_batches(row_range, n: int, size: int, drop_remainder: bool):
    """``batch`` over sliceable rows: ``row_range(start, stop)`` per batch."""
    stop = n - n % size if drop_remainder else n
    for start in range(0, stop, size):
        yield row_range(start, min(start + size, n))


def _pad_leaf(arrays, target, value, index):
    rank = arrays[0].ndim
    if any(a.ndim != rank for a in arrays):
        raise ValueError(f"padded_batch needs elements of one rank in component "
                         f"{index}. Received ranks {sorted({a.ndim for a in arrays})}.")
    if target is None:
        target = (None,) * rank
    target = tuple(-1 if d is None else int(d) for d in target)
    if len(target) != rank:
        raise ValueError(f"padded_shapes for component {index} has rank "
                         f"{len(target)} but the elements have rank {rank}. "
                         f"Received: padded_shapes={target}.")
    biggest = np.max([a.shape for a in arrays], axis=0) if rank else ()
    shape = tuple(int(m) if d == -1 else d for d, m in zip(target, biggest))
    for a in arrays:
        if any(n > d for n, d in zip(a.shape, shape)):
            raise ValueError(f"An element of shape {a.shape} does not fit the "
                             f"padded shape {shape} in component {index}.")
    dtype = np.result_type(*arrays)
    if value is None:
        value = b"" if dtype.kind in "SUO" else 0
    out = np.full((len(arrays), *shape), value, dtype=dtype)
    for i, a in enumerate(arrays):
        out[(i, *(slice(0, n) for n in a.shape))] = a
    return out


def padded_batch(source, size, drop_remainder, shapes: list, values: list):
    """Like ``batch``, each component padded to ``shapes[i]`` (None dims: the
    batch's largest) with ``values[i]`` (None: 0, or b'' for strings)."""
    for group in groups(source, size, drop_remainder):
        first = group[0]
        leaves = [tree.flatten(e) for e in group]
        padded = [_pad_leaf([to_numpy(e[i]) for e in leaves], shapes[i], values[i], i)
                  for i in range(len(leaves[0]))]
        yield tree.pack_sequence_as(first, padded)


def unbatch(source):
    """Each element split along axis 0 into as many elements.

    Raises:
        ValueError: components with different leading sizes, or a scalar.
    """
    for element in source:
        leaves = [to_numpy(v) for v in tree.flatten(element)]
        sizes = {a.shape[0] if a.ndim else None for a in leaves}
        if None in sizes or len(sizes) != 1:
            raise ValueError(f"unbatch needs components with one shared leading "
                             f"dimension. Received shapes "
                             f"{[a.shape for a in leaves]}.")
        for i in range(sizes.pop()):
            yield tree.pack_sequence_as(element, [a[i] for a in leaves])


def repeat(source, count: int):
    """``count`` passes over ``source`` (forever when negative); stops early when
    a pass yields nothing, so repeating an empty dataset ends."""
    for _ in itertools.count() if count < 0 else range(count):
        empty = True
        for element in source:
            empty = False
            yield element
        if empty:
            return


def cache(source, store: dict):
    """Replays ``store['elements']`` once a pass has completed; the first full
    pass fills it (a partial pass is discarded, as in tf.data)."""
    if "elements" in store:
        yield from store["elements"]
        return
    seen = []
    for element in source:
        seen.append(element)
        yield element
    store.setdefault("elements", seen)


def prefetch(source, buffer_size: int):
    """``source`` read ahead by one background thread, ``buffer_size`` elements
    in flight; one thread keeps the source's own order and state single-threaded."""
    it = iter(source)
    pool = futures.ThreadPoolExecutor(1, thread_name_prefix="kf-data-prefetch")
    pending: collections.deque = collections.deque()
    try:
        while True:
            while len(pending) < buffer_size:
                pending.append(pool.submit(next, it, _END))
            element = pending.popleft().result()
            if element is _END:
                return
            yield element
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def interleave(source, make_dataset, cycle_length: int, block_length: int):
    """tf.data's interleave: ``cycle_length`` datasets open at once, taking
    ``block_length`` elements from each in turn; an exhausted one is replaced
    by the next input element's dataset, at its place in the cycle."""
    inputs = iter(source)
    slots: list = [None] * cycle_length
    index, taken, open_count, inputs_left = 0, 0, 0, True
    while inputs_left or open_count:
        if slots[index] is None and inputs_left:
            element = next(inputs, _END)
            if element is _END:
                inputs_left = False
            else:
                slots[index] = iter(make_dataset(element))
                open_count += 1
            continue
        if slots[index] is not None:
            value = next(slots[index], _END)
            if value is not _END:
                yield value
                taken += 1
                if taken < block_length:
                    continue
            else:
                slots[index] = None
                open_count -= 1
        index, taken = (index + 1) % cycle_length, 0


def zip_elements(sources, structure):
    """Elements of ``sources`` taken in lockstep, packed as ``structure``; ends
    with the shortest."""
    for values in zip(*sources):
        yield tree.pack_sequence_as(structure, list(values))
