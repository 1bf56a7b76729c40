"""``kerasflow.ops.image``: Keras 3's ``keras.ops.image``: resizing and
resampling (``resize``, ``scale_and_translate``, ``map_coordinates``,
``affine_transform``, ``perspective_transform``, ``elastic_transform``),
color conversions, cropping and padding, patch extraction, filters (Gaussian
blur, Sobel edges) and ``ssim``.

All are composed from differentiable backend ops, so gradients reach the
images: ``resize`` and ``scale_and_translate`` apply per-axis weight matrices
(``resize``: half-pixel centers, a triangle filter; ``scale_and_translate``:
JAX's ``jax.image.scale_and_translate`` kernels, 'linear', 'cubic' (Keys),
'lanczos3', 'lanczos5', widened by 1 / scale when antialiasing a downscale);
the resamplers gather the neighbouring pixels and weight them (bilinear or
nearest, with the fill modes of ``scipy.ndimage`` as Keras' numpy backend pads
for them), so gradients reach (for ``map_coordinates``) the coordinates too.
``elastic_transform`` (Simard et al., 2003) draws its displacements from
``numpy.random.default_rng([seed, 0])``, Keras' numpy-backend stream, so a
given int seed gives Keras' field. Images are (batch, H, W, C) or (H, W, C)
(channels_first: channels before H, W). Source: Keras 3's ``keras.ops.image``
(numpy backend semantics).
"""

from __future__ import annotations

import itertools

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph import is_symbolic
from kerasflow.ops.common import dtype_of, rank, tensor
from kerasflow.ops.nn import conv

__all__ = ["affine_transform", "crop_images", "elastic_transform", "extract_patches",
           "extract_patches_3d", "gaussian_blur", "hsv_to_rgb", "map_coordinates",
           "pad_images", "perspective_transform", "resize", "rgb_to_grayscale",
           "rgb_to_hsv", "scale_and_translate", "sobel_edges", "ssim"]

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


# -- resize ----------------------------------------------------------------------------
def _resize_weights(n_in, n_out, method, dtype):
    """(n_out, n_in) interpolation weights, pixel centers at half-integers."""
    centers = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    j = np.arange(n_in)
    if method == "nearest":
        idx = np.clip(np.floor(centers + 0.5), 0, n_in - 1).astype(int)
        w = np.zeros((n_out, n_in))
        w[np.arange(n_out), idx] = 1.0
        return w.astype(dtype)
    w = np.maximum(0.0, 1.0 - np.abs(j[None, :] - centers[:, None]))
    return (w / w.sum(axis=1, keepdims=True)).astype(dtype)


def resize(images, size, interpolation="bilinear", antialias=False,
           crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
           fill_mode="constant", fill_value=0.0, data_format=None):
    """Images resized to ``size`` = (height, width).

    Args:
        images: float (batch, H, W, C) or (H, W, C); channels_first with
            ``data_format="channels_first"``.
        size: (height, width) of the output.
        interpolation: "bilinear" (half-pixel centers, a triangle filter) or
            "nearest".
        antialias: False only.

    Returns:
        The resized images, same layout and dtype.

    Raises:
        NotImplementedError: antialiasing, cropping or padding to the aspect
            ratio, other interpolations.
        ValueError: images of rank other than 3 or 4.
    """
    if antialias or crop_to_aspect_ratio or pad_to_aspect_ratio or \
            interpolation not in ("bilinear", "nearest"):
        raise NotImplementedError(
            f"resize supports interpolation 'bilinear' or 'nearest' without "
            f"antialias, cropping or padding. Received: "
            f"interpolation={interpolation!r}, antialias={antialias!r}.")
    n = len(images.shape)
    if n not in (3, 4):
        raise ValueError(f"resize expects images of rank 3 or 4. Received: "
                         f"images.shape={tuple(images.shape)}")
    x = images if n == 4 else K.expand_dims(images, 0)
    fmt = K.image_data_format() if data_format is None else data_format
    if fmt == "channels_first":
        x = K.transpose(x, (0, 2, 3, 1))
    dtype = np.dtype(x.dtype)
    wy = _resize_weights(x.shape[1], int(size[0]), interpolation, dtype)
    wx = _resize_weights(x.shape[2], int(size[1]), interpolation, dtype)
    y = K.einsum("oh,bhwc,pw->bopc", wy, x, wx)
    return _restore(y, fmt, n == 4)


# -- colors ----------------------------------------------------------------------------
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


# -- crop, pad, patches ----------------------------------------------------------------
def _two_of(a, b, target, names):
    if [a, b, target].count(None) != 1:
        raise ValueError(f"Must specify exactly two of {', '.join(names)}. "
                         f"Received: {names[0]}={a}, {names[1]}={b}, "
                         f"{names[2]}={target}")
    _non_negative(*zip((a, b, target), names))


def _non_negative(*pairs):
    """Raises naming the first negative value of the ``(value, name)`` pairs
    (None: not given)."""
    for v, n in pairs:
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
    _non_negative((top, "top_padding"), (bottom, "bottom_padding"),
                  (left, "left_padding"), (right, "right_padding"))
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
    _non_negative((top, "top_cropping"), (th, "target_height"),
                  (left, "left_cropping"), (tw, "target_width"))
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
    y = conv(x, kernel, strides=size if not strides else strides,
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


# -- filters ---------------------------------------------------------------------------
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


def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01,
         k2=0.03, data_format=None):
    """Structural similarity (Wang et al., 2004) per image pair: Gaussian
    (``filter_size``, ``filter_sigma``) local statistics over 'valid' windows,
    averaged over pixels and channels. Differentiable.

    Args:
        image1, image2: float images of one shape, (batch, H, W, C) or
            (H, W, C) (channels_first: channels before H, W).

    Returns:
        (batch,) SSIM values (a scalar for single images), image1's dtype.

    Raises:
        ValueError: images of rank other than 3 or 4.
    """
    a, fmt, batched = _images(image1, data_format, "ssim")
    b = _images(image2, data_format, "ssim")[0]
    dt = np.dtype(a.dtype)
    if dt.kind != "f":
        a, b = K.cast(a, K.floatx()), K.cast(b, K.floatx())
    b = K.cast(b, np.dtype(a.dtype).name)
    t = np.arange(filter_size, dtype=np.float64) - (filter_size - 1) / 2.0
    g = np.exp(-(t ** 2) / (2.0 * filter_sigma ** 2))
    g = g / g.sum()
    kernel = np.outer(g, g)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mu1, mu2 = _depthwise(a, kernel), _depthwise(b, kernel)
    s11 = _depthwise(a * a, kernel) - mu1 * mu1
    s22 = _depthwise(b * b, kernel) - mu2 * mu2
    s12 = _depthwise(a * b, kernel) - mu1 * mu2
    num = (2.0 * mu1 * mu2 + c1) * (2.0 * s12 + c2)
    den = (mu1 * mu1 + mu2 * mu2 + c1) * (s11 + s22 + c2)
    out = K.mean(num / den, axis=(1, 2, 3))
    out = out if batched else K.squeeze(out, 0)
    return out if dt.kind == "f" else K.cast(out, dt.name)


# -- resampling ------------------------------------------------------------------------
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


# -- scale_and_translate, elastic_transform --------------------------------------------
_METHODS = {"linear": "linear", "bilinear": "linear", "trilinear": "linear",
            "triangle": "linear", "cubic": "cubic", "bicubic": "cubic",
            "tricubic": "cubic", "lanczos3": "lanczos3", "lanczos5": "lanczos5"}


def _kernel(method, x):
    if method == "linear":
        return np.maximum(0.0, 1.0 - np.abs(x))
    if method == "cubic":  # Keys (1981), a = -0.5
        out = ((1.5 * x - 2.5) * x) * x + 1.0
        out = np.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
        return np.where(x >= 2.0, 0.0, out)
    radius = 3.0 if method == "lanczos3" else 5.0
    with np.errstate(divide="ignore", invalid="ignore"):
        y = radius * np.sin(np.pi * x) * np.sin(np.pi * x / radius)
        out = np.where(x > 1e-3, y / np.where(x != 0, np.pi ** 2 * x ** 2, 1.0), 1.0)
    return np.where(x > radius, 0.0, out)


def _scale_weights(n_in, n_out, scale, translation, method, antialias, dtype):
    """(n_in, n_out) resampling weights of one axis."""
    inv = 1.0 / scale
    kscale = max(inv, 1.0) if antialias else 1.0
    sample = (np.arange(n_out, dtype=dtype) + 0.5) * inv - translation * inv - 0.5
    x = np.abs(sample[None, :] - np.arange(n_in, dtype=dtype)[:, None]) / kscale
    w = _kernel(method, x)
    total = w.sum(axis=0, keepdims=True)
    w = np.where(np.abs(total) > 1000.0 * np.finfo(np.float32).eps,
                 w / np.where(total != 0, total, 1.0), 0.0)
    inside = (sample >= -0.5) & (sample <= n_in - 0.5)
    return np.where(inside[None, :], w, 0.0)


def scale_and_translate(images, output_shape, scale, translation, spatial_dims,
                        method, antialias=True):
    """``images`` resampled on ``spatial_dims`` to ``output_shape``: output
    sample i of an axis reads input position ``(i + 0.5 - translation) /
    scale - 0.5`` through the kernel of ``method``. Integer images are
    rounded and clipped to their input range.

    Raises:
        ValueError: an unknown method, or symbolic ``scale``/``translation``.
    """
    if method not in _METHODS:
        raise ValueError(f"Invalid value for argument `method`. Expected of one "
                         f"{sorted(_METHODS)}. Received: method={method}")
    if is_symbolic(scale) or is_symbolic(translation):
        raise ValueError("scale_and_translate needs concrete scale and translation "
                         "(arrays or numbers); they set the weight matrices.")
    x = tensor(images)
    scale = np.atleast_1d(np.asarray(K.to_numpy(scale)))
    translation = np.atleast_1d(np.asarray(K.to_numpy(translation)))
    wdt = np.result_type(scale.dtype, translation.dtype)
    wdt = wdt if wdt.kind == "f" else np.dtype("float32")
    ints = dtype_of(x).kind in "iub"
    out = K.cast(x, "float32") if ints else x
    for i, d in enumerate(spatial_dims):
        d = int(d) % rank(x)
        w = _scale_weights(x.shape[d], int(output_shape[d]), float(scale[i]),
                     float(translation[i]), _METHODS[method], antialias,
                     wdt).astype(dtype_of(out))
        out = K.tensordot(out, w, axes=([d], [0]))
        perm = list(range(rank(x) - 1))
        perm.insert(d, rank(x) - 1)
        out = K.transpose(out, tuple(perm))
    if ints:
        lo, hi = K.min(x), K.max(x)
        out = K.cast(K.clip(K.round(out), K.cast(lo, "float32"),
                            K.cast(hi, "float32")), dtype_of(x).name)
    return out


def elastic_transform(images, alpha=20.0, sigma=5.0, interpolation="bilinear",
                      fill_mode="reflect", fill_value=0.0, seed=None,
                      data_format=None):
    """Elastic deformation: every pixel moves by ``alpha`` times a random
    normal field smoothed by a Gaussian of ``sigma`` (kernel ``int(6 sigma) |
    1``), then the images are resampled ('bilinear' or 'nearest', points
    outside read by ``fill_mode``). The field is drawn once per call (in a
    graph: once, when the graph is built); with an int ``seed`` it is Keras'.

    Raises:
        ValueError: an unknown interpolation or fill mode, images of rank
            other than 3 or 4.
    """
    if interpolation not in ("bilinear", "nearest") or fill_mode not in FILL_MODES:
        raise ValueError(f"elastic_transform takes interpolation 'bilinear' or "
                         f"'nearest' and fill_mode in {FILL_MODES}. Received: "
                         f"interpolation={interpolation!r}, fill_mode={fill_mode!r}")
    x, fmt, batched = _images(images, data_format, "elastic_transform")
    dt = dtype_of(x)
    b, h, w = (int(v) for v in x.shape[:3])
    sigma = float(np.asarray(sigma, dt))
    alpha = float(np.asarray(alpha, dt))
    seed = np.random.randint(0, 2 ** 31) if seed is None else int(seed)
    rng = np.random.default_rng(np.array([seed & 0xFFFFFFFF, 0], "uint32"))
    size = int(6 * sigma) | 1
    fields = []
    for _ in range(2):
        noise = rng.normal(size=(b, h, w)).astype(dt) * np.asarray(sigma, dt)
        fields.append(np.asarray(K.to_numpy(gaussian_blur(
            noise[..., None], (size, size), (sigma, sigma), "channels_last")))[..., 0])
    dx, dy = fields
    gx, gy = np.meshgrid(np.arange(w), np.arange(h))
    in_x = (gx[None] + alpha * dx).astype(dt if dt.kind == "f" else "float32")
    in_y = (gy[None] + alpha * dy).astype(in_x.dtype)
    xf = x if dt.kind == "f" else K.cast(x, "float32")
    out = _sample_images(xf, in_y, in_x, interpolation, fill_mode, fill_value)
    out = out if dt.kind == "f" else K.cast(out, dt.name)
    return _restore(out, fmt, batched)
