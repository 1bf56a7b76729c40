"""BinaryFocalCrossentropy, CategoricalFocalCrossentropy, Dice and Tversky
against Keras 3 (numpy backend) as the oracle; gradients checked numerically;
every loss's ``dtype=`` argument."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
PROBS = RNG.uniform(0.05, 0.95, (6, 4))
BINARY = (RNG.rand(6, 4) > 0.5).astype("float64")
ONE_HOT = np.eye(4)[RNG.randint(0, 4, 6)]
LOGITS = RNG.randn(6, 4) * 2
SOFT = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
WEIGHTS = RNG.uniform(0.5, 2.0, 6)


@pytest.mark.parametrize("name,kwargs,y_true,y_pred", [
    ("BinaryFocalCrossentropy", {}, BINARY, PROBS),
    ("BinaryFocalCrossentropy", {"gamma": 3.0, "apply_class_balancing": True,
                                 "alpha": 0.4}, BINARY, PROBS),
    ("BinaryFocalCrossentropy", {"from_logits": True, "label_smoothing": 0.1},
     BINARY, LOGITS),
    ("CategoricalFocalCrossentropy", {}, ONE_HOT, SOFT),
    ("CategoricalFocalCrossentropy", {"from_logits": True, "gamma": 1.0,
                                      "alpha": 0.5, "label_smoothing": 0.2},
     ONE_HOT, LOGITS),
    ("Dice", {}, BINARY, PROBS),
    ("Dice", {"axis": 1}, BINARY, PROBS),
    ("Tversky", {}, BINARY, PROBS),
    ("Tversky", {"alpha": 0.3, "beta": 0.7, "axis": 1}, BINARY, PROBS),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_loss_equals_keras(name, kwargs, y_true, y_pred, weighted):
    keras = keras_numpy()
    sw = WEIGHTS if weighted and kwargs.get("axis", -1) is not None else None
    ours = getattr(kf.losses, name)(**kwargs)(y_true, y_pred, sample_weight=sw)
    theirs = getattr(keras.losses, name)(**kwargs, dtype="float64")(
        y_true, y_pred, sample_weight=sw)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-6)
    config = getattr(kf.losses, name)(**kwargs).get_config()
    assert getattr(kf.losses, name).from_config(config).get_config() == config


@pytest.mark.parametrize("fn,y_true,y_pred", [
    (lambda t, p: kf.losses.binary_focal_crossentropy(t, p, gamma=2.0), BINARY,
     PROBS),
    (lambda t, p: kf.losses.binary_focal_crossentropy(
        t, p, from_logits=True, apply_class_balancing=True), BINARY, LOGITS),
    (lambda t, p: kf.losses.categorical_focal_crossentropy(t, p, from_logits=True),
     ONE_HOT, LOGITS),
    (lambda t, p: kf.losses.dice(t, p, axis=1), BINARY, PROBS),
    (lambda t, p: kf.losses.tversky(t, p, 0.3, 0.7), BINARY, PROBS),
])
def test_gradients_match_central_differences(float64, fn, y_true, y_pred):
    check_gradients(lambda p: fn(y_true, p), [y_pred])


def test_gamma_zero_focal_is_cross_entropy():
    np.testing.assert_allclose(
        kf.losses.binary_focal_crossentropy(BINARY, PROBS, gamma=0.0),
        kf.losses.binary_crossentropy(BINARY, PROBS), rtol=1e-6)
    np.testing.assert_allclose(
        kf.losses.categorical_focal_crossentropy(ONE_HOT, SOFT, gamma=0.0,
                                                 alpha=1.0),
        kf.losses.categorical_crossentropy(ONE_HOT, SOFT), rtol=1e-6)


def test_dice_of_a_perfect_prediction_is_zero():
    assert float(kf.losses.dice(BINARY, BINARY)) == pytest.approx(0.0, abs=1e-6)
    assert float(kf.losses.tversky(BINARY, BINARY)) == pytest.approx(0.0, abs=1e-6)


def test_every_loss_class_takes_dtype():
    for name in kf.losses.__all__:
        cls = getattr(kf.losses, name)
        if not isinstance(cls, type) or not issubclass(cls, kf.losses.Loss) or \
                cls in (kf.losses.Loss, kf.losses.LossFunctionWrapper):
            continue
        loss = cls(dtype="float64")
        assert loss.dtype == "float64" and loss.get_config()["dtype"] == "float64"
        assert cls.from_config(loss.get_config()).dtype == "float64"
    mse = kf.losses.MeanSquaredError(dtype="float64")
    out = mse(np.ones((2, 1), "float32"), np.full((2, 1), 1.5, "float32"))
    assert out.dtype == np.float64 and float(out) == 0.25
    assert kf.losses.MeanSquaredError().dtype == kf.backend.floatx()
    with pytest.raises(TypeError, match="float type.*int32"):
        kf.losses.MeanSquaredError(dtype="int32")
