"""GroupNormalization, UnitNormalization, RMSNormalization: Keras 3 as the
oracle, hand-checkable values, float64 gradients, contract, errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)


def _same_as_keras(cls, kw, x, seed=1):
    keras = keras_numpy()
    ours, theirs = getattr(L, cls)(**kw), getattr(keras.layers, cls)(**kw)
    ours(x)
    theirs(x)
    rng = np.random.RandomState(seed)
    weights = [(w + rng.randn(*w.shape) * 0.3).astype(w.dtype)
               for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    got = ours(x)
    np.testing.assert_allclose(got, np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    return got


@pytest.mark.parametrize("kw,shape", [
    ({"groups": 2}, (2, 3, 4, 6)),
    ({"groups": -1}, (2, 3, 4, 6)),
    ({"groups": 1, "center": False}, (2, 5, 6)),
    ({"groups": 3, "axis": 1}, (2, 6, 3, 4)),
    ({"groups": 2, "scale": False, "epsilon": 0.1}, (3, 4)),
])
def test_group_normalization_matches_keras(kw, shape):
    _same_as_keras("GroupNormalization", kw, RNG.randn(*shape).astype("float32"))


def test_group_normalization_statistics_per_group():
    x = RNG.randn(2, 5, 4).astype("float32") * 3 + 1
    y = L.GroupNormalization(groups=2, epsilon=0.0, name="gn_stats")(x)
    groups = y.reshape(2, 5, 2, 2)
    np.testing.assert_allclose(groups.mean(axis=(1, 3)), 0.0, atol=1e-5)
    np.testing.assert_allclose(groups.var(axis=(1, 3)), 1.0, rtol=1e-4)


@pytest.mark.parametrize("kw", [{}, {"axis": [1, 2]}, {"axis": 1}])
def test_unit_normalization_matches_keras(kw):
    y = _same_as_keras("UnitNormalization", kw,
                       RNG.randn(2, 3, 4).astype("float32"))
    axes = tuple(kw.get("axis", [-1])) if isinstance(kw.get("axis", -1), list) \
        else kw.get("axis", -1)
    np.testing.assert_allclose(np.sqrt((y ** 2).sum(axis=axes)), 1.0, rtol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"axis": [2, 3], "epsilon": 1e-3},
                                {"axis": -1, "epsilon": 0.5}])
def test_rms_normalization_matches_keras(kw):
    _same_as_keras("RMSNormalization", kw, RNG.randn(2, 3, 4, 5).astype("float32"))


def test_rms_normalization_by_hand():
    x = np.array([[3.0, 4.0]], "float32")  # mean square 12.5
    y = L.RMSNormalization(epsilon=0.0, name="rms_hand")(x)
    np.testing.assert_allclose(y, x / np.sqrt(12.5), rtol=1e-6)


def test_gradients(float64):
    rng = np.random.RandomState(3)
    x = rng.randn(2, 3, 4)

    def group(xt, gamma, beta):
        layer = L.GroupNormalization(groups=2, dtype="float64")
        layer.build(xt.shape)
        layer.gamma, layer.beta = gamma, beta
        return layer.call(xt)

    def rms(xt, scale):
        layer = L.RMSNormalization(axis=[1, 2], dtype="float64")
        layer.build(xt.shape)
        layer.scale = scale
        return layer.call(xt)

    check_gradients(group, [x, rng.randn(4) + 2, rng.randn(4)])
    check_gradients(rms, [x, rng.randn(3, 4) + 2])
    check_gradients(lambda xt: L.UnitNormalization(axis=[1, 2],
                                                   dtype="float64").call(xt), [x])


@pytest.mark.parametrize("make,shape", [
    (lambda: L.GroupNormalization(groups=2), (4, 3, 4)),
    (lambda: L.UnitNormalization(), (4, 5)),
    (lambda: L.RMSNormalization(axis=[1, 2]), (4, 3, 2)),
])
def test_contract(make, shape, tmp_path):
    check_contract(make, shape, shape, tmp_path)


def test_errors():
    with pytest.raises(ValueError, match="groups"):
        L.GroupNormalization(groups=0)
    with pytest.raises(ValueError, match="divides the number of channels"):
        L.GroupNormalization(groups=4, name="gn_err")(np.ones((2, 6), "float32"))
    with pytest.raises(TypeError, match="axis"):
        L.UnitNormalization(axis="last")
    with pytest.raises(ValueError, match="out of bounds"):
        L.RMSNormalization(axis=3, name="rms_err")(np.ones((2, 6), "float32"))
