"""One CSV record parser: ``decode_csv`` (TF 1.x ``tf.decode_csv`` /
``tf.io.decode_csv``) and the per-record parsing ``CsvDataset`` reuses."""

from __future__ import annotations

import csv
import io

import numpy as np

__all__ = ["column_types", "decode_csv", "parse_fields", "split_record"]


def _column_type(default):
    """(numpy dtype, default value or None when the column is required)."""
    if isinstance(default, np.ndarray):
        if default.size > 1:
            raise ValueError(f"A record default holds at most one value. "
                             f"Received: {default!r}.")
        if default.size == 0:  # an empty tensor: a required column of its dtype
            dtype = default.dtype
            return (np.dtype(object) if dtype.kind in "SUO" else dtype), None
        default = default.reshape(()).item() if default.dtype.kind in "SUO" \
            else default.reshape(())[()]
    if isinstance(default, (list, tuple)):
        if len(default) > 1:
            raise ValueError(f"A record default holds at most one value. "
                             f"Received: {default!r}.")
        if not default:  # TF's tf.constant([]) is float32
            return np.dtype("float32"), None
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


def column_types(record_defaults) -> list:
    """[(numpy dtype, default or None if required)] for each record default."""
    return [_column_type(d) for d in record_defaults]


def split_record(text: str, delim: str = ",", quote: bool = True) -> list:
    """The fields of one CSV line (RFC 4180 quoting when ``quote``)."""
    quoting = csv.QUOTE_MINIMAL if quote else csv.QUOTE_NONE
    return next(csv.reader(io.StringIO(text), delimiter=delim, quoting=quoting),
                [""])


def parse_fields(fields, columns, na_value="", select_cols=None, where="") -> tuple:
    """One record's fields as a tuple of scalars, one per column.

    ``where`` prefixes error messages (e.g. "data.csv:12: ").
    """
    if select_cols is not None:
        if max(select_cols) >= len(fields):
            raise ValueError(f"{where}expected at least {max(select_cols) + 1} "
                             f"fields. Received {len(fields)}: {fields!r}.")
        fields = [fields[i] for i in select_cols]
    elif len(fields) != len(columns):
        raise ValueError(f"{where}expected {len(columns)} fields (one per record "
                         f"default). Received {len(fields)}: {fields!r}.")
    return tuple(_parse(where, i, field, dtype, default, na_value)
                 for i, (field, (dtype, default)) in enumerate(zip(fields,
                                                                   columns)))


def _parse(where, column, field, dtype, default, na_value):
    if field == "" or field == na_value:
        if default is None:
            raise ValueError(f"{where}column {column} is required (its record "
                             f"default is empty or a dtype) but the field is "
                             f"empty.")
        return default
    if dtype == np.dtype(object):
        return field.encode()
    try:
        return dtype.type(field)
    except ValueError:
        raise ValueError(f"{where}column {column} expects {dtype}. Received: "
                         f"{field!r}.") from None


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True,
               na_value="", select_cols=None, name=None) -> list:
    """Parses CSV records into one array per column (TF 1.x ``tf.decode_csv``).

    Runs eagerly on numpy, the way ``Dataset.map`` calls its function.

    Args:
        records: a ``bytes``/``str`` scalar or an array (any shape) of them,
            one CSV record each.
        record_defaults: one entry per (selected) column, usually a one-element
            list: ``[[0.0], [""], [0]]``. The value's type sets the column's
            dtype (Python float: float32, int: int32, str: bytes/object) and is
            used for empty fields or fields equal to ``na_value``. An empty
            entry (``[]``: float32, or ``np.array([], dtype)``) or a bare dtype
            makes the column required.
        field_delim: the field separator (one character).
        use_quote_delim: treat '"' as a quote (else an ordinary character).
        na_value: a field value meaning "missing".
        select_cols: sorted column indices to keep (default: all).
        name: unused (TF op name).

    Returns:
        A list with one numpy array per column, each shaped like ``records``,
        of the column's dtype (strings as ``bytes`` in object arrays).

    Raises:
        ValueError: a record with another number of fields than
            ``record_defaults`` (naming expected and received counts), an empty
            required field (naming the column), or a field that does not parse.
    """
    columns = column_types(record_defaults)
    if select_cols is not None and len(select_cols) != len(columns):
        raise ValueError(f"select_cols and record_defaults must have the same "
                         f"length. Received: {len(select_cols)} and "
                         f"{len(columns)}.")
    array = np.asarray(records, dtype=object)
    rows = []
    for index, record in enumerate(array.reshape(-1)):
        text = record.decode() if isinstance(record, bytes) else str(record)
        where = f"record {index}: " if array.ndim else ""
        rows.append(parse_fields(split_record(text, field_delim, use_quote_delim),
                                 columns, na_value, select_cols, where))
    out = []
    for i, (dtype, _) in enumerate(columns):
        column = np.empty(len(rows), dtype=dtype)
        column[:] = [row[i] for row in rows]
        out.append(column.reshape(array.shape))
    return out
