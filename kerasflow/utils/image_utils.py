"""Image helpers (Keras 3's ``keras.utils`` / ``keras.preprocessing.image``):
``img_to_array``, ``array_to_img``, ``load_img``, ``save_img`` and
``smart_resize``.

Arrays are (height, width, channels) with ``data_format="channels_last"``
(``image_data_format()`` by default), (channels, height, width) otherwise.
Reading, writing and making PIL images needs Pillow, as in Keras: without it
those raise ``ImportError`` naming the function; ``img_to_array`` and
``smart_resize`` need only numpy.
"""

from __future__ import annotations

import io
import pathlib
import warnings

import numpy as np

from kerasflow.backend import floatx, image_data_format

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]

_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil(fn_name):
    try:
        from PIL import Image  # noqa: PLC0415
    except ImportError:
        raise ImportError(f"Could not import PIL.Image. The use of `{fn_name}` "
                          f"requires PIL (pip install pillow).") from None
    return Image


def _data_format(data_format):
    data_format = data_format or image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or "
                         f"'channels_first'. Received: data_format={data_format!r}.")
    return data_format


def img_to_array(img, data_format=None, dtype=None) -> np.ndarray:
    """A PIL image (or any array-like image) as a 3-D numpy array of ``dtype``
    (default ``floatx()``); a 2-D (grayscale) image gains a channel axis.

    Raises:
        ValueError: an image of rank other than 2 or 3.
    """
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or floatx())
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        shape = (1, *x.shape) if data_format == "channels_first" else (*x.shape, 1)
        return x.reshape(shape)
    raise ValueError(f"Unsupported image shape: {x.shape}")


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A 3-D array as a PIL image: 4 channels RGBA, 3 RGB, 1 grayscale ("L",
    or 32-bit "I" beyond 255). With ``scale`` values are first mapped to
    [0, 255] (min to 0, max to 255).

    Raises:
        ImportError: no Pillow. ValueError: not rank 3, or another channel
            count.
    """
    data_format = _data_format(data_format)
    image = _pil("array_to_img")
    x = np.asarray(x, dtype=dtype or floatx())
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). "
                         f"Got array with shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        if np.max(x) != 0:
            x = x / np.max(x)
        x = x * 255
    channels = x.shape[2]
    if channels in (3, 4):
        return image.fromarray(x.astype("uint8"), "RGB" if channels == 3 else "RGBA")
    if channels == 1:
        if np.max(x) > 255:
            return image.fromarray(x[:, :, 0].astype("int32"), "I")
        return image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes the 3-D array ``x`` as an image file (format from the suffix
    unless ``file_format``); ``**kwargs`` go to ``PIL.Image.save``.

    Raises:
        ImportError: no Pillow. ValueError: as ``array_to_img``.
    """
    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower()
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("The JPEG format does not support RGBA images, converting "
                      "to RGB.", stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """Reads an image file (a path, ``pathlib.Path`` or bytes stream) as a PIL
    image in ``color_mode`` ("grayscale", "rgb" or "rgba"), resized to
    ``target_size=(height, width)`` when given; ``keep_aspect_ratio`` first
    crops the centre to the target's aspect ratio.

    Raises:
        ImportError: no Pillow. ValueError: an unknown color mode or
            interpolation. TypeError: a path of another type.
    """
    image = _pil("load_img")
    if color_mode not in ("grayscale", "rgb", "rgba"):
        raise ValueError(f'color_mode must be "grayscale", "rgb", or "rgba". '
                         f"Received: color_mode={color_mode!r}.")
    if isinstance(path, io.BytesIO):
        img = image.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        if isinstance(path, pathlib.Path):
            path = str(path.resolve())
        with open(path, "rb") as f:
            img = image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    mode = {"grayscale": ("L", "I;16", "I"), "rgba": ("RGBA",), "rgb": ("RGB",)}
    if img.mode not in mode[color_mode]:
        img = img.convert(mode[color_mode][0])
    if target_size is not None:
        width_height = (target_size[1], target_size[0])
        if img.size != width_height:
            if interpolation not in _INTERPOLATIONS:
                raise ValueError(f"Invalid interpolation method {interpolation!r}."
                                 f" Supported methods are {_INTERPOLATIONS}.")
            resample = getattr(image, interpolation.upper())
            if keep_aspect_ratio:
                width, height = img.size
                target_width, target_height = width_height
                crop_height = (width * target_height) // target_width
                crop_width = (height * target_width) // target_height
                crop_height, crop_width = min(height, crop_height), min(width,
                                                                      crop_width)
                top, left = (height - crop_height) // 2, (width - crop_width) // 2
                img = img.crop((left, top, left + crop_width, top + crop_height))
            img = img.resize(width_height, resample)
    return img


def smart_resize(x, size, interpolation="bilinear", data_format="channels_last"):
    """Resizes images to ``size=(height, width)`` without distorting them:
    the largest centred crop with the target's aspect ratio, then a resize
    (Keras 3's ``keras.preprocessing.image.smart_resize``).

    Args:
        x: (height, width, channels) or (batch, height, width, channels)
            (channels first with ``data_format="channels_first"``).
        size: (height, width) ints.
        interpolation: as ``kerasflow.ops.image.resize``.

    Returns:
        The resized images, a numpy array for a numpy input.

    Raises:
        ValueError: ``size`` not two ints, or ``x`` not of rank 3 or 4.
    """
    from kerasflow.ops import image as image_ops  # noqa: PLC0415 (ops sit above)

    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: "
                         f"{size}.")
    img = np.asarray(x)
    if not 3 <= img.ndim <= 4:
        raise ValueError(f"Expected an image array with shape `(height, width, "
                         f"channels)`, or `(batch_size, height, width, channels)`,"
                         f" but got input with incorrect rank, of shape "
                         f"{img.shape}.")
    last = data_format == "channels_last"
    height, width = img.shape[-3:-1] if last else img.shape[-2:]
    target_height, target_width = size
    crop_height = max(min(height, int(float(width * target_height) / target_width)),
                      1)
    crop_width = max(min(width, int(float(height * target_width) / target_height)),
                     1)
    top, left = int((height - crop_height) / 2), int((width - crop_width) / 2)
    rows, cols = slice(top, top + crop_height), slice(left, left + crop_width)
    img = img[..., rows, cols, :] if last else img[..., rows, cols]
    out = image_ops.resize(img, size=tuple(size), interpolation=interpolation,
                           data_format=data_format)
    return np.asarray(out)
