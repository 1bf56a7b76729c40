"""Projective-free affine resampling of image batches, written with backend ops
so it runs eagerly and in graphs (Keras 3's ``keras.ops.image.affine_transform``
for the 'bilinear'/'nearest' interpolations and the five fill modes)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

__all__ = ["FILL_MODES", "affine_transform", "rotation_matrix"]

FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _fix_index(i, n, fill_mode):
    """Float integer-valued indices folded into [0, n) by ``fill_mode`` (the
    index fixers of JAX's ``map_coordinates``, which Keras follows)."""
    if fill_mode in ("constant", "nearest"):
        return K.clip(i, 0.0, float(n - 1))
    if fill_mode == "wrap":
        return K.mod(i, float(n))
    if fill_mode == "reflect":  # d c b a | a b c d | d c b a
        m = K.mod(i, float(2 * n))
        return K.where(m < n, m, float(2 * n - 1) - m)
    if n == 1:  # mirror: d c b | a b c d | c b a
        return K.zeros_like(i)
    m = K.mod(i, float(2 * n - 2))
    return K.where(m < n, m, float(2 * n - 2) - m)


def affine_transform(images, transform, interpolation="bilinear",
                     fill_mode="constant", fill_value=0.0,
                     data_format="channels_last"):
    """Each output pixel (x, y) of image b reads the input at
    ``(a0 x + a1 y + a2, b0 x + b1 y + b2)`` from ``transform[b] = [a0, a1, a2,
    b0, b1, b2, c0, c1]`` (c0 and c1 ignored, as Keras' numpy backend does).

    Args:
        images: float (batch, H, W, C) (or (batch, C, H, W) channels_first)
            with static H, W, C.
        transform: (batch, 8) floats, tensor or array.
        interpolation: 'bilinear' or 'nearest' (rounds half up, as scipy's
            order 0).
        fill_mode: how points outside the image read it: 'constant'
            (``fill_value``), 'nearest' (edge), 'wrap', 'mirror', 'reflect'.

    Returns:
        The resampled images, same shape and dtype; differentiable with
        respect to ``images``.

    Raises:
        ValueError: an unknown interpolation or fill mode.
    """
    if interpolation not in ("bilinear", "nearest") or fill_mode not in FILL_MODES:
        raise ValueError(
            f"affine_transform supports interpolation 'bilinear' or 'nearest' "
            f"and fill_mode in {FILL_MODES}. Received: interpolation="
            f"{interpolation!r}, fill_mode={fill_mode!r}")
    first = data_format == "channels_first"
    x = K.transpose(images, (0, 2, 3, 1)) if first else images
    h, w, c = (int(d) for d in x.shape[1:])
    dtype = np.dtype(x.dtype).name
    t = K.cast(transform, dtype)

    def col(i):
        return K.reshape(t[:, i], (-1, 1, 1))

    ys, xs = (g.astype(dtype) for g in np.meshgrid(np.arange(h), np.arange(w),
                                                   indexing="ij"))
    in_x = col(0) * xs + col(1) * ys + col(2)
    in_y = col(3) * xs + col(4) * ys + col(5)
    flat = K.reshape(x, (-1, c))
    # Offset of image b in the flattened (batch * H * W, C) pixels.
    base = (K.cumsum(K.ones_like(col(0)), axis=0) - 1.0) * float(h * w)

    def sample(iy, ix):
        fy, fx = _fix_index(iy, h, fill_mode), _fix_index(ix, w, fill_mode)
        v = K.gather(flat, K.cast(base + fy * float(w) + fx, "int64"))
        if fill_mode != "constant":
            return v
        inside = K.logical_and(K.logical_and(iy >= 0, iy <= h - 1),
                               K.logical_and(ix >= 0, ix <= w - 1))
        return K.where(K.expand_dims(inside, -1), v,
                       K.cast(K.ones_like(v) * fill_value, dtype))

    if interpolation == "nearest":
        out = sample(K.floor(in_y + 0.5), K.floor(in_x + 0.5))
    else:
        y0, x0 = K.floor(in_y), K.floor(in_x)
        wy, wx = K.expand_dims(in_y - y0, -1), K.expand_dims(in_x - x0, -1)
        out = ((1.0 - wy) * ((1.0 - wx) * sample(y0, x0) + wx * sample(y0, x0 + 1))
               + wy * ((1.0 - wx) * sample(y0 + 1, x0)
                       + wx * sample(y0 + 1, x0 + 1)))
    return K.transpose(out, (0, 3, 1, 2)) if first else out


def rotation_matrix(angle_degrees, height, width):
    """(batch, 8) transforms rotating about the image center by
    ``angle_degrees`` (batch,) (Keras' ``_compute_affine_matrix`` with no
    translation, scale 1 and no shear)."""
    angle = angle_degrees * np.float32(np.pi / 180.0)
    cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
    cos, sin = K.cos(angle), K.sin(angle)
    a0, a1, b0, b1 = cos, -sin, sin, cos
    a2 = cx - cx * a0 - cy * a1
    b2 = cy - cx * b0 - cy * b1
    zero = K.zeros_like(angle)
    return K.stack([a0, a1, a2, b0, b1, b2, zero, zero], axis=1)
