"""``tf.strings`` (TF 1.x): string ops on numpy arrays of ``bytes``/``str``.

Eager only, as ``Dataset.map`` calls functions with numpy elements. Strings
come back as ``bytes`` (tf.string) in object arrays shaped like the input.
"""

from __future__ import annotations

import builtins
import re

import numpy as np

from kerasflow.compat.v1.dtypes import as_dtype

__all__ = ["length", "lower", "regex_replace", "split", "strip", "substr",
           "to_number", "upper"]


def _text(s) -> str:
    return s.decode() if isinstance(s, bytes) else str(s)


def _each(strings, fn, dtype=object):
    """``fn`` over every string of ``strings``; an array of the same shape."""
    array = np.asarray(strings, dtype=object)
    out = np.empty(array.shape, dtype=dtype)
    flat = out.reshape(-1)
    for i, s in enumerate(array.reshape(-1)):
        flat[i] = fn(_text(s))
    return out if out.ndim else out[()]


def to_number(string_tensor, out_type="float32", name=None):
    """Parses numbers (TF 1.x ``tf.strings.to_number``).

    Args:
        string_tensor: a ``bytes``/``str`` scalar or array of them.
        out_type: float32 (default), float64, int32 or int64.

    Returns:
        An array of ``out_type`` shaped like ``string_tensor``.

    Raises:
        ValueError: a string that is not a number of ``out_type``, naming it.
    """
    dtype = np.dtype(as_dtype(out_type).as_numpy_dtype)

    def parse(s):
        try:
            return dtype.type(s)
        except ValueError:
            raise ValueError(f"tf.strings.to_number expects strings holding "
                             f"{dtype} values. Received: {s!r}.") from None

    return np.asarray(_each(string_tensor, parse, dtype), dtype=dtype)


def length(input, unit="BYTE", name=None):  # noqa: A002 (TF's name)
    """Length of each string in bytes (``unit="BYTE"``) or code points
    (``"UTF8_CHAR"``) as int32, shaped like ``input`` (``tf.strings.length``)."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be 'BYTE' or 'UTF8_CHAR'. Received: {unit!r}.")
    count = (lambda s: len(s.encode())) if unit == "BYTE" else len
    return np.asarray(_each(input, count, np.int32), dtype=np.int32)


def strip(input, name=None):  # noqa: A002
    """Each string without leading/trailing whitespace (``tf.strings.strip``)."""
    return _each(input, lambda s: s.strip().encode())


def lower(input, encoding="", name=None):  # noqa: A002
    """Each string lower-cased (``tf.strings.lower``)."""
    return _each(input, lambda s: s.lower().encode())


def upper(input, encoding="", name=None):  # noqa: A002
    """Each string upper-cased (``tf.strings.upper``)."""
    return _each(input, lambda s: s.upper().encode())


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits strings (TF 1.x ``tf.strings.split``).

    Args:
        input: a ``bytes``/``str`` scalar or 1-D array of them.
        sep: the separator; None splits on runs of whitespace.
        maxsplit: at most this many splits per string (-1: no limit).

    Returns:
        For a scalar: a 1-D object array of ``bytes`` pieces. For a 1-D array:
        a Python list with one such array per string (TF returns a
        ``RaggedTensor``; kerasflow has none, so rows are kept as a list).

    Raises:
        ValueError: an input of rank above 1, or an empty ``sep``.
    """
    if sep is not None:
        sep = _text(sep)
        if sep == "":
            raise ValueError("tf.strings.split expects a non-empty sep or None. "
                             "Received: sep=''.")
    array = np.asarray(input, dtype=object)
    if array.ndim > 1:
        raise ValueError(f"tf.strings.split expects a scalar or 1-D input. "
                         f"Received: shape={array.shape}.")

    def pieces(s):
        parts = _text(s).split(sep, maxsplit)
        return np.asarray([p.encode() for p in parts] or [], dtype=object)

    if array.ndim == 0:
        return pieces(array[()])
    return [pieces(s) for s in array]


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string with matches of ``pattern`` replaced by ``rewrite``
    (``tf.strings.regex_replace``; RE2 syntax as Python's ``re``, ``\\1``
    backreferences); only the first match unless ``replace_global``."""
    regex = re.compile(_text(pattern))
    count = 0 if replace_global else 1
    return _each(input, lambda s: regex.sub(_text(rewrite), s, count=count).encode())


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002
    """``len`` bytes (or UTF-8 characters) of each string from ``pos``
    (negative: from the end), as ``tf.strings.substr``.

    Raises:
        ValueError: ``pos`` outside a string, or an unknown ``unit``.
    """
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be 'BYTE' or 'UTF8_CHAR'. Received: {unit!r}.")
    size = len

    def cut(s):
        data = s.encode() if unit == "BYTE" else s
        start = pos + builtins.len(data) if pos < 0 else pos
        if not 0 <= start <= builtins.len(data):
            raise ValueError(f"tf.strings.substr: pos {pos} is out of range for "
                             f"{s!r}.")
        piece = data[start:start + size]
        return piece if unit == "BYTE" else piece.encode()
    return _each(input, cut)

