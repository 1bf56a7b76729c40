"""Evaluation and prediction on MirroredStrategy's replicas (issue 21): each
replica runs its rows of every global batch with the weights it holds, and
the driver combines them, so ``evaluate`` / ``predict`` (and validation
inside ``fit``) equal one process -- odd batches, a last short batch, a
batch of one row (a replica without rows), sample weights, several outputs,
a metric merged by its own ``merge_state`` -- without pulling the weights;
what the replicas cannot run as one process would runs in the driver.

Tolerances: in float64 the only difference is the order of the sums (each
replica sums its rows, the driver adds the replicas' parts): rtol 1e-12. In
float32 each replica's mean is a float32 reduction over fewer rows and the
scaled parts are added in float64: a few float32 ulps, rtol 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.distribute.test_metric_merge import (
    RunningMax,
    RunningMaxNoMerge,
    RunningMaxNumpyMerge,
)

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240),
              pytest.mark.usefixtures("ray_cluster")]


def _mirrored():
    # the replica path is opt-in (slower than the driver's on 2 cores)
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    strategy.evaluate_on_replicas = True
    return strategy


def _model(metric=RunningMax, multi_output=False, spe=4):
    np.random.seed(0)
    x = kf.Input((8,))
    h = kf.layers.Dense(16, activation="tanh",
                        kernel_regularizer=kf.regularizers.L2(1e-2))(x)
    if multi_output:
        model = kf.Model(x, [kf.layers.Dense(3)(h), kf.layers.Dense(1)(h)])
        model.compile(optimizer=kf.optimizers.Adam(0.02),
                      loss=[kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                            "mse"], loss_weights=[1.0, 0.5],
                      metrics=[["accuracy"], [metric()]], steps_per_execution=spe)
        return model
    model = kf.Model(x, kf.layers.Dense(3)(h))
    model.compile(optimizer=kf.optimizers.Adam(0.02),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy", metric()], steps_per_execution=spe)
    return model


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8))
    y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 1)
    return x, y, rng.uniform(0.5, 2.0, n), x[:, :1] * 3.0 + x[:, 2:3]


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def _close(got, ref, rtol):
    if isinstance(ref, dict):
        # keys in order; layer names differ between the two models built
        assert [k.split("_")[-1] for k in got] == [k.split("_")[-1] for k in ref]
        for a, b in zip(got.values(), ref.values()):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)
    else:
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def _evaluate_all(strategy, multi_output):
    """fit one epoch, then evaluate and predict with several batch sizes."""
    x, y, sw, y2 = _data()
    ys = [y, y2] if multi_output else y
    with strategy.scope() if strategy is not None else _Null():
        model = _model(multi_output=multi_output)
        np.random.seed(3)
        model.fit(x, ys, batch_size=20, epochs=1, verbose=0)
        pulls = getattr(strategy, "pulls", 0)
        out = []
        for bs in (7, 1, 64):  # 3/4 rows, a replica without rows, a short last
            out.append(model.evaluate(x, ys, batch_size=bs, verbose=0,
                                      return_dict=True))
            out.append(model.evaluate(x, ys, sample_weight=sw, batch_size=bs,
                                      verbose=0, return_dict=True))
            out.append(model.predict(x[:101], batch_size=bs, verbose=0))
        # batches the driver reads (a Dataset): each call carries its arrays
        ds = kf.data.Dataset.from_tensor_slices((x, tuple(ys) if multi_output
                                                 else ys, sw)).batch(9)
        out.append(model.evaluate(ds, verbose=0, return_dict=True))
        out.append(model.predict(kf.data.Dataset.from_tensor_slices(x).batch(9),
                                 verbose=0))
        assert getattr(strategy, "pulls", 0) == pulls  # nothing pulled
    return out


@pytest.mark.parametrize("multi_output", [False, True])
def test_evaluate_and_predict_equal_one_process(float64, multi_output):
    ref = _evaluate_all(None, multi_output)
    strategy = _mirrored()
    got = _evaluate_all(strategy, multi_output)
    assert strategy.replica_eval_calls > 0 and strategy.driver_eval_calls == 0
    for g, r in zip(got, ref):
        if isinstance(r, dict):
            _close(g, r, 1e-12)
            assert any("running_max" in k for k in g)
        else:
            g, r = (g, r) if multi_output else ([g], [r])
            for a, b in zip(g, r):
                assert a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # the sample weights change the result (they reached the replicas)
    assert got[0]["loss"] != pytest.approx(got[1]["loss"], rel=1e-6)


def test_running_max_is_merged_not_summed():
    # Each batch's largest target is in rank 1's rows and rank 0's rows hold a
    # larger one than before: summed changes of the maximum would overshoot.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype("float32")
    y = np.arange(32, dtype="float32").reshape(4, 8)
    y[:, :4] += 0.5 * np.arange(4)[:, None]
    y = y.reshape(32, 1)

    def build():
        kf.utils.set_random_seed(1)
        model = kf.Sequential([kf.layers.Input((3,)), kf.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse", metrics=[RunningMax(), "mae"])
        return model
    ref = build().evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    assert ref["running_max"] == 31.0
    strategy = _mirrored()
    with strategy.scope():
        got = build().evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    assert strategy.replica_eval_calls == 1
    assert got["running_max"] == 31.0
    _close(got, ref, 1e-5)


def _fit_validated(strategy, split, callbacks=(), epochs=3):
    x, y, sw, _ = _data()
    xv, yv, _, _ = _data(60, seed=1)
    kw = dict(validation_split=0.25) if split else dict(
        validation_data=(xv, yv), validation_batch_size=9)
    with strategy.scope() if strategy is not None else _Null():
        model = _model()
        np.random.seed(5)
        h = model.fit(x, y, sample_weight=sw, batch_size=20, epochs=epochs,
                      verbose=0, callbacks=list(callbacks), **kw)
    return model, h.history


class _DriverWeights(kf.callbacks.Callback):
    """The driver's weights as validation ends (read without a pull)."""

    reads_model = False

    def __init__(self):
        super().__init__()
        self.seen = []

    def on_test_end(self, logs=None):
        self.seen.append(self.model.get_weights())


@pytest.mark.parametrize("split", [False, True])
def test_validation_in_fit_runs_on_the_replicas_without_pulls(float64, split):
    ref_model, ref = _fit_validated(None, split)
    runs = {}
    for on in (True, False):
        strategy = _mirrored()
        strategy.evaluate_on_replicas = on
        cb = _DriverWeights()
        model, hist = _fit_validated(strategy, split, [cb])
        runs[on] = strategy, hist, cb
        for k in ref:
            np.testing.assert_allclose(hist[k], ref[k], rtol=1e-12, atol=1e-12)
    (s_on, _, cb_on), (s_off, _, cb_off) = runs[True], runs[False]
    assert s_on.replica_eval_calls >= 3 and s_on.driver_eval_calls == 0
    assert s_off.replica_eval_calls == 0
    # The driver path pulls before each validation; the replica path pulls
    # nothing for it (the pull at each epoch's metric reset and at the end of
    # fit remain, so the counts are equal here): at the first validation the
    # driver still held the initial weights, while val_loss is the trained
    # model's (equal to one process's).
    assert s_on.pulls == s_off.pulls == 3
    init = _model().get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(cb_on.seen[0], init))
    assert not all(np.array_equal(a, b) for a, b in zip(cb_off.seen[0], init))
    # validation arrays shipped once for the 3 epochs (x, y, weights)
    assert s_on.eval_data_shipments[0] == 3


def test_evaluate_on_the_training_arrays_ships_nothing_new(float64):
    x, y, _, _ = _data()
    strategy = _mirrored()
    with strategy.scope():
        model = _model()
        model.fit(x, y, batch_size=20, epochs=1, verbose=0)
        model.evaluate(x, y, batch_size=20, verbose=0)
        assert strategy.eval_data_shipments == (0, 0)
        model.evaluate(x + 1.0, y, batch_size=20, verbose=0)
        assert strategy.eval_data_shipments[0] == 1  # only x is new
        assert strategy.replica_eval_calls == 6  # 10 batches, 4 per call
        for _ in range(2):  # the last two calls' arrays stay: nothing new
            model.predict(x + 1.0, batch_size=20, verbose=0)
            model.evaluate(x + 1.0, y, batch_size=20, verbose=0)
        assert strategy.eval_data_shipments[0] == 1
        assert strategy.replica_eval_calls == 18


def test_float32_evaluate_equals_one_process_within_rounding():
    x, y, sw, _ = _data()
    x = x.astype("float32")
    ref = _model().evaluate(x, y, sample_weight=sw, batch_size=13, verbose=0,
                            return_dict=True)
    strategy = _mirrored()
    with strategy.scope():
        got = _model().evaluate(x, y, sample_weight=sw, batch_size=13, verbose=0,
                                return_dict=True)
    assert strategy.replica_eval_calls > 0
    _close(got, ref, 1e-5)


class _OwnTestStep(kf.Model):
    def test_step(self, data):
        logs = super().test_step(data)
        logs["five"] = 5.0
        return logs


def _mc_dropout():
    np.random.seed(0)
    x = kf.Input((8,))
    h = kf.layers.Dropout(0.5, seed=2)(kf.layers.Dense(16)(x), training=True)
    model = kf.Model(x, kf.layers.Dense(3)(h))
    model.compile(optimizer="sgd",
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _own_step():
    np.random.seed(0)
    x = kf.Input((8,))
    model = _OwnTestStep(x, kf.layers.Dense(3)(x))
    model.compile(optimizer="sgd",
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


@pytest.mark.parametrize("build", [
    lambda: _model(metric=RunningMaxNoMerge),  # state assigned, no merge_state
    lambda: _model(metric=RunningMaxNumpyMerge),  # merge_state not traceable
    _own_step,                                 # a custom test_step
    _mc_dropout,                               # random ops in inference
])
def test_steps_the_replicas_cannot_run_go_to_the_driver(float64, build):
    x, y, _, _ = _data()
    ref = build().evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
    strategy = _mirrored()
    with strategy.scope():
        got = build().evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
    assert strategy.driver_eval_calls > 0 and strategy.replica_eval_calls == 0
    _close(got, ref, 1e-12)


def test_default_switch_and_no_group_outside_a_scope(float64):
    x, y, _, _ = _data()
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    assert strategy.evaluate_on_replicas is False  # the default: see the README
    with strategy.scope():
        model = _model()
        off = model.evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
        p_off = model.predict(x, batch_size=7, verbose=0)
        calls = strategy.driver_eval_calls
        assert strategy.replica_eval_calls == 0 and calls == 16  # 29 batches / 4
        strategy.evaluate_on_replicas = True
        on = model.evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
        p_on = model.predict(x, batch_size=7, verbose=0)
        assert strategy.replica_eval_calls == 16
    _close(on, off, 1e-12)
    np.testing.assert_allclose(p_on, p_off, rtol=1e-12, atol=1e-12)
    # compiled in the scope, evaluated outside it with no replicas running:
    # starting actors nothing would close is avoided
    assert strategy.worker_group is None
    model.evaluate(x, y, batch_size=7, verbose=0)
    assert strategy.worker_group is None and strategy.driver_eval_calls == 24


class _KillAtValidation(kf.callbacks.Callback):
    reads_model = False  # the weights stay on the replicas meanwhile

    def __init__(self, strategy, epoch, rank=1):
        super().__init__()
        self.strategy, self.at, self.rank, self.epoch = strategy, epoch, rank, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_test_batch_begin(self, batch, logs=None):
        s = self.strategy
        if self.epoch == self.at and batch == 0 and not s.recoveries:
            s.worker_group.kill(self.rank)


def test_replica_killed_during_validation_is_recovered(float64):
    # The group is rebuilt, replays the training calls since the last commit
    # and the validation runs again: the run equals an unkilled one.
    _, unkilled = _fit_validated(_mirrored(),
                                 False)
    strategy = _mirrored()
    _, got = _fit_validated(strategy, False, [_KillAtValidation(strategy, 1)])
    assert len(strategy.recoveries) == 1
    assert "during 'eval_steps'" in strategy.recoveries[0]["error"]
    assert got.pop("recoveries")
    assert strategy.replica_eval_calls >= 3
    for k in unkilled:
        np.testing.assert_allclose(got[k], unkilled[k], rtol=1e-12, atol=1e-12)


class _AtTrainEnd(kf.callbacks.Callback):
    """predict and evaluate as fit ends, before the driver pulls the weights
    (it reads none itself: ``reads_model = False``)."""

    reads_model = False

    def __init__(self, x, y, strategy=None):
        super().__init__()
        self.x, self.y, self.strategy = x, y, strategy

    def on_train_end(self, logs=None):
        pulls = getattr(self.strategy, "pulls", 0)
        self.weights = self.model.get_weights()  # the driver's copy
        self.pred = self.model.predict(self.x, batch_size=9, verbose=0)
        self.logs = self.model.evaluate(self.x, self.y, batch_size=9, verbose=0,
                                        return_dict=True)
        self.pulled = getattr(self.strategy, "pulls", 0) - pulls


def test_predict_and_evaluate_use_the_replicas_newer_weights(float64):
    x, y, _, _ = _data()
    runs = []
    for strategy in (None, _mirrored()):
        cb = _AtTrainEnd(x[:50], y[:50], strategy)
        with strategy.scope() if strategy is not None else _Null():
            model = _model()
            np.random.seed(5)
            model.fit(x, y, batch_size=20, epochs=2, verbose=0, callbacks=[cb])
        runs.append((model, cb))
    (ref_model, ref), (model, got) = runs
    assert got.pulled == 0 and got.strategy.replica_eval_calls > 0
    # the driver's weights were stale (pulled only after fit), the outputs
    # and metrics are the trained model's
    assert all(np.array_equal(a, b) for a, b in zip(ref.weights,
                                                    ref_model.get_weights()))
    assert not any(np.array_equal(a, b) for a, b in zip(got.weights,
                                                        model.get_weights()))
    np.testing.assert_allclose(got.pred, ref.pred, rtol=1e-12, atol=1e-12)
    _close(got.logs, ref.logs, 1e-12)


def test_multi_worker_three_nodes_equal_one_process(float64):
    # One replica per simulated node: a batch of 2 leaves rank 0 without
    # rows; validation batches of 9 rows split 3/3/3 and the last 6 as 2/2/2.
    x, y, sw, _ = _data()
    xv, yv, _, _ = _data(60, seed=1)
    runs = []
    for strategy in (None, kf.distribute.MultiWorkerMirroredStrategy(num_workers=3)):
        if strategy is not None:
            strategy.evaluate_on_replicas = True
        with strategy.scope() if strategy is not None else _Null():
            model = _model()
            np.random.seed(5)
            h = model.fit(x, y, sample_weight=sw, batch_size=20, epochs=2,
                          verbose=0, validation_data=(xv, yv),
                          validation_batch_size=9)
            logs = model.evaluate(xv, yv, batch_size=2, verbose=0,
                                  return_dict=True)
            pred = model.predict(xv, batch_size=2, verbose=0)
        runs.append((h.history, logs, pred))
    (h1, l1, p1), (h2, l2, p2) = runs
    assert strategy.replica_eval_calls > 0 and strategy.driver_eval_calls == 0
    for k in h1:
        np.testing.assert_allclose(h2[k], h1[k], rtol=1e-12, atol=1e-12)
    _close(l2, l1, 1e-12)
    np.testing.assert_allclose(p2, p1, rtol=1e-12, atol=1e-12)
