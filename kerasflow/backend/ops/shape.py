"""Shape ops: reshape, transpose, concatenate, stack, split, slicing, expand_dims,
squeeze, broadcast_to, tile, pad, gather, one_hot.

Static arguments (shapes, axes, index keys) are node attributes, plain Python
values, so graphs stay picklable.
"""

from __future__ import annotations

import builtins

import numpy as np

from kerasflow.backend.graph import SymbolicTensor
from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import (
    apply, register_gradient, register_op, register_op_family,
)

__all__ = ["reshape", "transpose", "concatenate", "stack", "split", "getitem",
           "expand_dims", "squeeze", "broadcast_to", "broadcast_like", "tile", "pad",
           "gather", "take", "one_hot", "reshape_like", "shape_of", "flatten"]


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


@register_gradient("Reshape")
def _reshape_grad(node, g):
    return (reshape_like(g, node.inputs[0]),)


def reshape(x, shape):
    """Reshapes ``x``; one entry of ``shape`` may be -1 (None also means -1).

    Raises:
        ValueError: when the element counts cannot match, naming both shapes.
    """
    shape = tuple(-1 if d is None else int(d) for d in shape)
    return apply("Reshape", x, shape=shape)


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


@register_gradient("Flatten")
def _flatten_grad(node, g):
    return (reshape_like(g, node.inputs[0]),)


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


@register_gradient("ExpandDims")
def _expand_dims_grad(node, g):
    return (reshape_like(g, node.inputs[0]),)


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


@register_gradient("Squeeze")
def _squeeze_grad(node, g):
    return (reshape_like(g, node.inputs[0]),)


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
    idx = np.cumsum([x.shape[axis] for x in likes])[:-1]
    return tuple(xp.split(g, idx, axis=axis))


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


def _register_split_like(n):
    name = f"SplitLike{n}"
    if name not in _ON_DEMAND:
        _ON_DEMAND.add(name)
        register_op(name, _split_like_infer, num_outputs=n)(_split_like_kernel)
        register_gradient(name)(
            lambda node, *gs: (concatenate(list(gs), axis=node.attrs["axis"]),)
            + (None,) * n
        )
    return name


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
    name = f"Split{n}"
    if name not in _ON_DEMAND:
        _ON_DEMAND.add(name)
        register_op(name, _split_infer, num_outputs=n)(_split_kernel)
        register_gradient(name)(
            lambda node, *gs: (concatenate(list(gs), axis=node.attrs["axis"]),))
    return name


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


# -- slicing -------------------------------------------------------------------------
def _norm_key(key):
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, slice):
            out.append(("s", k.start, k.stop, k.step))
        elif k is None:
            out.append(("n",))
        elif k is Ellipsis:
            out.append(("e",))
        elif isinstance(k, (int, np.integer)):
            out.append(("i", int(k)))
        else:
            raise TypeError(f"Index entries are ints, slices, None or Ellipsis. "
                            f"Received: {k!r}.")
    return tuple(out)


def _key(spec):
    out = []
    for k in spec:
        if k[0] == "s":
            out.append(slice(k[1], k[2], k[3]))
        elif k[0] == "n":
            out.append(None)
        elif k[0] == "e":
            out.append(Ellipsis)
        else:
            out.append(k[1])
    return tuple(out)


def _slice_infer(x, key):
    if x.shape is None:
        return None, x.dtype
    # Index zero-stride stand-ins in which unknown dims take two different large
    # sizes: a result dim that changes with them is unknown.
    shapes = []
    for big in (1_000_003, 2_000_029):
        probe_shape = [big if d is None else d for d in x.shape]
        try:
            probe = np.broadcast_to(np.zeros((), x.dtype), probe_shape)[_key(key)]
        except IndexError as e:
            raise ValueError(f"index {_key(key)} is invalid for shape {x.shape}: "
                             f"{e}") from None
        shapes.append(probe.shape)
    return tuple(a if a == b else None for a, b in zip(*shapes)), x.dtype


@register_op("StridedSlice", _slice_infer)
def _strided_slice(xp, x, key):
    return x[_key(key)]


@register_gradient("StridedSlice")
def _strided_slice_grad(node, g):
    return (apply("StridedSliceGrad", g, node.inputs[0], key=node.attrs["key"]),)


@register_op("StridedSliceGrad", lambda g, x, key: (x.shape, g.dtype))
def _strided_slice_grad_kernel(xp, g, x, key):
    out = xp.zeros(x.shape, dtype=g.dtype)
    out[_key(key)] = g
    return out


@register_gradient("StridedSliceGrad")
def _strided_slice_grad_grad(node, gg):
    return apply("StridedSlice", gg, key=node.attrs["key"]), None


def getitem(x, key):
    """``x[key]``: basic indexing (ints, slices, None, ...) or, for an int tensor
    or array key, ``gather`` along axis 0."""
    if isinstance(key, SymbolicTensor) or isinstance(key, (np.ndarray, list)):
        return gather(x, key, axis=0)
    return apply("StridedSlice", x, key=_norm_key(key))


# -- pad -----------------------------------------------------------------------------
def _pad_infer(x, paddings, mode="constant", constant_values=0):
    if x.shape is None:
        return None, x.dtype
    if len(paddings) != len(x.shape):
        raise ValueError(f"pad needs one (before, after) pair per axis: shape "
                         f"{x.shape}, paddings {paddings}.")
    return tuple(None if d is None else d + a + b
                 for d, (a, b) in zip(x.shape, paddings)), x.dtype


@register_op("Pad", _pad_infer)
def _pad(xp, x, paddings, mode="constant", constant_values=0):
    if mode == "constant":
        return xp.pad(x, paddings, mode="constant", constant_values=constant_values)
    return xp.pad(x, paddings, mode=mode)


@register_gradient("Pad")
def _pad_grad(node, g):
    if node.attrs["mode"] != "constant":
        raise NotImplementedError(f"No gradient for pad mode "
                                  f"'{node.attrs['mode']}'; use 'constant'.")
    key = tuple(("s", a, (-b if b else None), None) for a, b in node.attrs["paddings"])
    return (apply("StridedSlice", g, key=key),)


def pad(x, paddings, mode="constant", constant_values=0):
    """Pads ``x``; ``paddings`` holds a (before, after) pair per axis.

    Args:
        mode: 'constant' (differentiable), 'reflect' or 'symmetric'.
    """
    paddings = tuple((int(a), int(b)) for a, b in paddings)
    return apply("Pad", x, paddings=paddings, mode=mode.lower(),
                 constant_values=constant_values)


# -- gather / take, one_hot ----------------------------------------------------------
def _gather_infer(params, indices, axis=0):
    if indices.dtype.kind not in "iu":
        raise TypeError(f"gather indices must be integers. Received: "
                        f"{I.fmt(indices)}.")
    if params.shape is None or indices.shape is None:
        return None, params.dtype
    ax = I.norm_axis(axis, len(params.shape))[0]
    return params.shape[:ax] + indices.shape + params.shape[ax + 1:], params.dtype


@register_op("Gather", _gather_infer)
def _gather(xp, params, indices, axis=0):
    n = params.shape[axis]
    if indices.size and (int(indices.min()) < -n or int(indices.max()) >= n):
        raise ValueError(
            f"gather indices must lie in [{-n}, {n}) for axis {axis} of size {n}. "
            f"Received: min={int(indices.min())}, max={int(indices.max())}."
        )
    return xp.take(params, indices, axis=axis)


@register_gradient("Gather")
def _gather_grad(node, g):
    params, indices = node.inputs
    return apply("GatherGrad", g, params, indices, axis=node.attrs["axis"]), None


@register_op("GatherGrad", lambda g, p, i, axis=0: (p.shape, g.dtype))
def _gather_grad_kernel(xp, g, params, indices, axis=0):
    out = xp.zeros(params.shape, dtype=g.dtype)
    ax = axis % params.ndim
    moved = xp.moveaxis(out, ax, 0)
    gm = xp.moveaxis(g, tuple(range(ax, ax + indices.ndim)),
                     tuple(range(indices.ndim)))
    gm = gm.reshape((-1,) + moved.shape[1:])
    idx = indices.reshape(-1) % params.shape[ax]
    # Repeated indices accumulate (embedding rows used twice in a batch).
    if xp is np:
        np.add.at(moved, idx, gm)
    else:
        import cupyx  # noqa: PLC0415  (only reached when xp is cupy)

        cupyx.scatter_add(moved, idx, gm)
    return out


@register_gradient("GatherGrad")
def _gather_grad_grad(node, gg):
    _, params, indices = node.inputs
    return gather(gg, indices, axis=node.attrs["axis"]), None, None


def gather(params, indices, axis=0):
    """Takes slices of ``params`` along ``axis`` at integer ``indices``.

    Args:
        params: tensor of shape (..., n, ...) with n at ``axis``.
        indices: int tensor/array of any shape with values in [-n, n).

    Returns:
        Tensor of shape params.shape[:axis] + indices.shape + params.shape[axis+1:].

    Raises:
        TypeError: non-integer indices. ValueError: an index out of range (at run
        time), naming the range and the offending values.
    """
    if isinstance(indices, (list, tuple)):
        indices = np.asarray(indices, dtype=np.int64)
    return apply("Gather", params, indices, axis=int(axis))


take = gather


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
