"""``tf.image`` of TF 1.15: dtype conversion, resizing, flips and rotations,
crops and pads, brightness, contrast, standardization and grayscale.

Images are 3-D ``(height, width, channels)`` or 4-D ``(batch, height, width,
channels)``, channels last, as in TF. Every function is composed of backend
ops, so it builds graph nodes on symbolic tensors (placeholders, ``Session.run``,
the traced function of ``Dataset.map``) and computes at once on arrays and
Python lists (eagerly, an array back). Random ops (``random_flip_*``,
``random_crop``, ``random_brightness``, ``random_contrast``) draw anew at every
run of the graph; given an int ``seed`` they draw the same sequence in each
new ``Session``. Heights, widths and crop sizes are static Python ints; the
batch size may be unknown until run time.

Source: TensorFlow 1.15 ``tensorflow/python/ops/image_ops_impl.py`` (the
documented behaviour of each function, noted where it matters), and for
``resize`` TF 2's ``tf.image.resize`` (half-pixel centers).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.eager import as_eager
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.dtypes import resolve
from kerasflow.ops import image as _kimage

__all__ = [
    "ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
    "convert_image_dtype", "crop_to_bounding_box", "flip_left_right",
    "flip_up_down", "grayscale_to_rgb", "pad_to_bounding_box",
    "per_image_standardization", "random_brightness", "random_contrast",
    "random_crop", "random_flip_left_right", "random_flip_up_down", "resize",
    "resize_bilinear", "resize_image_with_crop_or_pad", "resize_images",
    "resize_nearest_neighbor", "resize_with_crop_or_pad", "rgb_to_grayscale",
    "rot90", "transpose", "transpose_image",
]


class ResizeMethod:
    """TF1's resize methods (``tf.image.ResizeMethod``); ``resize`` also takes
    TF 2's names ("bilinear", "nearest")."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_METHODS = {0: "bilinear", 1: "nearest", 2: "bicubic", 3: "area",
            "bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic",
            "area": "area", "lanczos3": "lanczos3", "lanczos5": "lanczos5",
            "gaussian": "gaussian", "mitchellcubic": "mitchellcubic"}


# -- helpers --------------------------------------------------------------------------
def _tensor(value, who):
    """Symbolic tensors as they are; anything else an array, Python floats
    float32 and ints int32 (TF's conversion)."""
    if K.is_symbolic(value):
        return value
    typed = isinstance(value, (np.ndarray, np.generic))
    try:
        arr = np.asarray(K.to_numpy(value))
    except (TypeError, ValueError) as e:
        raise TypeError(f"{who} expects an image tensor or array. Received: "
                        f"{type(value).__name__} {value!r}.") from e
    if not typed and arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    elif not typed and arr.dtype == np.int64:
        arr = arr.astype(np.int32)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{who} expects a numeric image. Received: dtype "
                        f"{arr.dtype}.")
    return arr


def _image(image, who, ranks=(3, 4)):
    """``image`` as a tensor of a rank in ``ranks``.

    Raises:
        ValueError: an unknown rank or one not in ``ranks``.
    """
    x = _tensor(image, who)
    shape = x.shape
    if shape is None or len(shape) not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"{who} expects a {want} image ((batch,) height, width, "
                         f"channels). Received: shape="
                         f"{None if shape is None else tuple(shape)}.")
    return x


def _out(x):
    """Graph results recorded in the default graph; arrays as eager tensors."""
    return G.track(x) if K.is_symbolic(x) else as_eager(x)


def _dtype(x) -> np.dtype:
    return np.dtype(x.dtype)


def _hw(x, who) -> tuple:
    """The static (height, width).

    Raises:
        ValueError: either is unknown.
    """
    h, w = x.shape[-3], x.shape[-2]
    if h is None or w is None:
        raise ValueError(f"{who} needs the image height and width known when the "
                         f"graph is built. Received: shape={tuple(x.shape)}.")
    return int(h), int(w)


def _axes(x) -> tuple:
    """The (height, width) axes as non-negative ints."""
    n = len(x.shape)
    return n - 3, n - 2


def _uniform(x, shape, minval, maxval, seed, dtype="float32"):
    """Uniform draws of ``shape`` (ints and run-time scalars): a node drawn at
    every run when ``x`` is symbolic, values now when it is an array."""
    if not K.is_symbolic(x):
        return K.random_uniform(shape, minval, maxval, dtype, seed)
    if any(K.is_symbolic(d) for d in shape):
        return K.random_uniform(shape, minval, maxval, dtype, seed)
    anchor = K.constant(np.zeros(shape, dtype))
    return K.random_uniform_like(anchor, minval, maxval, dtype, seed)


def _batch(x):
    """The batch size: an int when static, else a run-time scalar."""
    n = x.shape[0]
    return int(n) if n is not None else K.getitem(K.shape_of(x), 0)


def _check_int(value, name, who, minimum=None):
    if K.is_symbolic(value) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{who} expects {name} as a Python int. Received: "
                        f"{name}={value!r}.")
    if minimum is not None and int(value) < minimum:
        raise ValueError(f"{who} expects {name} >= {minimum}. Received: "
                         f"{name}={value}.")
    return int(value)


def _size(size, who):
    """``size`` = (new_height, new_width) as two positive ints."""
    if K.is_symbolic(size) or len(size) != 2:
        raise TypeError(f"{who} expects size as 2 Python ints (new_height, "
                        f"new_width). Received: size={size!r}.")
    return tuple(_check_int(s, "size", who, 1) for s in size)


# -- dtypes ----------------------------------------------------------------------------
def _limits(dtype):
    return (np.iinfo(dtype).min, np.iinfo(dtype).max) if dtype.kind in "iu" else \
        (np.finfo(dtype).min, np.finfo(dtype).max)


def _saturate_cast(x, dtype):
    """``x`` clipped to ``dtype``'s range, then cast (TF's ``saturate_cast``)."""
    src, dst = _dtype(x), np.dtype(dtype)
    if src == dst:
        return x
    (slo, shi), (dlo, dhi) = _limits(src), _limits(dst)
    lo, hi = max(slo, dlo), min(shi, dhi)
    if src.kind == "f" and dst.kind in "iu":
        # The bounds as src floats, inside dst's range (int32's max is not a
        # float32: it would round up and wrap around on the cast).
        lo_f, hi_f = src.type(lo), src.type(hi)
        if float(hi_f) > hi:
            hi_f = np.nextafter(hi_f, src.type(0))
        if float(lo_f) < lo:
            lo_f = np.nextafter(lo_f, src.type(0))
        lo, hi = lo_f, hi_f
    if lo > slo or hi < shi:
        x = K.clip(x, src.type(lo), src.type(hi))
    return K.cast(x, dst.name)


def _convert(x, dtype, saturate=False):
    src, dst = _dtype(x), np.dtype(dtype)
    for d in (src, dst):
        if d.kind not in "iuf":
            raise TypeError(f"convert_image_dtype converts between integer and "
                            f"floating-point images. Received: {src.name} to "
                            f"{dst.name}.")
    if src == dst:
        return x
    if src.kind in "iu" and dst.kind in "iu":
        smax, dmax = int(np.iinfo(src).max), int(np.iinfo(dst).max)
        if smax > dmax:
            scaled = K.floor_divide(x, src.type((smax + 1) // (dmax + 1)))
            return _saturate_cast(scaled, dst) if saturate else K.cast(scaled, dst.name)
        cast = _saturate_cast(x, dst) if saturate else K.cast(x, dst.name)
        return K.multiply(cast, dst.type((dmax + 1) // (smax + 1)))
    if src.kind == "f" and dst.kind == "f":
        return K.cast(x, dst.name)
    if src.kind in "iu":  # int -> float: [0, MAX] to [0, 1]
        return K.multiply(K.cast(x, dst.name), dst.type(1.0 / np.iinfo(src).max))
    # float -> int: [0, 1] to [0, MAX]; + 0.5 so that 1.0 maps to MAX.
    scaled = K.multiply(x, src.type(np.iinfo(dst).max + 0.5))
    return _saturate_cast(scaled, dst) if saturate else K.cast(scaled, dst.name)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """``image`` converted to ``dtype``, rescaling its values: floats are in
    [0, 1), integers in [0, MAX] of their dtype (TF's ``convert_image_dtype``).

    Integer to float multiplies by ``1 / MAX``; float to integer multiplies
    by ``MAX + 0.5`` and truncates; between integers, a shift by the ratio of
    the ranges (floor division or multiplication); between floats, a cast.

    Args:
        image: tensor or array of any shape, integer or float dtype.
        dtype: the target integer or float dtype (``tf.float32``, "uint8").
        saturate: clip to the target's range before casting (so an
            out-of-range float cannot wrap around).

    Returns:
        ``image`` in ``dtype``, same shape (``image`` itself when the dtypes
        already agree).

    Raises:
        TypeError: a dtype that is neither integer nor floating point.
    """
    x = _tensor(image, "convert_image_dtype")
    return _out(_convert(x, resolve(dtype), saturate))


# -- resize ----------------------------------------------------------------------------
def _method(method, who, supported):
    key = method.lower() if isinstance(method, str) else method
    name = _METHODS.get(key)
    if name not in supported:
        raise NotImplementedError(
            f"{who} supports the methods {' and '.join(supported)} "
            f"(ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR) in "
            f"kerasflow.compat.v1. Received: method={name or method!r}.")
    return name


def _aspect_size(x, size):
    """TF's ``preserve_aspect_ratio``: the largest size of the image's aspect
    ratio fitting in ``size`` (float32 arithmetic, round half to even)."""
    h, w = _hw(x, "resize with preserve_aspect_ratio")
    f32 = np.float32
    scale = min(f32(size[0]) / f32(h), f32(size[1]) / f32(w))
    return int(np.round(f32(scale * f32(h)))), int(np.round(f32(scale * f32(w))))


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """Images resized to ``size`` as TF 2's ``tf.image.resize`` does:
    half-pixel centers, bilinear or nearest neighbour (computed by
    ``kerasflow.ops.image.resize``, Keras 3's ``ops.image.resize``).

    Args:
        images: 3-D (H, W, C) or 4-D (N, H, W, C) tensor or array, any numeric
            dtype; H and W static.
        size: (new_height, new_width), Python ints.
        method: ``ResizeMethod.BILINEAR``/"bilinear" or
            ``ResizeMethod.NEAREST_NEIGHBOR``/"nearest".
        preserve_aspect_ratio: resize to the largest size of the input's
            aspect ratio that fits in ``size``.
        antialias: False only.

    Returns:
        float32 images of the new size (nearest neighbour keeps the input's
        dtype), of the input's rank.

    Raises:
        NotImplementedError: bicubic, area or another method, or antialias.
        ValueError: images not 3-D or 4-D, unknown height or width.
        TypeError: ``size`` not two ints.
    """
    x = _image(images, "resize")
    size = _size(size, "resize")
    how = _method(method, "resize", ("bilinear", "nearest"))
    if antialias:
        raise NotImplementedError("resize(antialias=True) is not provided by "
                                  "kerasflow.compat.v1. Received: antialias=True.")
    _hw(x, "resize")
    if preserve_aspect_ratio:
        size = _aspect_size(x, size)
    if how == "bilinear" and _dtype(x) != np.float32:
        x = K.cast(x, "float32")
    return _out(_kimage.resize(x, size, interpolation=how,
                               data_format="channels_last"))


def _legacy_positions(n_in, n_out, align_corners, half_pixel, nearest):
    """TF1's resize kernels (``resize_bilinear_op.cc``,
    ``resize_nearest_neighbor_op.cc``): for each output row, the input rows
    read and the weight of the second one, in float32 as TF computes them."""
    f32 = np.float32
    if align_corners and n_out > 1:
        scale = f32(n_in - 1) / f32(n_out - 1)
    else:
        scale = f32(n_in) / f32(n_out)
    out = np.arange(n_out, dtype=f32)
    if nearest:
        src = (out + f32(0.5)) * scale if half_pixel else out * scale
        # roundf (half away from zero) with align_corners, floor otherwise.
        idx = np.floor(src + f32(0.5)) if align_corners else np.floor(src)
        return np.minimum(idx.astype(np.int64), n_in - 1), None, None
    src = (out + f32(0.5)) * scale - f32(0.5) if half_pixel else out * scale
    low = np.floor(src)
    lerp = (src - low).astype(f32)
    low = low.astype(np.int64)
    top = np.clip(low, 0, n_in - 1)
    bottom = np.minimum(low + 1, n_in - 1)
    return top, bottom, lerp


def _resize_axis(x, axis, n_out, align_corners, half_pixel, nearest):
    """``x`` resized along ``axis`` with TF1's legacy kernels: gathers of
    static rows and constant weights."""
    n_in = int(x.shape[axis])
    a, b, lerp = _legacy_positions(n_in, n_out, align_corners, half_pixel, nearest)
    if nearest:
        return K.gather(x, a, axis=axis)
    first, second = K.gather(x, a, axis=axis), K.gather(x, b, axis=axis)
    w = lerp.reshape((n_out,) + (1,) * (len(x.shape) - axis - 1))
    return first + (second - first) * w


def _legacy_resize(x, size, method, align_corners, half_pixel):
    nearest = method == "nearest"
    if not nearest and _dtype(x) != np.float32:
        x = K.cast(x, "float32")
    ax_h, ax_w = _axes(x)
    # Width first, then height: TF's top = lerp(top_left, top_right, x_lerp),
    # bottom likewise, then lerp(top, bottom, y_lerp).
    y = _resize_axis(x, ax_w, size[1], align_corners, half_pixel, nearest)
    return _resize_axis(y, ax_h, size[0], align_corners, half_pixel, nearest)


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """Images resized to ``size`` with TF1's kernels (TF 1.15's
    ``tf.image.resize_images``): an output pixel ``o`` reads the input at
    ``o * in / out``, or at ``o * (in - 1) / (out - 1)`` with
    ``align_corners`` (the corner pixels' centers then match); bilinear
    interpolates between the two neighbouring pixels (the last one
    repeated), nearest takes ``floor`` (``round`` with ``align_corners``).

    Upsampling ``[[0, 1], [2, 3]]`` to 4x4 bilinearly gives the rows
    ``[0, .5, 1, 1], [1, 1.5, 2, 2], [2, 2.5, 3, 3], [2, 2.5, 3, 3]``.

    Args:
        images: 3-D (H, W, C) or 4-D (N, H, W, C), any numeric dtype, H and W
            static.
        size: (new_height, new_width), Python ints.
        method: ``ResizeMethod.BILINEAR`` or ``ResizeMethod.NEAREST_NEIGHBOR``.
        align_corners: see above.
        preserve_aspect_ratio: resize to the largest size of the input's
            aspect ratio that fits in ``size``.

    Returns:
        The images at the new size, float32 for bilinear, the input's dtype
        for nearest; ``images`` itself when the size is unchanged (as TF1).

    Raises:
        NotImplementedError: ``ResizeMethod.BICUBIC``, ``ResizeMethod.AREA``.
        ValueError: images not 3-D or 4-D, unknown height or width.
        TypeError: ``size`` not two ints.
    """
    x = _image(images, "resize_images")
    size = _size(size, "resize_images")
    how = _method(method, "resize_images", ("bilinear", "nearest"))
    h, w = _hw(x, "resize_images")
    if preserve_aspect_ratio:
        size = _aspect_size(x, size)
    if (h, w) == tuple(size):
        return _out(x)
    return _out(_legacy_resize(x, size, how, bool(align_corners), False))


def _resize_4d(images, size, method, align_corners, half_pixel_centers, who):
    x = _image(images, who, ranks=(4,))
    size = _size(size, who)
    _hw(x, who)
    if align_corners and half_pixel_centers:
        raise ValueError(f"{who} expects at most one of align_corners and "
                         f"half_pixel_centers. Received: both True.")
    return _out(_legacy_resize(x, size, method, bool(align_corners),
                               bool(half_pixel_centers)))


def resize_bilinear(images, size, align_corners=False, name=None,
                    half_pixel_centers=False):
    """TF1's ``tf.image.resize_bilinear``: 4-D (N, H, W, C) images to ``size``,
    float32 (``resize_images``' kernel; ``half_pixel_centers`` reads the input
    at ``(o + 0.5) * in / out - 0.5``).

    Raises:
        ValueError: images not 4-D; align_corners and half_pixel_centers both.
    """
    return _resize_4d(images, size, "bilinear", align_corners, half_pixel_centers,
                      "resize_bilinear")


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """TF1's ``tf.image.resize_nearest_neighbor``: 4-D (N, H, W, C) images to
    ``size``, same dtype (``half_pixel_centers`` reads the input at
    ``floor((o + 0.5) * in / out)``).

    Raises:
        ValueError: images not 4-D; align_corners and half_pixel_centers both.
    """
    return _resize_4d(images, size, "nearest", align_corners, half_pixel_centers,
                      "resize_nearest_neighbor")


# -- flips and rotations ---------------------------------------------------------------
def flip_left_right(image):
    """``image`` mirrored along its width (3-D or 4-D, any dtype)."""
    x = _image(image, "flip_left_right")
    return _out(K.flip(x, _axes(x)[1]))


def flip_up_down(image):
    """``image`` mirrored along its height (3-D or 4-D, any dtype)."""
    x = _image(image, "flip_up_down")
    return _out(K.flip(x, _axes(x)[0]))


def _random_flip(image, seed, axis_index, who):
    x = _image(image, who)
    flipped = K.flip(x, _axes(x)[axis_index])
    if len(x.shape) == 3:
        mirror = K.less(_uniform(x, (), 0.0, 1.0, seed), 0.5)
    else:  # one draw per image of the batch
        u = _uniform(x, (_batch(x),), 0.0, 1.0, seed)
        mirror = K.reshape(K.less(u, 0.5), (-1, 1, 1, 1))
    return _out(K.where(mirror, flipped, x))


def random_flip_left_right(image, seed=None):
    """``image`` mirrored along its width with probability 1/2, drawn at every
    run; a 4-D batch draws once per image (TF 1.15's semantics).

    Args:
        image: 3-D (H, W, C) or 4-D (N, H, W, C), any dtype; N may be unknown.
        seed: int for a reproducible sequence of draws, or None.

    Raises:
        ValueError: ``image`` not 3-D or 4-D.
    """
    return _random_flip(image, seed, 1, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """``image`` mirrored along its height with probability 1/2, as
    ``random_flip_left_right`` (one draw per image of a batch)."""
    return _random_flip(image, seed, 0, "random_flip_up_down")


def transpose(image, name=None):
    """``image`` with height and width swapped (3-D or 4-D)."""
    x = _image(image, "transpose")
    perm = (1, 0, 2) if len(x.shape) == 3 else (0, 2, 1, 3)
    return _out(K.transpose(x, perm))


transpose_image = transpose


def rot90(image, k=1, name=None):
    """``image`` rotated counter-clockwise by ``k`` quarter turns: equal to
    ``np.rot90(image, k, axes=(H, W))``.

    Args:
        image: 3-D (H, W, C) or 4-D (N, H, W, C), any dtype.
        k: a Python int (negative turns clockwise).

    Raises:
        TypeError: ``k`` not a Python int (a tensor: kerasflow needs it static).
        ValueError: ``image`` not 3-D or 4-D.
    """
    x = _image(image, "rot90")
    if K.is_symbolic(k) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"rot90 in kerasflow.compat.v1 expects k as a Python int. "
                        f"Received: k={k!r}.")
    k = int(k) % 4
    ax_h, ax_w = _axes(x)
    perm = list(range(len(x.shape)))
    perm[ax_h], perm[ax_w] = ax_w, ax_h
    if k == 0:
        return _out(K.identity(x))
    if k == 1:
        return _out(K.transpose(K.flip(x, ax_w), tuple(perm)))
    if k == 2:
        return _out(K.flip(x, (ax_h, ax_w)))
    return _out(K.flip(K.transpose(x, tuple(perm)), ax_w))


# -- crops and pads --------------------------------------------------------------------
def _crop_axis(x, axis, offset, size):
    """``size`` entries of ``x`` along ``axis`` from ``offset``: a slice for an
    int offset, a gather for one known only at run time."""
    if not K.is_symbolic(offset):
        key = [slice(None)] * len(x.shape)
        key[axis] = slice(int(offset), int(offset) + size)
        return K.getitem(x, tuple(key))
    idx = K.add(K.cast(offset, "int64"), np.arange(size, dtype=np.int64))
    return K.gather(x, idx, axis=axis)


def crop_to_bounding_box(image, offset_height, offset_width, target_height,
                         target_width):
    """The ``target_height`` x ``target_width`` window of ``image`` whose top
    left corner is at (``offset_height``, ``offset_width``).

    Args:
        image: 3-D (H, W, C) or 4-D (N, H, W, C), any dtype.
        offset_height, offset_width: ints >= 0, or scalar int tensors (read at
            run time).
        target_height, target_width: ints > 0.

    Returns:
        The window, same rank and dtype.

    Raises:
        ValueError: a negative offset, a non-positive target, or a window
            beyond the image (when the sizes are static).
    """
    who = "crop_to_bounding_box"
    x = _image(image, who)
    th = _check_int(target_height, "target_height", who, 1)
    tw = _check_int(target_width, "target_width", who, 1)
    ax_h, ax_w = _axes(x)
    for name, off, target, dim in (("height", offset_height, th, x.shape[ax_h]),
                                   ("width", offset_width, tw, x.shape[ax_w])):
        if K.is_symbolic(off):
            continue
        off = _check_int(off, f"offset_{name}", who, 0)
        if dim is not None and off + target > dim:
            raise ValueError(f"{who} expects offset_{name} + target_{name} <= the "
                             f"image {name} ({dim}). Received: offset_{name}={off}, "
                             f"target_{name}={target}.")
    y = _crop_axis(x, ax_h, offset_height, th)
    return _out(_crop_axis(y, ax_w, offset_width, tw))


def pad_to_bounding_box(image, offset_height, offset_width, target_height,
                        target_width):
    """``image`` padded with zeros to ``target_height`` x ``target_width``, its
    top left corner at (``offset_height``, ``offset_width``).

    Args:
        image: 3-D (H, W, C) or 4-D (N, H, W, C), any dtype, H and W static.
        offset_height, offset_width, target_height, target_width: Python ints.

    Returns:
        The padded images, same rank and dtype.

    Raises:
        ValueError: a negative offset, or a target smaller than offset + size.
    """
    who = "pad_to_bounding_box"
    x = _image(image, who)
    h, w = _hw(x, who)
    oh = _check_int(offset_height, "offset_height", who, 0)
    ow = _check_int(offset_width, "offset_width", who, 0)
    th = _check_int(target_height, "target_height", who)
    tw = _check_int(target_width, "target_width", who)
    after_h, after_w = th - oh - h, tw - ow - w
    if after_h < 0 or after_w < 0:
        raise ValueError(f"{who} expects target_height >= offset_height + height "
                         f"and target_width >= offset_width + width. Received: "
                         f"image {h}x{w}, offsets ({oh}, {ow}), target {th}x{tw}.")
    pads = [(0, 0)] * len(x.shape)
    ax_h, ax_w = _axes(x)
    pads[ax_h], pads[ax_w] = (oh, after_h), (ow, after_w)
    return _out(K.pad(x, pads))


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """``image`` center-cropped and/or zero-padded to ``target_height`` x
    ``target_width``: TF's offsets, ``(size - target) // 2`` cropped off the
    top/left, ``(target - size) // 2`` padded there.

    Args:
        image: 3-D (H, W, C) or 4-D (N, H, W, C), any dtype, H and W static.
        target_height, target_width: Python ints > 0.

    Raises:
        ValueError: a non-positive target, images not 3-D or 4-D.
    """
    who = "resize_image_with_crop_or_pad"
    x = _image(image, who)
    h, w = _hw(x, who)
    th = _check_int(target_height, "target_height", who, 1)
    tw = _check_int(target_width, "target_width", who, 1)
    crop_h, crop_w = max((h - th) // 2, 0), max((w - tw) // 2, 0)
    pad_h, pad_w = max((th - h) // 2, 0), max((tw - w) // 2, 0)
    cropped = crop_to_bounding_box(x, crop_h, crop_w, min(th, h), min(tw, w))
    return pad_to_bounding_box(cropped, pad_h, pad_w, th, tw)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def central_crop(image, central_fraction):
    """The central ``central_fraction`` of ``image``'s height and width: TF
    removes ``int((size - size * fraction) / 2)`` from each side.

    Args:
        image: 3-D (H, W, C) or 4-D (N, H, W, C), any dtype, H and W static.
        central_fraction: float in (0, 1].

    Raises:
        ValueError: ``central_fraction`` outside (0, 1].
    """
    x = _image(image, "central_crop")
    fraction = float(central_fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"central_crop expects central_fraction in (0, 1]. "
                         f"Received: central_fraction={central_fraction}.")
    if fraction == 1.0:
        return _out(x)
    h, w = _hw(x, "central_crop")
    top, left = int((h - h * fraction) / 2), int((w - w * fraction) / 2)
    return crop_to_bounding_box(x, top, left, h - 2 * top, w - 2 * left)


def random_crop(value, size, seed=None, name=None):
    """A ``size`` window of ``value`` at a uniformly random offset, drawn at
    every run (TF's ``tf.random_crop``: each offset in [0, dim - size]).

    Args:
        value: tensor or array of any rank and dtype; dims may be unknown
            until run time.
        size: one Python int per axis of ``value``.
        seed: int for a reproducible sequence of draws, or None.

    Returns:
        Tensor of shape ``size``, ``value``'s dtype.

    Raises:
        ValueError: ``size`` of the wrong length, or larger than a static dim
            (at run time: a dim smaller than ``size``).
        TypeError: ``size`` entries that are not ints.
    """
    who = "random_crop"
    x = _tensor(value, who)
    if x.shape is None:
        raise ValueError(f"{who} expects a value of known rank. Received: {x!r}.")
    if K.is_symbolic(size) or len(size) != len(x.shape):
        raise ValueError(f"{who} expects size with one int per axis of value "
                         f"(shape {tuple(x.shape)}). Received: size={size!r}.")
    size = [_check_int(s, "size", who, 0) for s in size]
    for d, s in zip(x.shape, size):
        if d is not None and s > d:
            raise ValueError(f"{who} expects size <= value.shape. Received: "
                             f"size={size}, value.shape={tuple(x.shape)}.")
    axes = [i for i, (d, s) in enumerate(zip(x.shape, size)) if d != s]
    if not axes:
        return _out(K.identity(x))
    u = _uniform(x, (len(axes),), 0.0, 1.0, seed, "float64")
    for j, axis in enumerate(axes):
        dim = x.shape[axis]
        if dim is None:
            limit = K.cast(K.getitem(K.shape_of(x), axis) - size[axis] + 1,
                           "float64")
            hi = K.cast(limit - 1.0, "int64")
        else:
            limit = float(dim - size[axis] + 1)
            hi = dim - size[axis]
        # floor(u * limit) is in [0, limit); the min guards a rounded-up product.
        offset = K.minimum(K.cast(K.floor(K.getitem(u, j) * limit), "int64"), hi)
        x = _crop_axis(x, axis, offset, size[axis])
    return _out(x)


# -- brightness, contrast, standardization --------------------------------------------
def _as_float(x):
    """float16/float32 images as they are, others converted to float32 in [0, 1]
    (TF's adjust_* functions)."""
    return x if _dtype(x) in (np.float16, np.float32) else _convert(x, np.float32)


def adjust_brightness(image, delta):
    """``image + delta``, computed in float ([0, 1] for integer images) and
    converted back to ``image``'s dtype with saturation (TF's
    ``adjust_brightness``).

    Args:
        image: any shape, integer or float dtype.
        delta: a scalar (Python float or scalar tensor) added to every value.

    Returns:
        Same shape and dtype as ``image``.
    """
    x = _tensor(image, "adjust_brightness")
    flt = _as_float(x)
    delta = K.cast(delta, _dtype(flt).name) if K.is_symbolic(delta) else \
        np.asarray(delta, _dtype(flt))
    return _out(_convert(K.add(flt, delta), _dtype(x), saturate=True))


def random_brightness(image, max_delta, seed=None):
    """``adjust_brightness`` by one delta uniform in [-max_delta, max_delta),
    drawn at every run (one delta for the whole tensor, as TF).

    Raises:
        ValueError: ``max_delta`` < 0.
    """
    if max_delta < 0:
        raise ValueError(f"random_brightness expects max_delta >= 0. Received: "
                         f"max_delta={max_delta}.")
    x = _tensor(image, "random_brightness")
    delta = _uniform(x, (), -float(max_delta), float(max_delta), seed)
    return adjust_brightness(x, delta)


def adjust_contrast(images, contrast_factor):
    """``(x - mean) * contrast_factor + mean`` per channel, the mean over each
    image's height and width, in float and converted back to the input's
    dtype with saturation (TF's ``adjust_contrast``).

    Args:
        images: 3-D (H, W, C) or 4-D (N, H, W, C), integer or float dtype.
        contrast_factor: a scalar (Python float or scalar tensor).

    Returns:
        Same shape and dtype as ``images``.

    Raises:
        ValueError: ``images`` not 3-D or 4-D.
    """
    x = _image(images, "adjust_contrast")
    flt = _as_float(x)
    factor = K.cast(contrast_factor, _dtype(flt).name) if K.is_symbolic(
        contrast_factor) else np.asarray(contrast_factor, _dtype(flt))
    mean = K.mean(flt, axis=_axes(flt), keepdims=True)
    adjusted = K.add(K.multiply(K.subtract(flt, mean), factor), mean)
    return _out(_convert(adjusted, _dtype(x), saturate=True))


def random_contrast(image, lower, upper, seed=None):
    """``adjust_contrast`` by one factor uniform in [lower, upper), drawn at
    every run.

    Raises:
        ValueError: ``upper <= lower`` or ``lower < 0``.
    """
    if upper <= lower:
        raise ValueError(f"random_contrast expects upper > lower. Received: "
                         f"lower={lower}, upper={upper}.")
    if lower < 0:
        raise ValueError(f"random_contrast expects lower >= 0. Received: "
                         f"lower={lower}.")
    x = _image(image, "random_contrast")
    factor = _uniform(x, (), float(lower), float(upper), seed)
    return adjust_contrast(x, factor)


def per_image_standardization(image):
    """Each image scaled to mean 0 and variance 1: ``(x - mean) /
    max(stddev, 1 / sqrt(num_elements))`` over its height, width and
    channels (TF 1.15's ``per_image_standardization``; the values are cast
    to float32, not rescaled to [0, 1]).

    Args:
        image: 3-D (H, W, C) or 4-D (N, H, W, C), any numeric dtype; a 4-D
            batch is standardized image by image.

    Returns:
        float32, same shape.

    Raises:
        ValueError: ``image`` not 3-D or 4-D.
    """
    x = K.cast(_image(image, "per_image_standardization"), "float32")
    axes = (-3, -2, -1)
    dims = x.shape[-3:]
    if None in dims:
        count = K.cast(K.prod(K.getitem(K.shape_of(x), slice(-3, None))), "float32")
        min_std = K.rsqrt(count)
    else:
        min_std = np.float32(1.0 / np.sqrt(np.float32(np.prod(dims))))
    mean = K.mean(x, axis=axes, keepdims=True)
    centered = K.subtract(x, mean)
    std = K.sqrt(K.mean(K.square(centered), axis=axes, keepdims=True))
    return _out(K.divide(centered, K.maximum(std, min_std)))


# -- colors ----------------------------------------------------------------------------
def rgb_to_grayscale(images, name=None):
    """One channel, ``0.2989 R + 0.5870 G + 0.1140 B``, computed in float
    ([0, 1] for integer images) and converted back to the input's dtype (TF's
    ``rgb_to_grayscale``).

    Args:
        images: (..., 3), integer or float dtype.

    Returns:
        (..., 1), the input's dtype.

    Raises:
        ValueError: a last dimension other than 3.
    """
    x = _tensor(images, "rgb_to_grayscale")
    if x.shape is None or not x.shape or x.shape[-1] != 3:
        raise ValueError(f"rgb_to_grayscale expects images whose last dimension "
                         f"is 3 (RGB). Received: shape="
                         f"{None if x.shape is None else tuple(x.shape)}.")
    flt = _convert(x, np.float32)
    weights = np.array([0.2989, 0.5870, 0.1140], np.float32)
    gray = K.sum(K.multiply(flt, weights), axis=-1, keepdims=True)
    return _out(_convert(gray, _dtype(x)))


def grayscale_to_rgb(images, name=None):
    """The single channel repeated three times: (..., 1) to (..., 3).

    Raises:
        ValueError: a last dimension other than 1, or rank < 2.
    """
    x = _tensor(images, "grayscale_to_rgb")
    if x.shape is None or len(x.shape) < 2 or x.shape[-1] != 1:
        raise ValueError(f"grayscale_to_rgb expects images of rank >= 2 whose last "
                         f"dimension is 1. Received: shape="
                         f"{None if x.shape is None else tuple(x.shape)}.")
    return _out(K.tile(x, (1,) * (len(x.shape) - 1) + (3,)))
