"""Pooling layers: MaxPooling1D/2D/3D, AveragePooling1D/2D/3D and the global
poolings (Keras 3's names, arguments and defaults; channels_last or
channels_first).
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.layers._masks import get_mask
from kerasflow.layers._utils import (
    SpatialLayer, normalize_padding, normalize_tuple,
)

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "GlobalMaxPooling3D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalAveragePooling3D", "MaxPool1D",
           "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D"]

_POOL_FNS = {("max", 2): K.max_pool2d, ("avg", 2): K.avg_pool2d,
             ("max", 3): K.max_pool3d, ("avg", 3): K.avg_pool3d}


class _Pooling(SpatialLayer):
    """Windowed max or mean over ``rank`` spatial axes; 1-D runs on the 2-D op.

    Args:
        pool_size: int or ``rank`` ints (default 2 along each axis).
        strides: int or ``rank`` ints; None means ``pool_size``.
        padding: 'valid' or 'same' (TF's rule; 'same' padding never wins a max
            and is left out of a mean).
        data_format: 'channels_last' (batch, *spatial, channels) or
            'channels_first' (batch, channels, *spatial); None means
            ``image_data_format()``.

    Raises:
        ValueError: bad arguments, naming them; an input of another rank, or
            smaller than the window with padding='valid'.
    """

    kind = "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(data_format, **kwargs)
        r = self.rank
        self.pool_size = normalize_tuple(pool_size, r, "pool_size")
        self.strides = (self.pool_size if strides is None
                        else normalize_tuple(strides, r, "strides"))
        self.padding = normalize_padding(padding)

    def call(self, inputs):
        x = self.to_channels_last(inputs)
        if self.padding == "valid" and x.shape is not None:
            for size, p, s in zip(x.shape[1:-1], self.pool_size, self.strides):
                if size is not None and K.window_geometry(size, p, s, 1,
                                                          "VALID")[0] < 1:
                    raise ValueError(
                        f"Layer '{self.name}' ({type(self).__name__}): expected "
                        f"spatial dims >= pool_size={self.pool_size} with "
                        f"padding='valid'. Received: input shape {inputs.shape}.")
        if self.rank == 1:
            fn = K.max_pool1d if self.kind == "max" else K.avg_pool1d
            y = fn(x, self.pool_size[0], self.strides[0], self.padding)
        else:
            y = _POOL_FNS[self.kind, self.rank](x, self.pool_size, self.strides,
                                                self.padding)
        return self.from_channels_last(y)

    def get_config(self):
        config = super().get_config()
        config.update(pool_size=list(self.pool_size), strides=list(self.strides),
                      padding=self.padding, data_format=self.data_format)
        return config


class MaxPooling1D(_Pooling):
    """Max over windows of (batch, steps, channels) (Keras' ``MaxPooling1D``);
    arguments and errors as ``_Pooling`` with int ``pool_size`` and ``strides``.
    """

    rank, kind = 1, "max"


class MaxPooling2D(_Pooling):
    """Max over windows of (batch, height, width, channels) (Keras'
    ``MaxPooling2D``); the gradient goes to the first maximum of each window.
    Arguments and errors as ``_Pooling`` (int or pair sizes)."""

    rank, kind = 2, "max"


class MaxPooling3D(_Pooling):
    """Max over windows of (batch, depth, height, width, channels) (Keras'
    ``MaxPooling3D``); the gradient goes to the first maximum of each window.
    Arguments and errors as ``_Pooling`` (int or triple sizes).

    Example:
        >>> MaxPooling3D(2)(np.zeros((1, 4, 4, 4, 3), "float32")).shape
        (1, 2, 2, 2, 3)
    """

    rank, kind = 3, "max"


class AveragePooling1D(_Pooling):
    """Mean over windows of (batch, steps, channels) (Keras' ``AveragePooling1D``);
    'same' padding is left out of each mean."""

    rank, kind = 1, "avg"


class AveragePooling2D(_Pooling):
    """Mean over windows of (batch, height, width, channels) (Keras'
    ``AveragePooling2D``); 'same' padding is left out of each mean."""

    rank, kind = 2, "avg"


class AveragePooling3D(_Pooling):
    """Mean over windows of (batch, depth, height, width, channels) (Keras'
    ``AveragePooling3D``); 'same' padding is left out of each mean."""

    rank, kind = 3, "avg"


class _GlobalPooling(SpatialLayer):
    """Max or mean over every spatial axis: (batch, *spatial, channels) ->
    (batch, channels), or (batch, 1, ..., 1, channels) with ``keepdims``;
    channels_first keeps the channels right after the batch axis."""

    kind = "max"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(data_format, **kwargs)
        self.keepdims = bool(keepdims)

    def call(self, inputs, mask=None):
        if mask is None:
            mask = get_mask(inputs)
        first = 2 if self.channels_first else 1
        axes = tuple(range(first, first + self.rank))
        if self.kind == "max":
            return K.max(inputs, axis=axes, keepdims=self.keepdims)
        if mask is not None and self.rank == 1:
            # The mask is (batch, steps): broadcast it over the channel axis.
            w = K.expand_dims(K.cast(mask, inputs.dtype), 1 if first == 2 else -1)
            total = K.sum(inputs * w, axis=first, keepdims=self.keepdims)
            count = K.sum(w, axis=first, keepdims=self.keepdims)
            return total / K.maximum(count, 1.0)
        return K.mean(inputs, axis=axes, keepdims=self.keepdims)

    def get_config(self):
        config = super().get_config()
        config.update(data_format=self.data_format, keepdims=self.keepdims)
        return config


class GlobalMaxPooling1D(_GlobalPooling):
    """Max over the steps axis: (batch, steps, channels) -> (batch, channels)."""

    rank, kind = 1, "max"


class GlobalMaxPooling2D(_GlobalPooling):
    """Max over height and width: (batch, h, w, channels) -> (batch, channels)."""

    rank, kind = 2, "max"


class GlobalMaxPooling3D(_GlobalPooling):
    """Max over depth, height and width: (batch, d, h, w, channels) ->
    (batch, channels) (Keras' ``GlobalMaxPooling3D``)."""

    rank, kind = 3, "max"


class GlobalAveragePooling1D(_GlobalPooling):
    """Mean over the steps axis: (batch, steps, channels) -> (batch, channels);
    with a mask (``Embedding(mask_zero=True)``), over the unmasked steps only."""

    rank, kind = 1, "avg"


class GlobalAveragePooling2D(_GlobalPooling):
    """Mean over height and width: (batch, h, w, channels) -> (batch, channels)."""

    rank, kind = 2, "avg"


class GlobalAveragePooling3D(_GlobalPooling):
    """Mean over depth, height and width: (batch, d, h, w, channels) ->
    (batch, channels) (Keras' ``GlobalAveragePooling3D``)."""

    rank, kind = 3, "avg"


MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = (
    GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D)
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (
    GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D)
