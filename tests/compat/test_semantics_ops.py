"""TF1 op semantics of kerasflow.compat.v1 against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow.compat.v1 as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)


# -- dtypes ----------------------------------------------------------------------------
def test_float_means_float32_and_dtypes_compare_with_numpy():
    x = tf.placeholder("float")
    assert x.dtype == np.float32 and x.dtype == tf.float32
    assert tf.placeholder("double").dtype == np.float64
    assert tf.placeholder(tf.int32, [None]).dtype == np.int32
    assert tf.float32.as_numpy_dtype is np.float32 and tf.float32.name == "float32"
    assert tf.as_dtype("float") is not None and tf.as_dtype(np.int64) == tf.int64
    assert tf.constant(1.0).dtype == np.float32    # Python float -> float32
    assert tf.constant(3).dtype == np.int32        # Python int -> int32
    assert tf.Variable(0).dtype == np.int32
    assert tf.one_hot([0, 1], 3, dtype=tf.int32).dtype == np.int32
    assert tf.get_variable("i64", [2], dtype=np.int64).dtype == np.int64
    with tf.variable_scope("f64", dtype=tf.float64):
        assert tf.get_variable("v", [1]).dtype == np.float64
    with pytest.raises(TypeError, match="string"):
        tf.placeholder(tf.string)


def test_python_scalars_take_the_tensor_dtype():
    x = tf.placeholder("float")
    assert tf.pow(x, 2).dtype == np.float32
    assert (tf.reduce_sum(x) / (2 * 17)).dtype == np.float32
    assert tf.multiply(x, np.float64(2.0)).dtype == np.float32


# -- reductions ------------------------------------------------------------------------
def test_reduction_indices_and_keep_dims():
    x = tf.constant(X)
    s, k, m, mx, mn = run([
        tf.reduce_sum(x, reduction_indices=1),
        tf.reduce_sum(x, reduction_indices=[1], keep_dims=True),
        tf.reduce_mean(x, reduction_indices=[0, 1]),
        tf.reduce_max(x, 0),
        tf.reduce_min(x, axis=1, keepdims=True),
    ])
    np.testing.assert_array_equal(s, [6.0, 15.0])
    np.testing.assert_array_equal(k, [[6.0], [15.0]])
    assert m == 3.5
    np.testing.assert_array_equal(mx, [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(mn, [[1.0], [4.0]])
    with pytest.raises(ValueError, match="both 'axis' and 'reduction_indices'"):
        tf.reduce_sum(x, axis=0, reduction_indices=0)
    b = tf.constant(np.array([[True, False], [True, True]]))
    np.testing.assert_array_equal(run(tf.reduce_any(b, 1)), [True, True])
    np.testing.assert_array_equal(run(tf.reduce_all(b, 1)), [False, True])


def test_argmax_defaults_to_axis_0_as_tf1():
    x = tf.constant(np.array([[1, 9, 3], [4, 5, 6]], np.float32))
    np.testing.assert_array_equal(run(tf.argmax(x)), [1, 0, 1])
    np.testing.assert_array_equal(run(tf.argmax(x, 1)), [1, 2])
    np.testing.assert_array_equal(run(tf.argmin(x, dimension=1)), [0, 0])


# -- tf.nn -----------------------------------------------------------------------------
def test_dropout_keep_prob_scales_kept_values_by_its_inverse():
    x = tf.constant(np.full((4000,), 3.0, np.float32))
    keep_prob = tf.placeholder(tf.float32)
    out = tf.nn.dropout(x, keep_prob)
    with tf.Session() as sess:
        half = sess.run(out, {keep_prob: 0.5})
        quarter = sess.run(out, {keep_prob: 0.25})
        full = sess.run(out, {keep_prob: 1.0})
    assert set(np.unique(half)) == {0.0, 6.0}          # 3 / 0.5
    assert set(np.unique(quarter)) == {0.0, 12.0}      # 3 / 0.25
    assert abs((half > 0).mean() - 0.5) < 0.04
    assert abs((quarter > 0).mean() - 0.25) < 0.04
    np.testing.assert_array_equal(full, np.full((4000,), 3.0))
    fixed = run(tf.nn.dropout(x, 0.8))                  # a Python keep_prob
    assert set(np.unique(fixed)) == {0.0, np.float32(3.0 / 0.8)}
    with pytest.raises(ValueError, match="range \\(0, 1\\]"):
        tf.nn.dropout(x, 0.0)


def test_softmax_cross_entropy_with_logits_takes_named_arguments_only():
    labels = tf.constant([[0.0, 1.0, 0.0]])
    logits = tf.constant([[1.0, 2.0, 3.0]])
    loss = tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=labels)
    expected = np.log(np.e + np.e**2 + np.e**3) - 2.0      # = 1.4076059644
    np.testing.assert_allclose(run(loss), [expected], rtol=1e-6)
    with pytest.raises(ValueError, match="Only call `softmax_cross_entropy_with_"
                                         "logits` with named arguments"):
        tf.nn.softmax_cross_entropy_with_logits(labels, logits)
    # v1 stops the gradient into labels; v2 does not.
    lab = tf.Variable([[0.2, 0.3, 0.5]])
    g1 = tf.gradients(tf.nn.softmax_cross_entropy_with_logits(labels=lab,
                                                              logits=logits), lab)
    g2 = tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(labels=lab,
                                                                 logits=logits), lab)
    assert g1[0] is None or not np.any(run(g1[0]))
    np.testing.assert_allclose(run(g2[0]), -(np.array([[1.0, 2.0, 3.0]])
                                             - np.log(np.e + np.e**2 + np.e**3)),
                               rtol=1e-5)


def test_sparse_and_sigmoid_cross_entropy_and_l2_loss():
    logits = tf.constant([[1.0, 2.0, 3.0]])
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([1], dtype=tf.int64), logits=logits)
    sig = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant([1.0, 0.0]),
                                                  logits=tf.constant([0.0, 2.0]))
    s, g, l2 = run([sparse, sig, tf.nn.l2_loss(tf.constant([3.0, 4.0]))])
    np.testing.assert_allclose(s, [np.log(np.e + np.e**2 + np.e**3) - 2.0], rtol=1e-6)
    np.testing.assert_allclose(g, [np.log(2.0), np.log(1 + np.e**2)], rtol=1e-6)
    assert l2 == 12.5                                        # (9 + 16) / 2


def test_conv2d_and_max_pool_take_nhwc_strides_and_ksize():
    x = tf.constant(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1))
    w = tf.constant(np.ones((2, 2, 1, 1), np.float32))
    conv = tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="VALID")
    pool = tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                          padding="SAME")
    c, p = run([conv, pool])
    np.testing.assert_array_equal(c[0, :, :, 0], [[10.0, 18.0], [42.0, 50.0]])
    np.testing.assert_array_equal(p[0, :, :, 0], [[5.0, 7.0], [13.0, 15.0]])
    with pytest.raises(ValueError, match=r"\[1, h, w, 1\]"):
        tf.nn.conv2d(x, w, strides=[2, 1, 1, 2], padding="VALID")


def test_moments_l2_normalize_embedding_lookup():
    mean, var = tf.nn.moments(tf.constant(X), axes=[0])
    n, e = run([tf.nn.l2_normalize(tf.constant([3.0, 4.0]), 0),
                tf.nn.embedding_lookup(tf.constant(X), tf.constant([1, 1, 0]))])
    m, v = run([mean, var])
    np.testing.assert_array_equal(m, [2.5, 3.5, 4.5])
    np.testing.assert_array_equal(v, [2.25, 2.25, 2.25])
    np.testing.assert_allclose(n, [0.6, 0.8])
    np.testing.assert_array_equal(e, X[[1, 1, 0]])


# -- array and math ops ----------------------------------------------------------------
def test_shape_ops_match_numpy():
    x = tf.constant(X)
    outs = run([tf.transpose(x, [1, 0]), tf.concat([x, x], 0), tf.stack([x, x], 1),
                tf.slice(x, [0, 1], [2, -1]), tf.tile(x, [1, 2]),
                tf.pad(x, [[1, 0], [0, 1]]), tf.expand_dims(x, 0),
                tf.squeeze(tf.constant(np.ones((1, 3, 1))), [0, 2]),
                tf.one_hot(tf.constant([0, 2]), 3, on_value=5.0, off_value=-1.0),
                tf.shape(x), tf.size(x), tf.gather(x, tf.constant([1]))])
    expected = [X.T, np.concatenate([X, X], 0), np.stack([X, X], 1), X[:, 1:],
                np.tile(X, (1, 2)), np.pad(X, [[1, 0], [0, 1]]), X[None],
                np.ones(3), [[5.0, -1, -1], [-1, -1, 5.0]], [2, 3], 6, X[[1]]]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)
    parts = run(tf.unstack(x, axis=1))
    assert [p.tolist() for p in parts] == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert tf.shape(x).dtype == np.int32
    assert x.get_shape().as_list() == [2, 3]
    assert tf.placeholder("float", [None, 784]).get_shape().as_list() == [None, 784]


def test_math_ops_match_hand_values():
    a = tf.constant(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    outs = run([tf.matmul(a, a, transpose_b=True), tf.clip_by_value(a, 1.5, 3.5),
                tf.clip_by_norm(tf.constant([3.0, 4.0]), 1.0), tf.div(7, 2),
                tf.div(7.0, 2.0), tf.tensordot(a, a, axes=1),
                tf.math.confusion_matrix([0, 1, 1, 2], [0, 2, 1, 2], num_classes=3),
                tf.squared_difference(a, 1.0), tf.norm(tf.constant([3.0, 4.0]))])
    np.testing.assert_array_equal(outs[0], [[5.0, 11.0], [11.0, 25.0]])
    np.testing.assert_array_equal(outs[1], [[1.5, 2.0], [3.0, 3.5]])
    np.testing.assert_allclose(outs[2], [0.6, 0.8])
    assert outs[3] == 3 and outs[4] == 3.5
    np.testing.assert_array_equal(outs[5], [[7.0, 10.0], [15.0, 22.0]])
    np.testing.assert_array_equal(outs[6], [[1, 0, 0], [0, 1, 1], [0, 0, 1]])
    np.testing.assert_array_equal(outs[7], [[0.0, 1.0], [4.0, 9.0]])
    assert outs[8] == 5.0


def test_zeros_ones_and_fill_take_shapes_known_at_run_time():
    x = tf.placeholder(tf.float32, [None, 3])
    s = tf.shape(x)
    z = tf.zeros([s[0], s[1]])
    o = tf.ones(s, tf.int64)
    f = tf.fill([s[0], 2], 7)
    g = tf.fill(tf.stack([s[1]]), tf.reduce_sum(x))  # a computed value
    k = tf.zeros([s[0], 4], tf.int32)
    assert z.shape == (None, None) and z.dtype == np.float32
    assert o.dtype == np.int64 and f.dtype == np.int32
    assert k.shape == (None, 4)  # the int dims stay known
    with tf.Session() as sess:
        for n in (2, 5):
            zv, ov, fv, gv, kv = sess.run([z, o, f, g, k], {x: np.ones((n, 3))})
            np.testing.assert_array_equal(zv, np.zeros((n, 3)))
            np.testing.assert_array_equal(ov, np.ones((n, 3)))
            np.testing.assert_array_equal(fv, np.full((n, 2), 7))
            np.testing.assert_array_equal(gv, [3.0 * n] * 3)
            assert kv.shape == (n, 4) and kv.dtype == np.int32
    # Static shapes still give constants, with TF's dtypes.
    assert tf.zeros([2], tf.int64).dtype == np.int64
    np.testing.assert_array_equal(run(tf.fill([2, 1], 2.5)), [[2.5], [2.5]])
    with pytest.raises(TypeError, match="int shape tensor"):
        tf.zeros([tf.constant(2.0), 3])
    with pytest.raises(ValueError, match="scalar int tensor"):
        tf.zeros([s, 3])


def test_reshape_to_shapes_known_at_run_time():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    s = tf.shape(x)
    flat = tf.reshape(x, [s[0] * s[1], 4])
    split = tf.reshape(x, [s[0], s[1], 2, 2])
    vec = tf.reshape(x, tf.stack([s[0], 12]))
    back = tf.reshape(split, s)
    assert flat.shape == (None, 4) and split.shape == (None, None, 2, 2)
    assert vec.shape == (None, None) and back.shape == (None, None, None)
    # With the input's size known, the one unknown dim is deduced.
    c = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    sc = tf.shape(c)
    assert tf.reshape(c, [sc[0], sc[1], 2, -1]).shape == (None, None, 2, None)
    assert tf.reshape(c, [sc[0] * sc[1], 4]).shape == (6, 4)
    assert tf.reshape(c, tf.reshape(tf.size(c), [1])).shape == (24,)
    value = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    grad = tf.gradients(tf.reduce_sum(split * tf.constant([[1.0, 2.0], [3.0, 4.0]])),
                        x)[0]
    with tf.Session() as sess:
        fv, sv, vv, bv, gv = sess.run([flat, split, vec, back, grad], {x: value})
        np.testing.assert_array_equal(fv, value.reshape(6, 4))
        np.testing.assert_array_equal(sv, value.reshape(2, 3, 2, 2))
        np.testing.assert_array_equal(vv, value.reshape(2, 12))
        np.testing.assert_array_equal(bv, value)
        np.testing.assert_array_equal(gv, np.tile([1.0, 2.0, 3.0, 4.0], (2, 3, 1)))
        bad = tf.reshape(x, [s[0], 5, s[1]])
        with pytest.raises(ValueError, match="cannot reshape"):
            sess.run(bad, {x: value})


def test_random_ops_take_run_time_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    normal = tf.random_normal(tf.shape(x))
    uniform = tf.random_uniform([tf.shape(x)[0]], maxval=4, dtype=tf.int32)
    trunc = tf.truncated_normal([tf.shape(x)[0], 2], stddev=0.5)
    assert normal.shape == (None, None) and uniform.shape == (None,)
    with tf.Session() as sess:
        a = sess.run(normal, {x: np.zeros((4, 3))})
        b = sess.run(normal, {x: np.zeros((4, 3))})
        u, t = sess.run([uniform, trunc], {x: np.zeros((50, 3))})
    assert a.shape == (4, 3) and not np.array_equal(a, b)  # drawn per run
    assert u.shape == (50,) and set(u) <= {0, 1, 2, 3} and len(set(u)) > 1
    assert t.shape == (50, 2) and np.abs(t).max() <= 1.0  # within 2 stddev


def test_reverse_flips_the_listed_axes():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    outs = run([tf.reverse(x, [1]), tf.reverse(x, [0, -1]), tf.reverse_v2(x, [])])
    np.testing.assert_array_equal(outs[0], x[:, ::-1])
    np.testing.assert_array_equal(outs[1], x[::-1, :, ::-1])
    np.testing.assert_array_equal(outs[2], x)
    with pytest.raises(ValueError, match=r"distinct axes in \[-3, 3\).*\[1, 1\]"):
        tf.reverse(x, [1, 1])
    with pytest.raises(ValueError, match="distinct axes"):
        tf.reverse(x, [3])
    with pytest.raises(TypeError, match="list of ints"):
        tf.reverse(x, [0.5])


def test_placeholder_with_default_uses_the_default_unless_fed():
    p = tf.placeholder_with_default(tf.constant([1.0, 2.0]), shape=[None])
    doubled = p * 2.0
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(doubled), [2.0, 4.0])
        np.testing.assert_array_equal(sess.run(doubled, {p: [5.0, 6.0, 7.0]}),
                                      [10.0, 12.0, 14.0])


def test_tf_layers_conv2d_maps_onto_keras_conv2d_when_present():
    from kerasflow import layers as klayers

    x = tf.placeholder("float", [None, 8, 8, 1])
    if not hasattr(klayers, "Conv2D"):
        with pytest.raises(NotImplementedError, match="tf.layers.conv2d maps onto "
                                                      "kerasflow.layers.Conv2D"):
            tf.layers.conv2d(x, 4, 3)
        return
    y = tf.layers.conv2d(x, 4, 3, padding="same")
    assert y.get_shape().as_list() == [None, 8, 8, 4]


def test_random_ops_are_reproducible_with_set_random_seed():
    def draw():
        tf.reset_default_graph()
        tf.set_random_seed(42)
        return run([tf.random_normal([3]), tf.random_uniform([2], 0, 10)])

    a, b = draw(), draw()
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert np.all((a[1] >= 0) & (a[1] < 10))
    tf.set_random_seed(42)
    r = tf.random_normal([3])
    with tf.Session() as sess:                     # drawn anew at every run
        assert not np.array_equal(sess.run(r), sess.run(r))


# -- missing symbols -------------------------------------------------------------------
@pytest.mark.parametrize("get, name", [
    (lambda: tf.while_loop, "tf.while_loop"),
    (lambda: tf.contrib.layers, "tf.contrib.layers"),
    (lambda: tf.nn.ctc_loss, "tf.nn.ctc_loss"),
    (lambda: tf.train.FtrlOptimizer, "tf.train.FtrlOptimizer"),
    (lambda: tf.math.cumsum, "tf.math.cumsum"),
    (lambda: tf.layers.conv3d, "tf.layers.conv3d"),
    (lambda: tf.summary.image, "tf.summary.image"),
])
def test_missing_tf1_symbols_raise_not_implemented_naming_them(get, name):
    with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
        get()


def test_private_names_still_raise_attribute_error():
    assert not hasattr(tf, "__wrapped__")
    assert not hasattr(tf.nn, "_secret")


def test_enable_eager_execution_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="graph programs"):
        tf.enable_eager_execution()
    tf.disable_v2_behavior()                          # a no-op
    assert tf.executing_eagerly() is False


def test_tensordot_with_an_unknown_batch_dimension_as_tf():
    """A TF1 factorization machine: ``(None, 784)`` · ``(784, 5, 10)``."""
    x = tf.placeholder(tf.float32, [None, 6])
    w_value = np.arange(6 * 2 * 3, dtype=np.float32).reshape(6, 2, 3)
    w = tf.constant(w_value)
    y = tf.tensordot(x, w, axes=1)
    assert tuple(y.shape) == (None, 2, 3)
    z = tf.tensordot(x, w, axes=[[1], [0]])
    feed = np.random.RandomState(0).rand(4, 6).astype(np.float32)
    outs = run([y, z], {x: feed})
    np.testing.assert_allclose(outs[0], np.tensordot(feed, w_value, axes=1),
                               rtol=1e-5)
    np.testing.assert_allclose(outs[1], outs[0])


def test_nn_xw_plus_b():
    x = np.array([[1.0, 2.0]], np.float32)
    w = np.array([[1.0, 0.0, 2.0], [0.5, 1.0, -1.0]], np.float32)
    with tf.Session() as sess:
        got = sess.run(tf.nn.xw_plus_b(x, w, np.array([0.0, 1.0, 2.0], np.float32)))
    np.testing.assert_allclose(got, [[2.0, 3.0, 2.0]])
