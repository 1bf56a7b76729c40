"""Slicing ops: ``getitem`` (strided slices), ``pad`` (its adjoint) and
``gather``/``take`` (index lookups along an axis).

Index keys are node attributes, plain Python values, so graphs stay picklable.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.graph import SymbolicTensor
from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["getitem", "pad", "gather", "take"]


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


# -- gather / take ------------------------------------------------------------------
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
    xp.add.at(moved, idx, gm)  # numpy's ufunc.at; cupy's own add.at on the device
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
