"""``make_csv_dataset``: batches of ``(features dict, labels)`` read from CSV
files, column names and types read from the files (tf.data.experimental's
``make_csv_dataset``)."""

from __future__ import annotations

import glob
import itertools

import numpy as np

from kerasflow.data.cardinality import check_count
from kerasflow.data.csv import split_record
from kerasflow.data.dataset import Dataset
from kerasflow.data.readers import CsvDataset, _lines

__all__ = ["make_csv_dataset"]


def _files(file_pattern) -> list:
    patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) \
        else list(file_pattern)
    names = []
    for pattern in patterns:
        pattern = pattern.decode() if isinstance(pattern, bytes) else str(pattern)
        found = sorted(glob.glob(pattern))
        if not found:
            raise ValueError(f"make_csv_dataset found no file matching "
                             f"file_pattern={pattern!r}.")
        names.extend(found)
    return names


def _infer_default(fields: list, na_value: str):
    """The narrowest of int32, int64, float32, float64, string that parses
    every non-missing field (TF's inference order), as a record default."""
    values = [f for f in fields if f not in ("", na_value)]
    for dtype in (np.int32, np.int64, np.float32, np.float64):
        try:
            parsed = [dtype(v) for v in values]
        except (ValueError, OverflowError):
            continue
        if dtype in (np.int32, np.int64) and any(
                int(p) != int(v) for p, v in zip(parsed, values)):
            continue  # wrapped around
        if dtype is np.float32 and any(np.isinf(p) for p in parsed):
            continue
        return dtype(0)
    return ""


def make_csv_dataset(file_pattern, batch_size, column_names=None,
                     column_defaults=None, label_name=None, select_columns=None,
                     field_delim=",", use_quote_delim=True, na_value="",
                     header=True, num_epochs=None, shuffle=True,
                     shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None,
                     sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False) -> Dataset:
    """Batches of CSV records as ``(features, labels)``
    (``tf.data.experimental.make_csv_dataset``).

    Each element is a dict mapping column name to a ``(batch_size,)`` array
    (plus, with ``label_name``, the label column's ``(batch_size,)`` array as a
    second component). Files are shuffled, read in turn, records shuffled with
    a ``shuffle_buffer_size`` buffer, repeated ``num_epochs`` times (None:
    forever) and batched; with ``num_epochs=None`` the short last batch is
    dropped, as TF does.

    Example::

        ds = kf.data.experimental.make_csv_dataset(
            "iris.csv", batch_size=32, label_name="Species",
            column_names=["SepalLength", "SepalWidth", "PetalLength",
                          "PetalWidth", "Species"], num_epochs=1)
        features, labels = next(iter(ds))   # features["SepalLength"]: (32,)

    Args:
        file_pattern: a glob pattern or a list of them.
        batch_size: records per batch.
        column_names: names for the columns; None reads them from the first
            line of the first file (``header`` must be True).
        column_defaults: one record default per column (as ``CsvDataset``);
            None infers each column's type from the first
            ``num_rows_for_inference`` records (int32, int64, float32,
            float64, else string; missing fields default to 0 or b"").
        label_name: the column returned as the labels.
        select_columns: the columns to keep, by name or index.
        header: the files' first lines are headers (skipped).
        num_epochs: passes over the data (None: forever).
        shuffle, shuffle_buffer_size, shuffle_seed: record shuffling.
        ignore_errors: skip records that do not parse instead of raising.
        field_delim, use_quote_delim, na_value, compression_type: as
            ``CsvDataset``. prefetch_buffer_size, num_parallel_reads, sloppy:
            accepted for tf.data compatibility.

    Raises:
        ValueError: no file matches; no column names and ``header=False``;
            a ``label_name`` or selected column not among the columns (naming
            them); ``column_defaults`` of another length than the columns.
    """
    files = _files(file_pattern)
    batch_size = check_count(batch_size, "batch_size", minimum=1)
    first = [line.decode() for _, line in itertools.islice(
        _lines(files[0], compression_type), 1 + num_rows_for_inference)]
    rows = [split_record(t, field_delim, use_quote_delim) for t in first if t.strip()]
    if column_names is None:
        if not header:
            raise ValueError("make_csv_dataset needs column_names when "
                             "header=False.")
        column_names = [name.strip() for name in rows[0]]
    column_names = list(column_names)
    if select_columns is not None:
        picked = [column_names[c] if isinstance(c, (int, np.integer)) else c
                  for c in select_columns]
    else:
        picked = column_names
    unknown = [c for c in picked + ([label_name] if label_name else [])
               if c not in column_names]
    if unknown or (label_name and label_name not in picked):
        raise ValueError(f"make_csv_dataset: columns {unknown or [label_name]} "
                         f"are not among the selected columns. Columns: "
                         f"{column_names}; select_columns={select_columns!r}; "
                         f"label_name={label_name!r}.")
    cols = sorted(column_names.index(c) for c in picked)
    if column_defaults is None:
        data = rows[1:] if header else rows
        column_defaults = [_infer_default([r[i] for r in data if i < len(r)],
                                          na_value) for i in cols]
    elif len(column_defaults) != len(cols):
        raise ValueError(f"column_defaults must have one entry per selected "
                         f"column ({len(cols)}). Received "
                         f"{len(column_defaults)}.")
    names = [column_names[i] for i in cols]
    order = np.random.default_rng(shuffle_seed).permutation(len(files)) \
        if shuffle else range(len(files))
    records = CsvDataset([files[i] for i in order], column_defaults,
                         compression_type=compression_type, header=header,
                         field_delim=field_delim, use_quote_delim=use_quote_delim,
                         na_value=na_value, select_cols=cols,
                         ignore_errors=ignore_errors)
    if shuffle:
        records = records.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    records = records.repeat(num_epochs).batch(batch_size,
                                               drop_remainder=num_epochs is None)

    def to_features(*columns):
        features = dict(zip(names, columns))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label

    return records.map(to_features)
