"""Estimator.train under RunConfig(train_distribute=...) with the Ray strategies:
the same model_fn graph, the same weights as in process (issues 8, 9, 11)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180),
              pytest.mark.usefixtures("ray_cluster")]


def _train(strategy, model_dir):
    rng = np.random.RandomState(0)
    x = rng.randn(200, 4).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int64")
    columns = [kf.feature_column.numeric_column("x", shape=[4])]
    config = kf.estimators.RunConfig(train_distribute=strategy, tf_random_seed=1)
    est = kf.estimators.DNNClassifier(feature_columns=columns, hidden_units=[8],
                                      n_classes=2, model_dir=str(model_dir),
                                      config=config)
    est.train(lambda: ({"x": x}, y), steps=20)
    return est


@pytest.mark.parametrize("make", [
    lambda: kf.distribute.MirroredStrategy(num_replicas=2),
    lambda: kf.distribute.ParameterServerStrategy(num_ps=1, num_workers=2),
], ids=["mirrored", "parameter_server"])
def test_estimator_under_strategy_equals_in_process(make, tmp_path):
    ref = _train(None, tmp_path / "ref")
    strategy = make()
    with strategy.scope():  # leaving the scope shuts the actors down
        got = _train(strategy, tmp_path / "dist")
    assert got.get_variable_value("global_step") == 20
    names = [n for n in ref.get_variable_names() if "dnn" in n or "logits" in n]
    assert names
    for name in names:
        np.testing.assert_allclose(got.get_variable_value(name),
                                   ref.get_variable_value(name), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
