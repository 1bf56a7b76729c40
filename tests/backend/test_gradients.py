"""Numerical gradient checks (float64) for every differentiable backend op.

Each case is ``(fn, inputs)``: ``fn`` builds the op from placeholders standing for
the float inputs; ``check_gradients`` compares ``gradients`` with central
differences. Inputs stay clear of kinks (0 for abs/relu, ties for max/min, clip
bounds), where a one-sided derivative would be as right as any other.
"""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from tests.backend.gradcheck import away_from_zero, check_gradients, grad_fn

pytestmark = pytest.mark.usefixtures("float64")


def _r(seed):
    return np.random.RandomState(seed)


def x(*shape, seed=0):
    """Values with |v| in [0.3, 1.5), random signs."""
    return away_from_zero(_r(seed), shape)


def pos(*shape, seed=0):
    """Positive values in [0.5, 2)."""
    return _r(seed).uniform(0.5, 2.0, size=shape)


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


def test_logsumexp_large_inputs_stay_finite():
    v = np.array([[1000.0, 1000.0], [-1000.0, 0.0]])
    out = K.logsumexp(v, axis=-1)
    np.testing.assert_allclose(out, [1000.0 + np.log(2.0), 0.0])
    t = K.placeholder("float64", (2, 2))
    (g,) = K.gradients(K.logsumexp(t, axis=-1), t)
    np.testing.assert_allclose(K.Function([t], g)(v), [[0.5, 0.5], [0.0, 1.0]])


# -- shape ops ---------------------------------------------------------------------
SHAPE_CASES = {
    "reshape": (lambda t: K.reshape(t, (4, -1)), [(2, 3, 4)]),
    "reshape_none": (lambda t: K.reshape(t, (None, 2)), [(2, 3, 4)]),
    "flatten": (K.flatten, [(2, 3, 4)]),
    "transpose": (K.transpose, [(2, 3, 4)]),
    "transpose_perm": (lambda t: K.transpose(t, (1, 0, 2)), [(2, 3, 4)]),
    "transpose_perm_cycle": (lambda t: K.transpose(t, (2, 0, 1)), [(2, 3, 4)]),
    "T": (lambda t: t.T, [(3, 4)]),
    "concatenate_0": (lambda a, b, c: K.concatenate([a, b, c], axis=0),
                      [(1, 3), (2, 3), (3, 3)]),
    "concatenate_last": (lambda a, b: K.concatenate([a, b]), [(2, 3), (2, 1)]),
    "concatenate_same": (lambda a: K.concatenate([a, a * 2.0], axis=1), [(2, 3)]),
    "stack_0": (lambda a, b: K.stack([a, b]), [(2, 3), (2, 3)]),
    "stack_1": (lambda a, b, c: K.stack([a, b, c], axis=1), [(2, 3)] * 3),
    "stack_last": (lambda a, b: K.stack([a, b], axis=-1), [(2, 3), (2, 3)]),
    "split_equal": (lambda t: K.split(t, 2, axis=1), [(3, 4)]),
    "split_sizes": (lambda t: K.split(t, [1, 3], axis=-1), [(3, 4)]),
    "split_one_used": (lambda t: K.split(t, 3, axis=0)[1], [(3, 4)]),
    "split_two_used": (lambda t: K.split(t, [1, 1, 2], axis=1)[::2], [(3, 4)]),
    "expand_dims_0": (lambda t: K.expand_dims(t, 0), [(2, 3)]),
    "expand_dims_1": (lambda t: K.expand_dims(t, 1), [(2, 3)]),
    "expand_dims_last": (lambda t: K.expand_dims(t, -1), [(2, 3)]),
    "squeeze_all": (K.squeeze, [(1, 3, 1, 2)]),
    "squeeze_axis": (lambda t: K.squeeze(t, 2), [(1, 3, 1, 2)]),
    "squeeze_axes": (lambda t: K.squeeze(t, (0, -2)), [(1, 3, 1, 2)]),
    "broadcast_to": (lambda t: K.broadcast_to(t, (2, 3, 4)), [(3, 1)]),
    "broadcast_to_rank": (lambda t: K.broadcast_to(t, (3, 4)), [(4,)]),
    "broadcast_like": (lambda t: K.broadcast_like(t, np.zeros((2, 3))), [(3,)]),
    "tile_rows": (lambda t: K.tile(t, (2, 1)), [(2, 3)]),
    "tile_cols": (lambda t: K.tile(t, (1, 3)), [(2, 3)]),
    "tile_both": (lambda t: K.tile(t, (2, 2)), [(2, 3)]),
    "tile_3d": (lambda t: K.tile(t, (2, 1, 3)), [(1, 2, 2)]),
    "pad": (lambda t: K.pad(t, ((1, 2), (0, 1))), [(2, 3)]),
    "pad_value": (lambda t: K.pad(t, ((0, 0), (2, 0)), constant_values=1.5),
                  [(2, 3)]),
    "pad_3d": (lambda t: K.pad(t, ((1, 0), (0, 0), (2, 1))), [(2, 2, 2)]),
    "reshape_like": (lambda t: K.reshape_like(t, np.zeros((3, 4))), [(2, 6)]),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_op(name):
    fn, shapes = SHAPE_CASES[name]
    check_gradients(fn, [x(*s, seed=i) for i, s in enumerate(shapes)])


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_op_second_order(name):
    fn, shapes = SHAPE_CASES[name]

    def squared(*ts):
        return fn(*[t * t for t in ts])

    check_gradients(grad_fn(squared), [x(*s, seed=i) for i, s in enumerate(shapes)])


KEYS = {
    "int": 1,
    "negative_int": -1,
    "slice": slice(1, 3),
    "slice_step": slice(None, None, 2),
    "slice_negative_step": slice(None, None, -1),
    "slice_negative_bounds": (slice(-3, -1), slice(None, None, -2)),
    "ellipsis_int": (Ellipsis, 1),
    "int_ellipsis_step": (0, Ellipsis, slice(None, None, -2)),
    "none": (None, 0, slice(1, 3)),
    "none_middle": (slice(1, None), None, -2),
    "two_ints": (1, -2),
    "all": (slice(None), slice(None), slice(None)),
}


@pytest.mark.parametrize("key", sorted(KEYS))
def test_getitem(key):
    check_gradients(lambda t: t[KEYS[key]], [x(3, 4, 4)])


@pytest.mark.parametrize("key", ["slice_step", "none_middle", "int_ellipsis_step"])
def test_getitem_second_order(key):
    check_gradients(grad_fn(lambda t: (t * t)[KEYS[key]]), [x(3, 4, 4)])


GATHERS = {
    "axis0_repeated": ([0, 2, 0, 1, 2], 0),
    "axis1_2d_indices": ([[0, 0], [2, 1]], 1),
    "axis0_negative": ([-1, 0, -1], 0),
    "axis_last": ([3, 3, 1], -1),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather(name):
    idx, axis = GATHERS[name]
    idx = np.asarray(idx, dtype=np.int64)
    check_gradients(lambda t: K.gather(t, idx, axis=axis), [x(3, 4)])
    check_gradients(grad_fn(lambda t: K.gather(t * t, idx, axis=axis)), [x(3, 4)])


def test_getitem_with_int_array_gathers():
    idx = np.array([2, 2, 0], dtype=np.int64)
    check_gradients(lambda t: t[idx], [x(3, 4)])


def test_gather_with_index_placeholder():
    idx = K.placeholder("int64", (4,))
    params = K.placeholder("float64", (3, 2))
    (g,) = K.gradients(K.gather(params, idx), params)
    out = K.Function([params, idx], g)(np.ones((3, 2)), np.array([0, 2, 2, 2]))
    np.testing.assert_allclose(out, [[1, 1], [0, 0], [3, 3]])


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


# -- nn ----------------------------------------------------------------------------
NN = {
    "softmax": (K.softmax, [x(3, 4)]),
    "softmax_axis0": (lambda t: K.softmax(t, axis=0), [x(3, 4)]),
    "log_softmax": (K.log_softmax, [x(3, 4)]),
    "log_softmax_3d": (lambda t: K.log_softmax(t, axis=1), [x(2, 3, 2)]),
    "softmax_xent": (K.softmax_cross_entropy_with_logits, [pos(3, 4), x(3, 4)]),
    "softmax_xent_3d": (K.softmax_cross_entropy_with_logits,
                        [pos(2, 2, 3), x(2, 2, 3)]),
    "sparse_xent": (lambda t: K.sparse_softmax_cross_entropy_with_logits(
        np.array([0, 3, 3], dtype=np.int64), t), [x(3, 4)]),
    "sparse_xent_3d": (lambda t: K.sparse_softmax_cross_entropy_with_logits(
        np.array([[0, 2], [1, 1]], dtype=np.int32), t), [x(2, 2, 3)]),
    "sigmoid_xent": (K.sigmoid_cross_entropy_with_logits, [pos(3, 4) / 2, x(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn(name):
    fn, inputs = NN[name]
    check_gradients(fn, inputs)


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_second_order(name):
    fn, inputs = NN[name]
    check_gradients(grad_fn(fn), inputs)


def test_softmax_xent_gradient_is_softmax_minus_labels():
    labels = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    logits = x(2, 3)
    lp, zp = K.placeholder("float64", (2, 3)), K.placeholder("float64", (2, 3))
    (g,) = K.gradients(K.softmax_cross_entropy_with_logits(lp, zp), zp)
    sm = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(K.Function([lp, zp], g)(labels, logits), sm - labels)


def test_sparse_xent_equals_dense_xent():
    logits = x(3, 4)
    labels = np.array([1, 0, 3])
    sparse = K.sparse_softmax_cross_entropy_with_logits(labels, logits)
    dense = K.softmax_cross_entropy_with_logits(np.eye(4)[labels], logits)
    np.testing.assert_allclose(sparse, dense)


def test_dropout_gradient_is_the_scaled_mask():
    # Each run draws a new mask, so the gradient is checked against the mask of
    # the same run: d sum(y * w) / dx = w * keep / (1 - rate).
    rate = 0.4
    t = K.placeholder("float64", (20, 20))
    w = x(20, 20, seed=3)
    y = K.dropout(t, rate, seed=7)
    (g,) = K.gradients(K.sum(y * w), t)
    f = K.Function([t], [y, g])
    v = x(20, 20, seed=4)
    y1, g1 = f(v)
    keep = y1 != 0
    assert 0.4 < keep.mean() < 0.8
    np.testing.assert_allclose(y1, np.where(keep, v / (1 - rate), 0.0))
    np.testing.assert_allclose(g1, np.where(keep, w / (1 - rate), 0.0))
    y2, g2 = f(v)
    assert not np.array_equal(y2 != 0, keep)  # a new mask per run
    np.testing.assert_allclose(g2, np.where(y2 != 0, w / (1 - rate), 0.0))
    # A second Function over the same graph and seed replays the same masks.
    y1b, _ = K.Function([t], [y, g])(v)
    np.testing.assert_array_equal(y1b, y1)


def test_dropout_inference_and_rate_zero_are_identity():
    t = K.placeholder("float64", (3,))
    assert K.dropout(t, 0.5, training=False) is t
    assert K.dropout(t, 0.0) is t
    with pytest.raises(ValueError, match="rate=1.0"):
        K.dropout(t, 1.0)


def test_stop_gradient():
    t = K.placeholder("float64", (3,))
    assert K.gradients(K.sum(K.stop_gradient(t)), t) == [None]
    (g,) = K.gradients(K.sum(K.stop_gradient(t) * t), t)
    v = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(K.Function([t], g)(v), v)  # only the direct path
    check_gradients(lambda a, b: K.stop_gradient(a) * b, [x(3), x(3, seed=1)],
                    expect_none=(0,))


def test_smooth_composites_have_exact_gradient_at_zero():
    # Built from max(x, 0) and -|x|, whose kinks at 0 must cancel exactly:
    # softplus'(0) = sigmoid(0) = 1/2 and d sigmoid_xent / dx = sigmoid(x) - z.
    t = K.placeholder("float64", (3,))
    z = np.array([0.0, 0.25, 1.0])
    (g_sp,) = K.gradients(K.sum(K.softplus(t)), t)
    (g_xe,) = K.gradients(K.sum(K.sigmoid_cross_entropy_with_logits(z, t)), t)
    g_sp, g_xe = K.Function([t], [g_sp, g_xe])(np.zeros(3))
    np.testing.assert_allclose(g_sp, [0.5, 0.5, 0.5])
    np.testing.assert_allclose(g_xe, [0.5, 0.25, -0.5])
    np.testing.assert_allclose(K.softplus(np.array([0.0, 800.0, -800.0])),
                               [np.log(2.0), 800.0, 0.0])


def test_smooth_composites_at_zero_numerically():
    check_gradients(K.softplus, [np.zeros(3)])
    check_gradients(lambda t: K.sigmoid_cross_entropy_with_logits(
        np.array([0.0, 0.5, 1.0]), t), [np.zeros(3)])
