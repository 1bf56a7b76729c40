"""Keras 3's small ``keras.utils`` helpers for data and dtypes:
``pack_x_y_sample_weight``, ``unpack_x_y_sample_weight``,
``standardize_dtype``, ``is_keras_tensor``."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

__all__ = ["is_keras_tensor", "pack_x_y_sample_weight", "standardize_dtype",
           "unpack_x_y_sample_weight"]

_PYTHON = {bool: "bool", int: "int32", float: "float32", str: "string",
           "int": "int32"}
_ALLOWED = {"bool", "string", "bfloat16", "float16", "float32", "float64",
            "complex64", "complex128", "int8", "int16", "int32", "int64",
            "uint8", "uint16", "uint32", "uint64"}


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``: the one form
    ``fit`` reads back (a list or tuple ``x`` alone is wrapped in a tuple)."""
    if y is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from ``x``, ``(x,)``, ``(x, y)`` or
    ``(x, y, sample_weight)`` (lists as tuples); missing parts are None.

    Raises:
        ValueError: a tuple or list of more than three items.
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return (data, None, None)
    if len(data) <= 3:
        return (*data, *(None,) * (3 - len(data)))
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, "
                     f"or `(x, y, sample_weight)`, found: {data}")


def standardize_dtype(dtype) -> str:
    """A dtype's Keras name: None is ``floatx()``, Python ``int``/``float`` are
    int32/float32, numpy dtypes and types their name.

    Raises:
        ValueError: a dtype Keras does not know ("float" included).
    """
    if dtype is None:
        return K.floatx()
    dtype = _PYTHON.get(dtype, dtype) if not isinstance(dtype, np.dtype) else dtype
    if hasattr(dtype, "name") and not isinstance(dtype, str):
        dtype = dtype.name
    elif hasattr(dtype, "__name__"):
        dtype = dtype.__name__
    if dtype not in _ALLOWED:
        raise ValueError(f"Invalid dtype: {dtype}")
    return dtype


def is_keras_tensor(x) -> bool:
    """Whether ``x`` is a symbolic tensor (``kerasflow.KerasTensor``), not an
    array nor a Variable."""
    return K.is_symbolic(x) and not isinstance(x, K.Variable)
