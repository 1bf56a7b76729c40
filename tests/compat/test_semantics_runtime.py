"""TF1 runtime semantics of kerasflow.compat.v1: sessions, variables and scopes,
optimizers and the global step, Saver, summaries, devices and flags."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kerasflow.compat.v1 as tf
from kerasflow import backend as K
from kerasflow.compat.v1 import flags as tf_flags
from kerasflow.summary import read_events


# -- default session -------------------------------------------------------------------
def test_eval_and_run_use_the_default_session():
    x = tf.placeholder("float")
    w = tf.Variable(2.0)
    y = x * w
    step = tf.assign_add(w, 1.0)
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        assert y.eval({x: 3.0}) == 6.0
        assert step.run() is None
        assert w.eval() == 3.0
        assert step.op.run() is None                 # Operation.run on the node
        assert w.eval(session=sess) == 4.0
    assert tf.get_default_session() is None


def test_eval_without_a_session_says_how_to_fix_it():
    t = tf.constant(1.0)
    with pytest.raises(ValueError, match=r"no default session.*with tf\.Session\(\) "
                                         r"as sess:.*eval\(session=sess\)"):
        t.eval()
    with pytest.raises(ValueError, match=r"op\.run\(session=sess\)"):
        tf.global_variables_initializer().run()


def test_interactive_session_and_nested_defaults():
    t = tf.constant(5.0)
    sess = tf.InteractiveSession()
    try:
        assert t.eval() == 5.0
        other = tf.Session()
        with other.as_default():
            assert tf.get_default_session() is other
        assert tf.get_default_session() is sess
        other.close()
    finally:
        sess.close()
    assert tf.get_default_session() is None
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(t)


def test_global_variables_initializer_restores_initial_values():
    w = tf.Variable(1.0, name="w")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())       # harmless right away
        assert sess.run(w) == 1.0
        sess.run(tf.assign(w, 7.0))
        tf.global_variables_initializer().run()            # TF1: back to 1.0
        assert sess.run(w) == 1.0
    assert tf.global_variables() == [w] and tf.trainable_variables() == [w]
    tf.reset_default_graph()
    assert tf.global_variables() == []


# -- variables and scopes --------------------------------------------------------------
def test_get_variable_reuse_errors_as_tf1():
    with tf.variable_scope("layer"):
        v = tf.get_variable("v", [2], initializer=tf.zeros_initializer())
        assert v.name == "layer/v"
        with pytest.raises(ValueError, match="Variable layer/v already exists, "
                                             "disallowed. Did you mean to set "
                                             "reuse=True"):
            tf.get_variable("v", [2])
    with tf.variable_scope("layer", reuse=True):
        assert tf.get_variable("v", [2]) is v
        with pytest.raises(ValueError, match="Variable layer/u does not exist, or "
                                             "was not created with tf.get_variable"):
            tf.get_variable("u", [2])
        with pytest.raises(ValueError, match="Trying to share variable layer/v, but "
                                             "specified shape \\(3,\\)"):
            tf.get_variable("v", [3])
        with tf.variable_scope("inner"):                  # reuse is inherited
            with pytest.raises(ValueError, match="does not exist"):
                tf.get_variable("w", [1])
    with tf.variable_scope("layer", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("v", [2]) is v
        assert tf.get_variable("new", [1]).name == "layer/new"
    with tf.variable_scope("other") as scope:
        a = tf.get_variable("a", [1])
        scope.reuse_variables()
        assert tf.get_variable("a", [1]) is a


def test_get_variable_initializers_regularizer_and_name_scope():
    with tf.variable_scope("s", initializer=tf.constant_initializer(0.5)):
        v = tf.get_variable("v", [2, 2], regularizer=lambda w: tf.reduce_sum(w))
        c = tf.get_variable("c", initializer=np.arange(3.0, dtype=np.float32))
    with tf.name_scope("ns"):
        t = tf.Variable(0.0, name="t")
        g = tf.get_variable("g", [1])                      # name_scope ignored
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(v), np.full((2, 2), 0.5))
        np.testing.assert_array_equal(sess.run(c), [0.0, 1.0, 2.0])
        (reg,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        assert sess.run(reg) == 2.0
        assert sess.run(tf.losses.get_regularization_loss()) == 2.0
    assert t.name == "ns/t" and g.name == "g"
    with pytest.raises(ValueError, match="do not specify shape"):
        tf.get_variable("bad", [3], initializer=np.zeros(3))
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("noshape")


def test_tf_layers_dense_shares_weights_on_reuse():
    x = tf.placeholder("float", [None, 3])
    y1 = tf.layers.dense(x, 2, name="fc")
    y2 = tf.layers.dense(x, 2, name="fc", reuse=True)
    with pytest.raises(ValueError, match="already exists"):
        tf.layers.dense(x, 2, name="fc")
    assert len(tf.trainable_variables()) == 2              # kernel and bias, once
    with tf.Session() as sess:
        a, b = sess.run([y1, y2], {x: np.ones((1, 3))})
    np.testing.assert_array_equal(a, b)


# -- optimizers and the global step ----------------------------------------------------
@pytest.mark.parametrize("make, expected", [
    # loss = w**2 from w = 1 (gradient 2w), two steps, TF1 update rules by hand.
    (lambda: tf.train.GradientDescentOptimizer(0.1), [0.8, 0.64]),
    # accum = 0.9 accum + g; w -= 0.1 accum: 1 - 0.2; 0.8 - 0.1 (1.8 + 1.6)
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), [0.8, 0.46]),
    # ms starts at 1: ms = 0.9 + 0.1 * 4 = 1.3; w = 1 - 0.1 * 2 / sqrt(1.3)
    (lambda: tf.train.RMSPropOptimizer(0.1), [1 - 0.2 / np.sqrt(1.3), None]),
    # acc = 0.1 + 4; w = 1 - 0.1 * 2 / sqrt(4.1)
    (lambda: tf.train.AdagradOptimizer(0.1), [1 - 0.2 / np.sqrt(4.1), None]),
])
def test_tf1_optimizers_follow_tf1_update_rules(make, expected):
    w = tf.Variable(1.0)
    step = tf.train.get_or_create_global_step()
    train_op = make().minimize(tf.square(w), global_step=step)
    with tf.Session() as sess:
        for want in expected:
            sess.run(train_op)
            if want is not None:
                np.testing.assert_allclose(sess.run(w), want, rtol=1e-6)
        assert sess.run(step) == 2
    assert tf.train.get_global_step() is step


def test_compute_and_apply_gradients_and_exponential_decay():
    w = tf.Variable(3.0)
    step = tf.Variable(0, trainable=False, name="global_step")
    lr = tf.train.exponential_decay(0.1, step, decay_steps=10, decay_rate=0.5)
    opt = tf.train.GradientDescentOptimizer(lr)
    ((g, v),) = opt.compute_gradients(tf.square(w))
    assert v is w
    apply = opt.apply_gradients([(g, v)], global_step=step)
    with tf.Session() as sess:
        assert sess.run(g) == 6.0
        sess.run(tf.assign(step, 20))
        np.testing.assert_allclose(sess.run(lr), 0.025)   # 0.1 * 0.5 ** 2
        sess.run(apply)
        np.testing.assert_allclose(sess.run(w), 3.0 - 0.025 * 6.0, rtol=1e-6)
        assert sess.run(step) == 21


def test_a_tf1_train_op_runs_as_a_kerasflow_train_step():
    # The Estimator path: minimize()'s op split into compute -> apply.
    from kerasflow.steps.step import TrainStep

    x = tf.placeholder("float", [None, 2])
    y = tf.placeholder("float", [None, 1])
    w = tf.Variable(np.zeros((2, 1), np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    result = TrainStep.from_train_op(train_op, [x, y]).run(
        [np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)], 4)
    assert result.loss == 1.0
    # d/dw mean((x w - 1)^2) = 2 * (0 - 1) * 1 = -2 per weight; w = 0 + 0.5 * 2
    np.testing.assert_allclose(w.numpy().ravel(), [1.0, 1.0])
    assert step.numpy() == 1
    op = tf.train.GradientDescentOptimizer(0.5).apply_gradients(
        tf.train.GradientDescentOptimizer(0.5).compute_gradients(loss))
    assert len(list(op)) == 2                     # the update and iterations += 1


# -- Saver -----------------------------------------------------------------------------
def test_saver_round_trip_max_to_keep_and_errors(tmp_path):
    w = tf.Variable(np.arange(4.0, dtype=np.float32).reshape(2, 2), name="w")
    b = tf.Variable(1.5, name="b")
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        paths = [saver.save(sess, prefix, global_step=s) for s in (1, 2, 3)]
        assert paths[-1] == prefix + "-3"
        sess.run([tf.assign(w, np.zeros((2, 2))), tf.assign(b, -1.0)])
        saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(sess.run(w), [[0.0, 1.0], [2.0, 3.0]])
        assert sess.run(b) == 1.5
        assert not os.path.exists(prefix + "-1")        # max_to_keep=2
        assert os.path.exists(prefix + "-2")
        assert saver.last_checkpoints == [prefix + "-2", prefix + "-3"]
        only_w = tf.train.Saver({"renamed": w})
        only_w.save(sess, str(tmp_path / "w.ckpt"))
        with pytest.raises(tf.errors.NotFoundError, match=f"Key {w.name} not found"):
            tf.train.Saver([w, b]).restore(sess, str(tmp_path / "w.ckpt"))
        with pytest.raises(tf.errors.NotFoundError, match="not a valid checkpoint"):
            saver.restore(sess, str(tmp_path / "nothing"))
        with pytest.raises(TypeError, match="'sess' must be a Session"):
            saver.save("not a session", prefix)
    # The files load without pickle: w, b and the metadata member.
    with np.load(prefix + "-3", allow_pickle=False) as f:
        assert len(f.files) == 3


# -- summaries and the graph -----------------------------------------------------------
def test_summaries_run_with_the_fetches_and_read_back(tmp_path):
    x = tf.placeholder("float", [None])
    mean = tf.reduce_mean(x)
    tf.summary.scalar("mean", mean)
    tf.summary.histogram("values", x)
    merged = tf.summary.merge_all()
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
        for step in range(3):
            summary, m = sess.run([merged, mean], {x: np.arange(4.0) + step})
            assert isinstance(summary, bytes) and m == 1.5 + step
            writer.add_summary(summary, step)
        writer.close()
    events = read_events(tmp_path)
    assert sum(e.HasField("graph_def") for e in events) == 1
    values = [(e.step, v.tag, v.simple_value) for e in events
              for v in e.summary.value if v.tag == "mean"]
    assert values == [(0, "mean", 1.5), (1, "mean", 2.5), (2, "mean", 3.5)]
    histos = [v.histo for e in events for v in e.summary.value if v.tag == "values"]
    assert len(histos) == 3 and histos[0].num == 4 and histos[0].max == 3.0


# -- devices ---------------------------------------------------------------------------
def test_device_cpu_runs_and_absent_gpu_needs_soft_placement(capsys):
    with tf.device("/cpu:0"):
        a = tf.constant(2.0) * 3.0
    with tf.Session() as sess:
        assert sess.run(a) == 6.0
    if K.gpu_available():
        pytest.skip("this machine has a GPU: the absent-GPU error cannot happen")
    with tf.device("/device:GPU:0"):
        b = tf.constant(2.0) * 4.0
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="explicitly assigned to /device:GPU:0.*"
                                 "allow_soft_placement=True"):
            sess.run(b)
    config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=True)
    with tf.Session(config=config) as sess:
        assert sess.run(b) == 8.0
    assert f"{b.node.name}: (Mul): /job:localhost/replica:0/task:0/device:CPU:0" \
        in capsys.readouterr().err
    with pytest.raises(ValueError, match='no "bogus" field'):
        tf.ConfigProto(bogus=1)
    # mnist_replica.py's session config: TF1's repeated field, kept as a list.
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:1"])
    assert config.device_filters == ["/job:ps", "/job:worker/task:1"]
    assert tf.ConfigProto().device_filters == []


@pytest.mark.gpu
def test_device_gpu_runs_on_the_gpu():
    with tf.device("/gpu:0"):
        w = tf.Variable(np.ones((2, 2), np.float32))
        y = tf.matmul(w, w)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), np.full((2, 2), 2.0))
    assert K.get_device() == "gpu"


# -- flags -----------------------------------------------------------------------------
def test_flags_parse_like_tf_app_flags():
    fv = tf_flags.FlagValues()
    tf_flags.DEFINE_string("data_dir", "/tmp", "where", flag_values=fv)
    tf_flags.DEFINE_integer("steps", 10, "how many", flag_values=fv)
    tf_flags.DEFINE_float("lr", 0.1, "rate", flag_values=fv)
    tf_flags.DEFINE_boolean("fake", True, "fake data", flag_values=fv)
    rest = fv(["prog", "--steps=5", "--nofake", "--lr", "0.5", "extra"])
    assert (fv.data_dir, fv.steps, fv.lr, fv.fake) == ("/tmp", 5, 0.5, False)
    assert rest == ["prog", "extra"]
    with pytest.raises(tf_flags.IllegalFlagValueError, match="many"):
        fv(["prog", "--steps=many"])
    with pytest.raises(AttributeError, match="nothing"):
        _ = fv.nothing


def test_flag_bounds_and_enum_values_are_checked():
    fv = tf_flags.FlagValues()
    tf_flags.DEFINE_integer("workers", 2, "how many", lower_bound=1, upper_bound=8,
                            flag_values=fv)
    tf_flags.DEFINE_enum("mode", "train", ["train", "eval"], "what", flag_values=fv)
    with pytest.raises(tf_flags.IllegalFlagValueError, match="workers"):
        fv(["prog", "--workers=0"])
    with pytest.raises(tf_flags.IllegalFlagValueError, match="workers"):
        fv(["prog", "--workers=9"])
    with pytest.raises(tf_flags.IllegalFlagValueError, match="mode"):
        fv(["prog", "--mode=serve"])
    with pytest.raises(tf_flags.IllegalFlagValueError):
        tf_flags.DEFINE_integer("bad_default", 0, "x", lower_bound=1, flag_values=fv)
    fv(["prog", "--workers=8", "--mode=eval"])
    assert (fv.workers, fv.mode) == (8, "eval")
    assert tf.app.flags is tf.flags
