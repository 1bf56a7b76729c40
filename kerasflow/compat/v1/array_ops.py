"""TF1 tensor creation, random and shape ops, mapped onto the backend's.

Every function returns a graph tensor recorded in the default graph; numeric
inputs are turned into constants first, as TF1 did (``tf.add(1, 2)`` is a
tensor ``sess.run`` evaluates). Axes are static Python values; the shapes of
``zeros``, ``ones``, ``fill``, ``reshape`` and the random ops may also be
known only at run time, as in TF: a 1-D int tensor (``tf.shape(x)``) or a
list mixing ints and scalar int tensors (``[s[0] * s[1], 4]``).
"""

from __future__ import annotations

import builtins

import numpy as np

from kerasflow import backend as K
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.dtypes import resolve

__all__ = [
    "placeholder", "placeholder_with_default", "constant", "zeros", "ones", "fill",
    "zeros_like", "ones_like", "range", "linspace", "lin_space", "eye",
    "random_normal", "random_uniform", "truncated_normal", "set_random_seed",
    "reshape", "transpose", "concat", "stack", "unstack", "split", "gather",
    "slice", "expand_dims", "squeeze", "tile", "pad", "where", "shape", "size",
    "rank", "one_hot", "cast", "identity", "stop_gradient", "to_float",
    "to_int32", "to_int64", "to_double", "newaxis", "convert_to_tensor",
    "group", "no_op", "tuple", "reverse", "reverse_v2",
]

newaxis = None
_t = G.as_tensor


def _static_shape(shape, who):
    if _at_run_time(shape):
        raise TypeError(f"{who} in kerasflow.compat.v1 needs a static shape (ints). "
                        f"Received: a tensor {shape!r}; use zeros_like/ones_like "
                        f"for a shape known only at run time.")
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return builtins.tuple(int(d) for d in shape)


def _at_run_time(shape) -> bool:
    """Whether ``shape`` is a tensor or a list holding one (TF's dynamic shapes)."""
    return isinstance(shape, K.SymbolicTensor) or (
        isinstance(shape, (list, builtins.tuple))
        and any(isinstance(d, K.SymbolicTensor) for d in shape))


def placeholder(dtype, shape=None, name=None):
    """A value fed at run time; ``dtype`` as TF1 ("float" is float32)."""
    return G.track(K.placeholder(resolve(dtype), shape, name))


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    """``input`` unless a value is fed for it (of ``shape``)."""
    value = _t(input)
    out = K.identity(value)
    out.spec = K.TensorSpec(shape, value.dtype)
    return G.track(out)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    return _t(value, resolve(dtype))


def constant(value, dtype=None, shape=None, name=None, verify_shape=False):
    """A graph constant; with ``shape``, a scalar is filled and an array
    reshaped to it, as in TF1.

    Raises:
        ValueError: an array whose size does not fit ``shape``.
    """
    dtype = resolve(dtype)
    arr = np.asarray(K.to_numpy(value))
    if dtype is None and not isinstance(value, np.ndarray):
        if arr.dtype == np.float64:
            arr = arr.astype(K.floatx())
        elif arr.dtype == np.int64:
            arr = arr.astype(np.int32)
    elif dtype is not None:
        arr = arr.astype(dtype)
    if shape is not None:
        shape = _static_shape(shape, "constant")
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"constant expects {int(np.prod(shape))} values for "
                             f"shape {shape}. Received: {arr.size} values.")
    return G.track(K.constant(arr, name=name))


def zeros(shape, dtype="float32", name=None):
    """Zeros of ``shape``: ints (a constant), or a shape known at run time
    (a 1-D int tensor, or ints mixed with scalar int tensors)."""
    return fill(shape, np.zeros((), resolve(dtype)))


def ones(shape, dtype="float32", name=None):
    """Ones of ``shape`` (ints, or a run-time shape as ``zeros``)."""
    return fill(shape, np.ones((), resolve(dtype)))


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` filled with the scalar ``value``.

    Args:
        dims: ints, or a shape known at run time: a 1-D int tensor
            (``tf.shape(x)``) or a list mixing ints and scalar int tensors.
        value: a scalar (a Python float is float32, an int int32) or a scalar
            graph tensor (e.g. computed in a ``Dataset.map`` function).

    Returns:
        A tensor of ``value``'s dtype; its static shape keeps the int dims.

    Raises:
        ValueError: a non-scalar ``value``. TypeError: a float shape tensor.
    """
    if not isinstance(value, K.SymbolicTensor):
        typed = isinstance(value, (np.ndarray, np.generic))
        value = np.asarray(value)
        if not typed and value.dtype == np.float64:
            value = value.astype(K.floatx())
        elif not typed and value.dtype == np.int64:
            value = value.astype(np.int32)
        if not _at_run_time(dims):
            return constant(np.full(_static_shape(dims, "fill"), value, value.dtype))
    elif not _at_run_time(dims):
        return G.track(K.broadcast_to(value, _static_shape(dims, "fill")))
    return G.track(K.fill(dims, value))


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    return G.track(K.zeros_like(_t(tensor), resolve(dtype)))


def ones_like(tensor, dtype=None, name=None, optimize=True):
    return G.track(K.ones_like(_t(tensor), resolve(dtype)))


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """``np.arange`` as a constant; int32 for int arguments, float32 for floats."""
    if limit is None:
        start, limit = 0, start
    arr = np.arange(start, limit, delta)
    return constant(arr, dtype)


def linspace(start, stop, num, name=None, axis=0):
    return constant(np.linspace(start, stop, int(num)).astype(K.floatx()))


lin_space = linspace


def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32", name=None):
    return constant(np.eye(num_rows, num_columns, dtype=resolve(dtype)))


# -- random ---------------------------------------------------------------------------
def set_random_seed(seed: int) -> None:
    """The graph-level seed: random ops and initializers created afterwards with
    seed=None draw reproducible values (TF1's ``tf.set_random_seed``)."""
    K.set_random_seed(seed)
    G.get_default_graph().seed = int(seed)


def _anchor(shape, dtype):
    """A zeros tensor of ``shape`` (static or run-time) for a ``*_like`` draw."""
    if _at_run_time(shape):
        return K.fill(shape, np.zeros((), dtype))
    return K.constant(np.zeros(_static_shape(shape, "a random op"), dtype))


def random_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None,
                  name=None):
    """Normal values drawn anew at every run (and once for a Variable's value)."""
    dtype = resolve(dtype)
    return G.track(K.random_normal_like(_anchor(shape, dtype), mean, stddev,
                                        dtype.name, seed))


def random_uniform(shape, minval=0, maxval=None, dtype="float32", seed=None,
                   name=None):
    """Uniform values in [minval, maxval) (maxval 1 by default), drawn per run;
    for an integer dtype, integers in [minval, maxval) (``maxval`` required).

    Raises:
        ValueError: an integer dtype without ``maxval``, or maxval <= minval.
    """
    dtype = resolve(dtype)
    if dtype.kind in "iu":
        if maxval is None or int(maxval) <= int(minval):
            raise ValueError(f"tf.random.uniform with dtype {dtype.name} needs an "
                             f"int maxval > minval. Received: minval={minval}, "
                             f"maxval={maxval}.")
        # floor of a float64 draw; the clip keeps a draw rounded up to maxval out.
        u = K.random_uniform_like(_anchor(shape, np.float64), float(minval),
                                  float(maxval), "float64", seed)
        return G.track(K.cast(K.clip(K.floor(u), float(minval), float(maxval) - 1),
                              dtype.name))
    if dtype.kind != "f":
        raise TypeError(f"tf.random.uniform draws float or integer values. "
                        f"Received: dtype={dtype.name}.")
    return G.track(K.random_uniform_like(_anchor(shape, dtype), minval,
                                         1.0 if maxval is None else maxval,
                                         dtype.name, seed))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None,
                     name=None):
    """Normal values redrawn beyond 2 stddev. With a static shape, drawn once,
    when the graph is built (TF1 programs use it for initial values, where
    this is the same); with a run-time shape, drawn anew at every run."""
    if _at_run_time(shape):
        return G.track(K.truncated_normal(shape, mean, stddev, resolve(dtype).name,
                                          seed))
    return constant(K.truncated_normal(_static_shape(shape, "truncated_normal"),
                                       mean, stddev, resolve(dtype).name, seed))


# -- shapes -------------------------------------------------------------------------
def reshape(tensor, shape, name=None):
    """``tensor`` in ``shape``: ints (one may be -1), or a shape known at run
    time (a 1-D int tensor, or a list mixing ints and scalar int tensors such
    as ``[s[0] * s[1], 4]`` with ``s = tf.shape(x)``).

    Raises:
        ValueError: element counts that cannot match (when the graph is built
            if both shapes are known, else when it runs); more than one -1.
    """
    if _at_run_time(shape):
        return G.track(K.reshape(_t(tensor), shape))
    return G.track(K.reshape(_t(tensor), _static_shape(shape, "reshape")))


def reverse(tensor, axis, name=None):
    """``tensor`` reversed along each axis in ``axis`` (TF's ``tf.reverse``:
    a list of distinct ints; TF1's ``reverse_v2``).

    Raises:
        TypeError: ``axis`` not an int or a list of ints.
        ValueError: an axis out of range or listed twice.
    """
    x = _t(tensor)
    axes = [axis] if isinstance(axis, (int, np.integer)) else axis
    if isinstance(axes, K.SymbolicTensor) or not all(
            isinstance(a, (int, np.integer)) for a in axes):
        raise TypeError(f"tf.reverse expects axis as a list of ints. Received: "
                        f"axis={axis!r}.")
    if x.shape is None:
        raise ValueError("tf.reverse expects a tensor of known rank. Received: "
                         f"{x!r}.")
    n = len(x.shape)
    norm = [int(a) % n if n and -n <= int(a) < n else None for a in axes]
    if None in norm or len(set(norm)) != len(norm):
        raise ValueError(f"tf.reverse expects distinct axes in [-{n}, {n}) for a "
                         f"tensor of rank {n}. Received: axis={list(axes)}.")
    if not norm:
        return identity(x)
    return G.track(K.flip(x, builtins.tuple(norm)))


reverse_v2 = reverse


def transpose(a, perm=None, name="transpose", conjugate=False):
    return G.track(K.transpose(_t(a), None if perm is None else builtins.tuple(perm)))


def concat(values, axis, name="concat"):
    return G.track(K.concatenate([_t(v) for v in values], axis=axis))


def stack(values, axis=0, name="stack"):
    return G.track(K.stack([_t(v) for v in values], axis=axis))


def unstack(value, num=None, axis=0, name="unstack"):
    """The slices of ``value`` along ``axis``, as a list.

    Raises:
        ValueError: the size along ``axis`` is unknown and ``num`` not given.
    """
    value = _t(value)
    n = num if num is not None else (value.shape or [None] * (axis + 1))[axis]
    if n is None:
        raise ValueError(f"Cannot infer num from shape {value.shape}.")
    parts = K.split(value, int(n), axis=axis)
    return [G.track(K.squeeze(p, axis)) for p in parts]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    return G.track(list(K.split(_t(value), num_or_size_splits, axis=axis)))


def gather(params, indices, validate_indices=None, name=None, axis=None,
           batch_dims=0):
    return G.track(K.gather(_t(params), _t(indices), axis=axis or 0))


def slice(input_, begin, size, name=None):  # noqa: A001
    """``input_[begin[i] : begin[i] + size[i]]`` per axis; size -1 = to the end."""
    key = builtins.tuple(
        builtins.slice(int(b), None if int(s) == -1 else int(b) + int(s))
        for b, s in zip(begin, size))
    return G.track(K.getitem(_t(input_), key))


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    return G.track(K.expand_dims(_t(input), dim if axis is None else axis))


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    axis = squeeze_dims if axis is None else axis
    if isinstance(axis, list):
        axis = builtins.tuple(axis)
    return G.track(K.squeeze(_t(input), axis))


def tile(input, multiples, name=None):  # noqa: A002
    return G.track(K.tile(_t(input), builtins.tuple(int(m) for m in multiples)))


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    return G.track(K.pad(_t(tensor), paddings, mode.lower(), constant_values))


def where(condition, x=None, y=None, name=None):
    """Elementwise ``x if condition else y`` (TF1 ``tf.where`` with x and y).

    Raises:
        NotImplementedError: the one-argument form (coordinates of true
            elements), whose result size is data-dependent.
    """
    if x is None or y is None:
        raise NotImplementedError("tf.where(condition) without x and y (indices of "
                                  "true elements) is not provided by "
                                  "kerasflow.compat.v1.")
    return G.track(K.where(_t(condition), _t(x), _t(y)))


def shape(input, name=None, out_type="int32"):  # noqa: A002
    return G.track(K.cast(K.shape_of(_t(input)), resolve(out_type)))


def size(input, name=None, out_type="int32"):  # noqa: A002
    return G.track(K.cast(K.prod(K.shape_of(_t(input))), resolve(out_type)))


def rank(input, name=None):  # noqa: A002
    return constant(np.int32(_t(input).ndim))


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name=None):
    """One-hot along a new last axis; ``on_value``/``off_value`` scale it."""
    if axis not in (None, -1):
        raise NotImplementedError("tf.one_hot with axis other than -1 is not "
                                  "provided by kerasflow.compat.v1.")
    # (np.dtype objects are falsy: test for None explicitly.)
    dtype = np.dtype("float32") if dtype is None else resolve(dtype)
    out = K.one_hot(_t(indices), depth, dtype.name)
    if on_value is not None or off_value is not None:
        on = 1 if on_value is None else on_value
        off = 0 if off_value is None else off_value
        out = K.add(K.multiply(out, np.asarray(on - off, dtype)),
                    np.asarray(off, dtype))
    return G.track(out)


def cast(x, dtype, name=None):
    return G.track(K.cast(_t(x), resolve(dtype)))


def to_float(x, name="ToFloat"):
    return cast(x, "float32")


def to_double(x, name="ToDouble"):
    return cast(x, "float64")


def to_int32(x, name="ToInt32"):
    return cast(x, "int32")


def to_int64(x, name="ToInt64"):
    return cast(x, "int64")


def identity(input, name=None):  # noqa: A002
    return G.track(K.identity(_t(input)))


def stop_gradient(input, name=None):  # noqa: A002
    return G.track(K.stop_gradient(_t(input)))


def group(*inputs, name=None):
    """One op running all ``inputs`` (TF1 ``tf.group``); fetching it gives None."""
    return G.track(K.group(*inputs, name=name))


def no_op(name=None):
    return G.track(K.no_op(name))


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001
    return list(tensors)
