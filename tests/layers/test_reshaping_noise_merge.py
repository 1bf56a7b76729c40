"""Shape, noise and extra merge layers: contract, values, errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract, sample

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from kerasflow.layers.base import training_context

CASES = [
    (lambda: L.Permute((2, 1)), (2, 3, 4), (2, 4, 3)),
    (lambda: L.RepeatVector(3), (2, 4), (2, 3, 4)),
    (lambda: L.ZeroPadding1D((1, 2)), (2, 3, 4), (2, 6, 4)),
    (lambda: L.ZeroPadding2D(((1, 0), (2, 1))), (2, 3, 4, 2), (2, 4, 7, 2)),
    (lambda: L.Cropping1D((1, 0)), (2, 5, 4), (2, 4, 4)),
    (lambda: L.Cropping2D(((1, 1), (0, 2))), (2, 5, 4, 2), (2, 3, 2, 2)),
    (lambda: L.UpSampling1D(3), (2, 3, 4), (2, 9, 4)),
    (lambda: L.UpSampling2D((2, 3)), (2, 3, 2, 2), (2, 6, 6, 2)),
    (lambda: L.ActivityRegularization(l1=0.01, l2=0.1), (2, 5), (2, 5)),
]
STOCHASTIC = [
    (lambda: L.SpatialDropout1D(0.5, seed=1), (4, 6, 3), (4, 6, 3)),
    (lambda: L.SpatialDropout2D(0.5, seed=1), (4, 3, 3, 5), (4, 3, 3, 5)),
    (lambda: L.GaussianNoise(0.5, seed=1), (4, 5), (4, 5)),
]


@pytest.mark.parametrize("make,in_shape,out_shape", CASES + STOCHASTIC)
def test_contract(make, in_shape, out_shape, tmp_path):
    check_contract(make, in_shape, out_shape, tmp_path)


def test_shape_layer_values():
    x = sample((2, 3, 2, 1))
    np.testing.assert_array_equal(L.UpSampling2D(2)(x),
                                  x.repeat(2, axis=1).repeat(2, axis=2))
    np.testing.assert_array_equal(L.Cropping2D(((1, 0), (0, 1)))(x), x[:, 1:, :1])
    np.testing.assert_array_equal(L.ZeroPadding2D(1)(x),
                                  np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))))
    v = sample((2, 4))
    np.testing.assert_array_equal(L.RepeatVector(2)(v), np.stack([v, v], 1))
    s = sample((2, 3, 4))
    np.testing.assert_array_equal(L.Permute((2, 1))(s), s.transpose(0, 2, 1))
    np.testing.assert_array_equal(L.UpSampling1D(2)(s), s.repeat(2, axis=1))


def test_spatial_dropout_drops_whole_channels():
    layer = L.SpatialDropout2D(0.5, seed=3)
    x = K.placeholder("float32", (None, 4, 4, 64))
    out = K.Function([x], layer(x, training=True))(np.ones((2, 4, 4, 64), "f4"))
    per_channel = out.reshape(2, 16, 64)
    assert np.all(per_channel == per_channel[:, :1])  # constant over space
    assert 0.2 < (per_channel[:, 0] == 0).mean() < 0.8
    np.testing.assert_array_equal(layer(np.ones((1, 2, 2, 3), "f4")), 1.0)


def test_gaussian_noise_only_in_training():
    layer = L.GaussianNoise(2.0, seed=0)
    x = K.placeholder("float32", (None, 1000))
    with training_context(True):
        noisy = K.Function([x], layer(x))(np.zeros((4, 1000), "f4"))
    assert 1.8 < noisy.std() < 2.2
    np.testing.assert_array_equal(layer(np.zeros((2, 3), "f4")), 0.0)


def test_activity_regularization_adds_its_penalty():
    layer = L.ActivityRegularization(l1=0.5, l2=2.0)
    x = K.placeholder("float32", (None, 2))
    layer(x)
    (penalty,) = layer.losses
    assert float(K.Function([x], penalty)(np.array([[1, -2]], "f4"))) == \
        pytest.approx(0.5 * 3 + 2.0 * 5)


def _functional(merge, shapes):
    ins = [kf.Input(s) for s in shapes]
    return kf.Model(ins, merge(ins))


@pytest.mark.parametrize("make,ref", [
    (L.Maximum, np.maximum), (L.Minimum, np.minimum)])
def test_maximum_minimum(make, ref, tmp_path):
    a, b = sample((3, 4)), sample((3, 4), seed=1)
    layer = make()
    np.testing.assert_array_equal(layer([a, b]), ref(a, b))
    clone = L.deserialize(L.serialize(layer))
    assert type(clone) is make
    model = _functional(make(), [(4,), (4,)])
    model.save(tmp_path / "m.kf")
    loaded = kf.models.load_model(tmp_path / "m.kf")
    np.testing.assert_array_equal(loaded.predict([a, b], verbose=0), ref(a, b))


def test_dot_layer(tmp_path):
    a, b = sample((3, 4)), sample((3, 4), seed=1)
    np.testing.assert_allclose(L.Dot(axes=1)([a, b]), (a * b).sum(1, keepdims=True),
                               rtol=1e-5)
    cos = L.Dot(axes=1, normalize=True)([a, b])
    ref = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(cos[:, 0], ref, rtol=1e-5)
    x, y = sample((2, 3, 5)), sample((2, 4, 5), seed=2)
    np.testing.assert_allclose(L.Dot(axes=2)([x, y]), x @ y.transpose(0, 2, 1),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(L.Dot(axes=(1, 1))([x, sample((2, 3, 2))]),
                               x.transpose(0, 2, 1) @ sample((2, 3, 2)), rtol=1e-5,
                               atol=1e-6)
    model = _functional(L.Dot(axes=2), [(3, 5), (4, 5)])
    model.save(tmp_path / "d.kf")
    loaded = kf.models.load_model(tmp_path / "d.kf")
    np.testing.assert_allclose(loaded.predict([x, y], verbose=0),
                               x @ y.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="contracted axes"):
        L.Dot(axes=1)([K.placeholder("float32", (None, 3)),
                       K.placeholder("float32", (None, 4))])


def test_shape_layer_errors():
    with pytest.raises(ValueError, match="consecutive"):
        L.Permute((1, 3))
    with pytest.raises(ValueError, match="leaves nothing"):
        L.Cropping1D((2, 3))(K.placeholder("float32", (None, 5, 2)))
    with pytest.raises(ValueError, match="expected ndim=4"):
        L.UpSampling2D()(K.placeholder("float32", (None, 5, 2)))
    with pytest.raises(ValueError, match="rate"):
        L.SpatialDropout1D(1.5)
