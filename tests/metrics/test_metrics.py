"""Metrics: two batches eagerly and as graph updates against hand-computed values,
reset, AUC against the rank statistic, lookup and config round trips; the
Keras 3 metrics against Keras itself (several weighted batches, then
``result()``, ``reset_state()`` and the config round trip), the function
forms, and the stateful ones inside ``compile(metrics=...)`` + ``fit``;
``SparseTopKCategoricalAccuracy(from_sorted_ids=True)``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import metrics
from kerasflow import backend as K
from kerasflow import metrics as M
from tests.keras_oracle import keras_numpy

F32 = np.float32
YT = np.array([[0.0, 1.0], [1.0, 0.0]], F32)
YP = np.array([[0.2, 0.8], [0.6, 0.4]], F32)
P4 = np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4]], F32)
ONES2 = np.ones(2, F32)


def _a(x, dtype=F32):
    return np.asarray(x, dtype)


# name -> (factory, batches of update_state arguments, expected result by hand).
CASES = {
    # (1+2+3) + (4*1 + 5*3) over 3 + (1+3) samples.
    "mean": (metrics.Mean, [(_a([1, 2, 3]),), (_a([4, 5]), _a([1, 3]))], 25 / 7),
    "sum": (metrics.Sum, [(_a([1, 2, 3]),), (_a([4, 5]), _a([1, 3]))], 25.0),
    # 2 of 3 right, then the right one weighs 1 and the wrong one 3.
    "accuracy": (metrics.Accuracy, [
        (_a([[1], [2], [3]]), _a([[1], [2], [0]])),
        (_a([[1], [1]]), _a([[1], [0]]), _a([1, 3]))], 3 / 7),
    # T F F T, then rank-1 labels against (batch, 1) scores: T T.
    "binary_accuracy": (metrics.BinaryAccuracy, [
        (_a([[1], [0], [1], [0]]), _a([[0.9], [0.6], [0.4], [0.1]])),
        (_a([1, 0]), _a([[0.7], [0.2]]))], 4 / 6),
    "binary_accuracy_0.65": (lambda: metrics.BinaryAccuracy(threshold=0.65), [
        (_a([[1], [0], [1], [0]]), _a([[0.9], [0.6], [0.4], [0.1]])),
        (_a([1, 0]), _a([[0.7], [0.2]]))], 5 / 6),
    "categorical_accuracy": (metrics.CategoricalAccuracy, [
        (YT, YP), (YT[::-1], YP, ONES2)], 2 / 4),
    # int labels: both right; then float (batch, 1) labels: one of two.
    "sparse_categorical_accuracy": (metrics.SparseCategoricalAccuracy, [
        (np.array([1, 0]), YP), (_a([[0], [0]]), YP)], 3 / 4),
    "top_k": (lambda: metrics.TopKCategoricalAccuracy(k=2), [
        (_a([[0, 0, 1, 0], [1, 0, 0, 0]]), P4),
        (_a([[0, 1, 0, 0]]), P4[:1, ::-1].copy())], 2 / 3),
    "sparse_top_k": (lambda: metrics.SparseTopKCategoricalAccuracy(k=2), [
        (np.array([2, 0]), P4), (_a([[1]]), P4[:1, ::-1].copy())], 2 / 3),
    # per-sample squared errors 0.04, 0.16, then 1.0.
    "mse": (metrics.MeanSquaredError, [
        (YT, YP), (_a([[0, 0]]), _a([[1, 1]]))], 0.4),
    "mae": (metrics.MeanAbsoluteError, [
        (YT, YP), (_a([[0, 0]]), _a([[1, 1]]))], 1.6 / 3),
    "rmse": (metrics.RootMeanSquaredError, [
        (YT, YP), (_a([[0, 0]]), _a([[1, 1]]))], math.sqrt(0.4)),
    "wrapper": (lambda: metrics.MeanMetricWrapper(
        lambda t, p: K.abs(t - p), name="abs_err"), [
        (YT, YP), (_a([[0, 0]]), _a([[1, 1]]))], 1.6 / 3),
    # tp 2, fp 1; then one more fp.
    "precision": (metrics.Precision, [
        (_a([0, 1, 1, 1]), _a([1, 0, 1, 1])), (_a([0, 0]), _a([0.7, 0.2]))], 2 / 4),
    # tp 2, fn 1; then tp 1, fn 1.
    "recall": (metrics.Recall, [
        (_a([0, 1, 1, 1]), _a([1, 0, 1, 1])), (_a([1, 1]), _a([0.7, 0.2]))], 3 / 5),
    # Scores of 2 positives exceed 3 of the 4 (positive, negative) pairs.
    "auc": (metrics.AUC, [
        (_a([0, 0]), _a([0.1, 0.4])), (_a([1, 1]), _a([0.35, 0.8]))], 0.75),
}


def _graph_update(metric, args):
    phs = [K.placeholder(a.dtype.name, (None,) + a.shape[1:]) for a in args]
    updates = metric.update_state(*phs)
    assert updates and all(K.is_symbolic(u) for u in updates)
    K.Function(phs, [], updates=updates)(*args)


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_batches_eager_and_graph(case):
    factory, batches, expected = CASES[case]
    eager, graph = factory(), factory()
    for args in batches:
        assert eager.update_state(*args) == []
        _graph_update(graph, args)
    assert eager.result() == pytest.approx(expected, rel=1e-5)
    assert graph.result() == pytest.approx(expected, rel=1e-5)
    assert isinstance(eager.result(), float)
    eager.reset_state()
    assert eager.result() == 0.0
    eager.update_state(*batches[0])
    fresh = factory()
    fresh.update_state(*batches[0])
    assert eager.result() == pytest.approx(fresh.result())


def test_symbolic_update_changes_nothing_until_run():
    m = metrics.Mean()
    x = K.placeholder("float32", (None,))
    updates = m.update_state(x)
    assert m.result() == 0.0
    f = K.Function([x], [], updates=updates)
    f(_a([2.0, 4.0]))
    f(_a([6.0]))
    assert m.result() == pytest.approx(4.0)


def test_mean_of_scalars_and_per_sample_reduction():
    m = metrics.Mean()
    m.update_state(3.0)
    m.update_state(_a([[1.0, 3.0]]))  # one sample whose mean is 2
    assert m.result() == pytest.approx(2.5)


def test_sum_adds_every_element():
    m = metrics.Sum()
    m.update_state(_a([[1.0, 2.0], [3.0, 4.0]]), sample_weight=_a([1.0, 2.0]))
    assert m.result() == pytest.approx(3.0 + 14.0)


def test_top_k_ties_count_as_in():
    ties = _a([[0.5, 0.5, 0.5, 0.1]])
    m = metrics.SparseTopKCategoricalAccuracy(k=1)
    m.update_state(np.array([2]), ties)
    assert m.result() == 1.0


def test_precision_recall_vector_thresholds_and_class_id():
    p = metrics.Precision(thresholds=[0.3, 0.75])
    p.update_state(_a([0, 1, 1]), _a([0.5, 0.8, 0.4]))
    np.testing.assert_allclose(p.result(), [2 / 3, 1.0])
    r = metrics.Recall(class_id=1)
    r.update_state(_a([[1, 1], [0, 1]]), _a([[0.9, 0.2], [0.1, 0.6]]))
    assert r.result() == pytest.approx(0.5)


def _rank_auc(y, s):
    pos, neg = s[y == 1], s[y == 0]
    gt = (pos[:, None] > neg[None, :]).mean()
    return gt + 0.5 * (pos[:, None] == neg[None, :]).mean()


@pytest.mark.parametrize("seed", [0, 1])
def test_auc_matches_rank_statistic_on_random_data(seed):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, 1000)
    s = np.clip(0.35 * y + 0.65 * rng.rand(1000), 0, 1).astype(F32)
    m = metrics.AUC()
    for i in range(0, 1000, 250):  # streaming over batches
        m.update_state(y[i:i + 250], s[i:i + 250])
    assert m.result() == pytest.approx(_rank_auc(y, s), abs=1e-2)
    logits = metrics.AUC(from_logits=True)
    logits.update_state(y, np.log(s + 1e-6) - np.log1p(-s + 1e-6))
    assert logits.result() == pytest.approx(m.result(), abs=1e-2)


def test_auc_pr_curve():
    perfect = metrics.AUC(curve="PR")
    perfect.update_state(_a([0, 0, 1, 1]), _a([0.1, 0.2, 0.8, 0.9]))
    assert perfect.result() == pytest.approx(1.0, abs=1e-6)
    rng = np.random.RandomState(2)
    y = rng.randint(0, 2, 2000)
    noise = metrics.AUC(curve="PR")
    noise.update_state(y, rng.rand(2000))  # uninformative scores: AUC = base rate
    assert noise.result() == pytest.approx(y.mean(), abs=3e-2)


def test_auc_sample_weight_equals_repetition():
    y, s = _a([0, 1, 1, 0]), _a([0.3, 0.6, 0.2, 0.1])
    weighted, repeated = metrics.AUC(), metrics.AUC()
    weighted.update_state(y, s, sample_weight=_a([1, 2, 1, 3]))
    repeated.update_state(np.repeat(y, [1, 2, 1, 3]), np.repeat(s, [1, 2, 1, 3]))
    assert weighted.result() == pytest.approx(repeated.result())


OBJECTS = [
    metrics.Mean(name="m"), metrics.Sum(), metrics.Accuracy(),
    metrics.BinaryAccuracy(threshold=0.3), metrics.CategoricalAccuracy(),
    metrics.SparseCategoricalAccuracy(), metrics.TopKCategoricalAccuracy(k=3),
    metrics.SparseTopKCategoricalAccuracy(k=2), metrics.MeanSquaredError(),
    metrics.MeanAbsoluteError(), metrics.RootMeanSquaredError(),
    metrics.AUC(num_thresholds=50, curve="PR", from_logits=True),
    metrics.Precision(thresholds=[0.2, 0.4]), metrics.Recall(class_id=1),
    metrics.MeanMetricWrapper(metrics.categorical_accuracy, name="ca"),
]


@pytest.mark.parametrize("metric", OBJECTS, ids=lambda m: type(m).__name__)
def test_config_round_trip(metric):
    config = metric.get_config()
    if type(metric) is not metrics.MeanMetricWrapper:
        assert type(metric)(**config).get_config() == config
    again = metrics.get(metrics.serialize(metric))
    assert type(again) is type(metric) and again.get_config() == config
    assert again is not metric


def test_get_by_name():
    expected = {
        "accuracy": metrics.Accuracy, "acc": metrics.Accuracy,
        "binary_accuracy": metrics.BinaryAccuracy,
        "categorical_accuracy": metrics.CategoricalAccuracy,
        "sparse_categorical_accuracy": metrics.SparseCategoricalAccuracy,
        "top_k_categorical_accuracy": metrics.TopKCategoricalAccuracy,
        "sparse_top_k_categorical_accuracy": metrics.SparseTopKCategoricalAccuracy,
        "mse": metrics.MeanSquaredError, "mae": metrics.MeanAbsoluteError,
        "rmse": metrics.RootMeanSquaredError,
        "root_mean_squared_error": metrics.RootMeanSquaredError,
        "auc": metrics.AUC, "precision": metrics.Precision,
        "recall": metrics.Recall, "AUC": metrics.AUC,
    }
    for name, cls in expected.items():
        m = metrics.get(name)
        assert type(m) is cls
        assert m.name == (name if name != "AUC" else "auc")
    assert metrics.get("mse") is not metrics.get("mse")  # fresh state each time
    bce = metrics.get("binary_crossentropy")
    assert isinstance(bce, metrics.MeanMetricWrapper) and bce.name == \
        "binary_crossentropy"
    bce.update_state(YT, YP)
    assert bce.result() == pytest.approx((-math.log(0.8) - math.log(0.6)) / 2,
                                         rel=1e-5)
    m = metrics.Mean()
    assert metrics.get(m) is m and metrics.get(None) is None
    assert isinstance(metrics.get(metrics.accuracy), metrics.MeanMetricWrapper)
    with pytest.raises(ValueError, match="Unknown metric identifier: 'acuracy'"):
        metrics.get("acuracy")
    with pytest.raises(TypeError, match="Could not interpret metric"):
        metrics.get(1.5)


def test_state_variables_are_non_trainable():
    m = metrics.AUC(num_thresholds=10)
    assert len(m.variables) == 4
    assert all(not v.trainable and v.shape == (10,) for v in m.variables)


# -- Keras 3 metrics, against Keras itself ------------------------------------------

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


KERAS_CASES = [
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


@pytest.mark.parametrize("name, kwargs, data", KERAS_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(KERAS_CASES)])
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


def test_keras3_metrics_hand_checked_values():
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


def test_keras3_metrics_lookup_by_name():
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


def test_sparse_top_k_from_sorted_ids_equals_keras():
    keras = keras_numpy()
    y_true = np.array([2, 1, 0, 3])
    ids = np.array([[2, 0, 1], [0, 2, 1], [1, 2, 0], [3, 1, 2]])
    for k in (1, 2, 3):
        ours = kf.metrics.SparseTopKCategoricalAccuracy(k=k, from_sorted_ids=True)
        theirs = keras.metrics.SparseTopKCategoricalAccuracy(k=k,
                                                             from_sorted_ids=True)
        ours.update_state(y_true, ids)
        theirs.update_state(y_true, ids)
        assert ours.result() == pytest.approx(float(theirs.result()))
    assert ours.result() == 1.0  # every label is within the 3 ids
    config = ours.get_config()
    assert config["from_sorted_ids"] is True
    assert type(ours).from_config(config).get_config() == config
