"""Elementwise functions: exp, log, powers and roots, abs/sign, trigonometric,
hyperbolic and inverse trigonometric functions (``tan``, ``sinh``,
``arcsin``, ``arctan2``, ...), ``cbrt``, ``erfinv``, rounding and finiteness
tests (numpy's semantics).

Gradient rules return gradients of the broadcast output shape; ``gradients``
sums them back to each input's shape in one place (see ``math``). The float
functions take a float tensor or array (callers cast integers to floatx
first) and return one of the same shape and dtype.
"""

from __future__ import annotations

import math as _pymath

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.math import (
    _unary, add, divide, greater, multiply, negative, ones_like, subtract, where,
    zeros_like,
)
from kerasflow.backend.registry import apply, register_gradient, register_op

# tan, the hyperbolic and inverse trigonometric functions, arctan2, cbrt and
# erfinv are registered here too; kerasflow.ops exports them (Keras 3's names,
# integer inputs cast to floatx), the backend namespace does not.
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
tan = _unary("Tan", "tan", "Elementwise tangent (radians; float input).",
             I.same_float)
sinh = _unary("Sinh", "sinh", "Elementwise hyperbolic sine (float input).",
              I.same_float)
cosh = _unary("Cosh", "cosh", "Elementwise hyperbolic cosine (float input).",
              I.same_float)
arcsin = _unary("Arcsin", "arcsin", "Elementwise inverse sine; NaN outside "
                "[-1, 1] (float input).", I.same_float)
arccos = _unary("Arccos", "arccos", "Elementwise inverse cosine; NaN outside "
                "[-1, 1] (float input).", I.same_float)
arctan = _unary("Arctan", "arctan", "Elementwise inverse tangent (float input).",
                I.same_float)
arcsinh = _unary("Arcsinh", "arcsinh", "Elementwise inverse hyperbolic sine.",
                 I.same_float)
arccosh = _unary("Arccosh", "arccosh", "Elementwise inverse hyperbolic cosine; "
                 "NaN below 1 (float input).", I.same_float)
arctanh = _unary("Arctanh", "arctanh", "Elementwise inverse hyperbolic tangent; "
                 "+-inf at +-1 (float input).", I.same_float)
cbrt = _unary("Cbrt", "cbrt", "Elementwise real cube root (float input); its "
              "gradient is infinite at 0.", I.same_float)


@register_op("Rsqrt", I.same_float)
def _rsqrt(xp, x):
    return xp.reciprocal(xp.sqrt(x))


@register_op("Reciprocal", I.same_float)
def _reciprocal(xp, x):
    return xp.reciprocal(x)


def _rule(name):
    """Registers ``d(name)/dx`` given as ``f(x, y) -> derivative`` (y the
    output): the gradient ``g * f(x, y)``."""
    def wrap(deriv):
        register_gradient(name)(lambda node, g: (
            multiply(g, deriv(node.inputs[0], node.outputs[0])),))
        return deriv
    return wrap


_rule("Exp")(lambda x, y: y)
_rule("Rsqrt")(lambda x, y: multiply(-0.5, multiply(y, multiply(y, y))))
_rule("Square")(lambda x, y: multiply(2.0, x))
_rule("Abs")(lambda x, y: sign(x))
_rule("Sin")(lambda x, y: cos(x))
_rule("Tan")(lambda x, y: add(1.0, square(y)))
_rule("Sinh")(lambda x, y: apply("Cosh", x))
_rule("Cosh")(lambda x, y: apply("Sinh", x))
_rule("Arcsin")(lambda x, y: divide(1.0, sqrt(subtract(1.0, square(x)))))
_rule("Arccos")(lambda x, y: divide(-1.0, sqrt(subtract(1.0, square(x)))))
_rule("Arctan")(lambda x, y: divide(1.0, add(1.0, square(x))))
_rule("Arcsinh")(lambda x, y: divide(1.0, sqrt(add(square(x), 1.0))))
_rule("Arccosh")(lambda x, y: divide(1.0, sqrt(subtract(square(x), 1.0))))
_rule("Arctanh")(lambda x, y: divide(1.0, subtract(1.0, square(x))))
_rule("Cbrt")(lambda x, y: divide(1.0, multiply(3.0, square(y))))


@register_gradient("Log")
def _log_grad(node, g):
    return (divide(g, node.inputs[0]),)


@register_gradient("Log1p")
def _log1p_grad(node, g):
    return (divide(g, add(node.inputs[0], 1.0)),)


@register_gradient("Sqrt")
def _sqrt_grad(node, g):
    return (divide(multiply(g, 0.5), node.outputs[0]),)


@register_gradient("Reciprocal")
def _reciprocal_grad(node, g):
    y = node.outputs[0]
    return (negative(multiply(g, square(y))),)


@register_gradient("Sign")
def _sign_grad(node, g):
    return (zeros_like(node.inputs[0]),)


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


# -- arctan2 --------------------------------------------------------------------------
@register_op("Arctan2", I.broadcast_float)
def _arctan2(xp, y, x):
    return xp.arctan2(y, x)


@register_gradient("Arctan2")
def _arctan2_grad(node, g):
    y, x = node.inputs
    r2 = add(square(x), square(y))
    return multiply(g, divide(x, r2)), multiply(g, divide(negative(y), r2))


def arctan2(x1, x2):
    """Elementwise angle of the point (``x2``, ``x1``) in radians, in
    [-pi, pi] (``numpy.arctan2``; float inputs, broadcast)."""
    return apply("Arctan2", x1, x2)


# -- erf kernel, erfinv ---------------------------------------------------------------
def _erf_kernel(x):
    return np.vectorize(_pymath.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _erfinv_kernel(x):
    """Giles' (2010) single-precision approximation, then Newton steps on erf."""
    x64 = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = -np.log((1.0 - x64) * (1.0 + x64))
        small = w < 5.0
        ws = np.where(small, w - 2.5, np.sqrt(np.where(small, 5.0, w)) - 3.0)
        ps = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
              0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
              1.50140941]
        pl = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
              0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
              2.83297682]
        p_s, p_l = np.zeros_like(x64) + ps[0], np.zeros_like(x64) + pl[0]
        for a, b in zip(ps[1:], pl[1:]):
            p_s, p_l = p_s * ws + a, p_l * ws + b
        y = np.where(small, p_s, p_l) * x64
        finite = np.abs(x64) < 1.0
        for _ in range(3):
            err = _erf_kernel(np.where(finite, y, 0.0)) - x64
            step = err / (2.0 / _pymath.sqrt(_pymath.pi) * np.exp(-y * y))
            y = np.where(finite, y - step, y)
        y = np.where(x64 == 1.0, np.inf, np.where(x64 == -1.0, -np.inf, y))
        y = np.where(np.abs(x64) > 1.0, np.nan, y)
    return y.astype(np.asarray(x).dtype)


@register_op("Erfinv", I.same_float)
def _erfinv(xp, x):
    return xp.asarray(_erfinv_kernel(np.asarray(x.get() if hasattr(x, "get")
                                                else x)))


_rule("Erfinv")(lambda x, y: multiply(_pymath.sqrt(_pymath.pi) / 2.0, exp(square(y))))


def erfinv(x):
    """The inverse error function, elementwise: NaN outside [-1, 1], +-inf at
    +-1 (float input; Giles' approximation refined by Newton steps)."""
    return apply("Erfinv", x)
