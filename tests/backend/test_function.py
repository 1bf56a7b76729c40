"""Execution: ``Function`` (compiled plans, updates, feeding) and ``Session``."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K


def _linear_step(lr=0.1):
    """loss = mean((x w - y)^2) and its SGD train op; w starts at 0."""
    x = K.placeholder("float32", (None,), name="x")
    y = K.placeholder("float32", (None,), name="y")
    w = K.Variable(0.0, name="w")
    loss = K.mean(K.square(x * w - y))
    (g,) = K.gradients(loss, w)
    return x, y, w, loss, w.assign_sub(lr * g)


# -- Session -----------------------------------------------------------------------
def test_session_nested_fetches_keep_their_structure():
    x = K.placeholder("float32", (2,))
    a, b, c = x + 1.0, x * 2.0, K.sum(x)
    out = K.Session().run({"a": a, "pair": (b, [c, a]), "list": [c]},
                          feed_dict={x: [1.0, 2.0]})
    assert set(out) == {"a", "pair", "list"}
    assert isinstance(out["pair"], tuple) and isinstance(out["pair"][1], list)
    np.testing.assert_array_equal(out["a"], [2.0, 3.0])
    np.testing.assert_array_equal(out["pair"][0], [2.0, 4.0])
    assert float(out["pair"][1][0]) == 3.0
    np.testing.assert_array_equal(out["pair"][1][1], [2.0, 3.0])
    assert float(out["list"][0]) == 3.0
    single = K.Session().run(c, {x: [3.0, 4.0]})
    assert float(single) == 7.0


def test_session_caches_one_plan_per_signature():
    x = K.placeholder("float32", (2,))
    y = x * 3.0
    sess = K.Session()
    for v in ([1.0, 2.0], [3.0, 4.0], [5.0, 6.0]):
        np.testing.assert_array_equal(sess.run(y, {x: v}), np.multiply(v, 3.0))
    assert len(sess._cache) == 1
    out = sess.run([y], {x: [0.0, 0.0]})  # same flat fetches: same plan
    assert isinstance(out, list) and len(sess._cache) == 1
    sess.run(y, {y: [1.0, 1.0]})    # another set of fed tensors
    sess.run([y, x], {x: [1.0, 1.0]})    # other fetches
    assert len(sess._cache) == 3


def test_session_context_manager_closes():
    x = K.placeholder("float32", ())
    with K.Session() as sess:
        assert float(sess.run(x * 2.0, {x: 1.5})) == 3.0
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(x, {x: 1.0})


def test_updates_apply_after_outputs():
    # Fetching the loss with the train op returns the pre-update loss, as TF1.
    x, y, w, loss, train = _linear_step()
    sess = K.Session()
    feed = {x: [1.0, 2.0], y: [2.0, 4.0]}
    loss0, w1, w_fetched = sess.run([loss, train, w], feed)
    assert float(loss0) == pytest.approx(10.0)        # w = 0: mean(4, 16)
    # d loss / dw = mean(2 x (x w - y)) = -10, so w becomes 0 - 0.1 * -10 = 1.
    assert float(w1) == pytest.approx(1.0)
    assert float(w_fetched) == 0.0                    # read before the update
    assert float(w.numpy()) == pytest.approx(1.0)
    assert float(sess.run(loss, feed)) == pytest.approx(2.5)


def test_fetched_variable_is_not_changed_by_later_updates():
    x, y, w, loss, train = _linear_step()
    f = K.Function([x, y], w, updates=[train])
    before = f(np.ones(2), np.ones(2))
    f(np.ones(2), np.ones(2))
    assert float(before) == 0.0


def test_fetched_variable_is_a_copy():
    w = K.Variable(np.array([1.0, 2.0]))
    out = K.Session().run(w)
    out[0] = 100.0  # writing into the fetched value leaves the Variable alone
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    again = K.Function([], [w])()[0]
    again[1] = -1.0
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    c = K.constant([1.0, 2.0])
    sess = K.Session()
    sess.run(c)[0] = 5.0
    np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])


def test_function_updates_as_ops_and_pairs():
    x = K.placeholder("float32", (3,))
    total = K.Variable(np.zeros(3), name="total")
    count = K.Variable(0.0, name="count")
    f = K.Function([x], K.sum(x), updates=[total.assign_add(x), (count, count + 1.0)])
    for v in ([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]):
        f(np.array(v))
    np.testing.assert_array_equal(total.numpy(), [2.0, 3.0, 4.0])
    assert float(count.numpy()) == 2.0
    assert float(f(np.zeros(3))) == 0.0
    with pytest.raises(TypeError, match="An update is"):
        K.Function([x], K.sum(x), updates=[np.zeros(3)])


def test_function_learns_linear_regression():
    x, y, w, loss, train = _linear_step(lr=0.05)
    step = K.Function([x, y], loss, updates=[train])
    xs = np.linspace(-1, 1, 32)
    losses = [float(step(xs, 3.0 * xs)) for _ in range(200)]
    assert losses[-1] < 1e-4 < losses[0]
    assert float(w.numpy()) == pytest.approx(3.0, abs=1e-2)


def test_function_output_structures():
    x = K.placeholder("float32", (2,))
    assert isinstance(K.Function([x], x * 2.0)(np.ones(2)), np.ndarray)
    out = K.Function([x], {"s": K.sum(x), "t": (x, x + 1.0)})(np.ones(2))
    assert float(out["s"]) == 2.0 and isinstance(out["t"], tuple)
    assert K.Function([x], [])(np.ones(2)) == []
    assert K.function([x], [x])(np.ones(2))[0].tolist() == [1.0, 1.0]


def test_fed_intermediate_cuts_the_graph():
    x = K.placeholder("float32", (2,), name="x_never_fed")
    h = K.exp(x) * 2.0
    y = h + 1.0
    f = K.Function([h], y)  # x is not needed: the graph is cut at h
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [2.0, 3.0])
    assert f.num_nodes == 1  # only the Add runs
    out = K.Session().run(y, {h: [0.0, 5.0]})
    np.testing.assert_array_equal(out, [1.0, 6.0])


def test_fed_variable_overrides_its_value():
    w = K.Variable(np.ones(2), name="w")
    np.testing.assert_array_equal(K.Session().run(w * 2.0, {w: [3.0, 4.0]}),
                                  [6.0, 8.0])
    np.testing.assert_array_equal(w.numpy(), [1.0, 1.0])


def test_function_prunes_unneeded_nodes():
    x = K.placeholder("float32", (2,))
    bad = K.gather(x, np.array([5]))  # would fail at run time if it ran
    used = x + 1.0
    f = K.Function([x], used)
    np.testing.assert_array_equal(f(np.zeros(2)), [1.0, 1.0])
    assert f.num_nodes == 1
    assert K.is_symbolic(bad)


def test_function_casts_feeds_of_the_same_kind():
    x = K.placeholder("float32", (None,))
    out = K.Function([x], x * 2.0)([1, 2])  # ints into a float placeholder
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2.0, 4.0])
    assert K.Function([x], x)(np.array([1.5], np.float64)).dtype == np.float32


def test_random_ops_redraw_per_run_and_replay_per_function():
    x = K.placeholder("float32", (4,))
    r = K.random_uniform_like(x, seed=11)
    f = K.Function([x], r)
    a, b = f(np.zeros(4)), f(np.zeros(4))
    assert not np.array_equal(a, b)
    g = K.Function([x], r)
    np.testing.assert_array_equal(g(np.zeros(4)), a)


def test_second_order_through_function():
    x = K.placeholder("float32", ())
    (g,) = K.gradients(x ** 3, x)
    (gg,) = K.gradients(g, x)
    f = K.Function([x], [g, gg])
    g_val, gg_val = f(2.0)
    assert float(g_val) == pytest.approx(12.0)
    assert float(gg_val) == pytest.approx(12.0)


# -- into= (outputs computed straight into a caller's buffer) ------------------------
def test_into_writes_matmul_outputs_in_place_and_leaves_others():
    x = K.placeholder("float32", (None, 3), name="x")
    w = K.Variable(np.arange(6, dtype="float32").reshape(3, 2), name="w")
    y = K.matmul(x, w)
    (gw,) = K.gradients(K.sum(K.square(y)), [w])  # MatMul(x, 2y, transpose_a)
    s = K.sum(y)
    fn = K.Function([x], [y, gw, s])
    xv = np.arange(12, dtype="float32").reshape(4, 3) - 5.0
    want = fn(xv)
    flat = np.full(6 + 8, -1.0, "float32")
    buf_g, buf_y = flat[:6].reshape(3, 2), flat[6:].reshape(4, 2)
    got = fn(xv, into=[buf_y, buf_g, None])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert got[0] is buf_y and got[1] is buf_g  # the caller's arrays themselves
    np.testing.assert_allclose(flat[:6], want[1].ravel(), rtol=1e-6)
    np.testing.assert_allclose(flat[6:], want[0].ravel(), rtol=1e-6)
    # a scalar reduction ignores its entry (its op writes no caller's array)
    spare = np.zeros((), "float32")
    fn(xv, into=[None, None, spare])
    assert spare == 0.0


def test_into_refuses_wrong_shape_dtype_or_count():
    x = K.placeholder("float32", (None, 3), name="x")
    w = K.Variable(np.ones((3, 2), "float32"), name="w")
    fn = K.Function([x], [K.matmul(x, w)])
    xv = np.ones((4, 3), "float32")
    with pytest.raises(ValueError, match=r"shape \(None, 2\).*Received: ndarray of shape \(2, 4\)"):
        fn(xv, into=[np.zeros((2, 4), "float32")])
    with pytest.raises(ValueError, match="dtype float32.*dtype float64"):
        fn(xv, into=[np.zeros((4, 2), "float64")])
    with pytest.raises(ValueError, match="one entry.*Received: 2 entries"):
        fn(xv, into=[None, None])
