"""Elementwise numpy-style functions of Keras 3's ``keras.ops`` (and
``keras.ops.numpy``): trigonometric and hyperbolic functions, logarithms in
other bases, ``hypot``/``logaddexp``, NaN-aware maxima, complex-number parts
of real inputs, and the integer/bitwise functions.

Differentiable functions are backend primitives with registered gradients
(``tan``, ``sinh``, ``arcsin``, ...) or composed from them; the integer,
bitwise and test functions (``gcd``, ``bitwise_and``, ``isposinf``, ...)
carry no gradient. Every function takes arrays (computing at once) or
symbolic tensors (adding graph nodes). Integer and bool inputs of the float
functions become floatx, as on Keras' numpy backend.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.ops import elementwise as _ew
from kerasflow.backend.ops.npcall import numpy_call
from kerasflow.ops.common import arg, dtype_of, result_dtype, tensor, to_float

__all__ = [
    "absolute", "angle", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctan2", "arctanh", "bitwise_and", "bitwise_invert", "bitwise_left_shift",
    "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "cbrt",
    "conj", "conjugate", "cosh", "deg2rad", "divide_no_nan", "erfc", "erfinv",
    "exp2", "fabs", "fmax", "fmin", "fmod", "gcd", "heaviside", "hypot", "i0",
    "imag", "isneginf", "isposinf", "isreal", "lcm", "ldexp", "left_shift",
    "log10", "log2", "logaddexp", "logaddexp2", "logical_xor", "nextafter",
    "rad2deg", "real", "right_shift", "signbit", "sinc", "sinh", "tan",
    "true_divide", "trunc",
]

_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))


def _unary(fn, doc):
    def op(x):
        return fn(to_float(x))
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = doc
    return op


_SRC = "\n\n    Float input (integers become floatx); same shape and dtype out.\n" \
       "    Source: Keras 3 ``keras.ops`` / NumPy."
tan = _unary(_ew.tan, "Elementwise tangent (radians)." + _SRC)
sinh = _unary(_ew.sinh, "Elementwise hyperbolic sine." + _SRC)
cosh = _unary(_ew.cosh, "Elementwise hyperbolic cosine." + _SRC)
arcsin = _unary(_ew.arcsin, "Elementwise inverse sine (NaN outside [-1, 1])." + _SRC)
arccos = _unary(_ew.arccos, "Elementwise inverse cosine (NaN outside [-1, 1])."
                + _SRC)
arctan = _unary(_ew.arctan, "Elementwise inverse tangent." + _SRC)
arcsinh = _unary(_ew.arcsinh, "Elementwise inverse hyperbolic sine." + _SRC)
arccosh = _unary(_ew.arccosh, "Elementwise inverse hyperbolic cosine (NaN below 1)."
                 + _SRC)
arctanh = _unary(_ew.arctanh, "Elementwise inverse hyperbolic tangent." + _SRC)
cbrt = _unary(_ew.cbrt, "Elementwise real cube root." + _SRC)
erfinv = _unary(_ew.erfinv, "The inverse error function (NaN outside [-1, 1])."
                + _SRC)


def _pair(x1, x2):
    """Both operands as one float dtype (Keras' ``result_type(a, b, float)``)."""
    dt = result_dtype(x1, x2, float_=True).name
    return tensor(x1, dt), tensor(x2, dt)


def arctan2(x1, x2):
    """Elementwise angle of the point (x2, x1), in [-pi, pi] (broadcast).
    Source: Keras 3 ``keras.ops.arctan2`` / NumPy."""
    return _ew.arctan2(*_pair(x1, x2))


def log2(x):
    """Elementwise base-2 logarithm (float; -inf at 0). Source: NumPy."""
    return K.log(to_float(x)) / _LN2


def log10(x):
    """Elementwise base-10 logarithm (float; -inf at 0). Source: NumPy."""
    return K.log(to_float(x)) / _LN10


def exp2(x):
    """Elementwise ``2 ** x`` (float). Source: NumPy."""
    return K.exp(to_float(x) * _LN2)


def hypot(x1, x2):
    """Elementwise ``sqrt(x1**2 + x2**2)`` (float, broadcast). Source: NumPy."""
    a, b = _pair(x1, x2)
    return K.sqrt(K.square(a) + K.square(b))


def logaddexp(x1, x2):
    """Elementwise ``log(exp(x1) + exp(x2))`` computed as ``max + log1p(exp(
    -|x1 - x2|))``, finite for large inputs (float, broadcast). Source: NumPy."""
    a, b = _pair(x1, x2)
    big = K.maximum(a, b)
    return big + K.log1p(K.exp(-K.abs(a - b)))


def logaddexp2(x1, x2):
    """Elementwise ``log2(2**x1 + 2**x2)`` (float, broadcast). Source: NumPy."""
    a, b = _pair(x1, x2)
    return logaddexp(a * _LN2, b * _LN2) / _LN2


def deg2rad(x):
    """Degrees to radians (float). Source: NumPy."""
    return to_float(x) * float(np.pi / 180.0)


def rad2deg(x):
    """Radians to degrees (float). Source: NumPy."""
    return to_float(x) * float(180.0 / np.pi)


def sinc(x):
    """Normalized ``sin(pi x) / (pi x)``, 1 at 0 (float). Source: NumPy."""
    x = to_float(x)
    zero = K.equal(x, 0.0)
    safe = K.where(zero, K.ones_like(x), x) * float(np.pi)
    return K.where(zero, K.ones_like(x), K.sin(safe) / safe)


def absolute(x):
    """Elementwise ``|x|`` (``numpy.absolute``; same dtype)."""
    return K.abs(tensor(x))


def fabs(x):
    """Elementwise ``|x|`` as a float. Source: NumPy."""
    return K.abs(to_float(x))


def true_divide(x1, x2):
    """Elementwise ``x1 / x2`` (float result). Source: NumPy."""
    return K.divide(arg(x1), arg(x2))


def divide_no_nan(x1, x2):
    """``x1 / x2``, 0 where ``x2 == 0`` (float, broadcast; the gradient is 0
    there too). Source: Keras 3 ``keras.ops.divide_no_nan``."""
    a, b = _pair(x1, x2)
    zero = K.equal(b, 0.0)
    return K.where(zero, K.zeros_like(a * b), a / K.where(zero, K.ones_like(b), b))


def erfc(x):
    """The complementary error function ``1 - erf(x)`` (float). Source: Keras 3."""
    return 1.0 - K.erf(to_float(x))


def fmax(x1, x2):
    """Elementwise maximum that ignores NaN (NaN only where both are).
    Source: NumPy."""
    a, b = arg(x1), arg(x2)
    return K.where(K.isnan(a), b, K.where(K.isnan(b), a, K.maximum(a, b)))


def fmin(x1, x2):
    """Elementwise minimum that ignores NaN (NaN only where both are).
    Source: NumPy."""
    a, b = arg(x1), arg(x2)
    return K.where(K.isnan(a), b, K.where(K.isnan(b), a, K.minimum(a, b)))


def real(x):
    """The real part (a real input itself). Source: NumPy."""
    x = tensor(x)
    return x if dtype_of(x).kind != "c" else numpy_call("real", x)


def imag(x):
    """The imaginary part (zeros for a real input). Source: NumPy."""
    x = tensor(x)
    return K.zeros_like(x) if dtype_of(x).kind != "c" else numpy_call("imag", x)


def conjugate(x):
    """The complex conjugate (a real input itself). Source: NumPy."""
    x = tensor(x)
    return x if dtype_of(x).kind != "c" else numpy_call("conjugate", x)


conj = conjugate


def angle(x):
    """The complex argument in radians (pi for negative reals, else 0; float,
    no gradient). Source: NumPy."""
    return numpy_call("angle", to_float(x))


def _nograd(fn, np_name, doc, cast_float=False):
    def op(*args):
        arrays = [to_float(a) if cast_float else arg(a) for a in args]
        return numpy_call(np_name, *arrays)
    op.__name__ = op.__qualname__ = fn
    op.__doc__ = doc + "\n\n    No gradient. Source: NumPy (Keras 3 ``keras.ops``)."
    return op


trunc = _nograd("trunc", "trunc", "Elementwise rounding toward zero (same dtype).")
fmod = _nograd("fmod", "fmod", "Elementwise C-style remainder (sign of ``x1``).")
heaviside = _nograd("heaviside", "heaviside",
                    "Heaviside step: 0 below 0, ``x2`` at 0, 1 above.")
nextafter = _nograd("nextafter", "nextafter",
                    "The next float after ``x1`` toward ``x2``.", cast_float=True)
gcd = _nograd("gcd", "gcd", "Elementwise greatest common divisor (integers).")
lcm = _nograd("lcm", "lcm", "Elementwise least common multiple (integers).")
bitwise_and = _nograd("bitwise_and", "bitwise_and", "Elementwise bitwise AND.")
bitwise_or = _nograd("bitwise_or", "bitwise_or", "Elementwise bitwise OR.")
bitwise_xor = _nograd("bitwise_xor", "bitwise_xor", "Elementwise bitwise XOR.")
bitwise_invert = _nograd("bitwise_invert", "invert", "Elementwise bitwise NOT.")
bitwise_not = _nograd("bitwise_not", "invert", "Elementwise bitwise NOT.")
bitwise_left_shift = _nograd("bitwise_left_shift", "left_shift",
                             "Elementwise ``x << y``.")
left_shift = _nograd("left_shift", "left_shift", "Elementwise ``x << y``.")
bitwise_right_shift = _nograd("bitwise_right_shift", "right_shift",
                              "Elementwise ``x >> y``.")
right_shift = _nograd("right_shift", "right_shift", "Elementwise ``x >> y``.")
logical_xor = _nograd("logical_xor", "logical_xor", "Elementwise XOR (bool).")
signbit = _nograd("signbit", "signbit", "Whether the sign bit is set (bool).")
isneginf = _nograd("isneginf", "isneginf", "Elementwise test for -inf (bool).")
isposinf = _nograd("isposinf", "isposinf", "Elementwise test for +inf (bool).")
isreal = _nograd("isreal", "isreal", "Whether the imaginary part is 0 (bool).")
i0 = _nograd("i0", "i0", "The modified Bessel function of order 0.",
             cast_float=True)


def ldexp(x1, x2):
    """``x1 * 2 ** x2`` with integer ``x2`` (float result, no gradient).
    Source: NumPy.

    Raises:
        TypeError: a non-integer ``x2``.
    """
    b = tensor(x2)
    if dtype_of(b).kind not in "iub":
        raise TypeError(f"ldexp needs an integer exponent x2. Received: "
                        f"x2.dtype={dtype_of(b).name}.")
    return numpy_call("ldexp", to_float(x1), b)
