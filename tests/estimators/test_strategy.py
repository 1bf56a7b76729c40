"""A strategy in RunConfig runs the same model_fn: two in-process replicas
(compute on each half, sum the flat gradients, apply once) train exactly as one
process on the global batch (tf.distribute's loss scaling)."""

from __future__ import annotations

import numpy as np

import kerasflow as kf
from kerasflow.distribute.distribute_lib import Strategy
from kerasflow.estimators import Estimator, RunConfig
from tests.estimators._models import data, model_fn


class TwoHalves(Strategy):
    """Two replicas in this process: contiguous halves of each global batch."""

    num_replicas_in_sync = 2

    def __init__(self):
        self.calls = 0

    def run_steps(self, step, batches):
        out = []
        for b in batches:
            self.calls += 1
            arrays = b.materialize()
            n = len(arrays[0])
            halves = [[a[: n // 2] for a in arrays], [a[n // 2:] for a in arrays]]
            results = [step.compute_gradients(h, n) for h in halves]
            step.apply_gradients(results[0].grads + results[1].grads)
            out.append(results[0]._replace(loss=results[0].loss + results[1].loss,
                                           count=n, grads=None))
        return out


def _train(model_dir, strategy):
    x, y = data(96)
    est = Estimator(model_fn, model_dir=str(model_dir), params={"lr": 0.05},
                    config=RunConfig(tf_random_seed=1, train_distribute=strategy))
    est.train(kf.estimators.inputs.numpy_input_fn({"x": x}, y, batch_size=32,
                                                  num_epochs=3, shuffle=False))
    return est


def test_two_replicas_equal_one_process(tmp_path):
    strategy = TwoHalves()
    two = _train(tmp_path / "two", strategy)
    one = _train(tmp_path / "one", None)
    assert strategy.calls == 9
    assert two.get_variable_value("global_step") == 9
    for name in ("dense/kernel", "dense/bias", "dense_1/kernel"):
        np.testing.assert_allclose(two.get_variable_value(name),
                                   one.get_variable_value(name),
                                   rtol=1e-5, atol=1e-6)


class GroupingHalves(TwoHalves):
    """TwoHalves taking up to 4 batches per call; records each call's size."""

    default_steps_per_execution = 4

    def __init__(self):
        super().__init__()
        self.groups = []

    def run_steps(self, step, batches):
        self.groups.append(len(batches))
        return super().run_steps(step, batches)


def _train_config(model_dir, strategy, hooks=None, **config):
    x, y = data(96)
    est = Estimator(model_fn, model_dir=str(model_dir), params={"lr": 0.05},
                    config=RunConfig(tf_random_seed=1, train_distribute=strategy,
                                     **config))
    est.train(kf.estimators.inputs.numpy_input_fn({"x": x}, y, batch_size=32,
                                                  num_epochs=3, shuffle=False),
              hooks=hooks)
    return est


def _checkpoint_steps(model_dir):
    return sorted(int(p.name.split("-")[1]) for p in model_dir.glob("model.ckpt-*"))


def test_groups_of_steps_per_call_end_at_checkpoints(tmp_path):
    strategy = GroupingHalves()
    two = _train_config(tmp_path / "two", strategy, save_checkpoints_steps=5)
    one = _train_config(tmp_path / "one", None, save_checkpoints_steps=5)
    # 9 batches: a group never crosses the checkpoint at step 5, nor the input's end
    assert strategy.groups == [4, 1, 4]
    assert two.get_variable_value("global_step") == 9
    assert _checkpoint_steps(tmp_path / "two") == _checkpoint_steps(tmp_path / "one")
    assert 5 in _checkpoint_steps(tmp_path / "two")
    for name in ("dense/kernel", "dense/bias", "dense_1/kernel"):
        np.testing.assert_allclose(two.get_variable_value(name),
                                   one.get_variable_value(name), rtol=1e-5, atol=1e-6)


def test_hooks_see_every_step(tmp_path):
    class Record:
        def __init__(self):
            self.steps = []

        def after_run(self, run_context, run_values):
            self.steps.append(run_values.results["global_step"])

    strategy, hook = GroupingHalves(), Record()
    _train_config(tmp_path / "h", strategy, hooks=[hook])
    assert strategy.groups == [1] * 9
    assert hook.steps == list(range(1, 10))


def test_groups_stop_at_the_byte_cap(tmp_path, monkeypatch):
    from kerasflow.estimators import _loops

    x, _ = data(96)
    per_batch = 32 * x.shape[1] * x.itemsize  # features of one batch of 32
    monkeypatch.setattr(_loops, "GROUP_BYTES", 2 * per_batch)
    strategy = GroupingHalves()
    _train_config(tmp_path / "cap", strategy)
    assert strategy.groups == [2] * 4 + [1]  # labels push a pair over the cap
