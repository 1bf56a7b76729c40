"""Deterministic image layers: ``Resizing`` and ``CenterCrop`` (Keras 3's
``keras.layers.Resizing`` / ``keras.layers.CenterCrop``, same arguments and
values), graph layers built on ``kerasflow.ops.image.resize``, differentiable
with respect to the images."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.layers.preprocessing.base import ImageLayer
from kerasflow.ops import image as image_ops

__all__ = ["Resizing", "CenterCrop", "aspect_crop_box", "crop", "resize_images"]


def aspect_crop_box(height, width, target_height, target_width):
    """(top, left, crop height, crop width) of the largest centered box with the
    target's aspect ratio (Keras' ``smart_resize`` arithmetic)."""
    crop_h = max(min(height, int(float(width * target_height) / target_width)), 1)
    crop_w = max(min(width, int(float(height * target_width) / target_height)), 1)
    return (int(float(height - crop_h) / 2), int(float(width - crop_w) / 2),
            crop_h, crop_w)


def crop(images, top, left, height, width, data_format):
    """The (top, left, height, width) window of a batch of images."""
    if data_format == "channels_first":
        return images[:, :, top:top + height, left:left + width]
    return images[:, top:top + height, left:left + width, :]


def resize_images(images, height, width, interpolation, data_format):
    """A batch resized to (height, width); a no-op at the same size."""
    h_ax, w_ax = (2, 3) if data_format == "channels_first" else (1, 2)
    if images.shape[h_ax] == height and images.shape[w_ax] == width:
        return images
    return image_ops.resize(images, (height, width), interpolation=interpolation,
                            data_format=data_format)


class Resizing(ImageLayer):
    """Resizes images to (height, width) (Keras 3's ``keras.layers.Resizing``).

    Args:
        height, width: the output size in pixels.
        interpolation: 'bilinear' (half-pixel centers, as Keras/JAX) or
            'nearest'.
        crop_to_aspect_ratio: first crop the largest centered box of the
            target's aspect ratio, so the image is not distorted.
        pad_to_aspect_ratio: first pad evenly with ``fill_value`` to the
            target's aspect ratio instead.
        fill_mode: 'constant' only (the padding).
        antialias: False only.
        data_format: 'channels_last' (H, W, C) or 'channels_first'.

    Input: (batch, H, W, C) or (H, W, C) images (cast to the layer's dtype);
    output: the same layout with the new height and width, in the layer's
    dtype (an integer array called eagerly comes back in its own dtype,
    rounded and saturated, as Keras).

    Raises:
        ValueError: images of rank other than 3 or 4; both aspect-ratio
            options.
        NotImplementedError: other interpolations, ``antialias=True``, or a
            fill_mode other than 'constant'.
    """

    def __init__(self, height, width, interpolation="bilinear",
                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                 fill_mode="constant", fill_value=0.0, antialias=False,
                 data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.height, self.width = int(height), int(width)
        if interpolation not in ("bilinear", "nearest") or antialias or \
                fill_mode != "constant":
            raise NotImplementedError(
                f"Resizing supports interpolation 'bilinear' or 'nearest', "
                f"antialias=False and fill_mode='constant'. Received: "
                f"interpolation={interpolation!r}, antialias={antialias!r}, "
                f"fill_mode={fill_mode!r}.")
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError("Only one of `crop_to_aspect_ratio` and "
                             "`pad_to_aspect_ratio` can be True.")
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode, self.fill_value = fill_mode, fill_value
        self.antialias = False

    _keeps_int_dtype = True

    def _call_batch(self, images, training):
        x = self._float(images)
        h, w = self._hw(x)
        if self.crop_to_aspect_ratio:
            top, left, ch, cw = aspect_crop_box(h, w, self.height, self.width)
            x = crop(x, top, left, ch, cw, self.data_format)
        elif self.pad_to_aspect_ratio:
            ph = max(h, int(float(w * self.height) / self.width))
            pw = max(w, int(float(h * self.width) / self.height))
            top, left = int(float(ph - h) / 2), int(float(pw - w) / 2)
            pads = [(0, 0)] * 4
            h_ax, w_ax = (2, 3) if self.data_format == "channels_first" else (1, 2)
            if top > 0:  # Keras pads the same amount on both sides
                pads[h_ax] = (top, top)
            elif left > 0:
                pads[w_ax] = (left, left)
            x = K.pad(x, pads, constant_values=self.fill_value)
        return image_ops.resize(x, (self.height, self.width),
                                interpolation=self.interpolation,
                                data_format=self.data_format)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        h_ax, w_ax = self._hw_axes
        shape[h_ax], shape[w_ax] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio,
                "fill_mode": self.fill_mode, "fill_value": self.fill_value,
                "antialias": self.antialias}


class CenterCrop(ImageLayer):
    """Crops the central (height, width) window of images (Keras 3's
    ``keras.layers.CenterCrop``); an image smaller than the window is instead
    cropped to the target's aspect ratio and resized bilinearly (Keras'
    ``smart_resize``).

    Args:
        height, width: the output size in pixels.
        data_format: 'channels_last' (H, W, C) or 'channels_first'.

    Input: (batch, H, W, C) or (H, W, C) images (cast to the layer's dtype);
    output: the same layout, (height, width) spatially.

    Raises:
        ValueError: images of rank other than 3 or 4.
    """

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.height, self.width = int(height), int(width)

    def _call_batch(self, images, training):
        x = self._float(images)
        h, w = self._known_hw(x)
        if h >= self.height and w >= self.width:
            return crop(x, (h - self.height) // 2, (w - self.width) // 2,
                        self.height, self.width, self.data_format)
        top, left, ch, cw = aspect_crop_box(h, w, self.height, self.width)
        x = crop(x, top, left, ch, cw, self.data_format)
        return resize_images(x, self.height, self.width, "bilinear",
                             self.data_format)

    compute_output_shape = Resizing.compute_output_shape

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}
