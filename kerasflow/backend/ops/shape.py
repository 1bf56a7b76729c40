"""Shape ops: reshape, transpose, concatenate, stack, split, expand_dims,
squeeze, broadcast_to, tile, one_hot (slicing, pad and gather: ``slicing``).

Static arguments (shapes, axes, index keys) are node attributes, plain Python
values, so graphs stay picklable.
"""

from __future__ import annotations

import builtins

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.graph import SymbolicTensor
from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.math import cast
from kerasflow.backend.registry import (
    apply, register_gradient, register_op, register_op_family,
)

__all__ = ["reshape", "transpose", "concatenate", "stack", "split", "expand_dims",
           "squeeze", "broadcast_to", "broadcast_like", "tile", "one_hot",
           "reshape_like", "shape_of", "flatten", "fill", "shape_vector"]


# -- reshape -----------------------------------------------------------------------
def _reshape_infer(x, shape):
    shape = tuple(shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape takes at most one -1. Received: shape={shape}.")
    if x.shape is None:
        return tuple(None if d == -1 else d for d in shape), x.dtype
    known = [d for d in x.shape]
    if None not in known:
        size = int(np.prod(known))
        rest = int(np.prod([d for d in shape if d != -1]))
        if -1 in shape:
            if rest == 0 or size % rest:
                raise ValueError(
                    f"cannot reshape a tensor of shape {x.shape} ({size} elements) "
                    f"to {shape}."
                )
            return tuple(size // rest if d == -1 else d for d in shape), x.dtype
        if size != rest:
            raise ValueError(
                f"cannot reshape a tensor of shape {x.shape} ({size} elements) to "
                f"{shape} ({rest} elements)."
            )
    return tuple(None if d == -1 else d for d in shape), x.dtype


@register_op("Reshape", _reshape_infer)
def _reshape(xp, x, shape):
    return xp.reshape(x, shape)


# Reshape (and Flatten, ExpandDims, Squeeze below) only move elements between
# axes: the gradient is g laid out in the input's shape.
@register_gradient("Reshape")
def _reshape_grad(node, g):
    return (reshape_like(g, node.inputs[0]),)


def reshape(x, shape):
    """Reshapes ``x`` to ``shape``.

    Args:
        x: tensor or array of any shape and dtype.
        shape: a sequence of ints, one of which may be -1 (None, or a single
            run-time scalar tensor such as ``ops.shape(x)[0]``, also means
            -1); or a shape known only at run time (TF's ``tf.reshape``): a
            1-D int tensor, or a sequence holding several scalar int tensors
            (``(s[0], s[1], 2, 2)`` with ``s = shape_of(x)``).

    Returns:
        ``x``'s elements in ``shape``, same dtype. The static shape keeps the
        int entries; a single unknown one is deduced when ``x``'s size is known.

    Raises:
        ValueError: when the element counts cannot match, naming both shapes
            (at run time for a run-time shape); more than one -1.
    """
    if isinstance(shape, SymbolicTensor) or builtins.sum(
            isinstance(d, SymbolicTensor) for d in shape) > 1:
        vector, static = shape_vector(shape, "reshape")
        return apply("ReshapeTo", x, vector, static=static)
    shape = tuple(-1 if d is None or isinstance(d, SymbolicTensor) else int(d)
                  for d in shape)
    return apply("Reshape", x, shape=shape)


def shape_vector(shape, who="a shape"):
    """``(int64 vector, static shape)`` of a shape known only at run time:
    a 1-D int tensor of known length, or a sequence mixing ints and scalar
    int tensors (``(K.shape(z)[0], 2)``); the static shape has None where
    the value is a tensor.

    Raises:
        ValueError: a vector of unknown length, or a tensor entry that is not
            a scalar, naming ``who``.
        TypeError: a tensor of a non-integer dtype.
    """
    def check_int(t):
        if t.dtype.kind not in "iu":
            raise TypeError(f"{who} expects an int shape tensor. Received: "
                            f"{I.fmt(t)}.")

    if isinstance(shape, SymbolicTensor):
        check_int(shape)
        if shape.shape is None or len(shape.shape) != 1 or shape.shape[0] is None:
            raise ValueError(f"{who} expects a shape tensor that is a vector of "
                             f"known length. Received: {shape!r}.")
        return cast(shape, "int64"), (None,) * shape.shape[0]
    parts, static = [], []
    for d in shape:
        if isinstance(d, SymbolicTensor):
            check_int(d)
            if d.shape is not None and tuple(d.shape) not in ((), (1,)):
                raise ValueError(f"{who} expects each entry of a shape to be an "
                                 f"int or a scalar int tensor. Received: {d!r}.")
            parts.append(reshape(cast(d, "int64"), (1,)))
            static.append(None)
        else:
            parts.append(np.asarray([int(d)], np.int64))
            static.append(int(d))
    return concatenate(parts, axis=0), tuple(static)


def _dims(shape_vec) -> tuple:
    """A run-time shape vector as a tuple of Python ints."""
    return tuple(int(d) for d in _array.as_numpy(shape_vec))


def _reshape_to_infer(x, shape, static):
    if list(static).count(-1) > 1:
        raise ValueError(f"reshape takes at most one -1. Received: shape={static}.")
    out = [None if d == -1 else d for d in static]
    unknown = [i for i, d in enumerate(out) if d is None]
    if x.shape is not None and None not in x.shape:
        size = int(np.prod(x.shape))
        rest = int(np.prod([d for d in out if d is not None]))
        if (not unknown and size != rest) or (
                len(unknown) == 1 and size and (not rest or size % rest)):
            raise ValueError(f"cannot reshape a tensor of shape {x.shape} ({size} "
                             f"elements) to {tuple(static)}.")
        if len(unknown) == 1 and rest:
            out[unknown[0]] = size // rest
    return tuple(out), x.dtype


@register_op("ReshapeTo", _reshape_to_infer)
def _reshape_to(xp, x, shape, static):
    return xp.reshape(x, _dims(shape))


@register_gradient("ReshapeTo")
def _reshape_to_grad(node, g):
    return reshape_like(g, node.inputs[0]), None


def _fill_infer(shape, value, static):
    if shape.dtype.kind not in "iu":
        raise TypeError(f"fill expects an int shape. Received: {I.fmt(shape)}.")
    if value.shape is not None and tuple(value.shape) != ():
        raise ValueError(f"fill expects a scalar value. Received: {I.fmt(value)}.")
    return tuple(static), value.dtype


@register_op("Fill", _fill_infer)
def _fill(xp, shape, value, static):
    return xp.full(_dims(shape), value, dtype=value.dtype)


@register_gradient("Fill")
def _fill_grad(node, g):
    return None, g  # gradients() sums g back to the scalar value's shape


def fill(shape, value):
    """A tensor of ``shape`` holding ``value`` everywhere (TF's ``tf.fill``).

    Args:
        shape: ints, or a shape known only at run time (a 1-D int tensor, or
            a sequence mixing ints and scalar int tensors, as ``reshape``).
        value: a scalar tensor, array or number; it gives the dtype (a Python
            float: floatx).

    Returns:
        Tensor of ``shape`` and ``value``'s dtype; its static shape has None
        where the shape holds a tensor. Eager (an array) when neither
        ``shape`` nor ``value`` is symbolic.

    Raises:
        ValueError: a non-scalar value; a shape vector of unknown length.
        TypeError: a non-integer shape tensor.
    """
    if isinstance(value, float):
        value = np.asarray(value, _array.floatx())
    if isinstance(shape, SymbolicTensor) or any(
            isinstance(d, SymbolicTensor) for d in shape):
        vector, static = shape_vector(shape, "fill")
    else:
        static = tuple(int(d) for d in shape)
        vector = np.asarray(static, np.int64).reshape(len(static))
    return apply("Fill", vector, value, static=static)


@register_op("ReshapeLike", lambda x, like: (like.shape, x.dtype))
def _reshape_like(xp, x, like):
    return xp.reshape(x, like.shape)


@register_gradient("ReshapeLike")
def _reshape_like_grad(node, g):
    return reshape_like(g, node.inputs[0]), None


def reshape_like(x, like):
    """Reshapes ``x`` to the runtime shape of ``like`` (same element count)."""
    return apply("ReshapeLike", x, like)


def _flatten_infer(x):
    if x.shape is None:
        return (None, None), x.dtype
    if not x.shape:
        raise ValueError("flatten needs a tensor of rank >= 1. Received: shape ().")
    rest = x.shape[1:]
    return (x.shape[0], None if None in rest else int(np.prod(rest))), x.dtype


@register_op("Flatten", _flatten_infer)
def _flatten(xp, x):
    return xp.reshape(x, (x.shape[0], -1))


def flatten(x):
    """Reshapes (batch, ...) to (batch, prod(...)); (batch,) becomes (batch, 1).

    Trailing dims may be unknown until run time (the op reads the runtime shape).
    """
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape) >= 1 and None not in shape[1:]:
        return reshape(x, (-1, int(np.prod(shape[1:]))))
    return apply("Flatten", x)


@register_op("Shape", lambda x: ((None if x.shape is None else len(x.shape),), "int64"),
             differentiable=False)
def _shape(xp, x):
    return xp.asarray(x.shape, dtype="int64")


def shape_of(x):
    """The runtime shape of ``x`` as an int64 vector."""
    return apply("Shape", x)


# -- transpose ---------------------------------------------------------------------
def _transpose_infer(x, perm=None):
    if x.shape is None:
        return None, x.dtype
    perm = tuple(reversed(range(len(x.shape)))) if perm is None else perm
    if sorted(perm) != list(range(len(x.shape))):
        raise ValueError(f"perm {perm} is not a permutation of the axes of a tensor "
                         f"of shape {x.shape}.")
    return tuple(x.shape[p] for p in perm), x.dtype


@register_op("Transpose", _transpose_infer)
def _transpose(xp, x, perm=None):
    return xp.transpose(x, perm)


@register_gradient("Transpose")
def _transpose_grad(node, g):
    perm = node.attrs["perm"]
    if perm is None:
        return (transpose(g),)
    return (transpose(g, tuple(int(i) for i in np.argsort(perm))),)


def transpose(x, perm=None):
    """Permutes axes (reverses them when ``perm`` is None)."""
    return apply("Transpose", x, perm=None if perm is None else tuple(perm))


# -- expand_dims, squeeze ------------------------------------------------------------
def _expand_infer(x, axis):
    if x.shape is None:
        return None, x.dtype
    n = len(x.shape) + 1
    if not -n <= axis < n:
        raise ValueError(f"axis {axis} is out of range for a result of rank {n}.")
    shape = list(x.shape)
    shape.insert(axis % n, 1)
    return tuple(shape), x.dtype


@register_op("ExpandDims", _expand_infer)
def _expand_dims(xp, x, axis):
    return xp.expand_dims(x, axis)


def expand_dims(x, axis):
    """Inserts an axis of size 1 at ``axis``."""
    return apply("ExpandDims", x, axis=int(axis))


def _squeeze_infer(x, axis=None):
    if x.shape is None:
        return None, x.dtype
    if axis is None:
        return tuple(d for d in x.shape if d != 1), x.dtype
    axes = I.norm_axis(axis, len(x.shape))
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ValueError(f"cannot squeeze axis {a} of size {x.shape[a]} "
                             f"(shape {x.shape}).")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype


@register_op("Squeeze", _squeeze_infer)
def _squeeze(xp, x, axis=None):
    return xp.squeeze(x, axis)


for _op in ("Flatten", "ExpandDims", "Squeeze"):
    register_gradient(_op)(_reshape_grad)


def squeeze(x, axis=None):
    """Removes axes of size 1 (all of them when ``axis`` is None)."""
    if axis is not None and not isinstance(axis, int):
        axis = tuple(axis)
    return apply("Squeeze", x, axis=axis)


# -- broadcast_to, broadcast_like, tile -----------------------------------------------
def _broadcast_to_infer(x, shape):
    out = I.broadcast_dims(x.shape, shape)
    if out is not None and tuple(out) != tuple(shape):
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}.")
    return tuple(shape), x.dtype


@register_op("BroadcastTo", _broadcast_to_infer)
def _broadcast_to(xp, x, shape):
    return xp.broadcast_to(x, shape)


@register_gradient("BroadcastTo")
def _broadcast_to_grad(node, g):
    return (g,)  # gradients() sums back to the input's shape


def broadcast_to(x, shape):
    """Broadcasts ``x`` to a static ``shape`` (numpy rules)."""
    return apply("BroadcastTo", x, shape=tuple(int(d) for d in shape))


@register_op("BroadcastLike", lambda x, like: (I.broadcast_dims(x.shape, like.shape),
                                               x.dtype))
def _broadcast_like(xp, x, like):
    return xp.broadcast_to(x, xp.broadcast_shapes(x.shape, like.shape)
                           if hasattr(xp, "broadcast_shapes") else like.shape)


@register_gradient("BroadcastLike")
def _broadcast_like_grad(node, g):
    return g, None


def broadcast_like(x, like):
    """Broadcasts ``x`` against the runtime shape of ``like``."""
    return apply("BroadcastLike", x, like)


def _tile_infer(x, multiples):
    if x.shape is None:
        return None, x.dtype
    if len(multiples) != len(x.shape):
        raise ValueError(f"tile needs one multiple per axis: shape {x.shape}, "
                         f"multiples {multiples}.")
    return tuple(None if d is None else d * m for d, m in zip(x.shape, multiples)), \
        x.dtype


@register_op("Tile", _tile_infer)
def _tile(xp, x, multiples):
    return xp.tile(x, multiples)


@register_gradient("Tile")
def _tile_grad(node, g):
    x = node.inputs[0]
    m = node.attrs["multiples"]
    return (apply("TileGrad", g, x, multiples=m),)


@register_op("TileGrad", lambda g, x, multiples: (x.shape, g.dtype))
def _tile_grad_kernel(xp, g, x, multiples):
    split_shape = []
    for mult, d in zip(multiples, x.shape):
        split_shape += [mult, d]
    return g.reshape(split_shape).sum(axis=tuple(range(0, 2 * x.ndim, 2)))


@register_gradient("TileGrad")
def _tile_grad_grad(node, gg):
    return tile(gg, node.attrs["multiples"]), None


def tile(x, multiples):
    """Repeats ``x`` ``multiples[i]`` times along each axis i."""
    return apply("Tile", x, multiples=tuple(int(m) for m in multiples))


# -- concatenate, stack, split -------------------------------------------------------
def _concat_infer(*xs, axis=0):
    ranks = {len(x.shape) for x in xs if x.shape is not None}
    if len(ranks) > 1:
        raise ValueError(f"concatenate needs inputs of one rank. Received shapes: "
                         f"{[x.shape for x in xs]}.")
    if not ranks:
        return None, I.result_dtype(*xs)
    n = ranks.pop()
    ax = I.norm_axis(axis, n)[0]
    out = []
    for i in range(n):
        dims = [x.shape[i] for x in xs]
        if i == ax:
            out.append(None if None in dims else builtins.sum(dims))
        else:
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise ValueError(f"concatenate on axis {axis} needs the other dims "
                                 f"to match. Received shapes: "
                                 f"{[x.shape for x in xs]}.")
            out.append(known.pop() if known else None)
    return tuple(out), I.result_dtype(*xs)


@register_op("Concat", _concat_infer)
def _concat(xp, *xs, axis=0):
    return xp.concatenate(xs, axis=axis)


def _split_like_infer(g, *likes, axis=0):
    return [(x.shape, g.dtype) for x in likes]


def _split_like_kernel(xp, g, *likes, axis=0):
    # Basic slicing gives the views xp.split gives, without its Python
    # set-up (~15 us for two pieces); the last piece runs to the end, as there.
    index = [slice(None)] * g.ndim
    ax = axis % g.ndim
    pieces, start = [], 0
    for i, x in enumerate(likes):
        stop = None if i == len(likes) - 1 else start + x.shape[axis]
        index[ax] = slice(start, stop)
        pieces.append(g[tuple(index)])
        start = stop
    return tuple(pieces)


def concatenate(tensors, axis=-1):
    """Joins tensors along an existing ``axis`` (Keras' default: the last)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("concatenate needs at least one tensor.")
    return apply("Concat", *tensors, axis=int(axis))


def stack(tensors, axis=0):
    """Joins tensors of one shape along a new ``axis``."""
    return concatenate([expand_dims(t, axis) for t in tensors], axis=axis)


# Ops registered on demand, one per output count; see register_op_family.
_ON_DEMAND: set[str] = set()


def _register_pieces(family, n, infer, kernel, extra_inputs):
    """The op ``family + n`` with n outputs, pieces of its first input along
    ``axis``, registered on first use: its gradient concatenates the pieces'
    gradients (None for the ``extra_inputs`` inputs after the first)."""
    name = f"{family}{n}"
    if name not in _ON_DEMAND:
        _ON_DEMAND.add(name)
        register_op(name, infer, num_outputs=n)(kernel)
        register_gradient(name)(
            lambda node, *gs: (concatenate(list(gs), axis=node.attrs["axis"]),)
            + (None,) * extra_inputs
        )
    return name


def _register_split_like(n):
    return _register_pieces("SplitLike", n, _split_like_infer, _split_like_kernel, n)


def _apply_split_like(g, *likes, axis):
    return apply(_register_split_like(len(likes)), g, *likes, axis=axis)


def _split_infer(x, num_or_size_splits, axis=0):
    if x.shape is None:
        raise ValueError("split needs a tensor of known rank.")
    ax = I.norm_axis(axis, len(x.shape))[0]
    d = x.shape[ax]
    if isinstance(num_or_size_splits, int):
        n = num_or_size_splits
        if d is not None and d % n:
            raise ValueError(f"cannot split axis {axis} of size {d} into {n} equal "
                             f"parts.")
        sizes = [None if d is None else d // n] * n
    else:
        sizes = list(num_or_size_splits)
        if d is not None and builtins.sum(sizes) != d:
            raise ValueError(f"split sizes {sizes} do not add up to axis {axis} of "
                             f"size {d}.")
    out = []
    for s in sizes:
        shape = list(x.shape)
        shape[ax] = s
        out.append((tuple(shape), x.dtype))
    return out


def _split_kernel(xp, x, num_or_size_splits, axis=0):
    if isinstance(num_or_size_splits, int):
        return tuple(xp.split(x, num_or_size_splits, axis=axis))
    idx = np.cumsum(num_or_size_splits)[:-1]
    return tuple(xp.split(x, idx, axis=axis))


def _register_split(n):
    return _register_pieces("Split", n, _split_infer, _split_kernel, 0)


register_op_family("SplitLike", _register_split_like)
register_op_family("Split", _register_split)


def split(x, num_or_size_splits, axis=0):
    """Splits ``x`` along ``axis`` into equal parts or parts of the given sizes.

    Returns:
        A list of tensors.
    """
    if not isinstance(num_or_size_splits, int):
        num_or_size_splits = tuple(int(s) for s in num_or_size_splits)
    n = num_or_size_splits if isinstance(num_or_size_splits, int) else \
        len(num_or_size_splits)
    return list(apply(_register_split(n), x, num_or_size_splits=num_or_size_splits,
                      axis=int(axis)))


@register_gradient("Concat")
def _concat_grad(node, g):
    # One SplitLike op per input count: its number of outputs is static.
    return _apply_split_like(g, *node.inputs, axis=node.attrs["axis"])


# -- one_hot ----------------------------------------------------------------------
def _one_hot_infer(indices, depth, dtype="float32", axis=-1):
    if indices.dtype.kind not in "iu":
        raise TypeError(f"one_hot indices must be integers. Received: "
                        f"{I.fmt(indices)}.")
    if indices.shape is None:
        return None, np.dtype(dtype)
    return indices.shape + (depth,), np.dtype(dtype)


@register_op("OneHot", _one_hot_infer, differentiable=False)
def _one_hot(xp, indices, depth, dtype="float32", axis=-1):
    # Out-of-range indices give an all-zero row, as in TF.
    return (indices[..., None] == xp.arange(depth)).astype(dtype)


def one_hot(indices, depth, dtype="float32"):
    """One-hot encodes int ``indices`` to a new last axis of size ``depth``."""
    return apply("OneHot", indices, depth=int(depth), dtype=np.dtype(dtype).name)
