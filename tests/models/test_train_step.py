"""TrainStep / EvalStep / PredictStep: graph data that pickles, splits and sums.

The acceptance test ships a TrainStep to a freshly spawned process, runs
compute_gradients on each half of every batch there, sums the two flat buffers,
applies them, and checks the result against the fused in-process ``run`` on the
whole batch: the tf.distribute loss scaling makes the two identical.
"""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.backend.graph_pickle import GraphPack
from kerasflow.steps.batch import BatchRef
from kerasflow.distribute.distribute_lib import DefaultStrategy
from kerasflow.steps.step import FlatLayout, TrainStep

L = kf.layers


def _two_output_model(seed):
    np.random.seed(seed)
    x = kf.Input((6,), name="x")
    h = L.Dense(8, activation="tanh", kernel_regularizer=kf.regularizers.L2(0.01),
                name="h")(x)
    a = L.Dense(3, activation="softmax", name="a")(h)
    b = L.Dense(1, name="b")(h)
    model = kf.Model(x, [a, b])
    model.compile(optimizer=kf.optimizers.Adam(0.05, global_clipnorm=0.5),
                  loss=["sparse_categorical_crossentropy", "mse"],
                  loss_weights=[1.0, 0.3], metrics=[["accuracy"], ["mae"]])
    return model


def _data(n=16, seed=1):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 6)
    ya = rng.randint(0, 3, n)
    yb = rng.randn(n)
    sw = rng.uniform(0.5, 2.0, n)
    return x, [ya, yb], sw


def _split_and_apply(step_bytes, batches, steps):
    """Runs in a spawned process: halves -> compute -> sum -> apply."""
    step = pickle.loads(step_bytes)
    for _ in range(steps):
        for arrays in batches:
            n = len(arrays[0])
            h = n // 2 + 1  # uneven halves on purpose
            r1 = step.compute_gradients([a[:h] for a in arrays], n)
            r2 = step.compute_gradients([a[h:] for a in arrays], n)
            step.apply_gradients(r1.grads + r2.grads)
            step.add_metric_deltas([d1 + d2 for d1, d2 in zip(
                r1.metric_deltas, r2.metric_deltas)])
    return [v.numpy() for v in step.trainable_variables], \
        [v.numpy() for v in step.metric_variables]


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-6), ("float32", 1e-5)])
def test_split_step_in_spawned_process_equals_fused_run(dtype, rtol):
    prev = K.floatx()
    K.set_floatx(dtype)
    try:
        model = _two_output_model(0)
        x, ys, sw = _data()
        xs, ys, sw, _ = model._standardize(x, ys, sw, None)
        from kerasflow.models.data import class_weights_to_sample_weights

        cw = {0: 1.0, 1: 2.0, 2: 0.5}  # class weights on the first output
        sw = sw * class_weights_to_sample_weights(ys[0], cw).astype(sw.dtype)
        arrays = xs + ys + [sw]
        step = model._get_step("train", xs, ys)
        batches = [[a[:8] for a in arrays], [a[8:] for a in arrays]]
        payload = pickle.dumps(step)
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            remote = pool.apply_async(_split_and_apply, (payload, batches, 10))
            got_w, got_m = remote.get(timeout=120)
        model.reset_metrics()
        for _ in range(10):
            for b in batches:
                step.run(b, len(b[0]))
        for v, g in zip(step.trainable_variables, got_w):
            np.testing.assert_allclose(g, v.numpy(), rtol=rtol, atol=rtol * 1e-2,
                                       err_msg=v.name)
        assert step.metric_variables  # accuracy and mae states
        for v, g in zip(step.metric_variables, got_m):
            np.testing.assert_allclose(g, v.numpy(), rtol=rtol, err_msg=v.name)
        # The weights moved: the comparison is not between two untouched models.
        assert not np.allclose(step.trainable_variables[0].numpy(),
                               _two_output_model(0).get_weights()[0])
    finally:
        K.set_floatx(prev)


def test_summed_replica_gradients_equal_global_batch_gradient(float64):
    model = _two_output_model(3)
    x, ys, sw = _data(10)
    xs, ys, sw, _ = model._standardize(x, ys, sw, None)
    arrays = xs + ys + [sw]
    step = model._get_step("train", xs, ys)
    whole = step.compute_gradients(arrays, 10)
    parts = [step.compute_gradients([a[i:j] for a in arrays], 10)
             for i, j in ((0, 3), (3, 4), (4, 10))]
    np.testing.assert_allclose(sum(p.grads for p in parts), whole.grads, rtol=1e-12)
    assert sum(p.loss for p in parts) == pytest.approx(whole.loss, rel=1e-12)
    assert sum(p.count for p in parts) == 10
    # compute_gradients changed nothing.
    again = step.compute_gradients(arrays, 10)
    np.testing.assert_array_equal(again.grads, whole.grads)


def test_flat_layout_packs_and_unpacks_views():
    vs = [K.Variable(np.zeros((2, 3))), K.Variable(np.zeros(4))]
    layout = FlatLayout(vs)
    assert layout.size == 10 and layout.entries == [(0, (2, 3)), (6, (4,))]
    flat = layout.pack([np.arange(6.0).reshape(2, 3), np.arange(4.0) + 10])
    np.testing.assert_array_equal(flat, [0, 1, 2, 3, 4, 5, 10, 11, 12, 13])
    a, b = layout.unpack(flat)
    a[0, 0] = 99.0
    assert flat[0] == 99.0 and b.shape == (4,)


def test_pickled_step_carries_each_variable_once():
    np.random.seed(0)
    model = kf.Sequential([L.Dense(64, input_shape=(100,)), L.Dense(10)])
    model.compile("adam", "mse")
    x, y = np.zeros((4, 100), "float32"), np.zeros((4, 10), "float32")
    xs, ys, _, _ = model._standardize(x, y)
    step = model._get_step("train", xs, ys)
    pack = GraphPack([t for k in step._GRAPH for t in getattr(step, k)])
    var_records = [r for r in pack.records if r[1] == "Variable"]
    assert len(var_records) == len({r[0] for r in var_records}) == len(step.variables)
    weight_bytes = sum(v.numpy().nbytes for v in step.variables)
    # Adam's two slots triple the weights; nothing is carried twice.
    assert len(pickle.dumps(step)) < 1.25 * weight_bytes


def _chain_value(payload):
    x, y = pickle.loads(payload)
    return K.Function([x], [y])(np.array([1.0, 2.0], "float32"))[0]


def test_20000_op_chain_pickles_and_runs_in_a_fresh_process():
    x = K.placeholder("float32", (2,), name="x")
    y = x
    for i in range(10_000):
        y = y * 1.0001 if i % 2 else y + 0.0001
    y = y - 0.0  # 20,001 ops in all
    expected = K.Function([x], [y])(np.array([1.0, 2.0], "float32"))[0]
    payload = pickle.dumps((x, y))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        got = pool.apply(_chain_value, (payload,))
    np.testing.assert_array_equal(got, expected)


def test_placeholder_keeps_its_identity_across_a_round_trip():
    x = K.placeholder("float32", (None,), name="x")
    w = K.Variable(3.0)
    y = x * w
    y2 = pickle.loads(pickle.dumps(y))
    # The original placeholder feeds the copy of the graph.
    np.testing.assert_allclose(K.Function([x], [y2])(np.array([1.0, 2.0]))[0],
                               [3.0, 6.0])
    # Tensors pickled separately still share their copied Variables.
    w2, train2 = pickle.loads(pickle.dumps((w, w.assign_add(K.constant(1.0)))))
    K.Function([], [], updates=[train2])()
    assert float(w2.numpy()) == 4.0 and float(w.numpy()) == 3.0


class _CountingStrategy(DefaultStrategy):
    def __init__(self):
        self.kinds = []

    def run_steps(self, step, batches):
        self.kinds += [step.kind] * len(batches)
        return super().run_steps(step, batches)


def test_every_entry_point_goes_through_the_strategy():
    np.random.seed(0)
    model = kf.Sequential([L.Dense(2, input_shape=(3,))])
    model.compile("sgd", "mse")
    x, y = np.ones((10, 3), "float32"), np.zeros((10, 2), "float32")
    strategy = _CountingStrategy()
    with strategy.scope():
        model.fit(x, y, batch_size=5, epochs=1, verbose=0)
        model.evaluate(x, y, batch_size=5, verbose=0)
        model.predict(x, batch_size=5)
        model.train_on_batch(x, y)
        model.test_on_batch(x, y)
        model.predict_on_batch(x)
    assert strategy.kinds == ["train"] * 2 + ["eval"] * 2 + ["predict"] * 2 + [
        "train", "eval", "predict"]


def test_steps_per_execution_gives_the_same_training_and_every_batch_log():
    def train(k):
        np.random.seed(0)
        model = kf.Sequential([L.Dense(3, input_shape=(4,)), L.Dense(1)])
        model.compile(kf.optimizers.SGD(0.1), "mse", steps_per_execution=k)
        rng = np.random.RandomState(2)
        x, y = rng.randn(50, 4), rng.randn(50)
        seen = []
        cb = kf.callbacks.LambdaCallback(
            on_train_batch_end=lambda b, logs: seen.append((b, logs["loss"])))
        model.fit(x, y, batch_size=8, epochs=2, shuffle=False, callbacks=[cb],
                  verbose=0)
        return model.get_weights(), seen

    w1, s1 = train(1)
    w3, s3 = train(3)
    for a, b in zip(w1, w3):
        np.testing.assert_array_equal(a, b)
    assert [b for b, _ in s3] == [b for b, _ in s1] == list(range(7)) * 2
    np.testing.assert_allclose([v for _, v in s3], [v for _, v in s1])


def test_from_train_op_trains_like_the_session_loop():
    def build():
        x = K.placeholder("float32", (None, 1), name="x")
        y = K.placeholder("float32", (None, 1), name="y")
        w = K.Variable(np.zeros((1, 1), "float32"), name="w")
        loss = K.mean(K.square(K.matmul(x, w) - y))
        gs = K.Variable(0, trainable=False, dtype="int64", name="global_step")
        op = kf.optimizers.SGD(0.1).minimize(loss, global_step=gs)
        return x, y, w, gs, op

    data = [np.array([[1.0], [2.0]], "float32"), np.array([[2.0], [4.0]], "float32")]
    x, y, w, gs, op = build()
    assert op.loss is not None and op.var_list == [w] and op.global_step is gs
    sess = K.Session()
    for _ in range(5):
        sess.run(op, {x: data[0], y: data[1]})
    x2, y2, w2, gs2, op2 = build()
    step = TrainStep.from_train_op(op2, [x2, y2])
    for _ in range(5):
        DefaultStrategy().run_step(step, BatchRef(data, None))
    np.testing.assert_allclose(w2.numpy(), w.numpy(), rtol=1e-6)
    assert int(gs2.numpy()) == int(gs.numpy()) == 5
    with pytest.raises(TypeError, match="minimize"):
        TrainStep.from_train_op(K.group(), [x2])


def test_accuracy_is_chosen_from_shapes_not_the_loss_name():
    def my_loss(y_true, y_pred):  # a custom loss: its name says nothing
        return kf.losses.sparse_categorical_crossentropy(y_true, y_pred)

    np.random.seed(0)
    model = kf.Sequential([L.Dense(4, activation="softmax", input_shape=(3,))])
    model.compile("sgd", my_loss, metrics=["accuracy"])
    x = np.random.randn(20, 3).astype("float32")
    y = np.random.randint(0, 4, 20)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    pred = model.predict(x)
    assert isinstance(model._metric_objs[0][2],
                      kf.metrics.SparseCategoricalAccuracy)
    assert logs["accuracy"] == pytest.approx(np.mean(pred.argmax(1) == y))


def test_sparse_labels_must_be_whole_numbers():
    model = kf.Sequential([L.Dense(4, activation="softmax", input_shape=(3,))])
    model.compile("sgd", "sparse_categorical_crossentropy")
    x = np.zeros((3, 3), "float32")
    model.fit(x, np.array([0.0, 1.0, 3.0]), verbose=0)  # whole floats pass
    with pytest.raises(ValueError, match="whole class indices.*2.7"):
        model.fit(x, np.array([0.0, 2.7, 1.0]), verbose=0)


class _CountCalls(L.Layer):
    """Counts training-mode calls through a state update (as BN's moving stats)."""

    def build(self, input_shape):
        self.calls = self.add_weight("calls", (), initializer="zeros",
                                     trainable=False)

    def call(self, x, training=None):
        if training:
            self.add_update(self.calls.assign_add(1.0))
        return x


def test_layer_state_updates_run_with_training_steps_only():
    np.random.seed(0)
    counter = _CountCalls()
    model = kf.Sequential([L.Dense(2, input_shape=(3,)), counter])
    model.compile("sgd", "mse")
    x, y = np.ones((12, 3), "float32"), np.zeros((12, 2), "float32")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    model.evaluate(x, y, batch_size=4, verbose=0)
    model.predict(x, batch_size=4)
    assert float(counter.calls.numpy()) == 6.0
