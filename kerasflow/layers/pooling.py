"""Pooling layers: MaxPooling1D/2D, AveragePooling1D/2D and the global poolings
(Keras 3's names, arguments and defaults; channels_last).
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.layers._masks import get_mask
from kerasflow.layers._utils import (
    ChannelsLastLayer, normalize_padding, normalize_tuple,
)

__all__ = ["MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
           "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "MaxPool1D", "MaxPool2D", "AvgPool1D",
           "AvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalAvgPool1D",
           "GlobalAvgPool2D"]


class _Pooling(ChannelsLastLayer):
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
        if self.padding == "valid" and inputs.shape is not None:
            for size, p, s in zip(inputs.shape[1:], self.pool_size, self.strides):
                if size is not None and K.window_geometry(size, p, s, 1,
                                                          "VALID")[0] < 1:
                    raise ValueError(
                        f"Layer '{self.name}' ({type(self).__name__}): expected "
                        f"spatial dims >= pool_size={self.pool_size} with "
                        f"padding='valid'. Received: input shape {inputs.shape}.")
        if self.rank == 1:
            fn = K.max_pool1d if self.kind == "max" else K.avg_pool1d
            return fn(inputs, self.pool_size[0], self.strides[0], self.padding)
        fn = K.max_pool2d if self.kind == "max" else K.avg_pool2d
        return fn(inputs, self.pool_size, self.strides, self.padding)

    def get_config(self):
        config = super().get_config()
        config.update(pool_size=list(self.pool_size), strides=list(self.strides),
                      padding=self.padding, data_format=self.data_format)
        return config


class MaxPooling1D(_Pooling):
    """Max over windows of (batch, steps, channels) (Keras' ``MaxPooling1D``).

    Args:
        pool_size: int window; strides: int, None means pool_size;
        padding: 'valid' or 'same'.

    Raises:
        ValueError: a non rank-3 input, or one shorter than the window ('valid').
    """

    rank, kind = 1, "max"


class MaxPooling2D(_Pooling):
    """Max over windows of (batch, height, width, channels) (Keras'
    ``MaxPooling2D``); the gradient goes to the first maximum of each window.

    Args:
        pool_size: int or pair (default 2); strides: None means pool_size;
        padding: 'valid' or 'same'.

    Raises:
        ValueError: a non rank-4 input, or one smaller than the window ('valid').
    """

    rank, kind = 2, "max"


class AveragePooling1D(_Pooling):
    """Mean over windows of (batch, steps, channels) (Keras' ``AveragePooling1D``);
    'same' padding is left out of each mean."""

    rank, kind = 1, "avg"


class AveragePooling2D(_Pooling):
    """Mean over windows of (batch, height, width, channels) (Keras'
    ``AveragePooling2D``); 'same' padding is left out of each mean."""

    rank, kind = 2, "avg"


class _GlobalPooling(ChannelsLastLayer):
    kind = "max"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(data_format, **kwargs)
        self.keepdims = bool(keepdims)

    def call(self, inputs, mask=None):
        if mask is None:
            mask = get_mask(inputs)
        axes = tuple(range(1, self.rank + 1))
        if self.kind == "max":
            return K.max(inputs, axis=axes, keepdims=self.keepdims)
        if mask is not None and self.rank == 1:
            w = K.expand_dims(K.cast(mask, inputs.dtype), -1)
            total = K.sum(inputs * w, axis=1, keepdims=self.keepdims)
            count = K.sum(w, axis=1, keepdims=self.keepdims)
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


class GlobalAveragePooling1D(_GlobalPooling):
    """Mean over the steps axis: (batch, steps, channels) -> (batch, channels);
    with a mask (``Embedding(mask_zero=True)``), over the unmasked steps only."""

    rank, kind = 1, "avg"


class GlobalAveragePooling2D(_GlobalPooling):
    """Mean over height and width: (batch, h, w, channels) -> (batch, channels)."""

    rank, kind = 2, "avg"


MaxPool1D, MaxPool2D = MaxPooling1D, MaxPooling2D
AvgPool1D, AvgPool2D = AveragePooling1D, AveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
