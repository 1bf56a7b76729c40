"""tf.image of kerasflow.compat.v1 against numpy references and TF's documented
values, on placeholders (Session.run), on arrays (eager) and in Dataset.map."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kerasflow.compat.v1 as tf
from kerasflow import backend as K
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
IMG = RNG.uniform(0, 1, (5, 7, 3)).astype(np.float32)      # (H, W, C)
BATCH = RNG.uniform(0, 1, (4, 5, 7, 3)).astype(np.float32)  # (N, H, W, C)
SQUARE = np.array([[0, 1], [2, 3]], np.float32)[:, :, None]


def both(fn, *arrays, batch_none=False):
    """``fn`` eagerly on ``arrays`` and on placeholders through a Session;
    checks the two agree and returns the value."""
    eager = np.asarray(fn(*arrays))
    phs = [tf.placeholder(a.dtype, (None,) + a.shape[1:] if batch_none else a.shape)
           for a in arrays]
    out = fn(*phs)
    assert K.is_symbolic(out)
    with tf.Session() as sess:
        graph = sess.run(out, dict(zip(phs, arrays)))
    assert graph.dtype == eager.dtype and graph.shape == eager.shape
    np.testing.assert_allclose(graph, eager, rtol=1e-6, atol=1e-6)
    return graph


# -- convert_image_dtype ---------------------------------------------------------------
def test_convert_image_dtype_rescales_as_tf():
    u8 = np.array([0, 51, 255], np.uint8)
    f = both(lambda x: tf.image.convert_image_dtype(x, tf.float32), u8)
    assert f.dtype == np.float32
    np.testing.assert_allclose(f, [0.0, 0.2, 1.0], rtol=1e-6)
    # float -> uint8 multiplies by 255.5 and truncates: 0.5 -> 127, 1.0 -> 255.
    fl = np.array([0.0, 0.5, 1.0, 0.999], np.float32)
    np.testing.assert_array_equal(
        both(lambda x: tf.image.convert_image_dtype(x, tf.uint8), fl),
        [0, 127, 255, 255])
    # saturate clips before the cast; without it -0.5 * 255.5 wraps around.
    wild = np.array([-0.5, 2.0], np.float32)
    np.testing.assert_array_equal(
        tf.image.convert_image_dtype(wild, tf.uint8, saturate=True), [0, 255])
    # Between integers: a shift by the ratio of the ranges (256 for 8 <-> 16 bits).
    np.testing.assert_array_equal(
        tf.image.convert_image_dtype(np.array([1, 255], np.uint8), tf.uint16),
        [256, 65280])
    np.testing.assert_array_equal(
        tf.image.convert_image_dtype(np.array([511, 65535], np.uint16), tf.uint8),
        [1, 255])
    i16 = np.array([-32768, 0, 32767], np.int16)
    np.testing.assert_array_equal(
        tf.image.convert_image_dtype(i16, tf.uint8, saturate=True), [0, 0, 255])
    f64 = tf.image.convert_image_dtype(np.float32([0.25]), tf.float64)
    assert f64.dtype == np.float64 and f64[0] == 0.25
    same = np.arange(3, dtype=np.uint8)
    np.testing.assert_array_equal(tf.image.convert_image_dtype(same, "uint8"), same)
    with pytest.raises(TypeError, match="integer and floating-point.*bool"):
        tf.image.convert_image_dtype(np.array([True]), tf.float32)


# -- resize ----------------------------------------------------------------------------
def test_resize_images_is_tf1_legacy_bilinear():
    want = [[0, .5, 1, 1], [1, 1.5, 2, 2], [2, 2.5, 3, 3], [2, 2.5, 3, 3]]
    out = both(lambda x: tf.image.resize_images(x, [4, 4]), SQUARE)
    np.testing.assert_allclose(out[..., 0], want)
    aligned = tf.image.resize_images(SQUARE, [4, 4], align_corners=True)[..., 0]
    third = 1.0 / 3.0
    np.testing.assert_allclose(aligned[0], [0, third, 2 * third, 1], rtol=1e-6)
    np.testing.assert_allclose(aligned[:, 0], [0, 2 * third, 4 * third, 2], rtol=1e-6)
    nearest = tf.image.resize_images(SQUARE, [4, 4],
                                     tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    np.testing.assert_array_equal(nearest[..., 0], [[0, 0, 1, 1], [0, 0, 1, 1],
                                                    [2, 2, 3, 3], [2, 2, 3, 3]])
    # A batch of unknown size, uint8: bilinear gives float32, nearest uint8.
    u8 = (BATCH * 255).astype(np.uint8)
    bil = both(lambda x: tf.image.resize_images(x, [3, 9]), u8, batch_none=True)
    assert bil.dtype == np.float32 and bil.shape == (4, 3, 9, 3)
    nn = both(lambda x: tf.image.resize_images(x, [3, 9], method=1), u8,
              batch_none=True)
    assert nn.dtype == np.uint8
    np.testing.assert_array_equal(tf.image.resize_images(u8, [5, 7]), u8)


def _tf1_resize_reference(img, out_h, out_w, nearest, align_corners, half_pixel):
    """TF1's resize kernels, pixel by pixel in float64."""
    h, w, c = img.shape

    def source(o, n_in, n_out):
        scale = (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else \
            n_in / n_out
        if nearest:
            s = (o + 0.5) * scale if half_pixel else o * scale
            i = math.floor(s + 0.5) if align_corners else math.floor(s)
            return min(i, n_in - 1), min(i, n_in - 1), 0.0
        s = (o + 0.5) * scale - 0.5 if half_pixel else o * scale
        lo = math.floor(s)
        return max(lo, 0), min(lo + 1, n_in - 1), s - lo

    out = np.zeros((out_h, out_w, c))
    for i in range(out_h):
        y0, y1, dy = source(i, h, out_h)
        for j in range(out_w):
            x0, x1, dx = source(j, w, out_w)
            top = img[y0, x0] + (img[y0, x1] - img[y0, x0]) * dx
            bottom = img[y1, x0] + (img[y1, x1] - img[y1, x0]) * dx
            out[i, j] = top + (bottom - top) * dy
    return out


@pytest.mark.parametrize("size", [(7, 4), (2, 3), (9, 13), (1, 1)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_resize_images_matches_the_tf1_kernel_reference(size, align_corners):
    for method, nearest in ((tf.image.ResizeMethod.BILINEAR, False),
                            (tf.image.ResizeMethod.NEAREST_NEIGHBOR, True)):
        got = tf.image.resize_images(IMG, size, method, align_corners=align_corners)
        want = _tf1_resize_reference(IMG.astype(np.float64), *size, nearest,
                                     align_corners, False)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_resize_nearest_align_corners_rounds_halves_up():
    row = np.arange(3, dtype=np.float32).reshape(1, 3, 1)
    out = tf.image.resize_images(row, [1, 5], 1, align_corners=True)
    np.testing.assert_array_equal(out[0, :, 0], [0, 1, 1, 2, 2])  # 0 .5 1 1.5 2
    out = tf.image.resize_images(row, [1, 5], 1)
    np.testing.assert_array_equal(out[0, :, 0], [0, 0, 1, 1, 2])  # 0 .6 1.2 ...


def test_resize_bilinear_and_nearest_neighbor_half_pixel_centers():
    for size in ((7, 4), (3, 3), (10, 14)):
        got = both(lambda x: tf.image.resize_bilinear(x, size,
                                                      half_pixel_centers=True),
                   BATCH, batch_none=True)
        want = np.stack([_tf1_resize_reference(b.astype(np.float64), *size, False,
                                               False, True) for b in BATCH])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        got = tf.image.resize_nearest_neighbor(BATCH, size, half_pixel_centers=True)
        want = np.stack([_tf1_resize_reference(b.astype(np.float64), *size, True,
                                               False, True) for b in BATCH])
        np.testing.assert_array_equal(got, want.astype(np.float32))
    with pytest.raises(ValueError, match="4-D image"):
        tf.image.resize_bilinear(IMG, [2, 2])
    with pytest.raises(ValueError, match="at most one of align_corners"):
        tf.image.resize_bilinear(BATCH, [2, 2], align_corners=True,
                                 half_pixel_centers=True)


def test_resize_is_tf2_half_pixel_and_matches_keras():
    keras = keras_numpy()
    np.testing.assert_allclose(
        tf.image.resize(SQUARE, [4, 4])[..., 0],
        [[0, .25, .75, 1], [.5, .75, 1.25, 1.5], [1.5, 1.75, 2.25, 2.5],
         [2, 2.25, 2.75, 3]])
    for images in (IMG, BATCH):
        for size in ((9, 12), (3, 4), (5, 3)):
            for method in ("bilinear", "nearest"):
                ours = both(lambda x: tf.image.resize(x, size, method=method), images)
                theirs = np.asarray(keras.ops.image.resize(
                    images, size, interpolation=method, data_format="channels_last"))
                np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    u8 = (IMG * 255).astype(np.uint8)
    out = tf.image.resize(u8, [3, 3])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, tf.image.resize(u8.astype(np.float32), [3, 3]))
    assert tf.image.resize(u8, [3, 3], tf.image.ResizeMethod.NEAREST_NEIGHBOR
                           ).dtype == np.uint8
    # preserve_aspect_ratio: 5x7 into 10x10 -> scale 10/7 -> 7x10.
    assert tf.image.resize(IMG, [10, 10], preserve_aspect_ratio=True).shape == \
        (7, 10, 3)


def test_unsupported_resize_methods_raise_naming_the_supported_ones():
    for fn in (tf.image.resize, tf.image.resize_images):
        for method in (tf.image.ResizeMethod.BICUBIC, tf.image.ResizeMethod.AREA,
                       "bicubic"):
            with pytest.raises(NotImplementedError,
                               match=r"bilinear and nearest.*Received: method="
                                     r"'(bicubic|area)'"):
                fn(IMG, [3, 3], method=method)
    with pytest.raises(TypeError, match=r"size as 2 Python ints.*Received: size=\[3\]"):
        tf.image.resize_images(IMG, [3])
    with pytest.raises(ValueError, match=r"3-D or 4-D image.*Received: shape=\(5,\)"):
        tf.image.resize(np.zeros(5, np.float32), [2, 2])
    with pytest.raises(ValueError, match="height and width known"):
        tf.image.resize_images(tf.placeholder(tf.float32, [None, None, 3]), [2, 2])


# -- flips and rotations --------------------------------------------------------------
def test_flips_transpose_and_rot90_match_numpy():
    for images, (h, w) in ((IMG, (0, 1)), (BATCH, (1, 2))):
        np.testing.assert_array_equal(both(tf.image.flip_left_right, images),
                                      np.flip(images, w))
        np.testing.assert_array_equal(both(tf.image.flip_up_down, images),
                                      np.flip(images, h))
        np.testing.assert_array_equal(both(tf.image.transpose, images),
                                      np.swapaxes(images, h, w))
        for k in range(-1, 6):
            np.testing.assert_array_equal(
                both(lambda x: tf.image.rot90(x, k), images),
                np.rot90(images, k, axes=(h, w)))
    assert tf.image.transpose_image is tf.image.transpose
    with pytest.raises(TypeError, match="k as a Python int"):
        tf.image.rot90(IMG, tf.constant(1))


def _flipped_or_not(out, images, axis):
    """Per image: True if flipped, False if unchanged (fails otherwise)."""
    flags = []
    for o, im in zip(out, images):
        same, flip = np.array_equal(o, im), np.array_equal(o, np.flip(im, axis))
        assert same or flip
        flags.append(flip)
    return flags


@pytest.mark.parametrize("name, axis", [("random_flip_left_right", 1),
                                        ("random_flip_up_down", 0)])
def test_random_flips_draw_per_image_and_per_run(name, axis):
    fn = getattr(tf.image, name)
    x = tf.placeholder(tf.float32, [None, 5, 7, 3])
    flipped = fn(x, seed=3)
    assert flipped.shape == (None, 5, 7, 3)
    runs = []
    with tf.Session() as sess:
        for _ in range(20):
            runs.append(_flipped_or_not(sess.run(flipped, {x: BATCH}), BATCH, axis))
    runs = np.array(runs)
    assert runs.any(axis=0).all() and not runs.all(axis=0).any()  # each image both
    assert any(0 < r.sum() < len(r) for r in runs)                # mixed batches
    single = fn(tf.constant(IMG))
    with tf.Session() as sess:
        seen = {_flipped_or_not([sess.run(single)], [IMG], axis)[0]
                for _ in range(20)}
    assert seen == {True, False}
    eager = {_flipped_or_not([fn(IMG)], [IMG], axis)[0] for _ in range(20)}
    assert eager == {True, False}


# -- crops and pads --------------------------------------------------------------------
def test_crop_and_pad_to_bounding_box():
    np.testing.assert_array_equal(
        both(lambda x: tf.image.crop_to_bounding_box(x, 1, 2, 3, 4), IMG),
        IMG[1:4, 2:6])
    np.testing.assert_array_equal(
        both(lambda x: tf.image.crop_to_bounding_box(x, 0, 3, 5, 2), BATCH,
             batch_none=True), BATCH[:, :, 3:5])
    # A run-time offset is read when the graph runs.
    off = tf.placeholder(tf.int32, [])
    crop = tf.image.crop_to_bounding_box(tf.constant(IMG), off, 1, 2, 2)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(crop, {off: 2}), IMG[2:4, 1:3])
    padded = both(lambda x: tf.image.pad_to_bounding_box(x, 1, 2, 8, 10), IMG)
    np.testing.assert_array_equal(padded, np.pad(IMG, [(1, 2), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(
        tf.image.pad_to_bounding_box(BATCH, 0, 0, 6, 7),
        np.pad(BATCH, [(0, 0), (0, 1), (0, 0), (0, 0)]))
    with pytest.raises(ValueError, match=r"offset_width \+ target_width <= the image "
                                         r"width \(7\).*offset_width=5, "
                                         r"target_width=3"):
        tf.image.crop_to_bounding_box(IMG, 0, 5, 2, 3)
    with pytest.raises(ValueError, match="offset_height >= 0"):
        tf.image.crop_to_bounding_box(IMG, -1, 0, 2, 3)
    with pytest.raises(ValueError, match=r"target_height >= offset_height \+ height"):
        tf.image.pad_to_bounding_box(IMG, 1, 0, 5, 7)


def test_resize_with_crop_or_pad_centers_as_tf():
    # Height 5 -> 2: crop (5 - 2) // 2 = 1 off the top; width 7 -> 10: pad
    # (10 - 7) // 2 = 1 on the left, 2 on the right.
    out = both(lambda x: tf.image.resize_image_with_crop_or_pad(x, 2, 10), IMG)
    np.testing.assert_array_equal(out, np.pad(IMG[1:3], [(0, 0), (1, 2), (0, 0)]))
    out = tf.image.resize_with_crop_or_pad(BATCH, 8, 4)
    np.testing.assert_array_equal(
        out, np.pad(BATCH[:, :, 1:5], [(0, 0), (1, 2), (0, 0), (0, 0)]))
    with pytest.raises(ValueError, match="target_width >= 1"):
        tf.image.resize_image_with_crop_or_pad(IMG, 2, 0)


def test_central_crop_as_tf():
    # int((5 - 2.5) / 2) = 1 row and int((7 - 3.5) / 2) = 1 column off each side.
    np.testing.assert_array_equal(both(lambda x: tf.image.central_crop(x, 0.5), IMG),
                                  IMG[1:4, 1:6])
    np.testing.assert_array_equal(tf.image.central_crop(BATCH, 0.3),
                                  BATCH[:, 1:4, 2:5])  # int(1.75), int(2.45)
    np.testing.assert_array_equal(tf.image.central_crop(IMG, 1.0), IMG)
    with pytest.raises(ValueError, match=r"central_fraction in \(0, 1\]"):
        tf.image.central_crop(IMG, 0.0)


def test_random_crop_offsets_are_uniform_and_drawn_per_run():
    assert tf.random_crop is tf.image.random_crop
    value = np.arange(6 * 5 * 3, dtype=np.int32).reshape(6, 5, 3)
    windows = {(i, j): value[i:i + 3, j:j + 2] for i in range(4) for j in range(4)}
    for x in (tf.constant(value), tf.placeholder(tf.int32, [None, None, 3])):
        crop = tf.random_crop(x, [3, 2, 3], seed=7)
        assert crop.shape == (3, 2, 3) and crop.dtype == np.int32
        seen = []
        with tf.Session() as sess:
            for _ in range(200):
                out = sess.run(crop, {x: value} if x.node.op == "Placeholder" else None)
                hits = [k for k, win in windows.items() if np.array_equal(out, win)]
                assert len(hits) == 1
                seen.append(hits[0])
        assert set(seen) == set(windows)  # every offset in [0, dim - size] occurs
    eager = {tuple(np.asarray(tf.random_crop(value, [3, 2, 3]))[0, 0])
             for _ in range(30)}
    assert len(eager) > 1
    np.testing.assert_array_equal(tf.random_crop(value, [6, 5, 3]), value)
    with pytest.raises(ValueError, match=r"size <= value.shape.*size=\[7, 2, 3\]"):
        tf.random_crop(value, [7, 2, 3])
    with pytest.raises(ValueError, match="one int per axis"):
        tf.random_crop(value, [3, 2])


# -- brightness, contrast, standardization --------------------------------------------
def test_adjust_brightness_float_and_saturating_uint8():
    np.testing.assert_allclose(both(lambda x: tf.image.adjust_brightness(x, 0.25),
                                    IMG), IMG + 0.25, rtol=1e-6)
    u8 = np.array([0, 100, 250], np.uint8)
    # In [0, 1]: 100/255 + 0.1 = 0.49216 -> * 255.5 = 125.7 -> 125; 250 saturates.
    np.testing.assert_array_equal(tf.image.adjust_brightness(u8, 0.1), [25, 125, 255])
    np.testing.assert_array_equal(tf.image.adjust_brightness(u8, -0.5), [0, 0, 122])


def _contrast_reference(images, factor):
    mean = images.mean(axis=(-3, -2), keepdims=True)
    return (images - mean) * factor + mean


def test_adjust_contrast_uses_the_per_channel_mean():
    for images in (IMG, BATCH):
        np.testing.assert_allclose(
            both(lambda x: tf.image.adjust_contrast(x, 1.7), images),
            _contrast_reference(images, 1.7), rtol=1e-5, atol=1e-6)
    u8 = (IMG * 255).astype(np.uint8)
    got = tf.image.adjust_contrast(u8, 2.0)
    flt = u8.astype(np.float32) * np.float32(1 / 255)
    want = np.clip(_contrast_reference(flt, 2.0) * 255.5, 0, 255).astype(np.uint8)
    assert got.dtype == np.uint8
    assert np.abs(got.astype(int) - want).max() <= 1  # float32 rounding at .0


def test_random_brightness_and_contrast_draw_per_run_within_range():
    x = tf.placeholder(tf.float32, [5, 7, 3])
    bright = tf.image.random_brightness(x, 0.3, seed=1)
    contrast = tf.image.random_contrast(x, 0.5, 1.5, seed=2)
    deltas, factors = [], []
    mean = IMG.mean(axis=(0, 1))
    with tf.Session() as sess:
        for _ in range(10):
            b, c = sess.run([bright, contrast], {x: IMG})
            d = b - IMG
            np.testing.assert_allclose(d, d.flat[0], atol=1e-6)  # one delta
            deltas.append(d.flat[0])
            f = (c - mean) / (IMG - mean)
            np.testing.assert_allclose(f, f.flat[0], rtol=1e-3)  # one factor
            factors.append(f.flat[0])
    assert all(-0.3 <= v <= 0.3 for v in deltas) and len(set(deltas)) == 10
    assert all(0.5 <= v <= 1.5 for v in factors) and len(set(factors)) == 10
    with pytest.raises(ValueError, match="max_delta >= 0"):
        tf.image.random_brightness(IMG, -0.1)
    with pytest.raises(ValueError, match="upper > lower"):
        tf.image.random_contrast(IMG, 0.5, 0.5)
    with pytest.raises(ValueError, match="lower >= 0"):
        tf.image.random_contrast(IMG, -0.5, 0.5)


def _standardize_reference(image):
    x = image.astype(np.float64)
    mean, std = x.mean(), x.std()
    return (x - mean) / max(std, 1.0 / math.sqrt(x.size))


def test_per_image_standardization_as_tf():
    out = both(tf.image.per_image_standardization, IMG)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _standardize_reference(IMG), rtol=1e-5, atol=1e-5)
    out = both(tf.image.per_image_standardization, BATCH, batch_none=True)
    for o, im in zip(out, BATCH):  # image by image
        np.testing.assert_allclose(o, _standardize_reference(im), rtol=1e-5,
                                   atol=1e-5)
    # uint8 values are cast (TF 1.15), and a flat image has stddev 0: the
    # divisor is 1/sqrt(num_elements), so it maps to zeros.
    u8 = (IMG * 255).astype(np.uint8)
    np.testing.assert_allclose(tf.image.per_image_standardization(u8),
                               _standardize_reference(u8), rtol=1e-5, atol=1e-5)
    flat = np.full((2, 2, 1), 7.0, np.float32)
    np.testing.assert_array_equal(tf.image.per_image_standardization(flat), 0.0)
    unknown = tf.placeholder(tf.float32, [None, None, 3])
    with tf.Session() as sess:
        np.testing.assert_allclose(
            sess.run(tf.image.per_image_standardization(unknown), {unknown: IMG}),
            _standardize_reference(IMG), rtol=1e-5, atol=1e-5)


# -- colors ----------------------------------------------------------------------------
def test_grayscale_conversions():
    weights = np.array([0.2989, 0.5870, 0.1140])
    gray = both(tf.image.rgb_to_grayscale, BATCH, batch_none=True)
    assert gray.shape == (4, 5, 7, 1)
    np.testing.assert_allclose(gray[..., 0], BATCH @ weights, rtol=1e-5)
    u8 = np.array([[[255, 255, 255], [255, 0, 0], [10, 20, 30]]], np.uint8)
    flt = u8 * np.float32(1 / 255)
    want = (flt @ weights.astype(np.float32) * np.float32(255.5)).astype(np.uint8)
    np.testing.assert_array_equal(tf.image.rgb_to_grayscale(u8)[..., 0], want)
    assert tf.image.rgb_to_grayscale(u8)[0, 0, 0] == 255
    rgb = both(tf.image.grayscale_to_rgb, gray, batch_none=True)
    np.testing.assert_array_equal(rgb, np.repeat(gray, 3, axis=-1))
    with pytest.raises(ValueError, match=r"last dimension is 3.*shape=\(5, 7, 1\)"):
        tf.image.rgb_to_grayscale(gray[0])
    with pytest.raises(ValueError, match="last dimension is 1"):
        tf.image.grayscale_to_rgb(IMG)


# -- in tf.data ------------------------------------------------------------------------
def test_dataset_map_standardizes_converted_images():
    images = (BATCH * 255).astype(np.uint8)
    labels = np.arange(4)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(
        lambda x, y: (tf.image.per_image_standardization(
            tf.image.convert_image_dtype(x, tf.float32)), y))
    out = list(ds)
    assert len(out) == 4
    for (x, y), im, label in zip(out, images, labels):
        flt = im.astype(np.float32) * np.float32(1 / 255)
        np.testing.assert_allclose(x, _standardize_reference(flt), rtol=1e-5,
                                   atol=1e-5)
        assert y == label


def test_dataset_map_traces_tf_image_ops_into_the_graph():
    images = (BATCH * 255).astype(np.uint8)
    calls = []

    def augment(image, label):
        calls.append(1)
        image = tf.image.random_flip_left_right(image)
        image = tf.image.resize_image_with_crop_or_pad(image, 4, 8)
        return tf.cast(image, tf.float32) / 255.0, tf.cast(label, tf.int32)

    # On placeholders (as Dataset.map traces it) the result is graph tensors.
    x, y = augment(tf.placeholder(tf.uint8, [5, 7, 3]), tf.placeholder(tf.int64, []))
    assert K.is_symbolic(x) and x.shape == (4, 8, 3)
    calls.clear()
    ds = tf.data.Dataset.from_tensor_slices((images, np.arange(4))).map(augment)
    def expected(im):  # height 5 -> 4: crop 0 rows; width 7 -> 8: pad 0 | 1
        return np.pad(im[:4], [(0, 0), (0, 1), (0, 0)]).astype(np.float32) / 255

    flips = []
    for _ in range(5):
        for (x, y), im in zip(ds, images):
            plain, flipped = expected(im), expected(np.flip(im, 1))
            assert np.allclose(x, plain) or np.allclose(x, flipped)
            flips.append(np.allclose(x, flipped))
            assert y.dtype == np.int32
    assert set(flips) == {True, False}
    assert len(calls) == 2  # one eager call, then one trace for every element
