"""File sources for ``kerasflow.data``: ``TextLineDataset`` and ``CsvDataset``.

tf.data semantics: files are read in the order given, one line (or CSV record)
per element; strings come out as ``bytes`` (tf.string), without the line end.
"""

from __future__ import annotations

import csv
import gzip
import io

import numpy as np

from kerasflow.backend import TensorSpec
from kerasflow.data.cardinality import UNKNOWN_CARDINALITY
from kerasflow.data.dataset import Dataset

__all__ = ["CsvDataset", "TextLineDataset"]


def _filenames(filenames) -> list:
    if isinstance(filenames, Dataset):
        filenames = list(filenames)
    if isinstance(filenames, (str, bytes, np.ndarray)) or hasattr(filenames,
                                                                  "__fspath__"):
        filenames = np.atleast_1d(np.asarray(filenames, dtype=object)).tolist() \
            if isinstance(filenames, np.ndarray) else [filenames]
    names = [f.decode() if isinstance(f, bytes) else str(f) for f in filenames]
    if not names:
        raise ValueError("Expected at least one filename. Received: none.")
    return names


def _open(path: str, compression_type):
    if compression_type in (None, ""):
        return open(path, "rb")
    if compression_type == "GZIP":
        return gzip.open(path, "rb")
    raise ValueError(f"compression_type must be '', None or 'GZIP'. Received: "
                     f"{compression_type!r}.")


def _lines(path: str, compression_type):
    """(line number from 1, line bytes without '\\n' or '\\r\\n') of one file."""
    with _open(path, compression_type) as f:
        for number, line in enumerate(f, 1):
            yield number, line.rstrip(b"\n").rstrip(b"\r")


class TextLineDataset(Dataset):
    """The lines of one or more text files, as ``bytes`` scalars.

    Args:
        filenames: a path, or a list (or dataset) of paths, read in order.
        compression_type: None/'' or 'GZIP'.
        buffer_size, num_parallel_reads: accepted for tf.data compatibility;
            files are read one after another with Python's buffering.

    Example::

        ds = kf.data.TextLineDataset("data.txt").skip(1)  # drop a header

    Raises:
        ValueError: no filenames, or an unknown compression_type.
        FileNotFoundError: (while iterating) a missing file.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        names = _filenames(filenames)
        _open_check(compression_type)

        def lines():
            for path in names:
                for _, line in _lines(path, compression_type):
                    yield line

        super().__init__(lines, UNKNOWN_CARDINALITY, TensorSpec((), object))


def _open_check(compression_type):
    if compression_type not in (None, "", "GZIP"):
        raise ValueError(f"compression_type must be '', None or 'GZIP'. "
                         f"Received: {compression_type!r}.")


def _column_type(default):
    """(numpy dtype, default value or None when the column is required)."""
    if isinstance(default, (list, tuple)):
        if len(default) > 1:
            raise ValueError(f"A record default holds at most one value. "
                             f"Received: {default!r}.")
        if not default:
            raise ValueError("An empty record default needs a dtype; pass the "
                             "dtype itself to make the column required.")
        default = default[0]
    if isinstance(default, (str, bytes)):
        return np.dtype(object), default.encode() if isinstance(default, str) \
            else default
    if isinstance(default, (bool, int, float, np.generic)):
        dtype = np.asarray(default).dtype
        dtype = {np.dtype("float64"): np.dtype("float32"),
                 np.dtype("int64"): np.dtype("int32")}.get(dtype, dtype) \
            if not isinstance(default, np.generic) else dtype
        return dtype, dtype.type(default)
    dtype = np.dtype(getattr(default, "as_numpy_dtype", default))
    return (np.dtype(object) if dtype.kind in "SUO" else dtype), None


class CsvDataset(Dataset):
    """The records of CSV files, each a tuple of scalars, one per column.

    Args:
        filenames: a path or a list of paths, read in order.
        record_defaults: one entry per (selected) column: a dtype (the column
            is required) or a default value (or ``[value]``) used when the
            field is empty or equals ``na_value``; the value's type sets the
            column's dtype (Python float: float32, int: int32, str: bytes).
        header: skip each file's first line.
        field_delim: the field separator (one character).
        use_quote_delim: treat '"' as a quote (else as an ordinary character).
        na_value: a field value meaning "missing".
        select_cols: sorted column indices to keep (default: all).

    Blank lines are skipped (TextLineDataset keeps them).

    Example::

        # x1,x2,label  header, then rows like 0.5,1.5,1
        ds = kf.data.CsvDataset("train.csv", [0.0, 0.0, np.int64], header=True)
        ds = ds.map(lambda x1, x2, label: (np.stack([x1, x2]), label)).batch(32)

    Raises:
        ValueError: (while iterating) a record with another number of fields,
            a missing required field, or a field that does not parse, naming
            the file, line and column.
    """

    def __init__(self, filenames, record_defaults, compression_type=None,
                 buffer_size=None, header=False, field_delim=",",
                 use_quote_delim=True, na_value="", select_cols=None,
                 exclude_cols=None, name=None):
        names = _filenames(filenames)
        _open_check(compression_type)
        if exclude_cols is not None:
            raise NotImplementedError("exclude_cols is not supported; use "
                                      "select_cols.")
        columns = [_column_type(d) for d in record_defaults]
        if select_cols is not None and len(select_cols) != len(columns):
            raise ValueError(f"select_cols and record_defaults must have the same "
                             f"length. Received: {len(select_cols)} and "
                             f"{len(columns)}.")

        def records():
            for path in names:
                yield from _records(path, compression_type, header, field_delim,
                                    use_quote_delim, na_value, select_cols,
                                    columns)

        super().__init__(records, UNKNOWN_CARDINALITY,
                         tuple(TensorSpec((), dt) for dt, _ in columns))


def _records(path, compression_type, header, delim, quote, na_value, select_cols,
             columns):
    """One file's parsed records."""
    quoting = csv.QUOTE_MINIMAL if quote else csv.QUOTE_NONE
    for number, line in _lines(path, compression_type):
        if (header and number == 1) or not line.strip():
            continue
        text = line.decode()
        fields = next(csv.reader(io.StringIO(text), delimiter=delim,
                                 quoting=quoting), [""])
        if select_cols is not None:
            if max(select_cols) >= len(fields):
                raise ValueError(f"{path}:{number}: expected at least "
                                 f"{max(select_cols) + 1} fields. Received "
                                 f"{len(fields)}: {text!r}.")
            fields = [fields[i] for i in select_cols]
        elif len(fields) != len(columns):
            raise ValueError(f"{path}:{number}: expected {len(columns)} fields "
                             f"(one per record default). Received {len(fields)}: "
                             f"{text!r}.")
        yield tuple(_parse(path, number, i, field, dtype, default, na_value)
                    for i, (field, (dtype, default)) in enumerate(zip(fields,
                                                                      columns)))


def _parse(path, number, column, field, dtype, default, na_value):
    if field == "" or field == na_value:
        if default is None:
            raise ValueError(f"{path}:{number}: column {column} is required (its "
                             f"record default is a dtype) but the field is empty.")
        return default
    if dtype == np.dtype(object):
        return field.encode()
    try:
        return dtype.type(field)
    except ValueError:
        raise ValueError(f"{path}:{number}: column {column} expects {dtype}. "
                         f"Received: {field!r}.") from None
