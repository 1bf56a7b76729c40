"""Image preprocessing layers against Keras 3 (numpy backend): Resizing and
CenterCrop values; the random layers' transformations on Keras' own draws
(``transform_images``), their properties under kerasflow's draws, inference
identity, seeding; the affine resampler against ``keras.ops.image``."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from kerasflow.layers.preprocessing.affine import affine_transform
from tests.keras_oracle import keras_numpy
from tests.layers.contract import check_contract


def _images(shape=(3, 8, 9, 2), seed=0):
    return (np.random.RandomState(seed).rand(*shape) * 255).astype("float32")


@pytest.mark.parametrize("kw", [{}, {"interpolation": "nearest"},
                                {"crop_to_aspect_ratio": True},
                                {"pad_to_aspect_ratio": True, "fill_value": 3.0},
                                {"data_format": "channels_first"}])
@pytest.mark.parametrize("size", [(4, 5), (10, 12), (3, 9)])
def test_resizing_matches_keras(kw, size):
    keras = keras_numpy()
    x = _images()
    ours = L.Resizing(*size, **kw)(x)
    np.testing.assert_allclose(ours, np.asarray(keras.layers.Resizing(*size, **kw)(x)),
                               rtol=1e-5, atol=1e-4)
    # A single image gives the batch's first image.
    np.testing.assert_allclose(L.Resizing(*size, **kw)(x[0]), ours[0], rtol=1e-6)


@pytest.mark.parametrize("size", [(4, 5), (8, 9), (8, 4), (10, 12), (2, 9)])
def test_center_crop_matches_keras(size):
    keras = keras_numpy()
    x = _images()
    ours = L.CenterCrop(*size)(x)
    np.testing.assert_allclose(ours, np.asarray(keras.layers.CenterCrop(*size)(x)),
                               rtol=1e-5, atol=1e-4)
    if size == (4, 5):  # a literal window: rows 2..5, columns 2..6
        np.testing.assert_array_equal(ours, x[:, 2:6, 2:7])


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "mirror",
                                       "reflect"])
def test_affine_transform_matches_keras(interpolation, fill_mode):
    keras = keras_numpy()
    rng = np.random.RandomState(1)
    x = rng.rand(3, 6, 7, 2).astype("float32")
    t = np.concatenate([rng.uniform(0.6, 1.4, (3, 1)), rng.uniform(-.4, .4, (3, 1)),
                        rng.uniform(-3, 3, (3, 1)), rng.uniform(-.4, .4, (3, 1)),
                        rng.uniform(0.6, 1.4, (3, 1)), rng.uniform(-3, 3, (3, 1)),
                        np.zeros((3, 2))], 1).astype("float32")
    ours = affine_transform(x, t, interpolation, fill_mode, 0.7)
    theirs = keras.ops.image.affine_transform(x, t, interpolation, fill_mode, 0.7)
    np.testing.assert_allclose(ours, np.asarray(theirs), atol=1e-5)


def _on_keras_draws(name, ours, keras_kwargs, to_params, x=None):
    keras = keras_numpy()
    x = _images() if x is None else x
    theirs = getattr(keras.layers, name)(**keras_kwargs, seed=3)
    t = theirs.get_random_transformation(x)
    got = ours._apply(x, *to_params(t))
    np.testing.assert_allclose(np.asarray(got),
                               np.asarray(theirs.transform_images(x.copy(), t)),
                               rtol=1e-5, atol=5e-4)


@pytest.mark.parametrize("fill_mode", ["reflect", "constant", "wrap", "nearest"])
def test_rotation_zoom_translation_match_keras_on_its_draws(fill_mode):
    kw = {"fill_mode": fill_mode, "fill_value": 5.0}
    _on_keras_draws("RandomRotation", L.RandomRotation(0.2, **kw),
                    {"factor": 0.2, **kw}, lambda t: (t["angle"],))
    _on_keras_draws("RandomZoom", L.RandomZoom((-0.5, 0.3), (0.2, 0.6), **kw),
                    {"height_factor": (-0.5, 0.3), "width_factor": (0.2, 0.6), **kw},
                    lambda t: (t["height_zoom"], t["width_zoom"]))
    _on_keras_draws("RandomTranslation",
                    L.RandomTranslation(0.3, 0.4, interpolation="nearest", **kw),
                    {"height_factor": 0.3, "width_factor": 0.4,
                     "interpolation": "nearest", **kw},
                    lambda t: (t["translations"],))


def test_color_flip_crop_match_keras_on_its_draws():
    _on_keras_draws("RandomFlip", L.RandomFlip(), {}, lambda t: (t["flips"],))
    _on_keras_draws("RandomFlip", L.RandomFlip("vertical"), {"mode": "vertical"},
                    lambda t: (t["flips"],))
    _on_keras_draws("RandomContrast", L.RandomContrast(0.5), {"factor": 0.5},
                    lambda t: (t["contrast_factor"],))
    _on_keras_draws("RandomBrightness", L.RandomBrightness((-0.3, 0.5)),
                    {"factor": (-0.3, 0.5)}, lambda t: (t["rgb_delta"],))
    _on_keras_draws("RandomCrop", L.RandomCrop(5, 4), {"height": 5, "width": 4},
                    lambda t: t)


@pytest.mark.parametrize("size", [(10, 12), (8, 12), (5, 9), (9, 4)])
def test_random_crop_of_small_inputs_matches_keras(size):
    keras = keras_numpy()
    x = _images()
    np.testing.assert_allclose(
        L.RandomCrop(*size)(x, training=True),
        np.asarray(keras.layers.RandomCrop(*size)(x, training=True)),
        rtol=1e-5, atol=1e-4)


def test_keras_parses_factors_alike():
    keras = keras_numpy()
    for ours, theirs in [(L.RandomContrast(0.5), keras.layers.RandomContrast(0.5)),
                         (L.RandomBrightness(0.2), keras.layers.RandomBrightness(0.2)),
                         (L.RandomRotation((0.3, -0.1)),
                          keras.layers.RandomRotation((0.3, -0.1)))]:
        assert tuple(ours.factor) == tuple(theirs.factor)


_RANDOM = [lambda s: L.RandomRotation(0.3, seed=s),
           lambda s: L.RandomZoom(0.3, seed=s),
           lambda s: L.RandomTranslation(0.2, 0.2, seed=s),
           lambda s: L.RandomFlip(seed=s),
           lambda s: L.RandomContrast(0.4, seed=s),
           lambda s: L.RandomBrightness(0.3, seed=s),
           lambda s: L.RandomCrop(4, 5, seed=s)]


@pytest.mark.parametrize("make", _RANDOM)
def test_random_layers_inference_identity_seeding_and_fresh_draws(make):
    x = _images((8, 8, 9, 2))
    layer = make(7)
    np.testing.assert_array_equal(layer(x, training=False), x)
    first, second = layer(x), layer(x, training=True)
    assert first.shape == second.shape
    assert not np.array_equal(first, second)  # each call draws anew
    np.testing.assert_array_equal(make(7)(x), first)  # same seed, same draws
    assert not np.array_equal(make(8)(x), first)
    # In a model: predict is inference; the layer is symbolic-capable.
    model = kf.Sequential([L.InputLayer(shape=(8, 9, 2)), make(7)])
    if not isinstance(layer, L.RandomCrop):
        np.testing.assert_array_equal(model.predict(x, verbose=0), x)


def test_random_flip_is_an_exact_flip():
    x = _images((16, 5, 6, 1))
    for mode, flip in [("horizontal", lambda a: a[:, ::-1]),
                       ("vertical", lambda a: a[::-1]),
                       ("horizontal_and_vertical", lambda a: a[::-1, ::-1])]:
        out = L.RandomFlip(mode, seed=1)(x)
        flipped = [np.array_equal(o, flip(i)) for o, i in zip(out, x)]
        kept = [np.array_equal(o, i) for o, i in zip(out, x)]
        assert all(f or k for f, k in zip(flipped, kept))
        assert any(flipped) and any(kept)


def test_random_geometry_properties():
    x = _images((4, 8, 8, 1))
    # Rotation by zero and zoom/translation by zero are the identity.
    np.testing.assert_allclose(L.RandomRotation(0.0, fill_mode="constant")(x), x,
                               atol=1e-3)
    np.testing.assert_allclose(L.RandomZoom(0.0)(x), x, atol=1e-3)
    np.testing.assert_allclose(L.RandomTranslation(0.0, 0.0)(x), x, atol=1e-3)
    # A half turn exactly: factor (0.5, 0.5) is 180 degrees.
    np.testing.assert_allclose(L.RandomRotation((0.5, 0.5))(x), x[:, ::-1, ::-1],
                               atol=1e-2)
    # Translation by a whole image with constant fill leaves only fill.
    np.testing.assert_array_equal(
        L.RandomTranslation((1.0, 1.0), 0.0, fill_mode="constant",
                            fill_value=-1.0, interpolation="nearest")(x), -1.0)
    # Brightness and contrast stay in value_range.
    out = L.RandomBrightness(1.0, value_range=(0, 255), seed=2)(x)
    assert out.min() >= 0 and out.max() <= 255
    out = L.RandomContrast(1.0, value_range=(0, 255), seed=2)(x)
    assert out.min() >= 0 and out.max() <= 255
    # A random crop is a window of its input.
    crops = L.RandomCrop(3, 3, seed=0)(x)
    for c, i in zip(crops, x):
        assert any(np.array_equal(c, i[r:r + 3, s:s + 3]) for r in range(6)
                   for s in range(6))


def test_channels_first_matches_keras_on_draws():
    x = _images((2, 3, 8, 9))
    kw = {"data_format": "channels_first"}
    _on_keras_draws("RandomRotation", L.RandomRotation(0.2, **kw),
                    {"factor": 0.2, **kw}, lambda t: (t["angle"],), x)
    _on_keras_draws("RandomFlip", L.RandomFlip(**kw), kw, lambda t: (t["flips"],), x)


def test_image_layer_errors():
    with pytest.raises(ValueError, match="rank 3 .* or 4"):
        L.RandomFlip()(np.zeros((4, 4), "float32"))
    with pytest.raises(ValueError, match="rank 3 .* or 4"):
        L.Resizing(2, 2)(K.placeholder("float32", (None, 4)))
    with pytest.raises(ValueError, match="factor"):
        L.RandomRotation(1.5)
    with pytest.raises(ValueError, match="height_factor"):
        L.RandomZoom(-1.0)
    with pytest.raises(NotImplementedError, match="fill_mode"):
        L.RandomRotation(0.1, fill_mode="mirror")
    with pytest.raises(NotImplementedError, match="interpolation"):
        L.Resizing(2, 2, interpolation="bicubic")
    with pytest.raises(ValueError, match="mode"):
        L.RandomFlip("diagonal")
    with pytest.raises(ValueError, match="value_range"):
        L.RandomBrightness(0.1, value_range=3)
    with pytest.raises(TypeError, match="expects numeric inputs"):
        L.CenterCrop(1, 1)(np.array([[["a"]]]))
    with pytest.raises(ValueError, match="fully defined height and width"):
        L.RandomCrop(2, 2)(K.placeholder("float32", (None, None, None, 3)))


@pytest.mark.parametrize("make,out", [
    (lambda: L.Resizing(3, 2), (4, 3, 2, 2)),
    (lambda: L.CenterCrop(3, 3), (4, 3, 3, 2)),
    (lambda: L.RandomFlip(seed=1), (4, 5, 6, 2)),
    (lambda: L.RandomRotation(0.1, seed=1), (4, 5, 6, 2)),
    (lambda: L.RandomZoom(0.2, seed=1), (4, 5, 6, 2)),
    (lambda: L.RandomTranslation(0.1, 0.1, seed=1), (4, 5, 6, 2)),
    (lambda: L.RandomContrast(0.2, seed=1), (4, 5, 6, 2)),
    (lambda: L.RandomBrightness(0.2, seed=1), (4, 5, 6, 2)),
])
def test_contracts(make, out, tmp_path):
    check_contract(make, (4, 5, 6, 2), out, tmp_path,
                   stochastic=not isinstance(make(), (L.Resizing, L.CenterCrop)))


def test_integer_images_dtypes_match_keras():
    keras = keras_numpy()
    x = (np.random.RandomState(3).rand(2, 5, 7, 1) * 255).astype("uint8")
    for ours, theirs in [(L.Resizing(3, 4), keras.layers.Resizing(3, 4)),
                         (L.Resizing(9, 9), keras.layers.Resizing(9, 9)),
                         (L.CenterCrop(3, 3), keras.layers.CenterCrop(3, 3))]:
        got, want = ours(x), np.asarray(theirs(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,kw", [
    ("RandomRotation", {"factor": 0.0}),
    ("RandomZoom", {"height_factor": 0.0}),
    ("RandomTranslation", {"height_factor": 0.0, "width_factor": 0.0}),
    ("RandomContrast", {"factor": 0.0}),
    ("RandomBrightness", {"factor": 0.0}),
    ("CenterCrop", {"height": 5, "width": 4, "data_format": "channels_first"}),
])
def test_deterministic_settings_equal_keras_in_training(name, kw):
    keras = keras_numpy()
    x = _images((2, 3, 8, 9)) if kw.get("data_format") else _images()
    ours = getattr(L, name)(**kw)(x, training=True)
    theirs = np.asarray(getattr(keras.layers, name)(**kw)(x, training=True))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("fill_mode", ["constant", "reflect"])
def test_affine_resampling_gradient(float64, fill_mode):
    from tests.backend.gradcheck import check_gradients

    x = np.random.RandomState(0).randn(2, 4, 5, 2)
    layer = L.RandomRotation(0.1, fill_mode=fill_mode, dtype="float64")
    check_gradients(lambda t: layer._apply(t, np.array([17.0, -40.0])), [x])
    crop = L.RandomCrop(2, 3, dtype="float64")
    check_gradients(lambda t: crop._apply(t, np.float32(1), np.float32(2)), [x])
