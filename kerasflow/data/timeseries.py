"""``timeseries_dataset_from_array`` and ``split_dataset`` (Keras 3's
``keras.utils`` names), returning ``kerasflow.data.Dataset``s."""

from __future__ import annotations

import random

import numpy as np

from kerasflow import tree
from kerasflow.data.dataset import Dataset

__all__ = ["split_dataset", "timeseries_dataset_from_array"]


def _positive_below(name, value, n):
    if value is None or value <= 0 or value >= n:
        raise ValueError(f"`{name}` must be higher than 0 and lower than the "
                         f"length of the data. Received: {name}={value}, for "
                         f"data of length {n}")


def timeseries_dataset_from_array(data, targets, sequence_length,
                                  sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None,
                                  format="tf"):  # noqa: A002  (Keras' name)
    """Sliding windows over a series, as a dataset of (batches of) sequences
    (Keras 3's ``keras.utils.timeseries_dataset_from_array``).

    Window ``i`` holds ``data[s + p_i + k * sampling_rate]`` for ``k`` in
    ``range(sequence_length)``, where ``s = start_index`` and ``p_i = i *
    sequence_stride``; its target is ``targets[s + p_i]``. Windows are cut
    lazily, as the dataset is read.

    Args:
        data: an array ``(timesteps, ...)``.
        targets: an array aligned with ``data`` (the target of a window is the
            one at its first step), or None for inputs only.
        sequence_length: steps per window.
        sequence_stride: steps between the starts of consecutive windows.
        sampling_rate: steps between the rows taken within a window.
        batch_size: windows per batch; None for unbatched windows.
        shuffle: shuffle the windows (start positions, then a buffer of
            ``8 * batch_size``).
        seed: the shuffle's seed.
        start_index, end_index: use ``data[start_index:end_index]`` only.
        format: "tf" (Keras' default), giving a ``kerasflow.data.Dataset``
            (tf.data's API).

    Returns:
        A ``Dataset`` of ``(batch, sequence_length, ...)`` arrays, or of
        ``(inputs, targets)`` tuples when ``targets`` is given.

    Raises:
        ValueError: a start or end index out of range, a non-positive
            ``sampling_rate``/``sequence_stride`` or one not below the data's
            length; a ``format`` other than "tf".
    """
    if format != "tf":
        raise ValueError(f'kerasflow returns a kerasflow.data.Dataset: `format` '
                         f'should be "tf". Received: format={format}')
    data = np.asarray(data)
    n = len(data)
    if start_index is not None:
        if start_index < 0 or start_index >= n:
            raise ValueError(f"`start_index` must be 0 or greater and lower than "
                             f"{n}. Received: start_index={start_index}")
    if end_index is not None:
        if start_index is not None and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. "
                             f"Received: start_index={start_index}, and "
                             f"end_index={end_index} ")
        if end_index >= n:
            raise ValueError(f"`end_index` must be lower than the length of "
                             f"the data. Received: end_index={end_index}, for "
                             f"data of length {n}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: "
                             f"end_index={end_index}")
    _positive_below("sampling_rate", sampling_rate, n)
    _positive_below("sequence_stride", sequence_stride, n)
    start = 0 if start_index is None else int(start_index)
    end = n if end_index is None else int(end_index)
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets)
        num_seqs = min(num_seqs, len(targets))
    positions = np.arange(0, max(num_seqs, 0), sequence_stride, dtype=np.int64)
    if shuffle:
        seed = np.random.randint(10**6) if seed is None else seed
        np.random.RandomState(seed).shuffle(positions)
    offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate

    def window(p):
        x = data[start + p + offsets]
        return x if targets is None else (x, targets[start + p])

    ds = Dataset.from_tensor_slices(positions).map(window)
    if batch_size is not None:
        if shuffle:
            ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
        return ds.batch(batch_size)
    return ds.shuffle(buffer_size=1024, seed=seed) if shuffle else ds


def _split_sizes(left_size, right_size, total):
    # Keras 3's rules: ints count samples, floats are fractions in (0, 1).
    for name, v in (("left_size", left_size), ("right_size", right_size)):
        if v is not None and type(v) not in (int, float):
            raise TypeError(f"Invalid `{name}` Type. Expected: int or float or "
                            f"None, Received: type({name})={type(v)}.")
    if left_size is None and right_size is None:
        raise ValueError("At least one of the `left_size` or `right_size` must "
                         "be specified. Received: left_size=None and "
                         "right_size=None")
    for name, v in (("left_size", left_size), ("right_size", right_size)):
        if (type(v) is int and not 0 < v < total) or (
                type(v) is float and not 0 < v < 1):
            raise ValueError(f"`{name}` should be either a positive integer "
                             f"smaller than {total}, or a float within the range "
                             f"`[0, 1]`. Received: {name}={v}")
    if type(left_size) is type(right_size) is float and left_size + right_size > 1:
        raise ValueError("The sum of `left_size` and `right_size` is greater "
                         "than 1. It must be less than or equal to 1.")
    left = round(left_size * total) if type(left_size) is float else left_size
    right = round(right_size * total) if type(right_size) is float else right_size
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(f"The sum of `left_size` and `right_size` should be "
                         f"smaller than the {total}. Received: left_size + "
                         f"right_size = {left + right} and total_length = {total}")
    for split, side in ((left, "left"), (right, "right")):
        if split == 0:
            raise ValueError(f"With `dataset` of length={total}, `left_size`="
                             f"{left} and `right_size`={right}. Resulting {side} "
                             f"side dataset split will be empty. Adjust any of "
                             f"the aforementioned parameters")
    return int(left), int(right)


def _samples(dataset) -> list:
    if isinstance(dataset, Dataset):
        return list(dataset)
    if isinstance(dataset, np.ndarray):
        return list(dataset)
    if isinstance(dataset, (tuple, list, dict)) and tree.flatten(dataset) and all(
            isinstance(a, np.ndarray) for a in tree.flatten(dataset)):
        leaves = tree.flatten(dataset)
        return [tree.pack_sequence_as(dataset, [a[i] for a in leaves])
                for i in range(len(leaves[0]))]
    if isinstance(dataset, list):
        return list(dataset)
    raise TypeError(f"The `dataset` argument must be a kerasflow.data.Dataset, a "
                    f"numpy array, or a tuple/list/dict of numpy arrays. "
                    f"Received: dataset={dataset!r} of type {type(dataset)}")


def _to_dataset(samples):
    leaves = [tree.flatten(s) for s in samples]
    stacked = [np.stack([leaf[j] for leaf in leaves]) for j in range(len(leaves[0]))]
    return Dataset.from_tensor_slices(tree.pack_sequence_as(samples[0], stacked))


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False,
                  seed=None):
    """Splits a dataset into a left part and a right part, e.g. train and test
    (Keras 3's ``keras.utils.split_dataset``).

    The left part takes the first ``left_size`` samples, the right part the
    last ``right_size`` samples (after shuffling, when asked).

    Args:
        dataset: a ``Dataset``, a numpy array, or a tuple/list/dict of arrays
            of one length (sliced together).
        left_size, right_size: an int (samples) or a float in (0, 1) (a
            fraction, rounded); a None side takes the rest.
        shuffle: shuffle the samples first (Python's ``random`` seeded with
            ``seed``, as Keras, so the same seed gives the same split).
        seed: the shuffle's seed.

    Returns:
        ``(left, right)``: two ``Dataset``s of the samples' structure.

    Raises:
        TypeError: a size of another type, or an unsupported ``dataset``.
        ValueError: sizes out of range, both None, summing past the total, or
            leaving a side empty.
    """
    samples = _samples(dataset)
    if not samples:
        raise ValueError("`dataset` must contain at least one sample. "
                         "Received: an empty dataset")
    left, right = _split_sizes(left_size, right_size, len(samples))
    if shuffle:
        seed = random.randint(0, 10**6) if seed is None else seed
        random.Random(seed).shuffle(samples)
    return _to_dataset(samples[:left]), _to_dataset(samples[-right:])
