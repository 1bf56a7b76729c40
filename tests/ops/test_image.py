"""``kerasflow.ops.image`` against Keras 3's ``keras.ops.image`` (numpy
backend, which uses scipy), eagerly and (``assert_matches_keras``) in graphs:
resize in both data formats, color conversions, cropping and padding,
patches, blur, Sobel edges, SSIM and the resamplers; gradients of resize, the
resamplers, blur and color conversions checked numerically in float64."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy
from tests.ops_oracle import assert_matches_keras

RNG = np.random.RandomState(0)
R = np.random.RandomState(5)
IMG = R.rand(2, 6, 7, 3).astype("float32")
IMG_CF = np.ascontiguousarray(IMG.transpose(0, 3, 1, 2))


def _img(name, args, kwargs=None, **kw):
    assert_matches_keras(name, args, kwargs or {}, namespace="ops.image", **kw)


@pytest.mark.parametrize("size", [(8, 6), (2, 3), (5, 5)])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_resize_equals_keras(size, interpolation):
    keras = keras_numpy()
    images = RNG.rand(2, 4, 5, 3).astype("float32")
    ours = kf.ops.image.resize(images, size, interpolation=interpolation)
    theirs = keras.ops.image.resize(images, size, interpolation=interpolation)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_resize_channels_first_and_gradient(float64):
    images = RNG.rand(1, 3, 4, 4)
    out = kf.ops.image.resize(images, (6, 2), data_format="channels_first")
    ref = kf.ops.image.resize(images.transpose(0, 2, 3, 1), (6, 2))
    np.testing.assert_allclose(out, ref.transpose(0, 3, 1, 2))
    check_gradients(lambda x: kf.ops.image.resize(x, (7, 3)), [RNG.rand(1, 4, 5, 2)])


@pytest.mark.parametrize("name", ["rgb_to_grayscale", "rgb_to_hsv", "hsv_to_rgb"])
def test_colors_equal_keras(name):
    _img(name, (IMG,), rtol=1e-5, atol=1e-6)
    _img(name, (IMG[0],), atol=1e-6)
    _img(name, (IMG_CF,), {"data_format": "channels_first"}, atol=1e-6)
    if name == "rgb_to_hsv":  # grey pixels and a pure hue
        grey = np.array([[[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0],
                          [0.2, 0.9, 0.2]]], "float32")
        _img(name, (grey,))


def test_crop_pad_equal_keras():
    _img("pad_images", (IMG, 1, 2), {"target_height": 9, "target_width": 10})
    _img("pad_images", (IMG[0],), {"bottom_padding": 1, "top_padding": 0,
                                   "right_padding": 2, "target_width": 11})
    _img("crop_images", (IMG, 1, 2), {"target_height": 3, "target_width": 4})
    _img("crop_images", (IMG_CF,), {"bottom_cropping": 1, "top_cropping": 2,
                                    "right_cropping": 2, "target_width": 3,
                                    "data_format": "channels_first"})
    with pytest.raises(ValueError, match="exactly two of"):
        kf.ops.image.pad_images(IMG, 1, 1, 1, 1, 9, 9)


@pytest.mark.parametrize("args,kwargs", [
    ((IMG, 2), {}), ((IMG, (3, 2)), {"strides": (1, 2), "padding": "same"}),
    ((IMG[0], 3), {"strides": 2, "dilation_rate": 1}),
    ((IMG_CF, 2), {"data_format": "channels_first"}),
])
def test_extract_patches_equal_keras(args, kwargs):
    _img("extract_patches", args, kwargs, rtol=1e-6)


def test_extract_patches_3d_equal_keras():
    vol = R.rand(1, 4, 5, 6, 2).astype("float32")
    _img("extract_patches_3d", (vol, 2))
    _img("extract_patches_3d", (vol[0], (2, 3, 2)), {"strides": 1})
    _img("extract_patches", (vol, (2, 2, 3)))


@pytest.mark.parametrize("kwargs", [{}, {"kernel_size": (5, 3), "sigma": (2.0, 0.7)},
                                    {"kernel_size": (4, 4), "sigma": (1.5, 1.5)}])
def test_gaussian_blur_equals_keras(kwargs):
    _img("gaussian_blur", (IMG,), kwargs, rtol=1e-5, atol=1e-6)


def test_sobel_edges_equals_keras():
    _img("sobel_edges", (IMG,), rtol=1e-5, atol=1e-5)
    _img("sobel_edges", (IMG_CF,), {"data_format": "channels_first"}, atol=1e-5)


def test_ssim_equals_keras():
    other = np.clip(IMG + R.randn(*IMG.shape).astype("float32") * 0.1, 0, 1)
    big = R.rand(2, 13, 12, 2).astype("float32")
    _img("ssim", (IMG, other), {"filter_size": 3}, rtol=1e-4)
    _img("ssim", (big, big[::-1]), {}, rtol=1e-4)
    _img("ssim", (big[0] * 255, big[1] * 255), {"max_val": 255.0, "filter_size": 5,
                                                "filter_sigma": 1.0}, rtol=1e-4)
    _img("ssim", (IMG_CF, IMG_CF * 0.8), {"data_format": "channels_first",
                                          "filter_size": 3}, rtol=1e-4)


@pytest.mark.parametrize("method", ["linear", "bicubic", "lanczos3", "lanczos5"])
@pytest.mark.parametrize("antialias", [True, False])
def test_scale_and_translate_equals_keras(method, antialias):
    # scale and translation as tuples: concrete in the graph run too.
    _img("scale_and_translate", (IMG, (2, 4, 11, 3), (0.7, 1.6), (0.3, -1.2), (1, 2),
                                 method),
         {"antialias": antialias}, rtol=1e-4, atol=1e-5)
    ints = (IMG * 255).astype("uint8")
    _img("scale_and_translate", (ints, (2, 9, 7, 3), np.array([1.5], "float32"),
                                 np.array([0.0], "float32"), (1,), method),
         {"antialias": antialias}, symbolic=False)


@pytest.mark.parametrize("kwargs", [{"seed": 3}, {"seed": 11, "alpha": 5.0,
                                                  "sigma": 1.5,
                                                  "interpolation": "nearest",
                                                  "fill_mode": "constant"},
                                    {"seed": 2, "sigma": 2.0, "fill_mode": "wrap"}])
def test_elastic_transform_equals_keras_for_a_seed(kwargs):
    _img("elastic_transform", (IMG,), kwargs, rtol=1e-4, atol=1e-4)
    _img("elastic_transform", (IMG_CF[:1],), dict(kwargs, data_format="channels_first"),
         rtol=1e-4, atol=1e-4)


COORDS = (R.rand(2, 5, 4) * [[[8.0]], [[9.0]]] - 1.5).astype("float32")


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "mirror",
                                       "reflect"])
def test_map_coordinates_equals_keras(order, fill_mode):
    x = R.rand(5, 6).astype("float32")
    _img("map_coordinates", (x, COORDS, order), {"fill_mode": fill_mode,
                                                 "fill_value": -1.0},
         rtol=1e-5, atol=1e-6)


def test_map_coordinates_3d_equals_keras():
    x = R.rand(3, 4, 5).astype("float32")
    c = (R.rand(3, 6) * [[3.0], [4.0], [5.0]] - 0.5).astype("float32")
    _img("map_coordinates", (x, c, 1), atol=1e-6)


# Entries chosen so that no sampling point falls on a rounding tie.
T = np.array([[1.1, 0.21, -0.47, -0.13, 0.91, 1.31, 0.0, 0.0],
              [0.83, -0.35, 2.03, 0.27, 1.01, -1.03, 0.0, 0.0]], "float32")


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "mirror",
                                       "reflect"])
def test_affine_transform_equals_keras(interpolation, fill_mode):
    _img("affine_transform", (IMG, T), {"interpolation": interpolation,
                                        "fill_mode": fill_mode, "fill_value": 0.5},
         rtol=1e-5, atol=1e-5)


def test_affine_transform_single_and_channels_first():
    _img("affine_transform", (IMG[0], T[0]), atol=1e-5)
    _img("affine_transform", (IMG_CF, T), {"data_format": "channels_first"},
         atol=1e-5)


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_perspective_transform_equals_keras(interpolation):
    start = np.array([[0, 0], [6, 0], [0, 5], [6, 5]], "float32")
    end = np.array([[0.5, 0.2], [5.5, 0.0], [0.0, 4.6], [6.2, 5.1]], "float32")
    _img("perspective_transform", (IMG, start, end),
         {"interpolation": interpolation}, rtol=1e-4, atol=1e-4, check_dtype=False)


GRADS = [
    ("map_coordinates", lambda x, c: kf.ops.image.map_coordinates(x, c, 1),
     [R.rand(4, 5), (R.rand(2, 3) * [[3.0], [4.0]]) + 0.21]),
    ("affine_transform", lambda x: kf.ops.image.affine_transform(
        x, T.astype("float64"), fill_mode="reflect"), [R.rand(2, 4, 5, 2)]),
    ("gaussian_blur", lambda x: kf.ops.image.gaussian_blur(x), [R.rand(1, 4, 5, 2)]),
    ("rgb_to_hsv", kf.ops.image.rgb_to_hsv,
     [np.array([[[[0.2, 0.5, 0.9], [0.7, 0.1, 0.3]]]])]),
    ("hsv_to_rgb", kf.ops.image.hsv_to_rgb,
     [np.array([[[[0.2, 0.5, 0.9], [0.7, 0.1, 0.3]]]])]),
    ("extract_patches", lambda x: kf.ops.image.extract_patches(x, 2),
     [R.rand(1, 4, 4, 2)]),
    ("sobel_edges", kf.ops.image.sobel_edges, [R.rand(1, 3, 4, 1)]),
    ("scale_and_translate", lambda x: kf.ops.image.scale_and_translate(
        x, (1, 3, 5, 1), np.array([0.6, 1.3]), np.array([0.1, 0.2]), (1, 2),
        "cubic"), [R.rand(1, 4, 4, 1)]),
    ("elastic_transform", lambda x: kf.ops.image.elastic_transform(
        x, seed=1, sigma=1.0, alpha=2.0), [R.rand(1, 4, 5, 1)]),
    ("ssim", lambda a, b: kf.ops.image.ssim(a, b, filter_size=3),
     [R.rand(2, 4, 4, 1), R.rand(2, 4, 4, 1)]),
]


@pytest.mark.parametrize("name,fn,inputs", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(float64, name, fn, inputs):
    check_gradients(fn, inputs)
