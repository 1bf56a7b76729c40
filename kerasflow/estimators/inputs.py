"""Input functions from in-memory data (``tf.compat.v1.estimator.inputs``).

An ``input_fn`` returns ``(features, labels)`` or an iterable of such batches;
these helpers build one that yields shuffled mini-batches from numpy arrays
(or a pandas DataFrame, when pandas is installed).
"""

from __future__ import annotations

import numpy as np

from kerasflow.distribute.input_lib import InputContext  # tf.estimator.inputs users

__all__ = ["InputContext", "numpy_input_fn", "pandas_input_fn"]


def _length(x, what):
    arrays = x.values() if isinstance(x, dict) else [x]
    lengths = {len(np.asarray(a)) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"numpy_input_fn expects every array in {what} to have the "
                         f"same length. Received lengths: {sorted(lengths)}.")
    return lengths.pop()


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                   queue_capacity=1000, num_threads=1, seed=None):
    """An ``input_fn`` yielding ``(features, labels)`` batches from arrays.

    Args:
        x: array of shape (n, ...) or dict ``{name: array (n, ...)}``.
        y: array (n, ...) or dict of arrays, or None (prediction).
        batch_size: examples per batch (the last batch of an epoch may be
            smaller).
        num_epochs: passes over the data; None repeats forever.
        shuffle: whether to shuffle each epoch; must be given (TF's rule).
        queue_capacity, num_threads: accepted for TF compatibility; unused.
        seed: shuffling seed (None: fresh randomness per call).

    Returns:
        A function ``input_fn()`` returning a generator of
        ``(features, labels)`` (``features`` alone when y is None), features
        being a dict when x was a dict.

    Raises:
        ValueError: shuffle not given, arrays of different lengths, a
            non-positive batch_size or num_epochs, an empty x.
        TypeError: a non-bool shuffle.
    """
    if shuffle is None:
        raise ValueError("numpy_input_fn expects shuffle=True or False (as TF "
                         "requires). Received: shuffle=None.")
    if not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be a bool. Received: shuffle={shuffle!r}.")
    if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int. Received: "
                         f"batch_size={batch_size!r}.")
    if num_epochs is not None and (not isinstance(num_epochs, (int, np.integer))
                                   or num_epochs <= 0):
        raise ValueError(f"num_epochs must be a positive int or None. Received: "
                         f"num_epochs={num_epochs!r}.")
    xs = {k: np.asarray(v) for k, v in x.items()} if isinstance(x, dict) \
        else np.asarray(x)
    n = _length(xs, "x")
    if n == 0:
        raise ValueError("numpy_input_fn received an empty x (0 examples).")
    ys = None
    if y is not None:
        ys = {k: np.asarray(v) for k, v in y.items()} if isinstance(y, dict) \
            else np.asarray(y)
        if _length(ys, "y") != n:
            raise ValueError(f"numpy_input_fn expects x and y of the same length. "
                             f"Received: {n} and {_length(ys, 'y')}.")

    def take(struct, idx):
        if isinstance(struct, dict):
            return {k: v[idx] for k, v in struct.items()}
        return struct[idx]

    def input_fn():
        def gen():
            rng = np.random.default_rng(seed)
            epoch = 0
            while num_epochs is None or epoch < num_epochs:
                order = rng.permutation(n) if shuffle else None
                for start in range(0, n, batch_size):
                    idx = (order[start:start + batch_size] if shuffle
                           else slice(start, start + batch_size))
                    feats = take(xs, idx)
                    yield feats if ys is None else (feats, take(ys, idx))
                epoch += 1
        return gen()

    return input_fn


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                    queue_capacity=1000, num_threads=1, target_column="target",
                    seed=None):
    """``numpy_input_fn`` over a pandas DataFrame's columns (needs pandas).

    Args:
        x: ``pandas.DataFrame``; each column becomes a feature.
        y: ``pandas.Series`` or None.
        Others: as in ``numpy_input_fn``.

    Raises:
        ImportError: pandas is not installed.
        TypeError: x is not a DataFrame.
    """
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError("pandas_input_fn needs pandas (pip install pandas).") from e
    if not isinstance(x, pd.DataFrame):
        raise TypeError(f"pandas_input_fn expects a pandas DataFrame. Received: "
                        f"{type(x).__name__}.")
    feats = {str(c): x[c].to_numpy() for c in x.columns}
    labels = None if y is None else np.asarray(y)
    return numpy_input_fn(feats, labels, batch_size, num_epochs, shuffle,
                          queue_capacity, num_threads, seed)
