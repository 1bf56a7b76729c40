"""Normalization layers. BatchNormalization and LayerNormalization: formulas,
moving statistics through fit, gradients (float64), contract.
GroupNormalization, UnitNormalization, RMSNormalization: Keras 3 as the
oracle, hand-checkable values, float64 gradients, contract, errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract, sample

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from kerasflow.layers.base import collect_updates
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)

CASES = [
    (lambda: L.BatchNormalization(), (4, 5), (4, 5)),
    (lambda: L.BatchNormalization(momentum=0.5, center=False), (4, 3, 3, 2),
     (4, 3, 3, 2)),
    (lambda: L.BatchNormalization(axis=1, scale=False), (4, 3, 2), (4, 3, 2)),
    (lambda: L.LayerNormalization(), (4, 5), (4, 5)),
    (lambda: L.LayerNormalization(axis=[1, 2], epsilon=1e-5), (4, 3, 2), (4, 3, 2)),
]


@pytest.mark.parametrize("make,in_shape,out_shape", CASES)
def test_contract(make, in_shape, out_shape, tmp_path):
    check_contract(make, in_shape, out_shape, tmp_path)


def _bn_ref(x, mean, var, gamma, beta, eps):
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def test_batchnorm_inference_uses_the_moving_statistics():
    bn = L.BatchNormalization(epsilon=1e-3)
    bn(K.placeholder("float32", (None, 3)))
    rng = np.random.RandomState(0)
    mm, mv = rng.randn(3), rng.rand(3) + 0.5
    gamma, beta = rng.randn(3), rng.randn(3)
    bn.set_weights([gamma, beta, mm, mv])
    x = sample((5, 3))
    np.testing.assert_allclose(bn(x, training=False),
                               _bn_ref(x, mm, mv, gamma, beta, 1e-3), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(bn(x), bn(x, training=False))  # inference default


def test_batchnorm_training_uses_batch_stats_and_updates_moving_ones():
    bn = L.BatchNormalization(momentum=0.9)
    x = sample((8, 2, 2, 3)) * 2 + 1
    y = bn(x, training=True)  # eager call in training mode: runs the updates
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(y, _bn_ref(x, mean, var, 1, 0, 1e-3), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * var,
                               rtol=1e-5)


def test_collect_updates_sees_batchnorm_updates_only_in_training():
    bn = L.BatchNormalization()
    x = K.placeholder("float32", (None, 4))
    with collect_updates() as ups:
        bn(x, training=True)
    assert len(ups) == 2
    with collect_updates() as ups:
        bn(x, training=False)
    assert ups == []
    frozen = L.BatchNormalization(trainable=False)
    with collect_updates() as ups:
        frozen(x, training=True)
    assert ups == []


def test_fit_updates_moving_statistics():
    np.random.seed(0)
    model = kf.Sequential([L.BatchNormalization(momentum=0.5, input_shape=(3,)),
                           L.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = (np.random.randn(64, 3) * 3 + 5).astype("float32")
    model.fit(x, np.zeros((64, 1), "float32"), batch_size=64, epochs=12, verbose=0)
    bn = model.layers[0]
    np.testing.assert_allclose(bn.moving_mean.numpy(), x.mean(0), rtol=1e-3)
    np.testing.assert_allclose(bn.moving_variance.numpy(), x.var(0), rtol=1e-2)
    # evaluate/predict do not move them
    before = bn.moving_mean.numpy().copy()
    model.predict(x, verbose=0)
    model.evaluate(x, np.zeros((64, 1), "float32"), verbose=0)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)


@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_gradients(float64, training):
    rng = np.random.RandomState(0)
    x = rng.randn(6, 2, 3)

    def fn(xt, gamma, beta):
        bn = L.BatchNormalization(dtype="float64", moving_mean_initializer="ones",
                                  moving_variance_initializer="ones")
        bn.build(xt.shape)
        bn.gamma, bn.beta = gamma, beta
        return bn.call(xt, training=training)

    check_gradients(fn, [x, rng.randn(3) + 2, rng.randn(3)])


def test_layernorm_formula_and_gradients(float64):
    rng = np.random.RandomState(1)
    x = rng.randn(4, 3, 5)
    ln = L.LayerNormalization(dtype="float64", epsilon=1e-3)
    y = ln(x)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-6,
                               atol=1e-8)

    def fn(xt, gamma, beta):
        layer = L.LayerNormalization(axis=[1, 2], dtype="float64")
        layer.build(xt.shape)
        layer.gamma, layer.beta = gamma, beta
        return layer.call(xt)

    check_gradients(fn, [x, rng.randn(3, 5), rng.randn(3, 5)])


def test_normalization_errors():
    with pytest.raises(ValueError, match="synchronized"):
        L.BatchNormalization(synchronized=True)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        L.BatchNormalization(axis=3)(K.placeholder("float32", (None, 4)))
    bn = L.BatchNormalization()
    bn(K.placeholder("float32", (None, 4)))
    with pytest.raises(ValueError, match="expected axis 1 of input shape to have "
                                         "value 4"):
        bn(K.placeholder("float32", (None, 5)))


@pytest.mark.parametrize("shape,axes", [((6, 2, 3), (0, 1)), ((4, 3, 5), (0, 2)),
                                        ((5, 4), (0,))])
def test_fused_batch_norm_op(float64, shape, axes):
    rng = np.random.RandomState(3)
    x = rng.randn(*shape) * 2 + 1
    pshape = tuple(d for a, d in enumerate(shape) if a not in axes)
    gamma, beta = rng.randn(*pshape) + 2, rng.randn(*pshape)
    y, mean, var = K.fused_batch_norm(x, gamma, beta, axes, 1e-3)
    keep = tuple(1 if a in axes else d for a, d in enumerate(shape))
    ref_m, ref_v = x.mean(axis=axes), x.var(axis=axes)
    np.testing.assert_allclose(mean, ref_m, rtol=1e-12)
    np.testing.assert_allclose(var, ref_v, rtol=1e-12)
    np.testing.assert_allclose(
        y, gamma.reshape(keep) * (x - ref_m.reshape(keep)) /
        np.sqrt(ref_v.reshape(keep) + 1e-3) + beta.reshape(keep), rtol=1e-10)
    check_gradients(lambda a, g, b: K.fused_batch_norm(a, g, b, axes, 1e-3)[0],
                    [x, gamma, beta])


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


def test_group_normalization_mixed_float16_matches_keras(mixed_float16):
    keras = mixed_float16
    # |x| up to ~1e3: x**2 overflows float16 (max 65504), so float16
    # statistics would be inf; the layer takes them in float32, as Keras.
    x = (RNG.randn(2, 3, 4, 6) * 300 + 50).astype("float32")
    ours = L.GroupNormalization(groups=2, name="gn_mixed")
    theirs = keras.layers.GroupNormalization(groups=2)
    ours(x)
    theirs(x)
    assert (ours.dtype, ours.compute_dtype) == (theirs.dtype, theirs.compute_dtype) \
        == ("float32", "float16")
    assert [w.dtype for w in ours.weights] == [np.float32, np.float32]
    weights = [(w + RNG.randn(*w.shape) * 0.3).astype(w.dtype)
               for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    got, want = ours(x), np.asarray(theirs(x))
    assert got.dtype == want.dtype == np.float16
    assert np.isfinite(got).all()
    # One float16 rounding of results of magnitude < 4: within 2 ulps (2e-3).
    np.testing.assert_allclose(got.astype("float32"), want.astype("float32"),
                               rtol=0, atol=4e-3)
    # The float32 layer on the same float16-rounded input, rounded once.
    ref = L.GroupNormalization(groups=2, dtype="float32", name="gn_ref")
    ref(x)
    ref.set_weights(weights)
    np.testing.assert_allclose(got, ref(x.astype("float16").astype("float32")),
                               rtol=1e-3, atol=2e-3)
    assert ours.get_config()["dtype"] == "mixed_float16"
    # A symbolic float32 input is cast to float16 on the way in.
    assert ours(K.placeholder("float32", (None, 3, 4, 6))).dtype == np.float16


def _gn_model(dtype=None):
    return kf.Sequential([L.InputLayer(shape=(3, 4, 6)),
                          L.GroupNormalization(groups=2, dtype=dtype),
                          L.Flatten(), L.Dense(1, dtype=dtype)])


def test_group_normalization_mixed_float16_trains_one_step(mixed_float16):
    x = (RNG.randn(8, 3, 4, 6) * 3 + 1).astype("float32")
    y = RNG.randn(8, 1).astype("float32")
    mixed, full = _gn_model(), _gn_model(dtype="float32")
    assert mixed.layers[0].compute_dtype == "float16"
    full.set_weights(mixed.get_weights())
    before = mixed.get_weights()
    for model in (mixed, full):
        # One unscaled step each: loss scaling (compile's auto_scale_loss)
        # would start at 2**15, where these float16 gradients overflow.
        model.compile(optimizer=kf.optimizers.SGD(0.1), loss="mse",
                      auto_scale_loss=False)
    loss_mixed = mixed.train_on_batch(x, y)
    loss_full = full.train_on_batch(x, y)
    np.testing.assert_allclose(loss_mixed, loss_full, rtol=1e-2)
    for b, m, f in zip(before, mixed.get_weights(), full.get_weights()):
        assert m.dtype == np.float32  # the float32 weights took the update
        # The same step as in float32, up to float16 rounding of the
        # activations and gradients.
        np.testing.assert_allclose(m - b, f - b, rtol=2e-2, atol=2e-3)
    assert any(not np.allclose(b, m) for b, m in zip(before, mixed.get_weights()))
    assert mixed.predict(x, verbose=0).dtype == np.float16


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


def test_group_unit_rms_gradients(float64):
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
def test_group_unit_rms_contract(make, shape, tmp_path):
    check_contract(make, shape, shape, tmp_path)


def test_group_unit_rms_errors():
    with pytest.raises(ValueError, match="groups"):
        L.GroupNormalization(groups=0)
    with pytest.raises(ValueError, match="divides the number of channels"):
        L.GroupNormalization(groups=4, name="gn_err")(np.ones((2, 6), "float32"))
    with pytest.raises(TypeError, match="axis"):
        L.UnitNormalization(axis="last")
    with pytest.raises(ValueError, match="out of bounds"):
        L.RMSNormalization(axis=3, name="rms_err")(np.ones((2, 6), "float32"))
