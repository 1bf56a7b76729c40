"""Canned estimators learn; bad input fails clearly and leaves model_dir intact."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.estimators import Estimator, EstimatorSpec
from kerasflow.estimators.inputs import numpy_input_fn
from tests.estimators._models import data, model_fn, train_input

fc = kf.feature_column
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _snapshot(d):
    return {f: (Path(d) / f).read_bytes() for f in sorted(os.listdir(d))
            if (Path(d) / f).is_file()}


def test_iris_example_short(data_dir, tmp_path):
    acc = _load("iris_dnn_classifier").main(steps=600, data=str(data_dir / "iris"),
                                             model_dir=str(tmp_path))
    assert acc >= 0.9


def test_iris_dataset_input_fn_example_acceptance(data_dir, tmp_path):
    """TF's premade-Estimator program: input_fns return tf.data Datasets of
    (features dict, labels); the canned DNNClassifier reaches >= 0.93."""
    acc = _load("iris_dataset_estimator").main(data=str(data_dir / "iris"),
                                                model_dir=str(tmp_path))
    assert acc >= 0.93


@pytest.mark.slow
def test_iris_example_acceptance(data_dir, tmp_path):
    acc = _load("iris_dnn_classifier").main(data=str(data_dir / "iris"),
                                             model_dir=str(tmp_path))
    assert acc >= 0.93


def test_census_wide_deep_short(data_dir, tmp_path):
    acc = _load("census_wide_deep").main(epochs=1, train_limit=6000,
                                          data=str(data_dir / "adult"),
                                          model_dir=str(tmp_path))
    assert acc >= 0.8


@pytest.mark.slow
def test_census_wide_deep_acceptance(data_dir, tmp_path):
    acc = _load("census_wide_deep").main(data=str(data_dir / "adult"),
                                          model_dir=str(tmp_path))
    assert acc >= 0.84


@pytest.mark.slow
def test_custom_estimator_mnist_acceptance(data_dir, tmp_path):
    acc = _load("custom_estimator").main(data=str(data_dir / "mnist"),
                                          model_dir=str(tmp_path))
    assert acc >= 0.98


def test_custom_estimator_mnist_short(data_dir, tmp_path):
    acc = _load("custom_estimator").main(epochs=1, train_limit=3000,
                                          data=str(data_dir / "mnist"),
                                          model_dir=str(tmp_path))
    assert acc >= 0.85


def _xor_like(n=400, seed=0):
    rng = np.random.default_rng(seed)
    color = rng.choice(["red", "green", "blue"], n)
    v = rng.normal(size=n).astype("float32")
    y = ((color == "red") ^ (v > 0)).astype(np.int64)
    return {"color": color, "v": v}, y


def test_linear_classifier_with_string_vocab_and_cross(tmp_path):
    x, y = _xor_like()
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green"],
                                                       num_oov_buckets=1)
    vb = fc.bucketized_column(fc.numeric_column("v"), [0.0])
    est = kf.estimators.LinearClassifier([color, vb, fc.crossed_column(
        [vb, "color"], 20)], model_dir=str(tmp_path))
    est.train(numpy_input_fn(x, y, batch_size=32, num_epochs=None, shuffle=True,
                             seed=0), steps=300)
    r = est.evaluate(numpy_input_fn(x, y, batch_size=100, shuffle=False))
    assert r["accuracy"] > 0.95 and 0 <= r["auc"] <= 1
    pred = next(iter(est.predict(numpy_input_fn({k: v[:1] for k, v in x.items()},
                                                shuffle=False))))
    assert set(pred) >= {"logits", "logistic", "probabilities", "class_ids",
                         "classes"}


def test_dnn_regressor_and_baselines(tmp_path):
    rng = np.random.default_rng(1)
    xr = rng.normal(size=(300, 2)).astype("float32")
    yr = (xr @ np.array([2.0, -1.0]) + 0.5).astype("float32")
    est = kf.estimators.DNNRegressor([16], [fc.numeric_column("x", shape=[2])],
                                     model_dir=str(tmp_path / "r"),
                                     optimizer=kf.optimizers.Adam(0.02))
    fn = numpy_input_fn({"x": xr}, yr, batch_size=32, num_epochs=None,
                        shuffle=True, seed=0)
    est.train(fn, steps=400)
    r = est.evaluate(numpy_input_fn({"x": xr}, yr, batch_size=100, shuffle=False))
    assert r["average_loss"] < 0.1
    base = kf.estimators.BaselineClassifier(model_dir=str(tmp_path / "b"),
                                            n_classes=3)
    y3 = np.array([0] * 60 + [1] * 30 + [2] * 10)
    base.train(numpy_input_fn({"x": np.zeros((100, 1), "float32")}, y3,
                              batch_size=100, num_epochs=None, shuffle=True),
               steps=300)
    p = next(iter(base.predict(numpy_input_fn({"x": np.zeros((1, 1), "float32")},
                                              shuffle=False))))
    np.testing.assert_allclose(p["probabilities"], [0.6, 0.3, 0.1], atol=0.03)


def test_label_vocabulary_and_weight_column(tmp_path):
    x, y = _xor_like(200)
    names = np.array(["no", "yes"])[y]
    x["w"] = np.ones(len(y), "float32")
    est = kf.estimators.DNNClassifier(
        [8], [fc.indicator_column(fc.categorical_column_with_vocabulary_list(
            "color", ["red", "green", "blue"])), fc.numeric_column("v")],
        label_vocabulary=["no", "yes"], weight_column="w",
        model_dir=str(tmp_path), optimizer=kf.optimizers.Adam(0.05))
    est.train(numpy_input_fn(x, names, batch_size=32, num_epochs=None,
                             shuffle=True, seed=0), steps=200)
    preds = list(est.predict(numpy_input_fn(x, shuffle=False), predict_keys="classes"))
    acc = np.mean([p["classes"][0] == n for p, n in zip(preds, names)])
    assert acc > 0.9


# -- bad input ---------------------------------------------------------------------
@pytest.fixture
def trained(tmp_path):
    x, y = data(100)
    est = kf.estimators.DNNClassifier([4], [fc.numeric_column("x", shape=[4])],
                                      n_classes=3, model_dir=str(tmp_path))
    est.train(numpy_input_fn({"x": x}, y, batch_size=20, num_epochs=None,
                             shuffle=True), steps=5)
    return est, x, y, tmp_path


def test_missing_feature_key(trained):
    est, x, y, d = trained
    before = _snapshot(d)
    with pytest.raises(KeyError, match="expects feature key 'x'.*'z'"):
        est.train(numpy_input_fn({"z": x}, y, shuffle=True), steps=1)
    assert _snapshot(d) == before


@pytest.mark.parametrize("labels, match", [
    (lambda y: np.stack([y, y], 1), r"shape \[batch_size\]"),
    (lambda y: y + 3, r"in \[0, 3\) for n_classes=3"),
])
def test_bad_labels(trained, labels, match):
    est, x, y, d = trained
    before = _snapshot(d)
    with pytest.raises(ValueError, match=match):
        est.train(numpy_input_fn({"x": x}, labels(y), shuffle=True), steps=1)
    with pytest.raises(ValueError, match=match):
        est.evaluate(numpy_input_fn({"x": x}, labels(y), shuffle=False))
    assert _snapshot(d) == before


def test_unseen_vocab_goes_to_oov_bucket(tmp_path):
    col = fc.categorical_column_with_vocabulary_list("c", ["a", "b"],
                                                     num_oov_buckets=1)
    est = kf.estimators.LinearClassifier([col], model_dir=str(tmp_path))
    est.train(numpy_input_fn({"c": np.array(["a", "b"] * 20)},
                             np.array([0, 1] * 20), batch_size=8, shuffle=True),
              steps=5)
    preds = list(est.predict(numpy_input_fn({"c": np.array(["never-seen"])},
                                            shuffle=False)))
    assert len(preds) == 1   # predicted through the OOV bucket (id 2)
    w = est.get_variable_value("linear/linear_model/c/weights")
    assert w.shape == (3, 1)


def test_spec_without_loss_in_train(tmp_path):
    def bad_model_fn(features, labels, mode):
        logits = kf.layers.Dense(2)(features["x"])
        return EstimatorSpec(mode, predictions=logits)

    est = Estimator(bad_model_fn, model_dir=str(tmp_path))
    x, y = data(40)
    with pytest.raises(ValueError, match="mode 'train' needs a loss"):
        est.train(train_input(x, y), steps=1)
    assert os.listdir(tmp_path) == []


def test_unwritable_model_dir(tmp_path, trained):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    est = Estimator(model_fn, model_dir=str(blocker / "sub"))
    x, y = data(40)
    with pytest.raises(OSError, match="cannot write checkpoints to model_dir"):
        est.train(train_input(x, y), steps=1)
    assert blocker.read_text() == "not a folder"
    if os.geteuid() != 0:  # root ignores permissions
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(OSError, match="cannot write"):
            Estimator(model_fn, model_dir=str(ro)).train(train_input(x, y), steps=1)


def test_evaluate_without_checkpoint_and_string_features_without_columns(tmp_path):
    est = Estimator(model_fn, model_dir=str(tmp_path))
    x, y = data(20)
    with pytest.raises(ValueError, match="Could not find a trained model"):
        est.evaluate(numpy_input_fn({"x": x}, y, shuffle=False))
    with pytest.raises(TypeError, match="feeds numeric arrays"):
        est.train(numpy_input_fn({"x": np.array(["a"] * 20)}, y, shuffle=True),
                  steps=1)


def test_nan_loss_stops_training_and_keeps_checkpoints(tmp_path):
    def nan_fn(features, labels, mode):
        w = K.Variable(np.ones((4, 1), "float32"), name="w")
        loss = K.mean(K.log(K.matmul(features["x"], w) * 0.0 - 1.0))
        op = kf.optimizers.SGD(0.1).minimize(loss)
        return EstimatorSpec(mode, loss=loss, train_op=op)

    est = Estimator(nan_fn, model_dir=str(tmp_path))
    x, y = data(20)
    with np.errstate(invalid="ignore"), pytest.raises(RuntimeError, match="NaN"):
        est.train(numpy_input_fn({"x": x}, y, shuffle=True), steps=3)
