"""Array modules and devices: numpy on CPU, cupy on GPU.

This is the only module in kerasflow that imports cupy. Kernels receive the array
module as their first argument (``xp``) and never import numpy or cupy themselves,
the approach of Chainer's ``chainer.backend.get_array_module``.

The device is chosen by ``set_device('cpu'|'gpu')`` or the ``KERASFLOW_DEVICE``
environment variable (read once, on first use). cupy is imported only when the GPU
device is first asked for, so ``import kerasflow`` never imports it.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = [
    "floatx",
    "set_floatx",
    "get_device",
    "set_device",
    "get_xp",
    "gpu_available",
    "is_cupy_array",
    "to_numpy",
    "to_device",
]

_FLOATX = "float32"
_DEVICE: str | None = None
_CUPY = None


# TensorFlow's dtype names where numpy reads them differently ("float" is float32
# in TF, float64 in numpy).
_TF_NAMES = {"float": "float32", "double": "float64", "half": "float16"}


def as_dtype(dtype) -> np.dtype:
    """A numpy dtype from a numpy/TF name, a dtype, or an object with
    ``as_numpy_dtype`` (TF's ``DType``); "float" means float32 as in TF."""
    if isinstance(dtype, str):
        dtype = _TF_NAMES.get(dtype, dtype)
    dtype = getattr(dtype, "as_numpy_dtype", dtype)
    return np.dtype(dtype)


def floatx() -> str:
    """Returns the default float dtype name ('float32' unless changed)."""
    return _FLOATX


def set_floatx(dtype: str) -> None:
    """Sets the default float dtype.

    Args:
        dtype: one of 'float16', 'float32', 'float64'.

    Raises:
        ValueError: for any other dtype.
    """
    global _FLOATX
    name = np.dtype(dtype).name
    if name not in ("float16", "float32", "float64"):
        raise ValueError(
            f"floatx must be one of 'float16', 'float32', 'float64'. "
            f"Received: dtype={dtype!r}."
        )
    _FLOATX = name


def _import_cupy():
    global _CUPY
    if _CUPY is None:
        try:
            import cupy  # noqa: PLC0415  (the one place cupy is imported)

            if cupy.cuda.runtime.getDeviceCount() < 1:
                return None
        except Exception:  # ImportError, or a CUDA runtime error without a device
            return None
        _CUPY = cupy
    return _CUPY


def gpu_available() -> bool:
    """True when cupy imports and sees at least one CUDA device."""
    return _import_cupy() is not None


def get_device() -> str:
    """Returns the current device, 'cpu' or 'gpu'."""
    global _DEVICE
    if _DEVICE is None:
        set_device(os.environ.get("KERASFLOW_DEVICE", "cpu"))
    return _DEVICE


def set_device(device: str) -> None:
    """Selects where new arrays live and kernels run.

    Args:
        device: 'cpu' (numpy) or 'gpu' (cupy, device 0).

    Raises:
        ValueError: for another device name.
        RuntimeError: for 'gpu' when cupy or a CUDA device is missing.
    """
    global _DEVICE
    device = device.lower()
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu'. Received: device={device!r}.")
    if device == "gpu" and _import_cupy() is None:
        raise RuntimeError(
            "device 'gpu' needs cupy and a CUDA device; install kerasflow[gpu] on a "
            "machine with an NVIDIA GPU, or use set_device('cpu')."
        )
    _DEVICE = device


def get_xp():
    """Returns the array module of the current device (numpy or cupy)."""
    return _CUPY if get_device() == "gpu" else np


def is_cupy_array(x) -> bool:
    """True for a cupy array, told by its type's module so that cupy is not
    imported to ask (``import kerasflow`` stays free of it)."""
    return type(x).__module__.startswith("cupy")


def to_numpy(value):
    """Copies a device array (or nested list/tuple/dict of them) to numpy; a
    Variable gives its current value (Keras 3's ``convert_to_numpy``)."""
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(v) for v in value)
    read = getattr(value, "numpy", None)  # Variables (no import: they sit above)
    if callable(read) and not isinstance(value, np.ndarray):
        return to_numpy(read())
    return value.get() if is_cupy_array(value) else value


def to_device(value, dtype=None):
    """Converts a numpy array or Python value to an array on the current device."""
    xp = get_xp()
    if xp is np:
        return np.asarray(value, dtype=dtype)
    return xp.asarray(to_numpy(value) if not isinstance(value, xp.ndarray) else value,
                      dtype=dtype)


def as_numpy(value, dtype=None, what=None) -> np.ndarray:
    """``value`` as a host array: Python floats and float lists in floatx, else
    ``dtype`` (checked with ``cast_checked``)."""
    value = to_numpy(value)
    dtype = None if dtype is None else as_dtype(dtype)
    if dtype is None and isinstance(value, float):
        dtype = floatx()
    if dtype is None and isinstance(value, (list, tuple)):
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            dtype = floatx()
    return cast_checked(value, dtype, what or "a value")


def cast_checked(value, dtype, what):
    """``np.asarray(value, dtype)``, refusing float overflow to inf (issue 7).

    Raises:
        ValueError: a finite value too large for ``dtype``, naming ``what``.
    """
    try:
        with np.errstate(over="raise"):
            return np.asarray(value, dtype=dtype)
    except FloatingPointError:
        big = np.abs(np.asarray(value, dtype=np.float64))
        top = float(big[np.isfinite(big)].max())
        raise ValueError(
            f"{what} expects values that fit dtype {np.dtype(dtype).name} (|x| <= "
            f"{float(np.finfo(dtype).max):.4g}). Received: |x| up to {top:.4g}, "
            f"which would overflow to inf."
        ) from None
