"""Helpers shared by the ``kerasflow.ops`` modules: Keras 3's input
conversion and dtype rules, axis normalization and slicing along one axis."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph import is_symbolic
from kerasflow.backend.keras_ops import convert_to_tensor

__all__ = ["arg", "axis_slice", "dtype_of", "result_dtype", "floatx", "is_sym", "rank", "static_shape",
           "tensor", "to_float"]


def is_sym(x) -> bool:
    """Whether ``x`` is a symbolic tensor."""
    return is_symbolic(x)


def tensor(x, dtype=None):
    """Symbolic tensors pass through; anything else becomes an array (Python
    floats floatx), as Keras' ``convert_to_tensor``."""
    if is_sym(x) or (isinstance(x, np.ndarray) and dtype is None):
        same = dtype is None or np.dtype(x.dtype) == np.dtype(dtype)
        return x if same else K.cast(x, dtype)
    return convert_to_tensor(x, dtype)


def floatx() -> str:
    """The default float dtype's name."""
    return K.floatx()


def dtype_of(x) -> np.dtype:
    """The dtype of a tensor, array or Python value."""
    return np.dtype(getattr(tensor(x), "dtype"))


def arg(x):
    """Python numbers pass through (weakly typed: the op gives them its
    tensors' dtype); anything else as ``tensor``."""
    return x if isinstance(x, (bool, int, float)) else tensor(x)


def result_dtype(*xs, float_=False) -> np.dtype:
    """Keras' result dtype of the operands, Python numbers weakly typed;
    with ``float_`` at least a float (floatx for integers)."""
    arrays = [dtype_of(x) for x in xs if not isinstance(x, (bool, int, float))]
    pyfloat = any(isinstance(x, float) for x in xs)
    if arrays:
        dt = np.result_type(*arrays)
        if pyfloat and dt.kind not in "fc":
            dt = np.dtype(floatx())
    else:
        dt = np.dtype(floatx() if pyfloat else "int64")
    if float_ and dt.kind not in "fc":
        dt = np.dtype(floatx())
    return dt


def to_float(x):
    """``x`` as a float tensor: bool and integers become floatx (Keras'
    ``result_type(x.dtype, float)`` on the numpy backend), floats stay."""
    x = tensor(x)
    return x if dtype_of(x).kind in "fc" else K.cast(x, floatx())


def static_shape(x) -> tuple:
    """The static shape (None for unknown dimensions)."""
    return tuple(x.shape)


def rank(x) -> int:
    """The number of dimensions."""
    return len(x.shape)


def axis_slice(x, axis, start=None, stop=None, step=None):
    """``x[..., start:stop:step, ...]`` on ``axis`` (arrays or tensors)."""
    key = [slice(None)] * rank(x)
    key[axis % rank(x)] = slice(start, stop, step)
    return K.getitem(x, tuple(key)) if is_sym(x) else x[tuple(key)]
