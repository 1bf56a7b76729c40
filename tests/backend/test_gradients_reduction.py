"""Numerical gradient checks (float64): reductions and matmul (ops.reduction,
ops.linalg).

Each case is ``(fn, inputs)``: ``fn`` builds the op from placeholders standing for
the float inputs; ``check_gradients`` compares ``gradients`` with central
differences. Inputs stay clear of kinks (0 for abs/relu, ties for max/min, clip
bounds), where a one-sided derivative would be as right as any other.
"""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients, grad_fn, x

pytestmark = pytest.mark.usefixtures("float64")


# -- reductions --------------------------------------------------------------------
REDUCTIONS = {"sum": K.sum, "mean": K.mean, "max": K.max, "min": K.min,
              "prod": K.prod, "logsumexp": K.logsumexp}
AXES = [None, 0, 1, -1, (0, 2), (-1, -3), (0, 1, 2)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, axis, keepdims):
    fn = REDUCTIONS[name]
    check_gradients(lambda t: fn(t, axis=axis, keepdims=keepdims), [x(2, 3, 4)])


@pytest.mark.parametrize("axis", [None, 1, (0, 2)], ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_second_order(name, axis):
    fn = REDUCTIONS[name]
    check_gradients(grad_fn(lambda t: fn(t * t, axis=axis)), [x(2, 3, 2)])


def test_max_splits_gradient_among_ties():
    t = K.placeholder("float64", (4,))
    (g,) = K.gradients(K.max(t), t)
    np.testing.assert_allclose(K.Function([t], g)(np.array([1.0, 3.0, 3.0, 2.0])),
                               [0.0, 0.5, 0.5, 0.0])


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (1, True),
                                           ((0, 2), False), (-1, True)], ids=str)
def test_unreduce_like(axis, keepdims):
    like = np.zeros((2, 3, 4))
    reduced_shape = np.sum(like, axis=axis, keepdims=keepdims).shape
    check_gradients(lambda g: K.unreduce_like(g, like, axis, keepdims),
                    [x(*reduced_shape)])
    check_gradients(grad_fn(lambda g: K.unreduce_like(g * g, like, axis, keepdims)),
                    [x(*reduced_shape)])


@pytest.mark.parametrize("rows", [3, 2000], ids=["filled", "view"])
def test_unreduce_like_small_and_large_agree_with_broadcasting(rows):
    # rows * 4 <= 4096 elements: a filled array; above: a broadcast view.
    like = np.zeros((rows, 4), "float32")
    g = np.array([1.5, -2.0, 0.25, 3.0], "float32")
    out = K.unreduce_like(g, like, axis=0)
    assert out.shape == (rows, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.tile(g, (rows, 1)))
    s = K.unreduce_like(np.float32(0.5), like)
    np.testing.assert_array_equal(s, np.full((rows, 4), 0.5, "float32"))


def test_logsumexp_large_inputs_stay_finite():
    v = np.array([[1000.0, 1000.0], [-1000.0, 0.0]])
    out = K.logsumexp(v, axis=-1)
    np.testing.assert_allclose(out, [1000.0 + np.log(2.0), 0.0])
    t = K.placeholder("float64", (2, 2))
    (g,) = K.gradients(K.logsumexp(t, axis=-1), t)
    np.testing.assert_allclose(K.Function([t], g)(v), [[0.5, 0.5], [0.0, 1.0]])


# -- matmul ------------------------------------------------------------------------
MATMULS = {
    "2d": ((3, 4), (4, 5), False, False),
    "batched": ((2, 3, 4), (2, 4, 5), False, False),
    "broadcast_b": ((2, 3, 4), (4, 5), False, False),
    "broadcast_a": ((3, 4), (2, 4, 5), False, False),
    "broadcast_both": ((2, 1, 3, 4), (3, 4, 2), False, False),
    "ta": ((4, 3), (4, 5), True, False),
    "tb": ((3, 4), (5, 4), False, True),
    "ta_tb": ((4, 3), (5, 4), True, True),
    "batched_ta_tb": ((2, 4, 3), (1, 5, 4), True, True),
    "batched_ta": ((2, 4, 3), (4, 2), True, False),
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmul(name):
    sa, sb, ta, tb = MATMULS[name]
    a, b = x(*sa, seed=1), x(*sb, seed=2)

    def fn(p, q):
        return K.matmul(p, q, transpose_a=ta, transpose_b=tb)

    check_gradients(fn, [a, b])
    check_gradients(grad_fn(fn), [a, b])
    check_gradients(grad_fn(lambda p, q: fn(p * p, q)), [a, b])


def test_matmul_matches_numpy():
    a, b = x(2, 4, 3, seed=1), x(2, 5, 4, seed=2)
    out = K.matmul(a, b, transpose_a=True, transpose_b=True)
    np.testing.assert_allclose(out, np.swapaxes(a, -1, -2) @ np.swapaxes(b, -1, -2))
