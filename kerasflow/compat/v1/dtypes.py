"""TF1 dtypes: ``tf.float32`` and friends, mapped onto numpy dtypes.

A ``DType`` carries a numpy dtype in ``.dtype``, so numpy (and every kerasflow
function taking a dtype) accepts it directly, and it compares equal to the
numpy dtype and its name: ``x.dtype == tf.float32`` holds for a float32 tensor.
TF's short names are mapped as TF1 mapped them: ``"float"`` is float32 (not
numpy's float64), ``"double"`` float64, ``"half"`` float16, ``"int"`` int32.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DType", "as_dtype", "float16", "half", "float32", "float64", "double",
           "int8", "int16", "int32", "int64", "uint8", "uint16", "bool", "string",
           "resolve"]

_TF_NAMES = {"float": "float32", "double": "float64", "half": "float16",
             "int": "int32", "long": "int64"}


class DType:
    """A TF1 dtype over a numpy dtype.

    Attributes:
        dtype: the numpy dtype.
        name: TF's name ("float32", "bool", "string").
        as_numpy_dtype: the numpy scalar type (``np.float32``).
        is_floating, is_integer, is_bool: kind tests.
        size: bytes per element.
        min, max: the representable range (numeric dtypes).
    """

    def __init__(self, name: str):
        self.name = name
        self.dtype = np.dtype("U") if name == "string" else np.dtype(name)

    @property
    def as_numpy_dtype(self):
        return np.object_ if self.name == "string" else self.dtype.type

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.dtype.kind in "iu"

    @property
    def is_bool(self) -> bool:
        return self.dtype.kind == "b"

    @property
    def size(self) -> int:
        return self.dtype.itemsize

    @property
    def min(self):
        info = np.finfo if self.is_floating else np.iinfo
        return info(self.dtype).min

    @property
    def max(self):
        info = np.finfo if self.is_floating else np.iinfo
        return info(self.dtype).max

    def __eq__(self, other):
        try:
            return resolve(other) == self.dtype
        except (TypeError, ValueError):
            return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"tf.{self.name}"


def resolve(dtype):
    """A numpy dtype from a DType, numpy dtype, type or TF/numpy name; None stays.

    Raises:
        TypeError: a value that names no dtype.
    """
    if dtype is None:
        return None
    if isinstance(dtype, DType):
        dtype = dtype.name
    if isinstance(dtype, str):
        dtype = _TF_NAMES.get(dtype, dtype)
        if dtype == "string":
            raise TypeError("kerasflow tensors are numeric: tf.string is not "
                            "supported as a tensor dtype. Received: dtype='string'.")
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"Expected a dtype (tf.float32, 'float', np.int64, ...). "
                        f"Received: dtype={dtype!r}.") from e


def as_dtype(type_value) -> DType:
    """``tf.as_dtype``: the ``DType`` of a name, numpy dtype or DType."""
    if isinstance(type_value, DType):
        return type_value
    return DType(resolve(type_value).name)


float16 = half = DType("float16")
float32 = DType("float32")
float64 = double = DType("float64")
int8, int16, int32, int64 = (DType(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16 = DType("uint8"), DType("uint16")
bool = DType("bool")  # noqa: A001  (TF's name)
string = DType("string")
