"""Keras 3 spellings of everyday ops and backend helpers, on the graph backend.

Keras 3 code calls ``keras.ops.zeros``, ``keras.ops.shape(x)``,
``keras.ops.one_hot(x, num_classes)`` and ``keras.backend.epsilon()``; these are
those callables, built from backend ops (no kernel of their own). Given arrays
they compute at once; given symbolic tensors they add graph nodes. TF1 names
(``placeholder``, ``reduce_*`` in ``compat.v1``) live beside them, unchanged.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.graph import SymbolicTensor, is_symbolic
from kerasflow.backend import ops as _math  # math and elementwise ops
from kerasflow.backend.ops import reduction as _red
from kerasflow.backend.ops import shape as _shape

__all__ = ["zeros", "ones", "full", "arange", "array", "convert_to_numpy",
           "convert_to_tensor",
           "shape", "int_shape", "one_hot", "l2_normalize", "epsilon",
           "set_epsilon", "image_data_format", "set_image_data_format",
           "standardize_data_format",
           "get_value", "set_value"]

_EPSILON = [1e-7]
_DATA_FORMAT = ["channels_last"]


def _dtype(dtype):
    return np.dtype(_array.floatx() if dtype is None else dtype)


def zeros(shape, dtype=None):
    """An array of zeros of ``shape`` (floatx by default), as ``keras.ops.zeros``."""
    return _array.to_device(np.zeros(shape, _dtype(dtype)))


def ones(shape, dtype=None):
    """An array of ones of ``shape`` (floatx by default)."""
    return _array.to_device(np.ones(shape, _dtype(dtype)))


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (floatx by default)."""
    return _array.to_device(np.full(shape, fill_value, _dtype(dtype)))


def arange(start, stop=None, step=1, dtype=None):
    """``numpy.arange``; int64 for int arguments, else floatx (Keras' rule)."""
    ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step)
               if v is not None)
    dt = np.dtype(dtype) if dtype is not None else (
        np.dtype("int64") if ints else _dtype(None))
    return _array.to_device(np.arange(start, stop, step, dtype=dt))


def array(x, dtype=None):
    """A device array from array-like ``x`` (Python floats become floatx); a
    device (cupy) array stays where it is."""
    if _array.is_cupy_array(x):
        return x if dtype is None else x.astype(np.dtype(dtype), copy=False)
    value = np.asarray(x)
    if dtype is None and value.dtype == np.float64 and not isinstance(
            x, np.ndarray):
        dtype = _array.floatx()
    return _array.to_device(np.asarray(value, dtype=dtype))


def convert_to_tensor(x, dtype=None):
    """Symbolic tensors pass through (cast if ``dtype``); others become arrays."""
    if is_symbolic(x):
        return x if dtype is None or x.dtype == np.dtype(dtype) else _math.cast(
            x, dtype)
    return array(x, dtype)


def convert_to_numpy(x):
    """A numpy array of ``x``: arrays (cupy ones copied to the host), Python
    values, and Variables (their current value) (Keras 3's ``convert_to_numpy``).

    Raises:
        TypeError: a symbolic tensor (it has no value until run).
    """
    value = _array.to_numpy(x)  # a Variable gives its value here
    if is_symbolic(value):
        raise TypeError(f"convert_to_numpy needs a concrete value; a symbolic "
                        f"tensor has none until it runs. Received: {x!r}.")
    return np.asarray(value)


def shape(x) -> tuple:
    """The shape as a tuple: ints, and for a symbolic tensor's dimensions
    unknown until run time, int64 scalar tensors that hold them when the
    graph runs (Keras 3's ``ops.shape`` on TensorFlow, where they are
    ``tf.shape(x)[i]``), so a layer can write ``batch = ops.shape(z)[0]``
    and ``keras.random.normal(shape=(batch, dim))`` (keras.io's VAE).
    ``x.shape`` keeps None for them.

    Raises:
        ValueError: a symbolic tensor of unknown rank.
    """
    if isinstance(x, SymbolicTensor):
        if x.shape is None:
            raise ValueError(f"shape() needs a tensor of known rank. Received: "
                             f"{x!r}.")
        if all(d is not None for d in x.shape):
            return tuple(x.shape)
        dynamic = _shape.shape_of(x)
        return tuple(dynamic[i] if d is None else d for i, d in enumerate(x.shape))
    return tuple(np.shape(x))


def int_shape(x):
    """Keras 2's ``K.int_shape``: the static shape tuple (None when unknown)."""
    if isinstance(x, SymbolicTensor):
        return None if x.shape is None else tuple(x.shape)
    return tuple(np.shape(x))


def one_hot(x, num_classes, axis=-1, dtype=None):
    """One-hot encoding of class indices; whole-number float labels accepted.

    Args:
        x: int or float tensor/array of class indices (floats must be whole).
        num_classes: int, size of the new last axis.

    Returns:
        Tensor of shape x.shape + (num_classes,), floatx by default; rows of
        out-of-range indices are all zero (TF's rule).

    Raises:
        ValueError: non-whole float labels given as an array, naming one.
    """
    if isinstance(axis, (str, np.dtype, type)):  # one_hot(x, depth, dtype) (TF order)
        axis, dtype = -1, axis
    if axis != -1:
        raise NotImplementedError(f"one_hot supports axis=-1 only. Received: "
                                  f"axis={axis}.")
    if not is_symbolic(x):
        x = np.asarray(_array.to_numpy(x))
        if x.dtype.kind == "f":
            if (x != np.round(x)).any():
                raise ValueError(f"one_hot needs whole-number class indices. "
                                 f"Received: {x[x != np.round(x)].flat[0]!r}.")
            x = x.astype(np.int64)
    elif x.dtype.kind == "f":
        x = _math.cast(x, "int64")
    return _shape.one_hot(x, num_classes, dtype=_dtype(dtype).name)


def l2_normalize(x, axis=-1, epsilon=1e-12):
    """``x / sqrt(max(sum(x**2, axis), epsilon))`` (TF's ``l2_normalize``)."""
    sq = _red.sum(_math.square(x), axis=axis, keepdims=True)
    return x / _math.sqrt(_math.maximum(sq, epsilon))


def epsilon() -> float:
    """The fuzz factor Keras adds to denominators (default 1e-7)."""
    return _EPSILON[0]


def set_epsilon(value: float) -> None:
    """Sets ``epsilon()``."""
    _EPSILON[0] = float(value)


def image_data_format() -> str:
    """The layout image layers use when given ``data_format=None`` (Keras 3's
    ``image_data_format``): 'channels_last' (NHWC, the default) or
    'channels_first' (NCHW)."""
    return _DATA_FORMAT[0]


def set_image_data_format(data_format: str) -> None:
    """Sets ``image_data_format()`` (Keras 3's ``set_image_data_format``).

    Layers read it when they are created, so it applies to layers made after
    the call.

    Raises:
        ValueError: a value other than 'channels_first' or 'channels_last'.
    """
    # str(): None is no layout here, and raises as any other bad value.
    _DATA_FORMAT[0] = standardize_data_format(str(data_format))


def standardize_data_format(data_format: str | None) -> str:
    """Keras 3's rule for a layer's ``data_format``: None means
    ``image_data_format()``; else 'channels_first' or 'channels_last' (any case).

    Raises:
        ValueError: any other value, naming it.
    """
    if data_format is None:
        return image_data_format()
    fmt = str(data_format).lower()
    if fmt not in ("channels_first", "channels_last"):
        raise ValueError(
            f"The `data_format` argument must be one of {{'channels_first', "
            f"'channels_last'}}. Received: data_format={data_format!r}.")
    return fmt


def get_value(x):
    """Keras 2's ``K.get_value``: a Variable's (or learning rate's) value as numpy.
    """
    if hasattr(x, "numpy"):
        return x.numpy()
    return np.asarray(_array.to_numpy(x))


def set_value(x, value) -> None:
    """Keras 2's ``K.set_value``: ``x.assign(value)`` on a Variable or learning
    rate.

    Raises:
        TypeError: ``x`` has no ``assign``.
    """
    if not hasattr(x, "assign"):
        raise TypeError(f"set_value needs a Variable. Received: {type(x).__name__}.")
    x.assign(value)
