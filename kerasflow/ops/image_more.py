"""More of Keras 3's ``keras.ops.image``: color conversions, cropping and
padding, patch extraction, Gaussian blur and Sobel edges, and resampling
(``map_coordinates``, ``affine_transform``, ``perspective_transform``).

All are composed from differentiable backend ops: the resamplers gather the
neighbouring pixels and weight them (bilinear or nearest, with the fill modes
of ``scipy.ndimage`` as Keras' numpy backend pads for them), so gradients
reach the images (and, for ``map_coordinates``, the coordinates). Images are
(batch, H, W, C) or (H, W, C) (channels_first: channels before H, W).
Source: Keras 3's ``keras.ops.image`` (numpy backend semantics).
"""

from __future__ import annotations

import itertools

import numpy as np

from kerasflow import backend as K
from kerasflow.ops import nn as _nn
from kerasflow.ops.common import dtype_of, rank, tensor

__all__ = ["affine_transform", "crop_images", "extract_patches",
           "extract_patches_3d", "gaussian_blur", "hsv_to_rgb", "map_coordinates",
           "pad_images", "perspective_transform", "rgb_to_grayscale", "rgb_to_hsv",
           "sobel_edges"]

FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _images(images, data_format, name):
    """NHWC images (a batch of one for a single image), the format and
    whether the input was batched."""
    x = tensor(images)
    if rank(x) not in (3, 4):
        raise ValueError(f"Invalid images rank: expected rank 3 (single image) or "
                         f"rank 4 (batch of images). Received input with shape: "
                         f"images.shape={tuple(x.shape)}")
    fmt = K.standardize_data_format(data_format)
    batched = rank(x) == 4
    x = x if batched else K.expand_dims(x, 0)
    if fmt == "channels_first":
        x = K.transpose(x, (0, 2, 3, 1))
    return x, fmt, batched


def _restore(y, fmt, batched):
    if fmt == "channels_first":
        y = K.transpose(y, (0, 3, 1, 2))
    return y if batched else K.squeeze(y, 0)


# -- colors -------------------------------------------------------------------------------
def rgb_to_grayscale(images, data_format=None):
    """Luma ``0.2989 R + 0.5870 G + 0.1140 B`` on one channel (the input's
    dtype; a 1-channel input is returned as is)."""
    x, fmt, batched = _images(images, data_format, "rgb_to_grayscale")
    c = x.shape[-1]
    if c not in (1, 3):
        raise ValueError(f"Invalid channel size: expected 3 (RGB) or 1 (Grayscale). "
                         f"Received input with shape: images.shape="
                         f"{tuple(tensor(images).shape)}")
    if c == 1:
        return tensor(images)
    dt = dtype_of(x)
    xf = x if dt.kind == "f" else K.cast(x, K.floatx())
    w = np.array([0.2989, 0.5870, 0.1140], dtype_of(xf))
    y = K.sum(xf * w, axis=-1, keepdims=True)
    return _restore(K.cast(y, dt.name) if dt != dtype_of(xf) else y, fmt, batched)


def _float_images(images, data_format, name):
    x, fmt, batched = _images(images, data_format, name)
    if dtype_of(x).kind != "f":
        raise ValueError(f"Invalid images dtype: expected float dtype. Received: "
                         f"images.dtype={dtype_of(x).name}")
    return x, fmt, batched


def rgb_to_hsv(images, data_format=None):
    """RGB in [0, 1] to hue, saturation, value in [0, 1] (dm_pix's formulas,
    as Keras). Float images."""
    x, fmt, batched = _float_images(images, data_format, "rgb_to_hsv")
    eps = float(np.finfo(dtype_of(x)).eps)
    x = K.where(K.less(K.abs(x), eps), K.zeros_like(x), x)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    value = K.maximum(K.maximum(r, g), b)
    rng = value - K.minimum(K.minimum(r, g), b)
    one = K.ones_like(value)
    safe_value = K.where(K.greater(value, 0.0), value, one)
    safe_range = K.where(K.greater(rng, 0.0), rng, one)
    sat = K.where(K.greater(value, 0.0), rng / safe_value, K.zeros_like(value))
    norm = 1.0 / (6.0 * safe_range)
    hue = K.where(K.equal(value, g), norm * (b - r) + 2.0 / 6.0,
                  norm * (r - g) + 4.0 / 6.0)
    hue = K.where(K.equal(value, r), norm * (g - b), hue)
    hue = K.where(K.greater(rng, 0.0), hue, K.zeros_like(hue)) + K.cast(
        K.less(hue, 0.0), dtype_of(hue).name)
    return _restore(K.stack([hue, sat, value], axis=-1), fmt, batched)


def hsv_to_rgb(images, data_format=None):
    """Hue, saturation, value in [0, 1] to RGB (dm_pix's formulas, as Keras).
    Float images."""
    x, fmt, batched = _float_images(images, data_format, "hsv_to_rgb")
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    dh = (h - K.floor(h)) * 6.0  # mod 1, with the gradient of h
    dr = K.clip(K.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = K.clip(2.0 - K.abs(dh - 2.0), 0.0, 1.0)
    db = K.clip(2.0 - K.abs(dh - 4.0), 0.0, 1.0)
    one_minus_s = 1.0 - s
    rgb = [v * (one_minus_s + s * d) for d in (dr, dg, db)]
    return _restore(K.stack(rgb, axis=-1), fmt, batched)


# -- crop, pad, patches ---------------------------------------------------------------------
def _two_of(a, b, target, names):
    if [a, b, target].count(None) != 1:
        raise ValueError(f"Must specify exactly two of {', '.join(names)}. "
                         f"Received: {names[0]}={a}, {names[1]}={b}, "
                         f"{names[2]}={target}")
    for v, n in zip((a, b, target), names):
        if v is not None and v < 0:
            raise ValueError(f"{n} must be >= 0. Received: {n}={v}")


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None,
               right_padding=None, target_height=None, target_width=None,
               data_format=None):
    """Zero-pads images; give two of (top, bottom, target_height) and two of
    (left, right, target_width)."""
    _two_of(top_padding, bottom_padding, target_height,
            ("top_padding", "bottom_padding", "target_height"))
    _two_of(left_padding, right_padding, target_width,
            ("left_padding", "right_padding", "target_width"))
    x, fmt, batched = _images(images, data_format, "pad_images")
    h, w = x.shape[1], x.shape[2]
    top = target_height - bottom_padding - h if top_padding is None else top_padding
    bottom = target_height - top - h if bottom_padding is None else bottom_padding
    left = target_width - right_padding - w if left_padding is None else left_padding
    right = target_width - left - w if right_padding is None else right_padding
    for v, n in ((top, "top_padding"), (bottom, "bottom_padding"),
                 (left, "left_padding"), (right, "right_padding")):
        if v < 0:
            raise ValueError(f"{n} must be >= 0. Received: {n}={v}")
    y = K.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]])
    return _restore(y, fmt, batched)


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None,
                right_cropping=None, target_height=None, target_width=None,
                data_format=None):
    """Crops images; give two of (top, bottom, target_height) and two of
    (left, right, target_width)."""
    _two_of(top_cropping, bottom_cropping, target_height,
            ("top_cropping", "bottom_cropping", "target_height"))
    _two_of(left_cropping, right_cropping, target_width,
            ("left_cropping", "right_cropping", "target_width"))
    x, fmt, batched = _images(images, data_format, "crop_images")
    h, w = x.shape[1], x.shape[2]
    top = h - target_height - bottom_cropping if top_cropping is None else top_cropping
    th = h - bottom_cropping - top if target_height is None else target_height
    left = w - target_width - right_cropping if left_cropping is None else \
        left_cropping
    tw = w - right_cropping - left if target_width is None else target_width
    for v, n in ((top, "top_cropping"), (th, "target_height"),
                 (left, "left_cropping"), (tw, "target_width")):
        if v < 0:
            raise ValueError(f"{n} must be >= 0. Received: {n}={v}")
    return _restore(x[:, top:top + th, left:left + tw, :], fmt, batched)


def _patches(images, size, strides, dilation_rate, padding, data_format, nd):
    x = tensor(images)
    size = (int(size),) * nd if isinstance(size, (int, np.integer)) else tuple(size)
    if len(size) != nd:
        raise TypeError(f"Invalid `size` argument. Expected an int or a tuple of "
                        f"length {nd}. Received: size={size}")
    fmt = K.standardize_data_format(data_format)
    c = x.shape[-1] if fmt == "channels_last" else x.shape[-1 - nd]
    out_dim = int(np.prod(size)) * c
    kernel = np.eye(out_dim, dtype=dtype_of(x)).reshape(size + (c, out_dim))
    batched = rank(x) == nd + 2
    x = x if batched else K.expand_dims(x, 0)
    y = _nn.conv(x, kernel, strides=size if not strides else strides,
                 padding=padding, data_format=fmt, dilation_rate=dilation_rate)
    return y if batched else K.squeeze(y, 0)


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid",
                    data_format=None):
    """Patches of ``size`` (an int, (h, w), or (d, h, w) for volumes) flattened
    onto the channel axis, in (row, column, channel) order: a convolution with
    an identity kernel, as Keras."""
    nd = 3 if not isinstance(size, (int, np.integer)) and len(size) == 3 else 2
    return _patches(images, size, strides, dilation_rate, padding, data_format, nd)


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid",
                       data_format=None):
    """3-D patches of volumes (batch, D, H, W, C) (see ``extract_patches``)."""
    return _patches(volumes, size, strides, dilation_rate, padding, data_format, 3)


def _depthwise(x, kernel2d):
    """Each channel of NHWC ``x`` correlated with ``kernel2d`` ('valid')."""
    c = x.shape[-1]
    k = np.tile(kernel2d[:, :, None, None], (1, 1, c, 1)).astype(dtype_of(x))
    return K.depthwise_conv2d(x, k, (1, 1), "valid", (1, 1))


def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """Each channel convolved with a normalized Gaussian (kernel height
    ``kernel_size[1]``, width ``kernel_size[0]``, as Keras), zero-padded to
    the input size."""
    x, fmt, batched = _images(images, data_format, "gaussian_blur")
    dt = dtype_of(x)
    if dt.kind != "f":
        x = K.cast(x, K.floatx())

    def k1d(size, s):
        t = np.arange(size, dtype=np.float64) - (size - 1) / 2
        k = np.exp(-0.5 * (t / s) ** 2)
        return k / k.sum()

    ks = [int(v) for v in np.broadcast_to(kernel_size, (2,))]
    sg = [float(v) for v in np.broadcast_to(sigma, (2,))]
    kernel = np.outer(k1d(ks[1], sg[1]), k1d(ks[0], sg[0]))[::-1, ::-1]
    kh, kw = kernel.shape
    ph, pw = (kh - 1) // 2, (kw - 1) // 2
    x = K.pad(x, [[0, 0], [ph, kh - 1 - ph], [pw, kw - 1 - pw], [0, 0]])
    y = _depthwise(x, kernel)
    return _restore(K.cast(y, dt.name) if dt.kind != "f" else y, fmt, batched)


def sobel_edges(images, data_format=None):
    """Sobel derivatives per channel, (batch, H, W, C, 2): [..., 0] along rows
    (y), [..., 1] along columns (x), edges extended by reflection
    (``scipy.ndimage.sobel``'s mode 'reflect')."""
    x = tensor(images)
    first = K.standardize_data_format(data_format) == "channels_first" and \
        data_format is not None
    x = K.transpose(x, (0, 2, 3, 1)) if first else x
    # A one-pixel symmetric extension repeats the edge pixel.
    x = K.concatenate([x[:, :1], x, x[:, -1:]], axis=1)
    x = K.concatenate([x[:, :, :1], x, x[:, :, -1:]], axis=2)
    d, s = np.array([-1.0, 0.0, 1.0]), np.array([1.0, 2.0, 1.0])
    y = K.stack([_depthwise(x, np.outer(d, s)), _depthwise(x, np.outer(s, d))],
                axis=-1)
    return K.transpose(y, (0, 3, 1, 2, 4)) if first else y


# -- resampling -------------------------------------------------------------------------------
def _fix_index(i, n, fill_mode):
    """Float integer-valued indices folded into [0, n) by ``fill_mode``."""
    if fill_mode in ("constant", "nearest"):
        return K.clip(i, 0.0, float(n - 1))
    if fill_mode == "wrap":
        return K.mod(i, float(n))
    if fill_mode == "reflect":  # d c b a | a b c d | d c b a
        m = K.mod(i, float(2 * n))
        return K.where(K.less(m, float(n)), m, float(2 * n - 1) - m)
    if n == 1:  # mirror: d c b | a b c d | c b a
        return K.zeros_like(i)
    m = K.mod(i, float(2 * n - 2))
    return K.where(K.less(m, float(n)), m, float(2 * n - 2) - m)


def _resample(flat, dims, coords, order, fill_mode, fill_value, base=None):
    """Values of ``flat`` ((prod(dims), ...) rows) at float ``coords`` (one
    tensor per dim), order 0 or 1; ``base`` offsets rows (a batch)."""
    strides = [int(np.prod(dims[i + 1:], dtype=np.int64)) for i in range(len(dims))]
    if order == 0:
        corners = [[(K.floor(c + 0.5), None)] for c in coords]
    else:
        corners = []
        for c in coords:
            lo = K.floor(c)
            w = c - lo
            corners.append([(lo, 1.0 - w), (lo + 1.0, w)])
    out = None
    dt = dtype_of(flat).name
    for combo in itertools.product(*corners):
        lin, inside, weight = base, None, None
        for (idx, w), n, st in zip(combo, dims, strides):
            fixed = _fix_index(idx, n, fill_mode) * float(st)
            lin = fixed if lin is None else lin + fixed
            ok = K.logical_and(K.greater_equal(idx, 0.0), K.less_equal(idx, n - 1.0))
            inside = ok if inside is None else K.logical_and(inside, ok)
            if w is not None:
                weight = w if weight is None else weight * w
        v = K.gather(flat, K.cast(lin, "int64"), axis=0)
        extra = rank(v) - rank(inside)
        if fill_mode == "constant":
            mask = inside
            for _ in range(extra):
                mask = K.expand_dims(mask, -1)
            v = K.where(mask, v, K.cast(K.ones_like(v) * fill_value, dt))
        if weight is not None:
            for _ in range(extra):
                weight = K.expand_dims(weight, -1)
            v = v * K.cast(weight, dt)
        out = v if out is None else out + v
    return out


def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0.0):
    """``inputs`` sampled at ``coordinates`` (rank(inputs), ...): order 0
    (nearest, half rounded up) or 1 (linear), points outside read by
    ``fill_mode`` ('constant', 'nearest', 'wrap', 'mirror', 'reflect').
    Differentiable in ``inputs`` and (order 1) ``coordinates``.

    Raises:
        ValueError: a coordinates' leading dim other than the input rank, an
            unknown order or fill mode.
    """
    x = tensor(inputs)
    coords = tensor(coordinates)
    if coords.shape[0] != rank(x) or rank(coords) < 2:
        raise ValueError(f"First dim of `coordinates` must be the same as the rank "
                         f"of `inputs`. Received inputs with shape: "
                         f"{tuple(x.shape)} and coordinate shape "
                         f"{tuple(coords.shape)}")
    if fill_mode not in FILL_MODES or order not in (0, 1):
        raise ValueError(f"map_coordinates takes order 0 or 1 and fill_mode in "
                         f"{FILL_MODES}. Received: order={order}, "
                         f"fill_mode={fill_mode!r}")
    dt = dtype_of(x)
    xf = x if dt.kind == "f" else K.cast(x, "float32")
    cf = K.cast(coords, dtype_of(xf).name)
    parts = [cf[i] for i in range(rank(x))]
    out = _resample(K.reshape(xf, (-1,)), tuple(x.shape), parts, order, fill_mode,
                    fill_value)
    return out if dt.kind == "f" else K.cast(out, dt.name)


def _sample_images(x, in_y, in_x, interpolation, fill_mode, fill_value):
    h, w, c = (int(d) for d in x.shape[1:])
    flat = K.reshape(x, (-1, c))
    ones = K.ones_like(x[:, :1, :1, 0])  # (batch, 1, 1)
    base = (K.cumsum(ones, axis=0) - 1.0) * float(h * w)
    # One transform for a batch of images applies to each of them.
    in_y, in_x = in_y + 0.0 * base, in_x + 0.0 * base
    order = 0 if interpolation == "nearest" else 1
    return _resample(flat, (h, w), [in_y, in_x], order, fill_mode, fill_value, base)


def _check_interp(interpolation, fill_mode):
    if interpolation not in ("bilinear", "nearest") or fill_mode not in FILL_MODES:
        raise ValueError(f"Invalid value for argument `interpolation` or "
                         f"`fill_mode`: expected 'bilinear'/'nearest' and one of "
                         f"{FILL_MODES}. Received: interpolation={interpolation!r}, "
                         f"fill_mode={fill_mode!r}")


def affine_transform(images, transform, interpolation="bilinear",
                     fill_mode="constant", fill_value=0, data_format=None):
    """Output pixel (x, y) of image b reads the input at ``(a0 x + a1 y + a2,
    b0 x + b1 y + b2)`` for ``transform[b] = [a0, a1, a2, b0, b1, b2, c0,
    c1]`` (c0, c1 taken as 0); ``transform`` (8,) or (batch, 8)."""
    _check_interp(interpolation, fill_mode)
    x, fmt, batched = _images(images, data_format, "affine_transform")
    dt = dtype_of(x)
    x = x if dt.kind == "f" else K.cast(x, "float32")
    t = K.cast(tensor(transform), dtype_of(x).name)
    t = t if rank(t) == 2 else K.expand_dims(t, 0)
    h, w = int(x.shape[1]), int(x.shape[2])
    ys, xs = (g.astype(dtype_of(x)) for g in np.meshgrid(np.arange(h), np.arange(w),
                                                         indexing="ij"))

    def col(i):
        return K.reshape(t[:, i], (-1, 1, 1))

    # backend ops: a numpy grid meets a device (cupy) array eagerly too
    in_x = K.add(K.add(K.multiply(col(0), xs), K.multiply(col(1), ys)), col(2))
    in_y = K.add(K.add(K.multiply(col(3), xs), K.multiply(col(4), ys)), col(5))
    y = _sample_images(x, in_y, in_x, interpolation, fill_mode, fill_value)
    y = y if dt.kind == "f" else K.cast(y, dt.name)
    return _restore(y, fmt, batched)


def _homography(start, end):
    """(batch, 8) projective transforms mapping ``end`` points onto ``start``
    (4 point pairs each), by solving the 8x8 system as Keras does."""
    rows, rhs = [], []
    for i in range(4):
        sx, sy = start[:, i, 0], start[:, i, 1]
        ex, ey = end[:, i, 0], end[:, i, 1]
        one, zero = K.ones_like(ex), K.zeros_like(ex)
        rows.append(K.stack([ex, ey, one, zero, zero, zero, -sx * ex, -sx * ey], -1))
        rows.append(K.stack([zero, zero, zero, ex, ey, one, -sy * ex, -sy * ey], -1))
        rhs += [sx, sy]
    a = K.stack(rows, axis=1)
    b = K.expand_dims(K.stack(rhs, axis=1), -1)
    return K.squeeze(K.solve(a, b), -1)


def perspective_transform(images, start_points, end_points, interpolation="bilinear",
                          fill_value=0, data_format=None):
    """Warps images so that ``start_points`` (4, 2) or (batch, 4, 2) (x, y)
    corners move to ``end_points``: output (x, y) reads the input at the
    homography's image of (x, y); points outside read ``fill_value``."""
    _check_interp(interpolation, "constant")
    x, fmt, batched = _images(images, data_format, "perspective_transform")
    dt = dtype_of(x)
    x = x if dt.kind == "f" else K.cast(x, "float32")
    cdt = dtype_of(x).name
    s, e = K.cast(tensor(start_points), cdt), K.cast(tensor(end_points), cdt)
    s = s if rank(s) == 3 else K.expand_dims(s, 0)
    e = e if rank(e) == 3 else K.expand_dims(e, 0)
    t = _homography(s, e)
    h, w = int(x.shape[1]), int(x.shape[2])
    xs, ys = (g.astype(cdt) for g in np.meshgrid(np.arange(w), np.arange(h),
                                                 indexing="xy"))

    def col(i):
        return K.reshape(t[:, i], (-1, 1, 1))

    den = col(6) * xs + col(7) * ys + 1.0
    in_x = (col(0) * xs + col(1) * ys + col(2)) / den
    in_y = (col(3) * xs + col(4) * ys + col(5)) / den
    y = _sample_images(x, in_y, in_x, interpolation, "constant", fill_value)
    y = y if dt.kind == "f" else K.cast(y, dt.name)
    return _restore(y, fmt, batched)
