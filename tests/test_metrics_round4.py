"""The round-4 metrics against Keras 3 itself: several weighted batches, then
``result()``, ``reset_state()`` and the config round trip; the function forms;
and the stateful ones inside ``compile(metrics=...)`` + ``fit``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import metrics as M
from tests.keras_oracle import keras_numpy

RNG = np.random.default_rng(0)


def _w(i, shape=(6,)):
    return RNG.random(shape).astype("float32") if i % 2 else None


def _binary(n=3):
    return [((RNG.random((6, 3)) > 0.5).astype("float32"),
             RNG.random((6, 3)).astype("float32"), _w(i)) for i in range(n)]


def _categorical(n=3):
    out = []
    for i in range(n):
        p = RNG.random((6, 4)).astype("float32")
        out.append((np.eye(4, dtype="float32")[RNG.integers(0, 4, 6)],
                    p / p.sum(-1, keepdims=True), _w(i)))
    return out


def _regression(n=3):
    return [(RNG.random((6, 4)).astype("float32"),
             RNG.random((6, 4)).astype("float32"), _w(i)) for i in range(n)]


def _sparse(n=3):
    return [(RNG.integers(0, 4, 6), c[1], c[2]) for c in _categorical(n)]


def _ids(n=3):
    return [(RNG.integers(0, 3, (4, 5)), RNG.integers(-1, 4, (4, 5)),
             RNG.integers(0, 3, (4, 5)) if i % 2 else None) for i in range(n)]


CASES = [
    ("BinaryCrossentropy", {}, _binary), ("BinaryCrossentropy",
                                          {"label_smoothing": 0.1}, _binary),
    ("Hinge", {}, _binary), ("SquaredHinge", {}, _binary),
    ("TruePositives", {}, _binary), ("FalsePositives", {}, _binary),
    ("TrueNegatives", {}, _binary), ("FalseNegatives", {}, _binary),
    ("TruePositives", {"thresholds": [0.2, 0.5, 0.8]}, _binary),
    ("FalseNegatives", {"thresholds": [0.3, 0.6]}, _binary),
    ("SensitivityAtSpecificity", {"specificity": 0.5}, _binary),
    ("SpecificityAtSensitivity", {"sensitivity": 0.5, "num_thresholds": 7},
     _binary),
    ("PrecisionAtRecall", {"recall": 0.6}, _binary),
    ("RecallAtPrecision", {"precision": 0.6, "num_thresholds": 7}, _binary),
    ("PrecisionAtRecall", {"recall": 0.5, "class_id": 1}, _binary),
    ("BinaryIoU", {}, lambda: [(t, p, None) for t, p, _ in _binary()]),
    ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.3},
     lambda: [(t, p, None) for t, p, _ in _binary()]),
    ("CategoricalCrossentropy", {}, _categorical),
    ("CategoricalCrossentropy", {"from_logits": True, "label_smoothing": 0.2},
     _categorical),
    ("CategoricalHinge", {}, _categorical), ("KLDivergence", {}, _categorical),
    ("Poisson", {}, _categorical), ("LogCoshError", {}, _categorical),
    ("MeanAbsolutePercentageError", {}, _categorical),
    ("MeanSquaredLogarithmicError", {}, _categorical),
    ("CosineSimilarity", {}, _categorical), ("PearsonCorrelation", {}, _regression),
    ("ConcordanceCorrelation", {}, _regression),
    ("OneHotMeanIoU", {"num_classes": 4},
     lambda: [(t, p, None) for t, p, _ in _categorical()]),
    ("OneHotIoU", {"num_classes": 4, "target_class_ids": [1, 3]}, _categorical),
    ("SparseCategoricalCrossentropy", {}, _sparse),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, _sparse),
    ("R2Score", {}, _regression), ("R2Score", {"class_aggregation": None},
                                   _regression),
    ("R2Score", {"class_aggregation": "variance_weighted_average",
                 "num_regressors": 2}, _regression),
    ("MeanIoU", {"num_classes": 3}, _ids), ("MeanIoU", {"num_classes": 3,
                                                         "ignore_class": 1}, _ids),
    ("IoU", {"num_classes": 3, "target_class_ids": [0, 2]}, _ids),
    ("MeanIoU", {"num_classes": 3, "dtype": "float32"},
     lambda: [(RNG.integers(0, 3, 6), RNG.integers(0, 3, 6),
               RNG.random(6).astype("float32")) for _ in range(3)]),
]


@pytest.mark.parametrize("name, kwargs, data", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_metric_equals_keras_over_weighted_batches(name, kwargs, data):
    keras = keras_numpy()
    ours, theirs = getattr(M, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    batches = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Keras' own divide warnings
        for y_true, y_pred, sw in batches:
            assert ours.update_state(y_true, y_pred, sample_weight=sw) == []
            theirs.update_state(y_true, y_pred, sample_weight=sw)
        np.testing.assert_allclose(ours.result(), np.asarray(theirs.result()),
                                   rtol=2e-5, atol=1e-6)
        # reset, then one batch: the state starts over
        ours.reset_state()
        theirs.reset_state()
        ours.update_state(*batches[0][:2])
        theirs.update_state(*batches[0][:2])
        np.testing.assert_allclose(ours.result(), np.asarray(theirs.result()),
                                   rtol=2e-5, atol=1e-6)
    config = ours.get_config()
    keras_config = theirs.get_config()
    keras_config["name"] = config["name"]  # Keras numbers repeated names
    assert {k: config.get(k) for k in keras_config} == keras_config
    # Keras' CosineSimilarity drops its axis from the config; ours keeps it.
    assert set(config) - set(keras_config) <= {"axis"}
    clone = type(ours).from_config(config)
    assert clone.get_config() == config
    assert M.deserialize(M.serialize(ours)).get_config() == config


FUNCTIONS = ["binary_crossentropy", "binary_focal_crossentropy",
             "categorical_crossentropy", "categorical_focal_crossentropy",
             "categorical_hinge", "concordance_correlation", "hinge", "huber",
             "kl_divergence", "log_cosh", "mean_absolute_error",
             "mean_absolute_percentage_error", "mean_squared_error",
             "mean_squared_logarithmic_error", "pearson_correlation", "poisson",
             "squared_hinge"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_forms_equal_keras(name):
    keras = keras_numpy()
    y_true, y_pred, _ = _categorical(1)[0]
    np.testing.assert_allclose(getattr(M, name)(y_true, y_pred),
                               getattr(keras.metrics, name)(y_true, y_pred),
                               rtol=1e-5, atol=1e-6)


def test_sparse_categorical_crossentropy_function_equals_keras():
    keras = keras_numpy()
    y_true, y_pred, _ = _sparse(1)[0]
    np.testing.assert_allclose(
        M.sparse_categorical_crossentropy(y_true, y_pred),
        keras.metrics.sparse_categorical_crossentropy(y_true, y_pred), rtol=1e-5)


def test_hand_checked_values():
    tp = M.TruePositives()
    tp.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert tp.result() == 2.0
    iou = M.MeanIoU(num_classes=2)
    iou.update_state([0, 0, 1, 1], [0, 1, 0, 1])
    assert iou.result() == pytest.approx(1 / 3, rel=1e-6)  # each class 1/3
    r2 = M.R2Score()
    r2.update_state(np.array([[1.0], [2.0], [3.0]]), np.array([[1.0], [2.0], [3.0]]))
    assert r2.result() == pytest.approx(1.0)


@pytest.mark.parametrize("make, match", [
    (lambda: M.PrecisionAtRecall(1.5), r"`recall` must be in the range \[0, 1\]. "
                                       r"Received: recall=1.5"),
    (lambda: M.SensitivityAtSpecificity(0.5, num_thresholds=0),
     r"num_thresholds` must be an integer > 0. Received: num_thresholds=0"),
    (lambda: M.IoU(2, [2]), r"Target class id 2 is out of range"),
    (lambda: M.R2Score(class_aggregation="median"),
     r"class_aggregation.*Received: class_aggregation=median"),
    (lambda: M.R2Score(num_regressors=-1), r"Received: num_regressors=-1"),
])
def test_bad_arguments_name_expected_and_received(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_r2_score_needs_2d_inputs():
    with pytest.raises(ValueError, match=r"R2Score expects 2D inputs.*y_pred.shape"):
        M.R2Score().update_state(np.ones(3), np.ones(3))


def test_lookup_by_name():
    assert isinstance(M.get("true_positives"), M.TruePositives)
    assert isinstance(M.get("R2Score"), M.R2Score)
    assert isinstance(M.get("pearson_correlation"), M.PearsonCorrelation)
    assert M.get("logcosh").name == "logcosh"


def test_compile_and_fit_with_the_stateful_metrics():
    x = RNG.random((64, 4)).astype("float32")
    y = (x.sum(1, keepdims=True) > 2).astype("float32")
    model = kf.Sequential([kf.layers.Dense(1, activation="sigmoid",
                                           input_shape=(4,))])
    model.compile("sgd", "binary_crossentropy", metrics=[
        M.TruePositives(), M.PrecisionAtRecall(0.5), M.BinaryIoU(), M.R2Score(),
        M.BinaryCrossentropy(), M.PearsonCorrelation(axis=0), M.MeanIoU(2),
        M.FalseNegatives(thresholds=[0.3, 0.7])])
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    # The compiled metrics saw the same batches as a metric updated by hand.
    p = model.predict(x, verbose=0)
    for metric, key in ((M.TruePositives(), "true_positives"),
                        (M.BinaryCrossentropy(), "binary_crossentropy"),
                        (M.R2Score(), "r2_score"), (M.BinaryIoU(), "binary_io_u")):
        for i in range(0, 64, 16):
            metric.update_state(y[i:i + 16], p[i:i + 16])
        assert logs[key] == pytest.approx(metric.result(), rel=1e-4, abs=1e-5)
    assert len(history.history["precision_at_recall"]) == 2
    assert np.shape(logs["false_negatives"]) == (2,)
