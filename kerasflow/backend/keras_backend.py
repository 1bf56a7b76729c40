"""Keras 3's ``keras.backend`` helpers that are not ops: the backend's name,
dtype names and promotion (``standardize_dtype``, ``result_type``,
``is_float_dtype``, ``is_int_dtype``), ``is_keras_tensor``, and the per-prefix
counters behind unique names (``get_uid``, reset by ``clear_session``).

Type promotion follows Keras 3 on its non-TensorFlow backends (the JAX lattice,
keras/src/backend/common/dtypes.py): Python ``int``/``float`` are weak types
that defer to the other operand's precision, and 64-bit results come back as
32-bit (``result_type("float64") == "float32"``), as Keras reports them.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections import defaultdict

import numpy as np

from kerasflow.backend.array import floatx
from kerasflow.backend.graph import is_symbolic
from kerasflow.backend.variables import Variable

__all__ = ["backend", "clear_session", "get_uid", "is_float_dtype", "is_int_dtype",
           "is_keras_tensor", "is_tensor", "reset_uids", "result_type", "standardize_dtype",
           "uid_scope"]

_PYTHON = {bool: "bool", int: "int32", float: "float32", str: "string",
           "int": "int32", complex: "complex64"}
_ALLOWED = {"bool", "string", "bfloat16", "float16", "float32", "float64",
            "complex64", "complex128", "int8", "int16", "int32", "int64",
            "uint8", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2"}


def backend() -> str:
    """The backend's name, as ``keras.backend.backend()``: "numpy" (kerasflow
    runs its one graph backend on numpy, or cupy on a GPU)."""
    return "numpy"


def standardize_dtype(dtype) -> str:
    """A dtype's Keras name: None is ``floatx()``; Python ``int``/``float``/
    ``complex`` are int32/float32/complex64; numpy dtypes and types their name.

    Raises:
        ValueError: a dtype Keras does not know ("float" included).
    """
    if dtype is None:
        return floatx()
    if not isinstance(dtype, np.dtype):
        dtype = _PYTHON.get(dtype, dtype)
    if hasattr(dtype, "name") and not isinstance(dtype, str):
        dtype = dtype.name
    elif hasattr(dtype, "__name__"):
        dtype = dtype.__name__
    if dtype not in _ALLOWED:
        raise ValueError(f"Invalid dtype: {dtype}")
    return dtype


def is_float_dtype(dtype) -> bool:
    """Whether ``dtype`` (any form ``standardize_dtype`` takes) is a float."""
    dtype = standardize_dtype(dtype)
    return dtype.startswith("float") or dtype.startswith("bfloat")


def is_int_dtype(dtype) -> bool:
    """Whether ``dtype`` (any form ``standardize_dtype`` takes) is an integer,
    signed or unsigned."""
    dtype = standardize_dtype(dtype)
    return dtype.startswith("int") or dtype.startswith("uint")


def is_keras_tensor(x) -> bool:
    """Whether ``x`` is a symbolic tensor (``kerasflow.KerasTensor``), not an
    array nor a Variable."""
    return is_symbolic(x) and not isinstance(x, Variable)


def is_tensor(x) -> bool:
    """Whether ``x`` is a tensor of this backend (Keras 3's ``ops.is_tensor``):
    a numpy array or scalar, or a symbolic tensor; not a list nor a Python
    number."""
    return is_symbolic(x) or isinstance(x, (np.ndarray, np.generic))


# -- type promotion (JAX's lattice, as Keras 3) ----------------------------------
_LATTICE = {
    "bool": ["int"], "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"],
    "uint32": ["int64", "uint64"], "uint64": ["float"],
    "int": ["uint8", "int8", "complex64"], "int8": ["int16"], "int16": ["int32"],
    "int32": ["int64"], "int64": ["float"], "float": ["bfloat16", "float16"],
    "bfloat16": ["float32"], "float16": ["float32"],
    "float32": ["float64", "complex64"], "float64": ["complex128"],
    "complex64": ["complex128"], "complex128": [],
}


def _upper_bounds() -> dict:
    bounds = {n: {n} for n in _LATTICE}
    for n in _LATTICE:
        while True:
            new = set().union(*(_LATTICE[b] for b in bounds[n]))
            if new <= bounds[n]:
                break
            bounds[n] |= new
    return bounds


_UPPER = _upper_bounds()
_TO_32 = {"int64": "int32", "uint64": "uint32", "float64": "float32",
          "complex128": "complex64"}


@functools.lru_cache(512)
def _least_upper_bound(*nodes):
    nodes = set(nodes)
    common = set.intersection(*(_UPPER[n] for n in nodes))
    least = (common & nodes) or {c for c in common if common <= _UPPER[c]}
    if len(least) != 1:
        raise ValueError(f"Input dtypes {tuple(sorted(nodes))} have no available "
                         f"implicit dtype promotion path. Try explicitly casting "
                         f"inputs to the desired output type.")
    return least.pop()


def _weak(dtype, weak):
    if not weak or dtype == "bool":
        return dtype
    for kind in ("float", "int", "complex"):
        if kind in dtype:
            return kind
    raise ValueError(f"Invalid value for argument `dtype`. Received: dtype={dtype}")


def _resolve_weak(dtype, precision):
    kind = "f" if dtype == "bfloat16" else dtype[:1]
    return {"b": "bool", "i": f"int{precision}", "u": f"uint{precision}"}.get(
        kind, f"float{precision}")


def result_type(*dtypes) -> str:
    """The dtype of an op on operands of ``dtypes`` by Keras 3's promotion
    rules (``keras.backend.result_type``); None is ``floatx()``, Python
    ``int``/``float`` are weak.

    Example:
        >>> result_type("int32", "float32"), result_type("bfloat16", int)
        ('float32', 'bfloat16')

    Raises:
        ValueError: a float8 dtype, an unknown dtype, or dtypes with no
            promotion path.
    """
    if not dtypes:
        return floatx()
    for d in dtypes:
        if d in ("float8_e4m3fn", "float8_e5m2"):
            raise ValueError(f"There is no implicit conversions from float8 dtypes "
                             f"to others. You must cast it internally. Received: "
                             f"{dtypes}")
    args = [floatx() if d is None else d for d in dtypes]
    names = [standardize_dtype(a) for a in args]
    weak = [a is int or a is float for a in args]
    if len(names) == 1:
        out, out_weak = names[0], weak[0]
    elif len(set(names)) == 1 and not all(weak):
        out, out_weak = names[0], False
    elif all(weak):
        out, out_weak = _least_upper_bound(*{_weak(d, False) for d in names}), True
    else:
        out = _least_upper_bound(*{_weak(d, w) for d, w in zip(names, weak)})
        out_weak = out in ("int", "float")
    if out != "bool" and out_weak:
        out = _resolve_weak(out, floatx()[-2:])
    return _TO_32.get(out, out)


# -- unique names ---------------------------------------------------------------
_UIDS: defaultdict = defaultdict(int)


def get_uid(prefix: str = "") -> int:
    """1, 2, 3... on successive calls with the same ``prefix`` (Keras 3's
    ``keras.backend.get_uid``; layer names use it), until ``clear_session``."""
    _UIDS[prefix] += 1
    return _UIDS[prefix]


def reset_uids() -> None:
    """Restarts every ``get_uid`` counter."""
    _UIDS.clear()


@contextlib.contextmanager
def uid_scope():
    """Fresh ``get_uid`` counters inside (the names a graph built there gets
    do not depend on what was built before); the old ones return after."""
    global _UIDS
    saved, _UIDS = _UIDS, defaultdict(int)
    try:
        yield
    finally:
        _UIDS = saved


def clear_session(free_memory: bool = True) -> None:
    """Resets the global state names come from (Keras 3's ``clear_session``):
    layer names start again ("dense", "dense_1", ...) and, with
    ``free_memory``, Python's garbage collector runs. Models built before keep
    working: kerasflow keeps no global graph (each model holds its own)."""
    reset_uids()
    if free_memory:
        gc.collect()
