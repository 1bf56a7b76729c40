"""``kerasflow.ops.image``: ``resize`` (bilinear and nearest) for batches of
images, composed from matrix products so that it has gradients (Keras 3's
``keras.ops.image.resize``)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

from kerasflow.ops.image_more import *  # noqa: F403, E402
from kerasflow.ops.image_more import __all__ as _more  # noqa: E402

from kerasflow.ops.image_warp import *  # noqa: F403, E402
from kerasflow.ops.image_warp import __all__ as _warp  # noqa: E402

__all__ = sorted({"resize", "ssim"} | set(_more) | set(_warp))


def _weights(n_in, n_out, method, dtype):
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
    rank = len(images.shape)
    if rank not in (3, 4):
        raise ValueError(f"resize expects images of rank 3 or 4. Received: "
                         f"images.shape={tuple(images.shape)}")
    x = images if rank == 4 else K.expand_dims(images, 0)
    fmt = K.image_data_format() if data_format is None else data_format
    if fmt == "channels_first":
        x = K.transpose(x, (0, 2, 3, 1))
    dtype = np.dtype(x.dtype)
    wy = _weights(x.shape[1], int(size[0]), interpolation, dtype)
    wx = _weights(x.shape[2], int(size[1]), interpolation, dtype)
    y = K.einsum("oh,bhwc,pw->bopc", wy, x, wx)
    if fmt == "channels_first":
        y = K.transpose(y, (0, 3, 1, 2))
    return y if rank == 4 else K.squeeze(y, 0)


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
    from kerasflow.ops.image_more import _depthwise, _images  # noqa: PLC0415

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
