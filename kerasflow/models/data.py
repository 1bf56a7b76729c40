"""Training data: checking arrays up front, splitting, batching, class weights.

Every check runs once per ``fit``/``evaluate``/``predict`` call, before any step,
so a bad input fails with a message naming what was expected and received, and
the per-batch path only slices arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["to_list", "check_arrays", "split_validation", "ArrayBatches",
           "class_weights_to_sample_weights", "is_generator"]


def is_generator(x):
    return hasattr(x, "__next__") or (
        hasattr(x, "__iter__") and not isinstance(x, (np.ndarray, list, tuple, dict)))


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
        return [np.asarray(v) for v in x]
    return [np.asarray(x)]


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
    """Yields (x list, y list, sample weights) batches of in-memory arrays.

    Shuffling draws a permutation from numpy's global RNG each epoch, so
    ``np.random.seed`` makes training reproducible (as in Keras).
    """

    def __init__(self, xs, ys, sw, batch_size, shuffle=False, steps=None):
        self.xs, self.ys, self.sw = xs, ys or [], sw
        self.n = len(xs[0])
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
                sl = slice(i * bs, min((i + 1) * bs, self.n))
            else:
                sl = np.sort(perm[i * bs:(i + 1) * bs])  # sorted: cache-friendly
            yield ([a[sl] for a in self.xs], [a[sl] for a in self.ys],
                   None if self.sw is None else self.sw[sl])
