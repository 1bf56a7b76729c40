"""An Estimator's input_fn may return a kerasflow.data.Dataset (TF's usual form)."""

from __future__ import annotations

import numpy as np

import kerasflow as kf
from kerasflow.data import Dataset


def _model_fn(features, labels, mode, params):
    from kerasflow import backend as K
    from kerasflow.estimators import EstimatorSpec, ModeKeys
    pred = kf.layers.Dense(1)(features["x"])
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"y": pred})
    loss = K.mean(K.square(pred - labels))
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss)
    op = kf.optimizers.SGD(0.1).minimize(
        loss, global_step=kf.train.get_or_create_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=op)


def test_estimator_trains_on_a_dataset_input_fn(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 2)).astype("float32")
    y = (x @ np.array([[2.0], [-1.0]]) + 0.5).astype("float32")

    def train_input_fn():
        return (Dataset.from_tensor_slices(({"x": x}, y)).shuffle(64, seed=0)
                .repeat().batch(16))

    def eval_input_fn():
        return Dataset.from_tensor_slices(({"x": x}, y)).batch(32)

    est = kf.estimators.Estimator(_model_fn, model_dir=str(tmp_path))
    est.train(train_input_fn, steps=200)
    assert est.evaluate(eval_input_fn)["loss"] < 1e-3
    preds = list(est.predict(lambda: Dataset.from_tensor_slices({"x": x}).batch(8)))
    assert len(preds) == 64
    np.testing.assert_allclose(np.ravel([p["y"] for p in preds]), y.ravel(),
                               atol=0.05)
