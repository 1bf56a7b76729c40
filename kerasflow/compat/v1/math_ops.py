"""TF1 math: elementwise ops, reductions with TF1's arguments, matmul & co.

Reductions take TF2's ``axis=``/``keepdims=`` and TF1's older spellings
``reduction_indices=``/``keep_dims=``. ``argmax``/``argmin`` reduce axis 0 when
no axis is given, as TF1 did. Everything maps onto backend ops.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.dtypes import resolve
from kerasflow.optimizers import clipping

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "div", "floordiv",
    "floor_div", "mod", "pow", "square", "sqrt", "rsqrt", "exp", "log", "log1p",
    "abs", "negative", "sign", "reciprocal", "sin", "cos", "maximum", "minimum",
    "floor", "round", "add_n", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_not",
    "is_nan", "is_finite", "sigmoid", "tanh", "softplus", "scalar_mul",
    "squared_difference", "reduce_sum", "reduce_mean", "reduce_max",
    "reduce_min", "reduce_prod", "reduce_any", "reduce_all", "reduce_logsumexp",
    "argmax", "argmin", "matmul", "tensordot", "clip_by_value", "clip_by_norm",
    "clip_by_global_norm", "global_norm", "confusion_matrix", "norm", "count_nonzero",
]

_t = G.as_tensor


def _binary(fn):
    def op(x, y, name=None):
        return G.track(fn(*G.as_tensor_pair(x, y)))

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def _unary(fn):
    def op(x, name=None):
        return G.track(fn(_t(x)))

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


add, subtract, multiply, divide = (_binary(f) for f in (K.add, K.subtract,
                                                        K.multiply, K.divide))
truediv = divide
floordiv = floor_div = _binary(K.floor_divide)
mod = _binary(K.mod)
pow = _binary(K.power)  # noqa: A001
maximum, minimum = _binary(K.maximum), _binary(K.minimum)
equal, not_equal = _binary(K.equal), _binary(K.not_equal)
less, less_equal = _binary(K.less), _binary(K.less_equal)
greater, greater_equal = _binary(K.greater), _binary(K.greater_equal)
logical_and, logical_or = _binary(K.logical_and), _binary(K.logical_or)
(square, sqrt, rsqrt, exp, log, log1p, abs, negative, sign,  # noqa: A001
 reciprocal, sin, cos, floor, round, logical_not, is_nan,  # noqa: A001
 is_finite, sigmoid, tanh, softplus) = (_unary(f) for f in (
     K.square, K.sqrt, K.rsqrt, K.exp, K.log, K.log1p, K.abs, K.negative, K.sign,
     K.reciprocal, K.sin, K.cos, K.floor, K.round, K.logical_not, K.isnan,
     K.isfinite, K.sigmoid, K.tanh, K.softplus))


def div(x, y, name=None):
    """TF1 ``tf.div``: floor division for integers, true division for floats."""
    x, y = G.as_tensor_pair(x, y)
    if K.is_symbolic(x) and K.is_symbolic(y) and x.dtype.kind in "iu" \
            and y.dtype.kind in "iu":
        return G.track(K.floor_divide(x, y))
    return G.track(K.divide(x, y))


def add_n(inputs, name=None):
    return G.track(K.add_n([_t(x) for x in inputs]))


def scalar_mul(scalar, x, name=None):
    return multiply(scalar, x)


def squared_difference(x, y, name=None):
    return G.track(K.square(K.subtract(*G.as_tensor_pair(x, y))))


# -- reductions -----------------------------------------------------------------------
def _reduce_args(who, axis, keepdims, reduction_indices, keep_dims):
    if axis is not None and reduction_indices is not None:
        raise ValueError(f"{who}: cannot specify both 'axis' and "
                         f"'reduction_indices'.")
    if keepdims is not None and keep_dims is not None:
        raise ValueError(f"{who}: cannot specify both 'keepdims' and 'keep_dims'.")
    axis = reduction_indices if axis is None else axis
    if isinstance(axis, (list, np.ndarray)):
        axis = tuple(int(a) for a in axis)
    keepdims = keep_dims if keepdims is None else keepdims
    return axis, bool(keepdims)


def _reduction(fn, who, prepare=None, finish=None):
    def op(input_tensor, axis=None, keepdims=None, name=None,
           reduction_indices=None, keep_dims=None):
        axis, keep = _reduce_args(who, axis, keepdims, reduction_indices, keep_dims)
        x = _t(input_tensor)
        if prepare is not None:
            x = prepare(x)
        out = fn(x, axis=axis, keepdims=keep)
        return G.track(finish(out) if finish is not None else out)

    op.__name__ = who
    op.__doc__ = (f"TF1 ``tf.{who}(input_tensor, axis=None, keepdims=None, "
                  f"reduction_indices=None, keep_dims=None)``: ``axis`` an int, "
                  f"a list or None (all axes); ``reduction_indices`` and "
                  f"``keep_dims`` are the old names.")
    return op


def _as_float(x):
    return K.cast(x, "float32")


def _as_bool(x):
    return K.cast(x, "bool")


reduce_sum = _reduction(K.sum, "reduce_sum")
reduce_mean = _reduction(K.mean, "reduce_mean")
reduce_max = _reduction(K.max, "reduce_max")
reduce_min = _reduction(K.min, "reduce_min")
reduce_prod = _reduction(K.prod, "reduce_prod")
reduce_logsumexp = _reduction(K.logsumexp, "reduce_logsumexp")
reduce_any = _reduction(K.max, "reduce_any", _as_float, _as_bool)
reduce_all = _reduction(K.min, "reduce_all", _as_float, _as_bool)


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype="int64",
                  name=None, reduction_indices=None, keep_dims=None):
    axis, keep = _reduce_args("count_nonzero", axis, keepdims, reduction_indices,
                              keep_dims)
    nz = K.cast(K.not_equal(_t(input_tensor), 0), "float32")
    return G.track(K.cast(K.sum(nz, axis=axis, keepdims=keep), resolve(dtype)))


def argmax(input, axis=None, name=None, dimension=None,  # noqa: A002
           output_type="int64"):
    """Index of the largest value along ``axis`` (0 if not given, as in TF1)."""
    return _arg_reduce(K.argmax, "argmax", input, axis, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None,  # noqa: A002
           output_type="int64"):
    """Index of the smallest value along ``axis`` (0 if not given, as in TF1)."""
    return _arg_reduce(K.argmin, "argmin", input, axis, dimension, output_type)


def _arg_reduce(fn, what, x, axis, dimension, output_type):
    if axis is not None and dimension is not None:
        raise ValueError(f"{what}: cannot specify both 'axis' and 'dimension'.")
    axis = dimension if axis is None else axis
    return G.track(fn(_t(x), 0 if axis is None else int(axis),
                      resolve(output_type).name))


# -- products -------------------------------------------------------------------------
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False,
           adjoint_b=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """``a @ b`` with optional transposes (adjoint = transpose for real dtypes)."""
    return G.track(K.matmul(*G.as_tensor_pair(a, b), transpose_a or adjoint_a,
                            transpose_b or adjoint_b))


def tensordot(a, b, axes, name=None):
    """Sum over ``axes`` of a and b (an int N: a's last N with b's first N, or
    a pair of lists), as TF's: ``a`` may have one unknown free dimension (the
    batch of ``(None, 784)`` · ``(784, 5, 10)``).

    Raises:
        ValueError: unknown or mismatched contracted sizes, or an unknown free
            dimension other than one of ``a``'s.
    """
    return G.track(K.tensordot(_t(a), _t(b), axes))


# -- clipping and norms ---------------------------------------------------------------
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    return G.track(K.clip(_t(t), clip_value_min, clip_value_max))


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t * clip_norm / max(||t||_2, clip_norm)`` (whole-tensor norm)."""
    if axes is not None:
        raise NotImplementedError("tf.clip_by_norm with axes is not provided by "
                                  "kerasflow.compat.v1.")
    return G.track(clipping.clip_by_norm(_t(t), clip_norm))


def global_norm(t_list, name=None):
    return G.track(clipping.global_norm([_t(t) for t in t_list if t is not None]))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(clipped list, global norm), TF1's pair (Pascanu et al., ICML 2013)."""
    t_list = [None if t is None else _t(t) for t in t_list]
    clipped = clipping.clip_by_global_norm(t_list, clip_norm)
    return G.track(clipped), global_norm(t_list)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """The Euclidean (Frobenius) norm over ``axis`` (all axes by default)."""
    if ord not in ("euclidean", "fro", 2):
        raise NotImplementedError(f"tf.norm with ord={ord!r} is not provided by "
                                  f"kerasflow.compat.v1.")
    axis, keep = _reduce_args("norm", axis, keepdims, None, keep_dims)
    return G.track(K.sqrt(K.sum(K.square(_t(tensor)), axis=axis, keepdims=keep)))


def confusion_matrix(labels, predictions, num_classes=None, weights=None,
                     dtype="int32", name=None):
    """``cm[i, j]`` = count (or weight sum) of label i predicted as j.

    Args:
        labels, predictions: int tensors (batch,).
        num_classes: int; needed when the labels are symbolic (the size of the
            result must be static in kerasflow).

    Raises:
        ValueError: ``num_classes`` missing for symbolic labels.
    """
    labels, predictions = _t(labels), _t(predictions)
    if num_classes is None:
        raise ValueError("confusion_matrix in kerasflow.compat.v1 needs "
                         "num_classes= (the result shape must be static).")
    lab = K.one_hot(K.cast(labels, "int64"), num_classes, "float64")
    pred = K.one_hot(K.cast(predictions, "int64"), num_classes, "float64")
    if weights is not None:
        lab = K.multiply(lab, K.expand_dims(K.cast(_t(weights), "float64"), -1))
    cm = K.matmul(lab, pred, transpose_a=True)
    return G.track(K.cast(K.round(cm), resolve(dtype)))
