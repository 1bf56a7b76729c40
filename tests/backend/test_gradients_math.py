"""Numerical gradient checks (float64): elementwise ops (ops.math, ops.elementwise).

Each case is ``(fn, inputs)``: ``fn`` builds the op from placeholders standing for
the float inputs; ``check_gradients`` compares ``gradients`` with central
differences. Inputs stay clear of kinks (0 for abs/relu, ties for max/min, clip
bounds), where a one-sided derivative would be as right as any other.
"""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients, grad_fn, pos, x

pytestmark = pytest.mark.usefixtures("float64")


# -- elementwise -------------------------------------------------------------------
UNARY = {
    "negative": (K.negative, x),
    "exp": (K.exp, x),
    "log": (K.log, pos),
    "log1p": (K.log1p, pos),
    "sqrt": (K.sqrt, pos),
    "rsqrt": (K.rsqrt, pos),
    "reciprocal": (K.reciprocal, x),
    "square": (K.square, x),
    "abs": (K.abs, x),
    "sin": (K.sin, x),
    "cos": (K.cos, x),
    "identity": (K.identity, x),
    "relu": (K.relu, x),
    "relu_alpha_max": (lambda t: K.relu(t, alpha=0.1, max_value=1.0), x),
    "relu6": (K.relu6, x),
    "sigmoid": (K.sigmoid, x),
    "tanh": (K.tanh, x),
    "softplus": (K.softplus, x),
    "softsign": (K.softsign, x),
    "elu": (K.elu, x),
    "selu": (K.selu, x),
    "gelu": (K.gelu, x),
    "gelu_approximate": (lambda t: K.gelu(t, approximate=True), x),
    "leaky_relu": (K.leaky_relu, x),
    "swish": (K.swish, x),
    "hard_sigmoid": (K.hard_sigmoid, x),
    "power_int_scalar": (lambda t: K.power(t, 3), x),
    "pow_operator": (lambda t: t ** 2.5, pos),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    fn, make = UNARY[name]
    check_gradients(fn, [make(3, 4)])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_second_order(name):
    fn, make = UNARY[name]
    check_gradients(grad_fn(fn), [make(2, 3)])


BINARY = {
    "add": (K.add, x, x),
    "subtract": (K.subtract, x, x),
    "multiply": (K.multiply, x, x),
    "divide": (K.divide, x, x),
    "maximum": (K.maximum, x, x),
    "minimum": (K.minimum, x, x),
    "power": (K.power, pos, x),
    "sigmoid_xent": (K.sigmoid_cross_entropy_with_logits, pos, x),
}
# (3, 1) + (1, 4) broadcasts both sides; scalar * (3,) and (2, 3, 4) * (4,) one.
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3,)),
          ((3,), ())]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(name, shapes):
    fn, make_a, make_b = BINARY[name]
    check_gradients(fn, [make_a(*shapes[0], seed=1), make_b(*shapes[1], seed=2)])


@pytest.mark.parametrize("shapes", [SHAPES[0], SHAPES[1], SHAPES[3]], ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_second_order(name, shapes):
    fn, make_a, make_b = BINARY[name]
    check_gradients(grad_fn(fn),
                    [make_a(*shapes[0], seed=1), make_b(*shapes[1], seed=2)])


def test_python_operators():
    def fn(a, b):
        return (a + 2.0) * b - a / (b ** 2) + ((-a) @ b.T) @ a + 3.0 / abs(b)

    check_gradients(fn, [x(3, 4, seed=1), x(3, 4, seed=2)])


def test_power_integer_exponent_array():
    b = np.array([[1, 2, 3, 4]], dtype=np.int64)
    check_gradients(lambda a: K.power(a, b), [x(3, 4)])


def test_power_exponent_gradient_is_zero_for_nonpositive_base():
    # d/db a**b = a**b log(a) is taken as 0 where a <= 0 (here a**2 is real).
    a = K.placeholder("float64", (2,))
    bp = K.placeholder("float64", ())
    (gb,) = K.gradients(K.sum(K.power(a, bp)), [bp])
    out = K.Function([a, bp], gb)(np.array([-2.0, 3.0]), 2.0)
    np.testing.assert_allclose(out, 9.0 * np.log(3.0))


def test_clip():
    v = np.array([[-1.2, -0.7, -0.3, 0.1], [0.35, 0.8, 1.1, -0.45]])
    check_gradients(lambda t: K.clip(t, -0.5, 0.5), [v])


def test_clip_tensor_bounds():
    v = np.array([[-1.2, -0.7, -0.3, 0.1], [0.35, 0.8, 1.1, -0.45]])
    lo = np.array([-0.5, -0.6, -0.5, -0.2])
    hi = np.array(0.5)
    check_gradients(K.clip, [v, lo, hi])


def test_where():
    cond = np.array([[True, False, True, False], [False, False, True, True],
                     [True, True, False, False]])
    check_gradients(lambda a, b: K.where(cond, a, b),
                    [x(3, 4, seed=1), x(3, 4, seed=2)])
    check_gradients(lambda a, b: K.where(cond, a, b),
                    [x(3, 1, seed=1), x(seed=2)])
    check_gradients(grad_fn(lambda a, b: K.where(cond, a * a, b * a)),
                    [x(3, 4, seed=1), x(3, 4, seed=2)])


def test_cast_round_trip():
    # float32 rounding limits the finite differences: a large step on a linear
    # function keeps them exact up to float32's resolution.
    def fn(t):
        return K.cast(K.cast(t * 3.0, "float32"), "float64")

    grads = check_gradients(fn, [x(3, 4)], eps=1e-2, rtol=1e-4, atol=1e-4)
    assert grads[0].dtype == np.float64


def test_cast_to_int_has_no_gradient():
    t = K.placeholder("float64", (3,))
    assert K.gradients(K.sum(K.cast(K.cast(t, "int64"), "float64")), t) == [None]
