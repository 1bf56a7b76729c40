"""tf.map_fn, tf.vectorized_map and tf.cond of kerasflow.compat.v1: values
against numpy, gradients against hand values and central differences."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import kerasflow.compat.v1 as tf
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients, grad_fn

ROWS = np.arange(12, dtype=np.float32).reshape(4, 3)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


# -- map_fn -------------------------------------------------------------------------
def test_map_fn_over_a_batch_of_unknown_size():
    x = tf.placeholder(tf.float32, [None, 3])
    norms = tf.map_fn(lambda row: tf.reduce_sum(row * row), x)
    doubled = tf.map_fn(lambda row: row * 2.0, x)
    assert norms.shape == (None,) and doubled.shape == (None, 3)
    for n in (4, 1, 0):
        a, b = run([norms, doubled], {x: ROWS[:n]})
        np.testing.assert_array_equal(a, (ROWS[:n] ** 2).sum(1))
        np.testing.assert_array_equal(b, ROWS[:n] * 2)
        assert a.shape == (n,) and b.shape == (n, 3)


def test_map_fn_structures_dtypes_and_outside_tensors():
    x = tf.placeholder(tf.float32, [None, 3])
    ids = tf.placeholder(tf.int32, [None])
    scale = tf.placeholder(tf.float32, [])
    w = tf.Variable(np.array([1.0, -1.0, 2.0], np.float32))
    out = tf.map_fn(lambda e: (tf.reduce_sum(e[0] * w) * scale,
                               tf.cast(tf.argmax(e[0]), tf.int32) + e[1]),
                    (x, ids), dtype=(tf.float32, tf.int32))
    assert isinstance(out, tuple) and out[1].dtype == np.int32
    dots, idx = run(list(out), {x: ROWS, ids: [10, 20, 30, 40], scale: 0.5})
    np.testing.assert_allclose(dots, ROWS @ np.array([1.0, -1.0, 2.0]) * 0.5)
    np.testing.assert_array_equal(idx, [12, 22, 32, 42])
    as_dict = tf.map_fn(lambda d: {"s": d["a"] + d["b"]},
                        {"a": tf.constant(ROWS), "b": tf.constant(ROWS)})
    np.testing.assert_array_equal(run(as_dict["s"]), ROWS * 2)
    with pytest.raises(TypeError, match="returned float32 where dtype says int32"):
        tf.map_fn(lambda r: r * 2.0, x, dtype=tf.int32)
    with pytest.raises(TypeError, match="callable fn"):
        tf.map_fn(3, x)
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.map_fn(lambda v: v, tf.constant(1.0))
    with pytest.raises(ValueError, match="one size along axis 0"):
        tf.map_fn(lambda e: e[0], (tf.constant(ROWS), tf.constant([1, 2])))
    bad = tf.map_fn(lambda e: e[0][0] + e[1], (x, tf.placeholder_with_default(
        tf.constant([1.0, 2.0]), [None])))
    with pytest.raises(ValueError, match="one size along axis 0"):
        run(bad, {x: ROWS})


def test_map_fn_draws_random_values_per_element_and_run():
    x = tf.placeholder(tf.float32, [None, 2])
    noisy = tf.map_fn(lambda r: r + tf.random_uniform([2]), x)
    with tf.Session() as sess:
        a = sess.run(noisy, {x: np.zeros((3, 2))})
        b = sess.run(noisy, {x: np.zeros((3, 2))})
    assert len({tuple(r) for r in a}) == 3 and not np.array_equal(a, b)
    assert ((a >= 0) & (a < 1)).all()
    with pytest.raises(NotImplementedError, match="draws random values"):
        tf.gradients(tf.reduce_sum(noisy), x)


def test_map_fn_gradients_reach_elements_and_outside_tensors():
    x = tf.placeholder(tf.float32, [None, 3])
    c = tf.placeholder(tf.float32, [])
    w = tf.Variable(np.array([1.0, 2.0, 3.0], np.float32))
    y = tf.map_fn(lambda r: tf.reduce_sum(r * w) * c, x)
    gx, gw, gc = tf.gradients(tf.reduce_sum(y * y), [x, w, c])
    a = ROWS[:2]
    got = run([gx, gw, gc], {x: a, c: 2.0})
    yv = a @ np.array([1.0, 2.0, 3.0]) * 2.0           # L = sum(y^2)
    np.testing.assert_allclose(got[0], 2 * yv[:, None] * np.array([1, 2, 3]) * 2)
    np.testing.assert_allclose(got[1], (2 * yv[:, None] * a * 2).sum(0))
    np.testing.assert_allclose(got[2], (2 * yv * yv / 2.0).sum())
    frozen = tf.map_fn(lambda r: r * w, x, back_prop=False)
    assert tf.gradients(tf.reduce_sum(frozen), [x, w]) == [None, None]
    # A training step through map_fn moves the Variable.
    loss = tf.reduce_mean(tf.square(tf.map_fn(lambda r: tf.reduce_sum(r * w), x) - 1.0))
    step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss, {x: a})
        for _ in range(20):
            sess.run(step, {x: a})
        assert sess.run(loss, {x: a}) < before


@pytest.fixture
def float64():
    old = K.floatx()
    K.set_floatx("float64")
    yield
    K.set_floatx(old)


def _mapped(e, w):
    return tf.map_fn(lambda r: tf.tanh(r * w) * tf.reduce_sum(r), e)


def test_map_fn_gradients_match_central_differences(float64):
    rng = np.random.RandomState(0)
    e, w = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (3,))
    check_gradients(_mapped, [e, w])
    check_gradients(grad_fn(_mapped), [e, w])  # second order: a MapFn of a MapFn


def test_map_fn_graphs_pickle():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.map_fn(lambda r: r * tf.constant(3.0), x)
    copy = pickle.loads(pickle.dumps(y))
    np.testing.assert_array_equal(K.Function([x], copy)(ROWS), ROWS * 3)


def test_vectorized_map_sees_one_element_not_the_batch():
    x = tf.placeholder(tf.float32, [None, 3])
    # reduce_sum over everything fn sees: per row, as TF's vectorized_map.
    out = tf.vectorized_map(lambda r: tf.reduce_sum(r), x)
    np.testing.assert_array_equal(run(out, {x: ROWS}), ROWS.sum(1))
    rows = tf.constant(ROWS)
    pair = tf.vectorized_map(lambda e: e[0] * e[1], (rows, rows))
    np.testing.assert_array_equal(run(pair), ROWS ** 2)


# -- cond ---------------------------------------------------------------------------
def test_cond_selects_the_taken_branch_at_run_time():
    x = tf.placeholder(tf.float32, [None, 3])
    training = tf.placeholder(tf.bool, [])
    out = tf.cond(training, lambda: x * 2.0, lambda: x - 1.0)
    pair = tf.cond(training, lambda: (x, tf.constant(1)), lambda: (-x, tf.constant(2)))
    single = tf.cond(tf.constant(False), lambda: [x], lambda: [x + 1.0])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(out, {x: ROWS, training: True}),
                                      ROWS * 2)
        np.testing.assert_array_equal(sess.run(out, {x: ROWS, training: False}),
                                      ROWS - 1)
        p, k = sess.run(list(pair), {x: ROWS, training: False})
        np.testing.assert_array_equal(p, -ROWS)
        assert k == 2
        np.testing.assert_array_equal(sess.run(single, {x: ROWS}), ROWS + 1)
    g = tf.gradients(tf.reduce_sum(out), x)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(g, {x: ROWS, training: True}), 2.0)
        np.testing.assert_array_equal(sess.run(g, {x: ROWS, training: False}), 1.0)


def test_cond_errors():
    x = tf.constant(ROWS)
    with pytest.raises(TypeError, match="Python bool"):
        tf.cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="false_fn to be callable"):
        tf.cond(tf.constant(True), lambda: x, x)
    with pytest.raises(ValueError, match=r"scalar pred.*\(2,\)"):
        tf.cond(tf.constant([True, False]), lambda: x, lambda: x)
    with pytest.raises(TypeError, match="bool pred"):
        tf.cond(tf.constant(1.0), lambda: x, lambda: x)
    with pytest.raises(ValueError, match="same structure"):
        tf.cond(tf.constant(True), lambda: (x, x), lambda: x)
