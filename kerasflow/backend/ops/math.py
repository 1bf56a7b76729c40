"""Elementwise arithmetic, maximum/minimum/clip, comparisons, where, casts.

Elementwise functions (exp, log, powers, roots, trigonometry, rounding) live in
``elementwise``.

Gradient rules return gradients of the broadcast output shape; ``gradients``
sums them back to each input's shape in one place (as tinygrad and HIPS autograd
do), so no rule here unbroadcasts.
"""

from __future__ import annotations

import functools

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = [
    "add", "subtract", "multiply", "divide", "floor_divide", "mod", "negative",
    "maximum", "minimum", "clip", "where", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_not", "cast", "stop_gradient", "identity", "add_n", "zeros_like",
    "ones_like",
]


def _register_ufunc(name, ufunc, infer, differentiable):
    """Registers op ``name`` as numpy's (or cupy's) ufunc named ``ufunc``."""
    bind = functools.partial(_ufunc_of, ufunc)
    kernel = register_op(name, infer, differentiable=differentiable)(
        lambda xp, *args: bind(xp)(*args))
    kernel.bind = bind  # Function calls bind(xp) (the ufunc itself) directly


def _ufunc_of(ufunc, xp):
    return getattr(xp, ufunc)


def _binary(name, ufunc, doc, infer=I.broadcast, differentiable=True):
    """Registers op ``name`` as the two-argument ``ufunc`` and returns its
    public wrapper, named ``ufunc`` and documented by ``doc``."""
    _register_ufunc(name, ufunc, infer, differentiable)

    def op(a, b):
        return apply(name, a, b)

    op.__name__ = op.__qualname__ = ufunc
    op.__doc__ = doc
    return op


def _unary(name, ufunc, doc, infer=I.same, differentiable=True):
    """Registers op ``name`` as the one-argument ``ufunc`` and returns its
    public wrapper, named ``ufunc`` and documented by ``doc``."""
    _register_ufunc(name, ufunc, infer, differentiable)

    def op(x):
        return apply(name, x)

    op.__name__ = op.__qualname__ = ufunc
    op.__doc__ = doc
    return op


# -- arithmetic ------------------------------------------------------------------
add = _binary("Add", "add", """Elementwise ``a + b`` with numpy broadcasting.

    Args:
        a, b: tensors, arrays or numbers of broadcast-compatible shapes.

    Returns:
        Tensor (or array, eagerly) of the broadcast shape and the result dtype.

    Raises:
        ValueError: shapes that cannot broadcast, naming both.
    """)
subtract = _binary("Sub", "subtract",
                   "Elementwise ``a - b`` with broadcasting (see ``add``).")
multiply = _binary("Mul", "multiply",
                   "Elementwise ``a * b`` with broadcasting (see ``add``).")
floor_divide = _binary("FloorDiv", "floor_divide",
                       "Elementwise ``a // b`` (no gradient).", differentiable=False)
mod = _binary("Mod", "mod", "Elementwise ``a % b`` (no gradient).",
              differentiable=False)
negative = _unary("Neg", "negative", "Elementwise ``-x``.")


@register_op("Div", I.broadcast_float)
def _div(xp, a, b):
    return xp.true_divide(a, b)


@register_gradient("Add")
def _add_grad(node, g):
    return g, g


@register_gradient("Sub")
def _sub_grad(node, g):
    return g, negative(g)


@register_gradient("Mul")
def _mul_grad(node, g):
    a, b = node.inputs
    return multiply(g, b), multiply(g, a)


@register_gradient("Neg")
def _neg_grad(node, g):
    return (negative(g),)


@register_gradient("Div")
def _div_grad(node, g):
    a, b = node.inputs
    ga = divide(g, b)
    return ga, negative(multiply(ga, divide(a, b)))


def divide(a, b):
    """Elementwise true division ``a / b``; integer inputs give floatx."""
    if not (_is_float(a) or _is_float(b)):
        # Cast first: numpy's int / int is float64 whatever floatx says.
        a, b = _to_floatx(a), _to_floatx(b)
    return apply("Div", a, b)


def _is_float(x):
    if isinstance(x, (bool, int)):
        return False
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    return np.dtype(dtype).kind in "fc"


def _to_floatx(x):
    if isinstance(x, (bool, int)):
        return float(x)
    return cast(x, _array.floatx())


def add_n(tensors):
    """Sum of a list of tensors of the same (broadcastable) shape."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("add_n needs at least one tensor. Received: [].")
    out = tensors[0]
    for t in tensors[1:]:
        out = add(out, t)
    return out


# -- maximum, minimum, clip -------------------------------------------------------
maximum = _binary("Maximum", "maximum",
                  "Elementwise maximum; at ties the gradient goes to ``a``.")
minimum = _binary("Minimum", "minimum",
                  "Elementwise minimum; at ties the gradient goes to ``a``.")


@register_gradient("Maximum")
def _maximum_grad(node, g):
    a, b = node.inputs
    mask = cast(greater_equal(a, b), g.dtype)  # ties go to ``a``
    return multiply(g, mask), multiply(g, subtract(1.0, mask))


@register_gradient("Minimum")
def _minimum_grad(node, g):
    a, b = node.inputs
    mask = cast(less_equal(a, b), g.dtype)
    return multiply(g, mask), multiply(g, subtract(1.0, mask))


@register_op("ClipByValue", I.same)
def _clip(xp, x, lo, hi):
    return xp.clip(x, lo, hi)


@register_gradient("ClipByValue")
def _clip_grad(node, g):
    # Where x is clipped the output is the bound, so the bound gets the gradient.
    x, lo, hi = node.inputs
    below = cast(less(x, lo), g.dtype)
    above = cast(greater(x, hi), g.dtype)
    inside = subtract(1.0, add(below, above))
    return multiply(g, inside), multiply(g, below), multiply(g, above)


def clip(x, min_value, max_value):
    """Clips ``x`` elementwise to ``[min_value, max_value]``.

    The gradient passes to ``x`` where ``min_value <= x <= max_value``, and to
    the bound that applies elsewhere (TF's ``clip_by_value``).
    """
    return apply("ClipByValue", x, min_value, max_value)


# -- where, comparisons, logic, cast -------------------------------------------------
def _where_infer(c, a, b, **_):
    if c.dtype.kind != "b":
        raise TypeError(f"condition must be bool. Received: condition {I.fmt(c)}.")
    shape = I.broadcast_dims(I.broadcast_dims(c.shape, a.shape), b.shape)
    return shape, I.result_dtype(a, b)


@register_op("Select", _where_infer)
def _where(xp, c, a, b):
    return xp.where(c, a, b)


@register_gradient("Select")
def _where_grad(node, g):
    c = node.inputs[0]
    zeros = zeros_like(g)
    return None, where(c, g, zeros), where(c, zeros, g)


def where(condition, x, y):
    """Elementwise ``x`` where ``condition`` else ``y``, broadcasting all three.

    Args:
        condition: bool tensor.
        x, y: tensors or numbers.
    """
    return apply("Select", condition, x, y)


equal = _binary("Equal", "equal", "Elementwise ``a == b``, bool result (no gradient).",
                I.broadcast_bool, False)
not_equal = _binary("NotEqual", "not_equal", "Elementwise ``a != b``, bool result.",
                    I.broadcast_bool, False)
less = _binary("Less", "less", "Elementwise ``a < b``, bool result.",
               I.broadcast_bool, False)
less_equal = _binary("LessEqual", "less_equal",
                     "Elementwise ``a <= b``, bool result.", I.broadcast_bool, False)
greater = _binary("Greater", "greater", "Elementwise ``a > b``, bool result.",
                  I.broadcast_bool, False)
greater_equal = _binary("GreaterEqual", "greater_equal",
                        "Elementwise ``a >= b``, bool result.", I.broadcast_bool,
                        False)
logical_and = _binary("LogicalAnd", "logical_and",
                      "Elementwise logical and of bool tensors.", I.broadcast_bool,
                      False)
logical_or = _binary("LogicalOr", "logical_or",
                     "Elementwise logical or of bool tensors.", I.broadcast_bool,
                     False)
logical_not = _unary("LogicalNot", "logical_not",
                     "Elementwise logical not of a bool tensor.",
                     lambda x, **_: (x.shape, np.dtype(bool)), False)


@register_op("Cast", lambda x, dtype, **_: (x.shape, np.dtype(dtype)))
def _cast(xp, x, dtype):
    return x.astype(dtype, copy=False)


@register_gradient("Cast")
def _cast_grad(node, g):
    x = node.inputs[0]
    if x.dtype.kind != "f" or g.dtype.kind != "f":
        return (None,)
    return (cast(g, x.dtype),)


def cast(x, dtype):
    """Converts ``x`` to ``dtype``; gradients pass only between float dtypes."""
    return apply("Cast", x, dtype=np.dtype(dtype).name)


# -- identity, stop_gradient, zeros_like, ones_like ----------------------------------
def _pass_through(xp, x):
    return x


# Both return their input; they differ only in the gradient rule.
register_op("Identity", I.same)(_pass_through)
register_op("StopGradient", I.same)(_pass_through)
register_gradient("Identity")(lambda node, g: (g,))
register_gradient("StopGradient")(lambda node, g: (None,))


def identity(x):
    """Returns ``x`` unchanged (a new node)."""
    return apply("Identity", x)


def stop_gradient(x):
    """Returns ``x``; ``gradients`` treats it as a constant (TF's op of that name)."""
    return apply("StopGradient", x)


def _like_infer(x, dtype=None, **_):
    return x.shape, np.dtype(dtype) if dtype else x.dtype


@register_op("ZerosLike", _like_infer, differentiable=False)
def _zeros_like(xp, x, dtype=None):
    return xp.zeros(x.shape, dtype=dtype or x.dtype)


@register_op("OnesLike", _like_infer, differentiable=False)
def _ones_like(xp, x, dtype=None):
    out = xp.empty(x.shape, dtype=dtype or x.dtype)  # xp.ones is a Python wrapper
    out.fill(1)
    return out


def zeros_like(x, dtype=None):
    """Zeros of ``x``'s runtime shape (dtype defaults to ``x``'s)."""
    return apply("ZerosLike", x, dtype=None if dtype is None else np.dtype(dtype).name)


def ones_like(x, dtype=None):
    """Ones of ``x``'s runtime shape (dtype defaults to ``x``'s)."""
    return apply("OnesLike", x, dtype=None if dtype is None else np.dtype(dtype).name)

