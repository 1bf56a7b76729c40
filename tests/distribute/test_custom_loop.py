"""Custom training loops (``strategy.run`` + ``strategy.reduce``): traced once
and run on the replica actors, equal to the same loop in one process on the
global batch."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
import kerasflow.compat.v1 as tf
from kerasflow import backend as K
from kerasflow.distribute import PerReplica, ReduceOp

GLOBAL_BATCH = 16


def _data():
    rng = np.random.RandomState(3)
    x = rng.standard_normal((64, 5))
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("int64")
    return x, y


def _loop(strategy, epochs=2, wrap=False):
    """TF's custom-training guide, as written: returns weights, the summed
    per-replica losses, the metric, and how often the step fn was traced/run."""
    x, y = _data()
    calls = []
    with strategy.scope():
        np.random.seed(0)
        model = kf.Sequential([kf.layers.Dense(6, activation="tanh", input_shape=(5,),
                                               name="h"), kf.layers.Dense(2, name="o")])
        optimizer = kf.optimizers.Adam(0.05)
        loss_obj = kf.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="none")
        accuracy = kf.metrics.SparseCategoricalAccuracy(name="acc")

    def train_step(features, labels):
        calls.append(1)
        with kf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = kf.distribute.compute_average_loss(
                loss_obj(labels, logits), global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        accuracy.update_state(labels, logits)
        return loss

    def distributed_step(features, labels):
        per_replica = strategy.run(train_step, args=(features, labels))
        return strategy.reduce(ReduceOp.SUM, per_replica, axis=None)

    if wrap:  # TF 2's spelling: strategy.run inside a tf.function
        distributed_step = tf.function(distributed_step)
    ds = kf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
    dist = strategy.experimental_distribute_dataset(ds)
    losses = []
    with strategy.scope():
        for _ in range(epochs):
            total = 0.0
            for features, labels in dist:
                total += distributed_step(features, labels)
            losses.append(total)
        weights = model.get_weights()
        acc = float(accuracy.result())
    return weights, losses, acc, len(calls)


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_custom_loop_mirrored_two_equals_one_process(ray_cluster, float64):
    ref_w, ref_l, ref_acc, ref_calls = _loop(kf.distribute.get_strategy())
    assert ref_calls == 8  # eager in one process: fn runs every step
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    got_w, got_l, got_acc, got_calls = _loop(strategy, wrap=True)
    assert got_calls == 1  # traced once; the 8 steps ran on the replica actors
    assert strategy.compute_seconds > 0
    for a, b in zip(ref_w, got_w):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_l, ref_l, rtol=1e-9)
    assert got_acc == pytest.approx(ref_acc, abs=1e-12)


@pytest.mark.ray
def test_run_returns_per_replica_values_and_checks_its_arguments(ray_cluster):
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with pytest.raises(TypeError, match="expects a callable fn"):
        strategy.run(3)
    x = PerReplica([np.ones((3, 3), "float32"), np.ones((2, 3), "float32")])
    with pytest.raises(ValueError, match=r"sizes \[2, 3\]. Received: \[3, 2\]"):
        strategy.run(lambda a: a, args=(x,))
    with pytest.raises(TypeError, match="as PerReplica values"):
        strategy.run(lambda a: a, args=(np.ones((4, 3)),))
    with pytest.raises(ValueError, match="of 2 replicas. Received: 3 values"):
        strategy.run(lambda a: a, args=(PerReplica([1, 2, 3]),))
    with pytest.raises(ValueError, match="apply its gradients with "
                                         "optimizer.apply_gradients"):
        strategy.run(lambda a: K.sum(a), args=(PerReplica([np.ones((2, 3))] * 2),))
    with pytest.raises(ValueError, match=r"return scalar tensors .* shape \(None, 3\)"):
        strategy.run(lambda a: a, args=(PerReplica([np.ones((2, 3))] * 2),))
    with pytest.raises(TypeError, match="strategy.reduce"):
        np.asarray(PerReplica([1.0, 2.0]))
    strategy.close()


def test_one_process_run_reduce_and_local_results():
    s = kf.distribute.get_strategy()
    assert s.run(lambda a, b=1: a + b, args=(2,), kwargs={"b": 5}) == 7
    pr = PerReplica([np.array([1.0, 2.0]), np.array([3.0])])
    assert s.reduce("SUM", pr, axis=0) == 6.0
    assert s.reduce(ReduceOp.MEAN, pr, axis=0) == 2.0
    assert s.reduce("MEAN", PerReplica([1.0, 3.0])) == 2.0
    assert s.experimental_local_results(pr) == pr.values
    np.testing.assert_array_equal(s.gather(pr), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="ReduceOp.SUM or ReduceOp.MEAN"):
        s.reduce("MAX", pr)
    ctx = kf.distribute.get_replica_context()
    assert ctx.num_replicas_in_sync == 1 and ctx.replica_id_in_sync_group == 0
    loss = kf.distribute.compute_average_loss(np.array([1.0, 2.0, 3.0]),
                                              global_batch_size=6)
    assert float(loss) == pytest.approx(1.0)


def _graph_loop(strategy):
    """TF 1.15's graph-mode custom loop, as its MirroredStrategy guide wrote it."""
    x, y = _data()
    tf.reset_default_graph()
    with strategy.scope():
        np.random.seed(0)
        model = kf.Sequential([kf.layers.Dense(6, activation="tanh", input_shape=(5,),
                                               name="h"), kf.layers.Dense(2, name="o")])
        optimizer = tf.train.GradientDescentOptimizer(0.2)
        loss_obj = kf.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="none")

        def step_fn(inputs):
            features, labels = inputs
            loss = tf.reduce_sum(loss_obj(labels, model(features))) / GLOBAL_BATCH
            train_op = optimizer.minimize(loss, var_list=model.trainable_variables)
            with tf.control_dependencies([train_op]):
                return tf.identity(loss)

        ds = kf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
        iterator = strategy.make_dataset_iterator(ds)
        per_replica = strategy.experimental_run_v2(step_fn, args=(iterator.get_next(),))
        total = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
        losses = []
        with tf.Session() as sess:
            sess.run(iterator.initialize())
            while True:
                try:
                    losses.append(float(sess.run(total)))
                except tf.errors.OutOfRangeError:
                    break
        weights = model.get_weights()
    tf.reset_default_graph()
    return weights, losses


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_tf115_graph_mode_loop_mirrored_equals_one_process(ray_cluster, float64):
    ref_w, ref_l = _graph_loop(kf.distribute.get_strategy())
    assert len(ref_l) == 4 and ref_l[-1] < ref_l[0]  # 64 rows / 16, then OutOfRange
    got_w, got_l = _graph_loop(kf.distribute.MirroredStrategy(num_replicas=2))
    np.testing.assert_allclose(got_l, ref_l, rtol=1e-9)
    for a, b in zip(ref_w, got_w):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


@pytest.mark.ray
def test_replica_id_is_fed_per_replica(ray_cluster, float64):
    """fn reads replica_id_in_sync_group: replica r's returned value shows r."""
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with strategy.scope():
        w = kf.Variable(np.ones((3, 1)), name="w")
        opt = kf.optimizers.SGD(0.0)

    def step(a):
        ctx = kf.distribute.get_replica_context()
        with kf.GradientTape() as tape:
            loss = K.sum(K.matmul(a, w))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return K.cast(ctx.replica_id_in_sync_group, "float64") * 10.0 + loss

    x = PerReplica([np.ones((2, 3)), 2 * np.ones((2, 3))])
    with strategy.scope():
        got = strategy.run(step, args=(x,))
    assert got.values == (6.0, 22.0)  # replica 0: 0 + 6; replica 1: 10 + 12
    strategy.close()


def test_iterators_of_distributed_datasets_are_iterators():
    # TF's custom-loop tutorials: it = iter(dist); step(next(it)), and TF 1.15's
    # graph mode next(strategy.make_dataset_iterator(ds)) as get_next().
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    x, y = _data()
    ds = kf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
    it = iter(strategy.experimental_distribute_dataset(ds))
    assert iter(it) is it
    features, labels = next(it)
    assert isinstance(features, PerReplica) and len(features.values) == 2
    np.testing.assert_array_equal(features.values[1], x[8:16])
    features, _ = it.get_next()
    np.testing.assert_array_equal(features.values[0], x[16:24])
    assert len(list(it)) == 2
    with pytest.raises(tf.errors.OutOfRangeError):
        it.get_next()
    graph_it = strategy.make_dataset_iterator(ds)
    got = next(graph_it)
    assert all(K.is_symbolic(t) for t in got) and iter(graph_it) is graph_it

