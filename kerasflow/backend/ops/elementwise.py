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
_unary("Exp", lambda xp: xp.exp, I.same_float)
_unary("Log", lambda xp: xp.log, I.same_float)
_unary("Log1p", lambda xp: xp.log1p, I.same_float)
_unary("Sqrt", lambda xp: xp.sqrt, I.same_float)
_unary("Square", lambda xp: xp.square)
_unary("Abs", lambda xp: xp.abs)
_unary("Sign", lambda xp: xp.sign)
_unary("Sin", lambda xp: xp.sin, I.same_float)
_unary("Cos", lambda xp: xp.cos, I.same_float)
_unary("Floor", lambda xp: xp.floor, differentiable=False)
_unary("Round", lambda xp: xp.round, differentiable=False)
_unary("IsNan", lambda xp: xp.isnan, lambda x, **_: (x.shape, np.dtype(bool)), False)
_unary("IsFinite", lambda xp: xp.isfinite, lambda x, **_: (x.shape, np.dtype(bool)),
       False)


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


def exp(x):
    """Elementwise e**x (float input)."""
    return apply("Exp", x)


def log(x):
    """Elementwise natural logarithm (float input); -inf at 0."""
    return apply("Log", x)


def log1p(x):
    """Elementwise log(1 + x), accurate for small x."""
    return apply("Log1p", x)


def sqrt(x):
    """Elementwise square root (float input)."""
    return apply("Sqrt", x)


def rsqrt(x):
    """Elementwise 1 / sqrt(x) (float input)."""
    return apply("Rsqrt", x)


def reciprocal(x):
    """Elementwise 1 / x (float input)."""
    return apply("Reciprocal", x)


def square(x):
    """Elementwise x**2."""
    return apply("Square", x)


def abs(x):  # noqa: A001  (the TF/numpy name)
    """Elementwise |x|; its gradient at 0 is 0 (sign(0) = 0)."""
    return apply("Abs", x)


def sign(x):
    """Elementwise sign (-1, 0 or 1); gradient zero."""
    return apply("Sign", x)


def sin(x):
    """Elementwise sine (radians)."""
    return apply("Sin", x)


def cos(x):
    """Elementwise cosine (radians)."""
    return apply("Cos", x)


def floor(x):
    """Elementwise floor (no gradient)."""
    return apply("Floor", x)


def round(x):  # noqa: A001
    """Elementwise round half to even (no gradient)."""
    return apply("Round", x)


def isnan(x):
    """Elementwise NaN test, bool result."""
    return apply("IsNan", x)


def isfinite(x):
    """Elementwise finiteness test, bool result."""
    return apply("IsFinite", x)


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
