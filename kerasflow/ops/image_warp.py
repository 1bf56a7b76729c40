"""``scale_and_translate`` and ``elastic_transform`` of Keras 3's
``keras.ops.image``.

``scale_and_translate`` is separable resampling (JAX's
``jax.image.scale_and_translate``): per spatial axis, a (input, output) weight
matrix from the kernel ('linear', 'cubic' (Keys), 'lanczos3', 'lanczos5'),
widened by 1 / scale when antialiasing a downscale, applied by ``tensordot``:
differentiable in the images. ``elastic_transform`` (Simard et al., 2003)
resamples the images along Gaussian-smoothed random displacements drawn from
``numpy.random.default_rng([seed, 0])``, Keras' numpy-backend stream, so a
given int seed gives Keras' field.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph import is_symbolic
from kerasflow.ops.common import dtype_of, rank, tensor
from kerasflow.ops.image_more import (
    FILL_MODES, _images, _restore, _sample_images, gaussian_blur,
)

__all__ = ["elastic_transform", "scale_and_translate"]

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


def _weights(n_in, n_out, scale, translation, method, antialias, dtype):
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
        w = _weights(x.shape[d], int(output_shape[d]), float(scale[i]),
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
