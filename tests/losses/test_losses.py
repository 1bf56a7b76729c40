"""Losses: hand-computed values (eager and in a graph), reductions, fused paths,
finite and correct gradients, config round trips; ``Circle`` and
``CategoricalGeneralizedCrossEntropy`` against Keras 3 itself, with a float64
gradient check; the one-class warning of categorical losses."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import activations, losses
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

F32 = np.float32
YT = np.array([[0.0, 1.0], [1.0, 0.0]], F32)
YP = np.array([[0.2, 0.8], [0.6, 0.4]], F32)
L08, L06 = -math.log(0.8), -math.log(0.6)

# (function, y_true, y_pred, kwargs, expected per-sample values), all by hand.
CASES = {
    "mse": (losses.mse, YT, YP, {}, [0.04, 0.16]),
    "mae": (losses.mae, YT, YP, {}, [0.2, 0.4]),
    "mape": (losses.mape, [[1.0, 2.0], [4.0, 5.0]], [[2.0, 2.0], [3.0, 5.0]], {},
             [50.0, 12.5]),
    "msle": (losses.msle, [[1.0, 3.0]], [[3.0, 1.0]], {}, [math.log(2) ** 2]),
    "huber": (losses.huber, [[0.0, 0.0]], [[0.5, 2.0]], {}, [(0.125 + 1.5) / 2]),
    "huber_delta": (losses.huber, [[0.0, 0.0]], [[0.5, 2.0]], {"delta": 2.0},
                    [(0.125 + 2.0) / 2]),
    "log_cosh": (losses.log_cosh, [[0.0, 0.0]], [[1.0, -2.0]], {},
                 [(math.log(math.cosh(1)) + math.log(math.cosh(2))) / 2]),
    "bce": (losses.binary_crossentropy, YT, YP, {}, [L08, L06]),
    "bce_smooth": (losses.binary_crossentropy, [[1.0]], [[0.8]],
                   {"label_smoothing": 0.2},
                   [-(0.9 * math.log(0.8) + 0.1 * math.log(0.2))]),
    "cce": (losses.categorical_crossentropy, YT, YP, {}, [L08, L06]),
    "cce_smooth": (losses.categorical_crossentropy, [[0.0, 1.0]], [[0.2, 0.8]],
                   {"label_smoothing": 0.3},
                   [-(0.15 * math.log(0.2) + 0.85 * math.log(0.8))]),
    "cce_unnormalized": (losses.categorical_crossentropy, [[0.0, 1.0]],
                         [[0.4, 1.6]], {}, [L08]),
    "scce": (losses.sparse_categorical_crossentropy, [1, 0], YP, {}, [L08, L06]),
    "kld": (losses.kld, [[0.5, 0.5]], [[0.25, 0.75]], {},
            [0.5 * math.log(2) + 0.5 * math.log(2 / 3)]),
    "poisson": (losses.poisson, [[1.0, 2.0]], [[1.0, 4.0]], {},
                [(1.0 + 4.0 - 2 * math.log(4.0)) / 2]),
    "hinge01": (losses.hinge, [[0.0, 1.0]], [[0.3, 0.4]], {}, [(1.3 + 0.6) / 2]),
    "hinge_pm1": (losses.hinge, [[-1.0, 1.0]], [[0.3, 0.4]], {}, [(1.3 + 0.6) / 2]),
    "squared_hinge": (losses.squared_hinge, [[0.0, 1.0]], [[0.3, 0.4]], {},
                      [(1.69 + 0.36) / 2]),
    "categorical_hinge": (losses.categorical_hinge, [[0.0, 1.0, 0.0]],
                          [[0.2, 0.5, 0.3]], {}, [0.8]),
    "cosine": (losses.cosine_similarity, [[1.0, 0.0], [0.0, 1.0]],
               [[1.0, 1.0], [1.0, 0.0]], {}, [-1 / math.sqrt(2), 0.0]),
}


def _run_graph(fn, *arrays):
    phs = [K.placeholder(a.dtype.name, (None,) + a.shape[1:]) for a in arrays]
    return K.Function(phs, fn(*phs))(*arrays)


@pytest.mark.parametrize("case", sorted(CASES))
def test_loss_function_values_eager_and_graph(case):
    fn, yt, yp, kw, expected = CASES[case]
    yt = np.asarray(yt, np.int64 if case == "scce" else F32)
    yp = np.asarray(yp, F32)
    eager = fn(yt, yp, **kw)
    graph = _run_graph(lambda a, b: fn(a, b, **kw), yt, yp)
    np.testing.assert_allclose(eager, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(graph, expected, rtol=1e-5, atol=1e-6)
    assert eager.shape == (len(expected),)


def test_loss_objects_reduce_with_sample_weight():
    sw = np.array([1.0, 3.0], F32)  # per-sample mse: [0.04, 0.16]
    assert losses.MeanSquaredError()(YT, YP) == pytest.approx(0.1)
    assert losses.MeanSquaredError()(YT, YP, sw) == pytest.approx(0.52 / 2)
    assert losses.MeanSquaredError(reduction="sum")(YT, YP, sw) == pytest.approx(0.52)
    np.testing.assert_allclose(
        losses.MeanSquaredError(reduction="none")(YT, YP, sw), [0.04, 0.48], 1e-6)
    mws = losses.MeanSquaredError(reduction="mean_with_sample_weight")
    assert mws(YT, YP, sw) == pytest.approx(0.52 / 4)
    # (batch, 1) weights and a scalar weight broadcast the same way.
    assert losses.MeanSquaredError()(YT, YP, sw[:, None]) == pytest.approx(0.26)
    assert losses.MeanSquaredError()(YT, YP, 2.0) == pytest.approx(0.2)


def test_loss_object_in_graph_matches_eager():
    loss = losses.BinaryCrossentropy()
    sw = np.array([1.0, 0.0], F32)
    graph = _run_graph(lambda a, b, w: loss(a, b, sample_weight=w), YT, YP, sw)
    assert graph == pytest.approx(L08 / 2, rel=1e-5)
    assert loss(YT, YP, sw) == pytest.approx(L08 / 2, rel=1e-5)


def test_rank1_targets_expand_against_column_predictions():
    # (batch,) labels with (batch, 1) predictions: per-sample, not (batch, batch).
    out = losses.binary_crossentropy(np.array([1.0, 0.0], F32),
                                     np.array([[0.8], [0.4]], F32))
    np.testing.assert_allclose(out, [L08, L06], rtol=1e-5)


@pytest.mark.parametrize("labels", [
    np.array([1, 0]), np.array([[1], [0]]), np.array([1.0, 0.0], F32),
    np.array([[1.0], [0.0]], F32), np.array([1, 0], np.int32)])
def test_sparse_labels_any_shape_and_dtype(labels):
    np.testing.assert_allclose(losses.sparse_categorical_crossentropy(labels, YP),
                               [L08, L06], rtol=1e-5)
    assert losses.SparseCategoricalCrossentropy()(labels, YP) == pytest.approx(
        (L08 + L06) / 2, rel=1e-5)


def test_sparse_ignore_class_masks_and_rescales():
    labels = np.array([1, 0, 0])
    yp = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]], F32)
    per = losses.sparse_categorical_crossentropy(labels, yp, ignore_class=0)
    np.testing.assert_allclose(per, [L08, 0.0, 0.0], rtol=1e-5)
    # Only the one valid sample counts in the mean.
    loss = losses.SparseCategoricalCrossentropy(ignore_class=0)
    assert loss(labels, yp) == pytest.approx(L08, rel=1e-5)


def test_sparse_labels_out_of_range_raise():
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        losses.sparse_categorical_crossentropy(np.array([2, 0]), YP)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_from_logits_agrees_with_probabilities():
    rng = np.random.RandomState(0)
    z = rng.normal(size=(6, 4)).astype(F32)
    onehot = np.eye(4, dtype=F32)[rng.randint(0, 4, 6)]
    p = _softmax(z)
    np.testing.assert_allclose(
        losses.categorical_crossentropy(onehot, z, from_logits=True),
        losses.categorical_crossentropy(onehot, p), rtol=1e-4)
    np.testing.assert_allclose(
        losses.sparse_categorical_crossentropy(onehot.argmax(1), z, from_logits=True),
        losses.sparse_categorical_crossentropy(onehot.argmax(1), p), rtol=1e-4)
    yb = (rng.rand(6, 4) > 0.5).astype(F32)
    np.testing.assert_allclose(
        losses.binary_crossentropy(yb, z, from_logits=True),
        losses.binary_crossentropy(yb, 1 / (1 + np.exp(-z))), rtol=1e-4)
    for cls, y in ((losses.CategoricalCrossentropy, onehot),
                   (losses.SparseCategoricalCrossentropy, onehot.argmax(1))):
        assert cls(from_logits=True)(y, z) == pytest.approx(cls()(y, p), rel=1e-4)


def _symbolic_pair(kind):
    x = K.placeholder("float32", (None, 2))
    y = K.placeholder("int64" if kind == "sparse" else "float32",
                      (None,) if kind == "sparse" else (None, 2))
    act = activations.sigmoid if kind == "binary" else activations.softmax
    return x, y, act(x)


@pytest.mark.parametrize("kind,fn", [
    ("categorical", losses.categorical_crossentropy),
    ("sparse", losses.sparse_categorical_crossentropy),
    ("binary", losses.binary_crossentropy)])
def test_keras_logits_path_is_fused_and_matches_explicit_logits(kind, fn):
    # Logits of 2000 saturate the probabilities: only the fused path on the
    # recorded logits gives the exact loss (clipping would cap it near 16.1).
    z = np.array([[0.0, 2000.0], [3.0, 1.0]], F32)
    y = np.array([0, 0]) if kind == "sparse" else np.array([[1, 0], [1, 0]], F32)
    x, y_ph, out = _symbolic_pair(kind)
    via_activation = K.Function([y_ph, x], fn(y_ph, out))(y, z)
    explicit = K.Function([y_ph, x], fn(y_ph, x, from_logits=True))(y, z)
    np.testing.assert_allclose(via_activation, explicit, rtol=1e-6)
    assert via_activation[0] > 900.0


@pytest.mark.parametrize("kind,fn,probs", [
    ("categorical", losses.binary_crossentropy, lambda z: _softmax(z)),
    ("binary", losses.categorical_crossentropy, lambda z: 1 / (1 + np.exp(-z)))])
def test_logits_of_the_other_activation_are_not_used(kind, fn, probs):
    # Softmax logits in a sigmoid cross-entropy (or the reverse) would give a
    # wrong value: the loss must use the probabilities.
    z = np.array([[0.0, 1.0]], F32)
    y = np.array([[0.0, 1.0]], F32)
    x, y_ph, out = _symbolic_pair(kind)
    got = K.Function([y_ph, x], fn(y_ph, out))(y, z)
    np.testing.assert_allclose(got, fn(y, probs(z)), rtol=1e-5)


@pytest.mark.parametrize("kind,fn", [
    ("categorical", losses.CategoricalCrossentropy()),
    ("sparse", losses.SparseCategoricalCrossentropy()),
    ("binary", losses.BinaryCrossentropy())])
def test_gradients_finite_for_extreme_logits(kind, fn):
    z = np.array([[1e4, -1e4], [-500.0, 500.0]], F32)
    y = np.array([1, 0]) if kind == "sparse" else np.array([[0, 1], [1, 0]], F32)
    x, y_ph, out = _symbolic_pair(kind)
    for value in (fn(y_ph, out), type(fn)(from_logits=True)(y_ph, x)):
        g = K.Function([y_ph, x], K.gradients(value, [x])[0])(y, z)
        assert np.all(np.isfinite(g)) and np.abs(g).max() > 0.1
    # Saturated probabilities fed directly stay finite through the clip.
    p = K.placeholder("float32", (None, 2))
    g = K.Function([y_ph, p], K.gradients(fn(y_ph, p), [p])[0])(
        y, np.array([[1.0, 0.0], [0.0, 1.0]], F32))
    assert np.all(np.isfinite(g))


GRAD_CASES = [
    (losses.mse, "real"), (losses.mae, "real"), (losses.mape, "real"),
    (losses.msle, "prob"), (losses.huber, "real"), (losses.log_cosh, "real"),
    (losses.binary_crossentropy, "prob"), (losses.categorical_crossentropy, "prob"),
    (losses.kld, "prob"), (losses.poisson, "prob"), (losses.hinge, "real"),
    (losses.squared_hinge, "real"), (losses.categorical_hinge, "prob"),
    (losses.cosine_similarity, "real"),
]


@pytest.mark.parametrize("fn,kind", GRAD_CASES, ids=lambda v: getattr(v, "__name__",
                                                                        v))
def test_gradient_matches_central_differences(fn, kind, float64):
    rng = np.random.RandomState(1)
    yp = rng.uniform(0.1, 0.9, (3, 4))
    yt = np.eye(4)[[0, 2, 3]] if kind == "prob" else rng.uniform(-0.4, 0.4, (3, 4))
    if fn in (losses.hinge, losses.squared_hinge):
        yt = np.sign(rng.uniform(-1, 1, (3, 4)))
    y_ph, p_ph = K.placeholder("float64", (3, 4)), K.placeholder("float64", (3, 4))
    w = rng.normal(size=3)
    total = K.sum(fn(y_ph, p_ph) * w)
    f = K.Function([y_ph, p_ph], [total, K.gradients(total, [p_ph])[0]])
    _, analytic = f(yt, yp)
    numeric = np.zeros_like(yp)
    for idx in np.ndindex(yp.shape):
        d = np.zeros_like(yp)
        d[idx] = 1e-6
        numeric[idx] = (f(yt, yp + d)[0] - f(yt, yp - d)[0]) / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


CLASSES = [
    losses.MeanSquaredError(), losses.MeanAbsoluteError(reduction="sum"),
    losses.MeanAbsolutePercentageError(), losses.MeanSquaredLogarithmicError(),
    losses.Huber(delta=2.5), losses.LogCosh(name="lc"),
    losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1),
    losses.CategoricalCrossentropy(label_smoothing=0.2, axis=-1),
    losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=3),
    losses.KLDivergence(), losses.Poisson(), losses.Hinge(), losses.SquaredHinge(),
    losses.CategoricalHinge(), losses.CosineSimilarity(axis=1),
]


@pytest.mark.parametrize("loss", CLASSES, ids=lambda loss: type(loss).__name__)
def test_config_round_trip(loss):
    config = loss.get_config()
    assert type(loss)(**config).get_config() == config
    again = losses.get(losses.serialize(loss))
    assert type(again) is type(loss) and again.get_config() == config


def test_get_names_functions_and_errors():
    assert losses.get("mse") is losses.mean_squared_error
    assert losses.get("kld") is losses.kl_divergence
    assert losses.serialize(losses.get("mae")) == "mean_absolute_error"
    assert isinstance(losses.get("Huber"), losses.Huber)
    assert losses.get(None) is None
    def custom(y, p):
        return p

    assert losses.get(custom) is custom
    for name in ("mse", "mean_squared_error", "mae", "mean_absolute_error", "mape",
                 "msle", "huber", "binary_crossentropy", "categorical_crossentropy",
                 "sparse_categorical_crossentropy", "kl_divergence", "kld", "hinge",
                 "squared_hinge", "categorical_hinge", "log_cosh", "poisson",
                 "cosine_similarity"):
        assert callable(losses.get(name))
    with pytest.raises(ValueError, match="Unknown loss identifier: 'msee'.*mse"):
        losses.get("msee")
    with pytest.raises(TypeError, match="Could not interpret loss"):
        losses.get(3)
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="avg")


def test_function_wrapper_config_round_trip():
    loss = losses.LossFunctionWrapper(losses.huber, name="h", delta=0.5)
    again = losses.deserialize(losses.serialize(loss))
    assert again.fn is losses.huber and again.get_config() == loss.get_config()
    assert again(YT, YP) == pytest.approx(loss(YT, YP))


def test_custom_function_round_trips_through_custom_objects():
    def cube(y_true, y_pred):
        return K.mean((y_pred - y_true) ** 3, axis=-1)

    config = losses.serialize(losses.LossFunctionWrapper(cube))
    with pytest.raises(ValueError, match="Unknown loss identifier: 'cube'"):
        losses.deserialize(config)
    again = losses.deserialize(config, custom_objects={"cube": cube})
    assert again.fn is cube
    assert again(np.zeros((2, 1), F32), np.full((2, 1), 2.0, F32)) == 8.0


@pytest.mark.parametrize("cls", [losses.BinaryCrossentropy,
                                 losses.CategoricalCrossentropy])
def test_crossentropy_shape_mismatch_raises_eagerly_and_symbolically(cls):
    # (3, 1) targets against (3, 3) outputs would silently broadcast to (3, 3).
    y_true = np.array([[1.0], [0.0], [1.0]])
    y_pred = np.full((3, 3), 1.0 / 3.0)
    with pytest.raises(ValueError, match=r"must have the same shape.*"
                       r"target\.shape=\(3, 1\), output\.shape=\(3, 3\)"):
        cls()(y_true, y_pred)
    t = K.placeholder("float32", (None, 1))
    p = K.placeholder("float32", (None, 3))
    with pytest.raises(ValueError, match="must have the same shape"):
        cls()(t, p)
    # Rank-1 targets against (batch, 1) outputs stay accepted.
    bce = losses.BinaryCrossentropy()(np.array([1.0, 0.0]), np.array([[0.5], [0.5]]))
    assert float(bce) == pytest.approx(np.log(2.0), rel=1e-6)


# -- Circle and CategoricalGeneralizedCrossEntropy, against Keras 3 -----------------

RNG = np.random.default_rng(0)
EMB = RNG.normal(size=(8, 5)).astype("float32")
EMB /= np.linalg.norm(EMB, axis=1, keepdims=True)
LABELS = RNG.integers(0, 3, 8)
PROBS = RNG.random((6, 4)).astype("float32")
PROBS /= PROBS.sum(1, keepdims=True)
TARGETS = RNG.integers(0, 4, 6)


@pytest.mark.parametrize("kwargs", [{}, {"gamma": 10.0, "margin": 0.2,
                                         "remove_diagonal": False}])
def test_circle_equals_keras(kwargs):
    keras = keras_numpy()
    fn_kwargs = {k: v for k, v in kwargs.items()}
    np.testing.assert_allclose(losses.circle(LABELS, EMB, **fn_kwargs),
                               keras.losses.circle(LABELS, EMB, **fn_kwargs),
                               rtol=1e-5)
    np.testing.assert_allclose(float(losses.Circle(**kwargs)(LABELS, EMB)),
                               float(keras.losses.Circle(**kwargs)(LABELS, EMB)),
                               rtol=1e-5)
    ref = RNG.normal(size=(5, 5)).astype("float32")
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    ref_labels = RNG.integers(0, 3, 5)
    np.testing.assert_allclose(
        losses.circle(LABELS, EMB, ref_labels, ref, remove_diagonal=False),
        keras.losses.circle(LABELS, EMB, ref_labels, ref, remove_diagonal=False),
        rtol=1e-5)
    config = losses.Circle(**kwargs).get_config()
    assert {k: v for k, v in config.items() if k != "dtype"} == \
        keras.losses.Circle(**kwargs).get_config()
    assert losses.deserialize(losses.serialize(losses.Circle(**kwargs))
                              ).get_config() == config


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_generalized_cross_entropy_equals_keras(q):
    keras = keras_numpy()
    np.testing.assert_allclose(
        losses.categorical_generalized_cross_entropy(TARGETS, PROBS, q),
        keras.losses.categorical_generalized_cross_entropy(TARGETS, PROBS, q),
        rtol=1e-5)
    ours = losses.CategoricalGeneralizedCrossEntropy(q)
    theirs = keras.losses.CategoricalGeneralizedCrossEntropy(q)
    sw = RNG.random(6).astype("float32")
    np.testing.assert_allclose(float(ours(TARGETS, PROBS, sw)),
                               float(theirs(TARGETS, PROBS, sw)), rtol=1e-5)
    assert {k: v for k, v in ours.get_config().items() if k != "dtype"} == \
        theirs.get_config()


def test_generalized_cross_entropy_gradient(float64):
    check_gradients(lambda p: losses.categorical_generalized_cross_entropy(
        TARGETS, p, 0.6), [PROBS.astype("float64")])


def test_generalized_cross_entropy_bad_q_and_lookup():
    with pytest.raises(ValueError, match=r"q must be in the interval \(0, 1\). "
                                         r"Received: q=1.5"):
        losses.CategoricalGeneralizedCrossEntropy(1.5)
    assert isinstance(losses.get("Circle"), losses.Circle)
    assert losses.get("circle") is losses.circle


def test_generalized_cross_entropy_trains_a_model():
    x = RNG.random((32, 4)).astype("float32")
    y = x.argmax(1)
    model = kf.Sequential([kf.layers.Dense(4, activation="softmax",
                                           input_shape=(4,))])
    model.compile(kf.optimizers.SGD(0.5),
                  losses.CategoricalGeneralizedCrossEntropy(0.5))
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_categorical_losses_warn_on_one_class():
    with pytest.warns(SyntaxWarning, match="num_classes > 1"):
        kf.losses.categorical_crossentropy(np.ones((3, 1)), np.ones((3, 1)))
    with pytest.warns(SyntaxWarning, match="categorical_focal_crossentropy"):
        kf.losses.categorical_focal_crossentropy(np.ones((3, 1)), np.ones((3, 1)))


def test_tf2_reduction_names():
    # TF 2's tf.keras.losses.Reduction, as its custom-training tutorial passes it.
    R = losses.Reduction
    assert (R.NONE, R.SUM, R.SUM_OVER_BATCH_SIZE, R.AUTO) == (
        "none", "sum", "sum_over_batch_size", "auto")
    yt, yp = np.zeros((2, 1), F32), np.array([[1.0], [3.0]], F32)
    mse = losses.MeanSquaredError
    np.testing.assert_allclose(mse(reduction=R.NONE)(yt, yp), [1.0, 9.0])
    assert float(mse(reduction=R.SUM)(yt, yp)) == 10.0
    assert float(mse(reduction=R.SUM_OVER_BATCH_SIZE)(yt, yp)) == 5.0
    assert float(mse(reduction=R.AUTO)(yt, yp)) == 5.0
    assert kf.losses.Reduction is R
    R.validate(R.SUM)
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        R.validate("max")


@pytest.mark.parametrize("getter,name,suggested", [
    ("losses", "sparse_categorical_crossentropi", "sparse_categorical_crossentropy"),
    ("metrics", "acuracy", "accuracy"), ("optimizers", "adamm", "adam"),
    ("activations", "rellu", "relu")])
def test_misspelled_names_get_a_did_you_mean(getter, name, suggested):
    """difflib's closest names instead of a list of every known name."""
    with pytest.raises(ValueError, match=f"Did you mean '{suggested}'") as info:
        getattr(kf, getter).get(name)
    assert len(str(info.value)) < 250, str(info.value)


def test_one_hot_labels_with_a_sparse_loss_say_what_to_use():
    model = kf.Sequential([kf.Input((4,)), kf.layers.Dense(3)])
    model.compile("sgd", "sparse_categorical_crossentropy")
    x = np.ones((6, 4), "float32")
    with pytest.raises(ValueError, match=r"use categorical_crossentropy .*or "
                                         r"integer class labels") as info:
        model.fit(x, np.eye(3)[[0, 1, 2, 0, 1, 2]], verbose=0)
    assert "SparseSoftmaxCrossEntropyWithLogits" not in str(info.value)
    with pytest.raises(ValueError, match="one-hot labels"):
        losses.sparse_categorical_crossentropy(np.eye(3), np.full((3, 3), 1 / 3))


def test_string_labels_point_at_string_lookup():
    model = kf.Sequential([kf.Input((4,)), kf.layers.Dense(3)])
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(TypeError, match="StringLookup"):
        model.fit(np.ones((4, 4), "float32"), np.array(["a", "b", "a", "c"]),
                  verbose=0)
