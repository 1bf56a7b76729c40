"""File sources for ``kerasflow.data``: ``TextLineDataset`` and ``CsvDataset``.

tf.data semantics: files are read in the order given, one line (or CSV record)
per element; strings come out as ``bytes`` (tf.string), without the line end.
"""

from __future__ import annotations

import gzip
import zlib

import numpy as np

from kerasflow.backend import TensorSpec
from kerasflow.data.cardinality import UNKNOWN_CARDINALITY
from kerasflow.data.csv import column_types, parse_fields, split_record
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
        try:
            for number, line in enumerate(f, 1):
                yield number, line.rstrip(b"\n").rstrip(b"\r")
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            # gzip's own message names neither the file nor the setting.
            raise gzip.BadGzipFile(
                f"compression_type='GZIP' expects gzip files. Received: '{path}', "
                f"which is not gzip or is truncated ({e}).") from None


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
        self._files = _filenames(filenames)  # auto-sharding by FILE narrows it
        _open_check(compression_type)

        def lines():
            for path in self._files:
                for _, line in _lines(path, compression_type):
                    yield line

        super().__init__(lines, UNKNOWN_CARDINALITY, TensorSpec((), object))


def _open_check(compression_type):
    if compression_type not in (None, "", "GZIP"):
        raise ValueError(f"compression_type must be '', None or 'GZIP'. "
                         f"Received: {compression_type!r}.")


class CsvDataset(Dataset):
    """The records of CSV files, each a tuple of scalars, one per column.

    Args:
        filenames: a path or a list of paths, read in order.
        record_defaults: one entry per (selected) column: a dtype (the column
            is required) or a default value (or ``[value]``) used when the
            field is empty or equals ``na_value``; the value's type sets the
            column's dtype (Python float: float32, int: int32, str: bytes);
            ``[]`` is a required float32 column. Parsed by ``kf.data.decode_csv``'s
            parser (``kerasflow/data/csv.py``).
        header: skip each file's first line.
        field_delim: the field separator (one character).
        use_quote_delim: treat '"' as a quote (else as an ordinary character).
        na_value: a field value meaning "missing".
        select_cols: sorted column indices to keep (default: all).
        ignore_errors: skip records that do not parse instead of raising (what
            ``make_csv_dataset(ignore_errors=True)`` asks for).

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
                 exclude_cols=None, name=None, ignore_errors=False):
        self._files = _filenames(filenames)  # auto-sharding by FILE narrows it
        _open_check(compression_type)
        if exclude_cols is not None:
            raise NotImplementedError("exclude_cols is not supported; use "
                                      "select_cols.")
        columns = column_types(record_defaults)
        if select_cols is not None and len(select_cols) != len(columns):
            raise ValueError(f"select_cols and record_defaults must have the same "
                             f"length. Received: {len(select_cols)} and "
                             f"{len(columns)}.")

        def records():
            for path in self._files:
                yield from _records(path, compression_type, header, field_delim,
                                    use_quote_delim, na_value, select_cols,
                                    columns, ignore_errors)

        super().__init__(records, UNKNOWN_CARDINALITY,
                         tuple(TensorSpec((), dt) for dt, _ in columns))


def _records(path, compression_type, header, delim, quote, na_value, select_cols,
             columns, ignore_errors=False):
    """One file's parsed records (bad ones skipped when ``ignore_errors``)."""
    for number, line in _lines(path, compression_type):
        if (header and number == 1) or not line.strip():
            continue
        try:
            record = parse_fields(split_record(line.decode(), delim, quote),
                                  columns, na_value, select_cols, f"{path}:{number}: ")
        except ValueError:
            if ignore_errors:
                continue
            raise
        yield record
