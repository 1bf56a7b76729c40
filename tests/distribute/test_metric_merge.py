"""Metric state that does not add up (a running maximum) merged across
replicas by the metric's own ``merge_state``: MirroredStrategy(2) reports
what one process reports; a metric that assigns its state without a
``merge_state`` is refused by name, not summed wrongly."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import ops

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180),
              pytest.mark.usefixtures("ray_cluster")]


class RunningMaxNoMerge(kf.metrics.Metric):
    """Largest target seen so far; assigns its state (not additive)."""

    def __init__(self, name="running_max", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.best = self.add_variable(shape=(), initializer=-1e6, name="best")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.best.assign(ops.maximum(self.best, ops.max(ops.cast(y_true,
                                                                 self.dtype))))

    def result(self):
        return self.best


class RunningMax(RunningMaxNoMerge):
    def merge_state(self, metrics):
        for m in metrics:
            self.best.assign(ops.maximum(self.best, m.best))


class RunningMaxNumpyMerge(RunningMax):
    def merge_state(self, metrics):  # numpy: cannot be traced for replicas
        for m in metrics:
            self.best.assign(max(float(self.best.numpy()), float(m.best.numpy())))


def _model(metric):
    kf.utils.set_random_seed(1)
    model = kf.Sequential([kf.layers.Input((3,)), kf.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=[metric, "mae"])
    return model


def _data():
    # Each global batch of 8 has its largest target in the second half (rank
    # 1's rows) and a larger-than-before one in the first half (rank 0's), so
    # summing the replicas' changes of the maximum would overshoot.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype("float32")
    y = np.arange(32, dtype="float32").reshape(4, 8)
    y[:, :4] += 0.5 * np.arange(4)[:, None]
    return x, y.reshape(32, 1)


def _fit(strategy, metric_cls):
    x, y = _data()
    if strategy is None:
        model = _model(metric_cls())
        return model, model.fit(x, y, batch_size=8, epochs=2, shuffle=False,
                                verbose=0)
    with strategy.scope():
        model = _model(metric_cls())
        return model, model.fit(x, y, batch_size=8, epochs=2, shuffle=False,
                                verbose=0)


def test_default_merge_state_adds_and_an_override_takes_the_max():
    a, b = kf.metrics.Sum(), kf.metrics.Sum()
    a.update_state(np.array([1.0, 2.0]))
    b.update_state(np.array([4.0]))
    a.merge_state([b])
    assert a.result() == 7.0
    m1, m2 = RunningMax(), RunningMax()
    m1.update_state(np.array([[3.0]]), None)
    m2.update_state(np.array([[5.0], [2.0]]), None)
    m1.merge_state([m2])
    assert m1.result() == 5.0
    with pytest.raises(ValueError, match="cannot merge the state"):
        kf.metrics.Sum().merge_state([kf.metrics.Mean()])


def test_running_max_under_mirrored_equals_one_process():
    ref_model, ref = _fit(None, RunningMax)
    assert ref.history["running_max"] == [31.0, 31.0]
    model, got = _fit(kf.distribute.MirroredStrategy(num_replicas=2), RunningMax)
    assert got.history["running_max"] == ref.history["running_max"]
    np.testing.assert_allclose(got.history["mae"], ref.history["mae"], rtol=1e-5)
    np.testing.assert_allclose(model.get_weights()[0], ref_model.get_weights()[0],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("metric", [RunningMaxNoMerge, RunningMaxNumpyMerge])
def test_assigned_state_without_a_traceable_merge_state_is_refused(metric):
    # no merge_state of its own, or one in numpy: one process trains (it
    # never merges), replicas refuse by name
    _, ref = _fit(None, metric)
    assert ref.history["running_max"] == [31.0, 31.0]
    with pytest.raises(ValueError, match=r"MirroredStrategy cannot merge.*"
                                         r"running_max.*merge_state"):
        _fit(kf.distribute.MirroredStrategy(num_replicas=2), metric)


def test_partial_state_is_read_back_not_rounded():
    # A float32 7.3 from the -1e6 start: initial + (7.3 - initial) is 7.3125;
    # the replicas read the partial state back instead (issue 21).
    x = np.random.default_rng(0).standard_normal((16, 3)).astype("float32")
    y = np.linspace(0.1, 7.3, 16, dtype="float32").reshape(16, 1)[::-1].copy()
    results = []
    for strategy in (None, kf.distribute.MirroredStrategy(num_replicas=2)):
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = _model(RunningMax())
            h = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
            if strategy is not None:
                strategy.evaluate_on_replicas = True
            logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
        results.append((h.history["running_max"], logs["running_max"]))
    assert results[0] == results[1] == ([np.float32(7.3)], np.float32(7.3))
