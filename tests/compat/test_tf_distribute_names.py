"""TF 1.14+ names under kerasflow.compat.v1: aliases of the one kerasflow
object (never copies), and the graph-mode behaviour of control_dependencies,
print and function."""

from __future__ import annotations

import json

import numpy as np
import pytest

import kerasflow as kf
import kerasflow.compat.v1 as tf


def test_keras_data_estimator_and_compat_are_the_kerasflow_objects():
    assert tf.keras is kf
    for name in ("layers", "models", "optimizers", "losses", "metrics", "callbacks",
                 "datasets", "utils", "backend"):
        assert getattr(tf.keras, name) is getattr(kf, name)
    assert tf.data is kf.data and tf.data.Dataset is kf.data.Dataset
    assert tf.estimator.DNNClassifier is kf.estimator.DNNClassifier
    assert tf.feature_column.numeric_column is kf.feature_column.numeric_column
    assert tf.compat.v1 is tf
    assert tf.GradientTape is kf.GradientTape
    assert tf.nn.compute_average_loss is kf.distribute.compute_average_loss


def test_distribute_names():
    d = tf.distribute
    assert d is kf.distribute
    assert d.MirroredStrategy is kf.distribute.MirroredStrategy
    assert d.ReduceOp.SUM == "SUM" and d.InputContext is kf.distribute.InputContext
    assert d.InputReplicationMode.PER_WORKER.value == "PER_WORKER"
    assert d.experimental.CollectiveCommunication.RING.value == "RING"
    assert d.experimental.ParameterServerStrategy is not None
    assert not d.has_strategy() and not d.in_cross_replica_context()
    assert d.get_replica_context().num_replicas_in_sync == 1
    one = d.OneDeviceStrategy("/cpu:0")
    with one.scope():
        assert d.get_strategy() is one and d.has_strategy()
        assert d.in_cross_replica_context()  # in scope, outside run
        assert one.run(lambda: d.get_replica_context().num_replicas_in_sync) == 1
    with pytest.raises(ValueError, match="expects a device like '/cpu:0'"):
        d.OneDeviceStrategy("tpu")
    with pytest.raises(TypeError, match="expects a CollectiveCommunication"):
        d.experimental.MultiWorkerMirroredStrategy(communication="RING")


def test_tf_config_cluster_resolver(monkeypatch):
    r = tf.distribute.cluster_resolver
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"chief": ["h0:1"], "worker": ["h1:2", "h2:3"]},
         "task": {"type": "worker", "index": 1}}))
    res = r.TFConfigClusterResolver()
    assert (res.task_type, res.task_id, res.num_workers) == ("worker", 1, 3)
    assert res.master() == "grpc://h2:3"
    assert res.cluster_spec().as_dict()["worker"] == ["h1:2", "h2:3"]
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"worker": ["h1:2"]}, "task": {"type": "ps", "index": 0}}))
    with pytest.raises(ValueError, match="Job name 'ps' is not in the ClusterSpec"):
        r.TFConfigClusterResolver()
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG must be valid JSON"):
        r.TFConfigClusterResolver()


def test_control_dependencies_run_first():
    tf.reset_default_graph()
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        read = tf.identity(v) * 1.0
    plain = tf.identity(v) * 1.0  # outside the block: no dependency
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(read) == 2.0 and sess.run(read) == 3.0
        assert sess.run(plain) == 3.0 and sess.run(plain) == 3.0
    with pytest.raises(TypeError, match="expects a list of ops"):
        with tf.control_dependencies(inc):
            pass
    tf.reset_default_graph()


def test_print_in_a_graph_and_eagerly(capsys):
    import sys

    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None])
    op = tf.print("x =", x, "sum", tf.reduce_sum(x), output_stream=sys.stdout)
    with tf.Session() as sess:
        sess.run(op, feed_dict={x: [1.0, 2.0]})
    assert capsys.readouterr().out == "x = [1. 2.] sum 3.0\n"
    assert tf.print("plain", 3, output_stream=sys.stdout) is None
    assert capsys.readouterr().out == "plain 3\n"
    tf.reset_default_graph()


def test_function_traces_once_per_signature():
    calls = []

    @tf.function
    def double(a):
        calls.append(1)  # Python side effects run while tracing, as in TF
        return a * 2

    np.testing.assert_array_equal(double(np.ones(2)), [2.0, 2.0])
    double(np.ones(3))
    double(np.ones(3))
    double(np.ones(3, "int32"))
    assert double.experimental_get_tracing_count() == 3  # shapes (2,), (3,); int32
    assert len(calls) == 3 and double.python_function.__name__ == "double"
    assert tf.function(input_signature=None)(lambda: 5)() == 5

    relaxed = tf.function(lambda a: tf.reduce_sum(a, axis=1),
                          input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    relaxed(np.ones((2, 3), "float32"))
    np.testing.assert_array_equal(relaxed(np.ones((5, 3), "float32")), [3.0] * 5)
    assert relaxed.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match=r"expects shape \(None, 3\). Received: \(2, 4\)"):
        relaxed(np.ones((2, 4), "float32"))


def test_function_training_step_equals_eager(float64):
    x = np.random.RandomState(0).standard_normal((8, 3))
    y = (x[:, 0] > 0).astype("int64")
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    runs = {}
    for traced in (False, True):
        kf.utils.set_random_seed(0)
        model = kf.Sequential([kf.layers.Dense(4, activation="tanh", input_shape=(3,)),
                               kf.layers.Dense(2)])
        opt, mean = kf.optimizers.Adam(0.1), kf.metrics.Mean()

        def step(a, b):
            with tf.GradientTape() as tape:
                loss = loss_fn(b, model(a, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            mean.update_state(loss)
            return loss, mean.result()
        fn = tf.function(step) if traced else step
        outs = [fn(x, y) for _ in range(5)]
        runs[traced] = (model.get_weights(), [float(o[0]) for o in outs],
                        float(outs[-1][1]))
        if traced:
            assert fn.experimental_get_tracing_count() == 1
    for a, b in zip(runs[False][0], runs[True][0]):
        np.testing.assert_allclose(b, a, rtol=1e-12)
    np.testing.assert_allclose(runs[True][1], runs[False][1], rtol=1e-12)
    assert runs[True][2] == pytest.approx(runs[False][2], rel=1e-12)


def test_missing_names_still_raise_naming_them():
    with pytest.raises(NotImplementedError, match="tf.while_loop is not provided"):
        tf.while_loop  # noqa: B018


def test_saving_inside_a_scope_and_keras_experimental(tmp_path):
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,),
                                                           name="d")])
        model.compile("sgd", "mse")
        model.save(str(tmp_path / "m.keras"))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(
        tf.keras.models.load_model(str(tmp_path / "m.keras")).predict(x, verbose=0),
        model.predict(x, verbose=0))
    tf.keras.experimental.export_saved_model(model, str(tmp_path / "export"))
    back = tf.keras.experimental.load_from_saved_model(str(tmp_path / "export"))
    np.testing.assert_array_equal(back.predict(x, verbose=0), model.predict(x, verbose=0))
    with pytest.raises(FileNotFoundError, match="written by export_saved_model"):
        tf.keras.experimental.load_from_saved_model(str(tmp_path))
