"""Elementwise functions: exp, log, powers and roots, abs/sign, trigonometry,
rounding and finiteness tests.

Gradient rules return gradients of the broadcast output shape; ``gradients``
sums them back to each input's shape in one place (see ``math``).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.math import (
    _unary, add, divide, greater, multiply, negative, ones_like, subtract, where,
    zeros_like,
)
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = [
    "exp", "log", "log1p", "sqrt", "rsqrt", "square", "power", "abs", "sign",
    "reciprocal", "sin", "cos", "isnan", "isfinite", "floor", "round",
]


# -- unary ----------------------------------------------------------------------------
def _bool(x, **_):
    return x.shape, np.dtype(bool)


exp = _unary("Exp", "exp", "Elementwise e**x (float input).", I.same_float)
log = _unary("Log", "log", "Elementwise natural logarithm (float input); -inf at 0.",
             I.same_float)
log1p = _unary("Log1p", "log1p", "Elementwise log(1 + x), accurate for small x.",
               I.same_float)
sqrt = _unary("Sqrt", "sqrt", "Elementwise square root (float input).",
              I.same_float)
square = _unary("Square", "square", "Elementwise x**2.")
abs = _unary("Abs", "abs",  # noqa: A001  (the TF/numpy name)
             "Elementwise |x|; its gradient at 0 is 0 (sign(0) = 0).")
sign = _unary("Sign", "sign", "Elementwise sign (-1, 0 or 1); gradient zero.")
sin = _unary("Sin", "sin", "Elementwise sine (radians).", I.same_float)
cos = _unary("Cos", "cos", "Elementwise cosine (radians).", I.same_float)
floor = _unary("Floor", "floor", "Elementwise floor (no gradient).",
               differentiable=False)
round = _unary("Round", "round",  # noqa: A001
               "Elementwise round half to even (no gradient).", differentiable=False)
isnan = _unary("IsNan", "isnan", "Elementwise NaN test, bool result.", _bool,
               differentiable=False)
isfinite = _unary("IsFinite", "isfinite", "Elementwise finiteness test, bool result.",
                  _bool, differentiable=False)


@register_op("Rsqrt", I.same_float)
def _rsqrt(xp, x):
    return xp.reciprocal(xp.sqrt(x))


@register_op("Reciprocal", I.same_float)
def _reciprocal(xp, x):
    return xp.reciprocal(x)


@register_gradient("Exp")
def _exp_grad(node, g):
    return (multiply(g, node.outputs[0]),)


@register_gradient("Log")
def _log_grad(node, g):
    return (divide(g, node.inputs[0]),)


@register_gradient("Log1p")
def _log1p_grad(node, g):
    return (divide(g, add(node.inputs[0], 1.0)),)


@register_gradient("Sqrt")
def _sqrt_grad(node, g):
    return (divide(multiply(g, 0.5), node.outputs[0]),)


@register_gradient("Rsqrt")
def _rsqrt_grad(node, g):
    y = node.outputs[0]
    return (multiply(g, multiply(-0.5, multiply(y, multiply(y, y)))),)


@register_gradient("Reciprocal")
def _reciprocal_grad(node, g):
    y = node.outputs[0]
    return (negative(multiply(g, square(y))),)


@register_gradient("Square")
def _square_grad(node, g):
    return (multiply(g, multiply(2.0, node.inputs[0])),)


@register_gradient("Abs")
def _abs_grad(node, g):
    return (multiply(g, sign(node.inputs[0])),)


@register_gradient("Sign")
def _sign_grad(node, g):
    return (zeros_like(node.inputs[0]),)


@register_gradient("Sin")
def _sin_grad(node, g):
    return (multiply(g, cos(node.inputs[0])),)


@register_gradient("Cos")
def _cos_grad(node, g):
    return (negative(multiply(g, sin(node.inputs[0]))),)


def rsqrt(x):
    """Elementwise 1 / sqrt(x) (float input)."""
    return apply("Rsqrt", x)


def reciprocal(x):
    """Elementwise 1 / x (float input)."""
    return apply("Reciprocal", x)


# -- power ----------------------------------------------------------------------------
@register_op("Pow", I.broadcast)
def _pow(xp, a, b):
    return xp.power(a, b)


@register_gradient("Pow")
def _pow_grad(node, g):
    a, b = node.inputs
    y = node.outputs[0]
    ga = multiply(g, multiply(b, power(a, subtract(b, 1))))
    if b.dtype.kind != "f":
        return ga, None
    # d/db a**b = a**b * log(a); defined where a > 0, taken as 0 elsewhere.
    safe_log = log(where(greater(a, 0), a, ones_like(a)))
    return ga, multiply(g, multiply(y, safe_log))


def power(a, b):
    """Elementwise ``a ** b`` with broadcasting.

    The gradient with respect to ``b`` is ``a**b * log(a)`` where ``a > 0`` and 0
    elsewhere.
    """
    return apply("Pow", a, b)
