"""Training data: checking arrays up front, splitting, batching, class weights.

Every check runs once per ``fit``/``evaluate``/``predict`` call, before any step,
so a bad input fails with a message naming what was expected and received, and
the per-batch path only slices arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from kerasflow.backend import floatx
from kerasflow.data import INFINITE_CARDINALITY, Dataset
from kerasflow.distribute_lib import BatchRef
from kerasflow.models import compile_utils as cu
from kerasflow.models import input_checks

__all__ = [
    "ArrayBatches",
    "GeneratorBatches",
    "Standardized",
    "check_arrays",
    "check_dataset_steps",
    "chunks",
    "class_weights_to_sample_weights",
    "is_generator",
    "num_batches",
    "split_validation",
    "standardize",
    "to_list",
    "unpack_x_y_sample_weight",
]


class Standardized(NamedTuple):
    """Checked data in model order.

    Attributes:
        xs: list of input arrays, (n, ...) each.
        ys: list of target arrays, (n, ...) each; empty without targets.
        sw: (n,) floatx sample weights (ones when the user gave none).
        weighted: whether ``sw`` came from the user (sample or class weights).
    """

    xs: list
    ys: list
    sw: np.ndarray
    weighted: bool

    @property
    def arrays(self) -> list:
        """``xs + ys + [sw]``: a step's input order."""
        return [*self.xs, *self.ys, self.sw]

    def split(self, arrays) -> Standardized:
        """The same kind of data from ``arrays`` laid out as ``self.arrays``."""
        n_x, n_y = len(self.xs), len(self.ys)
        return Standardized(arrays[:n_x], arrays[n_x:n_x + n_y], arrays[-1],
                            self.weighted)


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


def to_list(x, names=None, what="x"):
    """Flattens x (array, list/tuple, or dict keyed by input/output name) to a
    list of numpy arrays in model order."""
    if x is None:
        return None
    if isinstance(x, dict):
        if names is None:
            return [np.asarray(v) for v in x.values()]
        missing = [n for n in names if n not in x]
        if missing:
            raise ValueError(
                f"{what} is a dict missing keys {missing}. Expected keys: {names}. "
                f"Received keys: {sorted(x)}."
            )
        return [np.asarray(x[n]) for n in names]
    if isinstance(x, (list, tuple)) and len(x) == 1 and hasattr(x[0], "shape") \
            and (names is None or len(names) == 1):
        return [np.asarray(x[0])]  # [array] for a single input/output
    if isinstance(x, (list, tuple)) and x and all(
        hasattr(v, "shape") or isinstance(v, (list, tuple)) for v in x
    ) and names is not None and len(names) > 1:
        return [input_checks.as_array(v, what) for v in x]
    return [input_checks.as_array(x, what)]


def standardize(x, y=None, sample_weight=None, class_weight=None, batch_size=None,
                *, input_names: list | None = None,
                output_names: list = ("output_1",),
                output_shapes: Callable[[list], list] | None = None,
                model_name: str = "model") -> Standardized:
    """A model's data as lists of checked arrays in model order.

    Inputs and targets are put in model order (dicts by input/output name);
    1-D features become one column (Keras 2); targets are reshaped and checked
    against the output shapes; sample weights (times class weights) are always
    returned, as ones when none are given, in floatx.

    Args:
        x, y, sample_weight, class_weight, batch_size: as ``Model.fit`` takes them.
        input_names: names keying dict inputs, in model order; None for one
            unnamed input.
        output_names: the model's output names, in order.
        output_shapes: callable ``xs -> [static output shape, ...]`` (batch axis
            first); called only when targets or class weights are given.
        model_name: for error messages.

    Returns:
        ``Standardized(xs, ys, sw, weighted)``.

    Raises:
        ValueError / TypeError: see ``check_arrays``, ``to_list`` and the class
            weight and sparse label checks; each names expected and received.
    """
    xs = to_list(x, input_names, "x")
    n_out = len(output_names)
    if y is not None:
        input_checks.check_targets_count(y, output_names, model_name)
    ys = to_list(y, output_names if n_out > 1 else None, "y")
    if ys is not None and n_out > 1 and len(ys) == 1 and not isinstance(y, dict):
        ys = [np.asarray(v) for v in y]
    xs = [a.reshape(-1, 1) if a.ndim == 1 else a for a in xs]
    sw = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    n = check_arrays(xs, ys, sw, batch_size)
    shapes = output_shapes(xs) if ys is not None else None
    if ys is not None:
        ys = cu.prepare_targets(ys, shapes)
        for i, (a, shape) in enumerate(zip(ys, shapes)):
            if cu.is_sparse_target(a.shape, shape):
                name = output_names[i] if i < n_out else f"output_{i + 1}"
                cu.check_sparse_labels(a, shape[-1], name)
    ys = [] if ys is None else ys
    if class_weight is not None:
        if len(ys) != 1:
            raise ValueError("class_weight needs exactly one target array.")
        shape = shapes[0]
        n_classes = shape[-1] if shape and shape[-1] and shape[-1] > 1 else None
        class_weight = input_checks.check_class_weight(class_weight, n_classes)
        cw = class_weights_to_sample_weights(ys[0], class_weight)
        sw = cw if sw is None else sw * cw
    weighted = sw is not None
    sw = np.ones(n, floatx()) if sw is None else sw.astype(floatx())
    return Standardized(xs, ys, sw, weighted)


def check_arrays(xs, ys, sample_weight, batch_size):
    """Validates sizes, emptiness, NaNs and batch_size; returns the sample count.

    Raises:
        ValueError: mismatched lengths, empty data, NaN values, batch_size <= 0.
        TypeError: non-numeric data or a non-integer batch_size.
    """
    if batch_size is not None and (
        not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool)
    ):
        raise TypeError(f"batch_size must be a positive int. Received: "
                        f"batch_size={batch_size!r}.")
    if batch_size is not None and batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int. Received: "
                         f"batch_size={batch_size}.")
    groups = [("x", a) for a in xs] + [("y", a) for a in ys or []]
    if sample_weight is not None:
        groups.append(("sample_weight", np.asarray(sample_weight)))
    for what, a in groups:
        if a.dtype.kind not in "biuf":
            raise TypeError(
                f"{what} must hold numbers. Received: an array of dtype {a.dtype}."
            )
        if a.ndim == 0:
            raise ValueError(f"{what} must have a batch axis. Received: a scalar.")
    sizes = {what: [a.shape[0] for w, a in groups if w == what] for what in
             ("x", "y", "sample_weight")}
    all_sizes = {s for v in sizes.values() for s in v}
    if len(all_sizes) > 1:
        detail = ", ".join(f"{k} sizes: {v}" for k, v in sizes.items() if v)
        raise ValueError(
            f"Data cardinality is ambiguous: {detail}. Make sure all arrays "
            f"contain the same number of samples."
        )
    n = all_sizes.pop()
    if n == 0:
        raise ValueError(
            f"Expected at least one sample. Received: x.shape="
            f"{[tuple(a.shape) for a in xs]}."
        )
    for what, a in groups:
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = np.argwhere(~np.isfinite(a))[0]
            raise ValueError(
                f"{what} contains NaN or infinite values (first at index "
                f"{tuple(int(i) for i in bad)}). Clean or impute the data first."
            )
    return n


def split_validation(arrays, fraction):
    """Keras' ``validation_split``: the last ``fraction`` of samples, unshuffled.

    Returns:
        (train arrays, validation arrays), each a list (None entries kept).
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1). Received: "
                         f"{fraction}.")
    n = next(len(a) for a in arrays if a is not None)
    cut = int(n * (1.0 - fraction))
    if cut == 0 or cut == n:
        raise ValueError(
            f"validation_split={fraction} leaves no samples for training or "
            f"validation out of {n}."
        )
    return ([None if a is None else a[:cut] for a in arrays],
            [None if a is None else a[cut:] for a in arrays])


def class_weights_to_sample_weights(y, class_weight):
    """Per-sample weights from a {class index: weight} dict (sparse or one-hot y).

    Raises:
        ValueError: a class in y without a weight, naming it.
    """
    y = np.asarray(y)
    classes = (np.argmax(y, axis=-1) if y.ndim > 1 and y.shape[-1] > 1
               else y.reshape(len(y), -1)[:, 0].astype(np.int64))
    missing = sorted(set(np.unique(classes).tolist()) - set(class_weight))
    if missing:
        raise ValueError(f"class_weight has no entry for classes {missing}. "
                         f"Received keys: {sorted(class_weight)}.")
    table = np.zeros(int(max(class_weight)) + 1, dtype=np.float64)
    for k, v in class_weight.items():
        table[int(k)] = v
    return table[classes]


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
        if self._across_epochs:
            if self._iterator is None:
                self._iterator = iter(src)
            return self._iterator
        if _is_indexed_dataset(src):  # keras.utils.PyDataset: index per batch
            return (src[i] for i in range(len(src)))
        return iter(src)  # an iterable or Dataset starts over every epoch

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
    chunk = []
    for b in batches:
        chunk.append(b)
        if len(chunk) == k:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
