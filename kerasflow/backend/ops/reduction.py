"""Reductions: sum, mean, max, min, prod, argmax, argmin, logsumexp.

Every reduction takes ``axis`` (None, an int or a tuple of ints; negative counts
from the end) and ``keepdims``, as numpy and TF do. Gradients expand the reduced
gradient back with ``unreduce_like``, one primitive that knows the runtime shape.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.elementwise import exp, log
from kerasflow.backend.ops.math import (
    add, cast, divide, equal, multiply, stop_gradient, subtract,
)
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "logsumexp",
           "unreduce_like", "reduced_count"]


def _axis(axis):
    if axis is None or isinstance(axis, int):
        return axis
    return tuple(int(a) for a in axis)


def _accumulator(dtype):
    """Sums and products keep an integer input's dtype (numpy would widen int32,
    making the runtime dtype differ from the static one); bools count as int64."""
    dtype = np.dtype(dtype)
    return np.dtype("int64") if dtype.kind == "b" else dtype


def _reduce_infer(x, axis=None, keepdims=False):
    return I.reduced(x, axis, keepdims)


def _accumulate_infer(x, axis=None, keepdims=False):
    return I.reduced(x, axis, keepdims, _accumulator(x.dtype))


# Kernels call the array's method (C), not xp.<fn>: numpy's module-level
# reductions are Python wrappers costing several us per call, more when cold.
def _register_reduction(op, fn_name):
    register_op(op, _reduce_infer)(
        lambda xp, x, axis=None, keepdims=False: getattr(x, fn_name)(
            axis=axis, keepdims=keepdims)
    )


def _register_accumulation(op, fn_name):
    register_op(op, _accumulate_infer)(
        lambda xp, x, axis=None, keepdims=False: getattr(x, fn_name)(
            axis=axis, keepdims=keepdims, dtype=_accumulator(x.dtype))
    )


_register_accumulation("Sum", "sum")


@register_op("Mean", _reduce_infer)
def _mean(xp, x, axis=None, keepdims=False):
    # sum / count: numpy's mean is the same add.reduce and division wrapped in
    # Python bookkeeping (~40 us cold). Empty inputs and non-floats keep numpy's
    # own rules (NaN with a warning; float64 for integers).
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4 and x.size:
        s = x.sum(axis=axis, keepdims=keepdims)
        return s / (x.size // s.size)
    return x.mean(axis=axis, keepdims=keepdims)


_register_reduction("Max", "max")
_register_reduction("Min", "min")
_register_accumulation("Prod", "prod")


def _unreduce_infer(g, x, axis=None, keepdims=False):
    return x.shape, g.dtype


_SMALL = 4096  # elements up to which UnreduceLike materializes its result


@register_op("UnreduceLike", _unreduce_infer)
def _unreduce_like(xp, g, x, axis=None, keepdims=False):
    if not keepdims and axis is not None:  # axis None: g is 0-d, broadcasts as is
        axes = I.norm_axis(axis, x.ndim)
        g = g.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
    if x.size <= _SMALL:
        # A loss's mean gradient (a scalar over the batch): filling a fresh
        # array is ~0.6 us against ~7 us (tens cold) for broadcast_to's view.
        out = xp.empty(x.shape, g.dtype)
        out[...] = g
        return out
    return xp.broadcast_to(g, x.shape)


@register_gradient("UnreduceLike")
def _unreduce_like_grad(node, gg):
    a = node.attrs
    return sum(gg, axis=a["axis"], keepdims=a["keepdims"]), None


def unreduce_like(g, x, axis=None, keepdims=False):
    """Broadcasts ``g``, ``x`` reduced over ``axis``, back to x's runtime shape."""
    return apply("UnreduceLike", g, x, axis=_axis(axis), keepdims=keepdims)


@register_op("ReducedCount",
             lambda x, axis=None, dtype="float32": ((), np.dtype(dtype)),
             differentiable=False)
def _reduced_count(xp, x, axis=None, dtype="float32"):
    axes = I.norm_axis(axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    return xp.asarray(n, dtype=dtype)


def reduced_count(x, axis=None, dtype="float32"):
    """Number of elements of ``x`` that a reduction over ``axis`` combines."""
    return apply("ReducedCount", x, axis=_axis(axis), dtype=np.dtype(dtype).name)


@register_gradient("Sum")
def _sum_grad(node, g):
    a = node.attrs
    return (unreduce_like(g, node.inputs[0], a["axis"], a["keepdims"]),)


@register_gradient("Mean")
def _mean_grad(node, g):
    x = node.inputs[0]
    a = node.attrs
    count = reduced_count(x, a["axis"], g.dtype)
    return (divide(unreduce_like(g, x, a["axis"], a["keepdims"]), count),)


def _extremum_grad(node, g):
    # The gradient is shared equally among the tied maxima (as TF's reduce_max).
    x = node.inputs[0]
    a = node.attrs
    y = unreduce_like(node.outputs[0], x, a["axis"], a["keepdims"])
    mask = cast(equal(x, y), g.dtype)
    ties = unreduce_like(sum(mask, a["axis"], True), x, a["axis"], True)
    return (divide(multiply(unreduce_like(g, x, a["axis"], a["keepdims"]), mask),
                   ties),)


register_gradient("Max")(_extremum_grad)
register_gradient("Min")(_extremum_grad)


@register_gradient("Prod")
def _prod_grad(node, g):
    # d prod / dx_i = prod / x_i: exact where no element is zero.
    x = node.inputs[0]
    a = node.attrs
    y = unreduce_like(node.outputs[0], x, a["axis"], a["keepdims"])
    return (multiply(unreduce_like(g, x, a["axis"], a["keepdims"]), divide(y, x)),)


def sum(x, axis=None, keepdims=False):  # noqa: A001
    """Sum over ``axis`` (None: all axes).

    Args:
        x: tensor of any shape.
        axis: None, int or tuple of ints.
        keepdims: keep reduced axes with size 1.

    Raises:
        ValueError: an axis out of range for x's rank.
    """
    return apply("Sum", x, axis=_axis(axis), keepdims=bool(keepdims))


def mean(x, axis=None, keepdims=False):
    """Arithmetic mean over ``axis`` (see ``sum``); integer or bool inputs give
    floatx (as Keras' ``ops.mean``)."""
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    if np.dtype(dtype).kind in "biu":
        x = cast(x, _array.floatx())
    return apply("Mean", x, axis=_axis(axis), keepdims=bool(keepdims))


def max(x, axis=None, keepdims=False):  # noqa: A001
    """Maximum over ``axis``; the gradient is split evenly among ties."""
    return apply("Max", x, axis=_axis(axis), keepdims=bool(keepdims))


def min(x, axis=None, keepdims=False):  # noqa: A001
    """Minimum over ``axis``; the gradient is split evenly among ties."""
    return apply("Min", x, axis=_axis(axis), keepdims=bool(keepdims))


def prod(x, axis=None, keepdims=False):
    """Product over ``axis``; its gradient assumes no zero entries."""
    return apply("Prod", x, axis=_axis(axis), keepdims=bool(keepdims))


def _arg_infer(x, axis=None, output_type="int64"):
    if x.shape is None:
        return None, np.dtype(output_type)
    return I.reduced(x, axis if axis is not None else None, False, output_type)


@register_op("ArgMax", _arg_infer, differentiable=False)
def _argmax(xp, x, axis=None, output_type="int64"):
    return xp.argmax(x, axis=axis).astype(output_type, copy=False)


@register_op("ArgMin", _arg_infer, differentiable=False)
def _argmin(xp, x, axis=None, output_type="int64"):
    return xp.argmin(x, axis=axis).astype(output_type, copy=False)


def argmax(x, axis=-1, output_type="int64"):
    """Index of the maximum along one ``axis`` (None: of the flattened tensor)."""
    return apply("ArgMax", x, axis=axis, output_type=np.dtype(output_type).name)


def argmin(x, axis=-1, output_type="int64"):
    """Index of the minimum along one ``axis`` (None: of the flattened tensor)."""
    return apply("ArgMin", x, axis=axis, output_type=np.dtype(output_type).name)


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over ``axis``, computed stably.

    Subtracting the (gradient-stopped) maximum keeps exp finite for large inputs;
    the result does not depend on the shift, so the gradient is exact: softmax(x).
    """
    m = stop_gradient(max(x, axis=axis, keepdims=True))
    s = log(sum(exp(subtract(x, m)), axis=axis, keepdims=keepdims))
    if not keepdims:
        m = stop_gradient(max(x, axis=axis, keepdims=False))
    return add(s, m)
