"""Actors a strategy starts end with the run that started them: an Estimator's
``train_distribute``, a model compiled in a scope and fit outside it; inside a
scope they live until the scope ends. MultiWorkerMirroredStrategy asking for
more workers than nodes fails with an error that says how to fix it, and
with no cluster to join it warns that it runs one worker."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import kerasflow as kf

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180),
              pytest.mark.usefixtures("ray_cluster")]


def _alive_actors():
    from ray.util.state import list_actors
    try:
        return len(list_actors(filters=[("state", "=", "ALIVE")], limit=10_000))
    except Exception:  # noqa: BLE001 - no dashboard: read the GCS table
        import ray
        return sum(a["State"] == "ALIVE" for a in ray._private.state.actors().values())


def _back_to(baseline, seconds=20.0):
    deadline = time.monotonic() + seconds
    while (n := _alive_actors()) != baseline and time.monotonic() < deadline:
        time.sleep(0.2)
    return n


def _model():
    kf.utils.set_random_seed(3)
    model = kf.Sequential([kf.layers.Input((4,)), kf.layers.Dense(3),
                           kf.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def _data():
    rng = np.random.RandomState(0)
    return rng.randn(32, 4).astype("float32"), rng.randn(32, 1).astype("float32")


def test_estimator_train_distribute_closes_its_actors(tmp_path):
    baseline = _alive_actors()
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype("float32")
    y = (x[:, 0] > 0).astype("int64")
    config = kf.estimators.RunConfig(train_distribute=strategy, tf_random_seed=1)
    est = kf.estimators.DNNClassifier(
        feature_columns=[kf.feature_column.numeric_column("x", shape=[4])],
        hidden_units=[4], n_classes=2, model_dir=str(tmp_path), config=config)
    est.train(lambda: ({"x": x}, y), steps=3)
    assert est.get_variable_value("global_step") == 3
    assert strategy.worker_group is None
    assert _back_to(baseline) == baseline


def test_compiled_in_scope_fit_outside_closes_its_actors():
    baseline = _alive_actors()
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with strategy.scope():
        model = _model()
    x, y = _data()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert strategy.worker_group is None
    assert _back_to(baseline) == baseline


def test_fit_inside_scope_keeps_actors_until_the_scope_ends():
    baseline = _alive_actors()
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    x, y = _data()
    with strategy.scope():
        model = _model()
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        group = strategy.worker_group
        assert group is not None and _alive_actors() >= baseline + 2
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        assert strategy.worker_group is group  # reused, not restarted
    assert strategy.worker_group is None
    assert _back_to(baseline) == baseline


def test_multi_worker_more_workers_than_nodes_says_how_to_fix():
    from kerasflow.distribute.runtime.errors import PlacementError
    with pytest.raises(PlacementError, match=r"num_workers=5\).*3 alive node.*"
                                             r"RAY_ADDRESS.*MirroredStrategy"):
        kf.distribute.MultiWorkerMirroredStrategy(num_workers=5)


@pytest.mark.slow
def test_multi_worker_without_a_cluster_warns(tmp_path):
    # A fresh process with no cluster to join starts its own one-node Ray.
    code = ("import warnings, kerasflow as kf\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    s = kf.distribute.MultiWorkerMirroredStrategy()\n"
            "print(s.num_workers, [str(x.message) for x in w])\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "TF_CONFIG")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("1 ")
    assert "found no cluster to join" in out.stdout
