"""Numerical gradient checks (float64): activations, losses and dropout (ops.nn).

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


# -- nn ----------------------------------------------------------------------------
NN = {
    "softmax": (K.softmax, [x(3, 4)]),
    "softmax_axis0": (lambda t: K.softmax(t, axis=0), [x(3, 4)]),
    "softmax_axes12": (lambda t: K.softmax(t, axis=(1, 2)), [x(2, 3, 2)]),
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
