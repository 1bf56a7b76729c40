"""Convolution layers: Conv1D, Conv2D, Conv3D, Conv2DTranspose,
DepthwiseConv2D, SeparableConv2D (Keras 3's names, arguments and defaults;
channels_last or channels_first).
"""

from __future__ import annotations

import numpy as np

from kerasflow import activations
from kerasflow import backend as K
from kerasflow.layers._utils import (
    SpatialLayer, WeightArgs, normalize_padding, normalize_tuple,
)
from kerasflow.layers.base import InputSpec

__all__ = ["BaseConv", "Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose",
           "DepthwiseConv2D", "SeparableConv2D", "Convolution1D", "Convolution2D",
           "Convolution3D"]


def _check_output(layer, spatial, shape, kernel, strides, dilation, padding):
    """Raises naming the layer (and the input ``shape``) when a 'valid' output
    along the ``spatial`` sizes would be empty."""
    if padding != "valid":
        return
    for size, k, s, d in zip(spatial, kernel, strides, dilation):
        if size is not None and K.window_geometry(size, k, s, d, "VALID")[0] < 1:
            raise ValueError(
                f"Layer '{layer.name}' ({type(layer).__name__}): the kernel "
                f"(size {tuple(kernel)}, dilation_rate {tuple(dilation)}) is larger "
                f"than the padded input: expected spatial dims >= the dilated "
                f"kernel with padding='valid'. Received: input shape "
                f"{tuple(shape)}. Use padding='same' or a smaller kernel_size."
            )


def _positive_int(value, name):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or \
            value <= 0:
        raise ValueError(f"Invalid value for argument `{name}`: expected a "
                         f"positive int. Received: {name}={value!r}.")
    return int(value)


class BaseConv(SpatialLayer):
    """What every convolution shares (Keras' ``BaseConv``): argument checks,
    ``build`` (kernels from ``_build_kernels``, then the bias), ``call``
    (``_convolve`` on channels_last data, bias, back to ``data_format``,
    activation) and the common config.

    Subclasses set ``rank``, ``weight_args`` (the weights whose initializer,
    regularizer and constraint arguments they take), ``transposed`` (no
    'valid' output size check) and implement
    ``_build_kernels(channels) -> output channels`` and ``_convolve(x)``.

    Args:
        filters: output channels (positive int), or None where the output
            channels follow from the input (depthwise).
        kernel_size, strides, dilation_rate: int or ``rank`` ints.
        padding: 'valid' or 'same' ('causal' too for rank 1).
        data_format: 'channels_last' (batch, *spatial, channels) or
            'channels_first' (batch, channels, *spatial); None means
            ``image_data_format()``. Weights have the same layout either way.
        activation, use_bias, activity_regularizer: as ``Dense``.

    Raises:
        ValueError: a bad argument, naming it and the received value; an input
            that is not rank ``rank + 2`` or has an unknown channel dimension.
    """

    rank = 2
    weight_args = ("kernel", "bias")
    transposed = False

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, activation=None,
                 use_bias=True, **kwargs):
        self._w = WeightArgs(kwargs, *self.weight_args)
        super().__init__(data_format, **kwargs)
        r = self.rank
        self.filters = None if filters is None else _positive_int(filters,
                                                                   "filters")
        self.kernel_size = normalize_tuple(kernel_size, r, "kernel_size")
        self.strides = normalize_tuple(strides, r, "strides")
        self.padding = normalize_padding(
            padding, ("valid", "same", "causal") if r == 1 else ("valid", "same"))
        self.dilation_rate = normalize_tuple(dilation_rate, r, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)

    def build(self, input_shape):
        self._check_rank(input_shape)
        cin = input_shape[self.channel_axis]
        if cin is None:
            raise ValueError(f"Layer '{self.name}' needs a known channel dimension. "
                             f"Received: input_shape={tuple(input_shape)}.")
        cout = self._build_kernels(cin)
        self.bias = (self._w.add(self, "bias", (cout,)) if self.use_bias else None)
        self.input_spec = InputSpec(ndim=self.rank + 2,
                                    axes={self.channel_axis: cin})
        self.built = True

    def call(self, inputs):
        x = self.to_channels_last(inputs)
        if not self.transposed:  # a transposed convolution grows its input
            _check_output(self, x.shape[1:-1], inputs.shape, self.kernel_size,
                          self.strides, self.dilation_rate, self.padding)
        y = self._convolve(x)
        if self.bias is not None:
            y = y + self.bias
        # The activation sees the layer's own layout (a softmax's last axis).
        return self.activation(self.from_channels_last(y))

    def get_config(self):
        config = super().get_config()
        if self.filters is not None:
            config["filters"] = self.filters
        config.update(
            kernel_size=list(self.kernel_size), strides=list(self.strides),
            padding=self.padding, data_format=self.data_format,
            dilation_rate=list(self.dilation_rate),
            activation=activations.serialize(self.activation),
            use_bias=self.use_bias, **self._w.config())
        return config


class _Conv(BaseConv):
    """Convolution of rank 1, 2 or 3 with channel groups."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, groups=1, activation=None,
                 use_bias=True, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, **kwargs)
        if not isinstance(groups, (int, np.integer)) or groups < 1 or \
                self.filters % groups:
            raise ValueError(
                f"The number of filters must be divisible by `groups`. Received: "
                f"groups={groups!r}, filters={filters}.")
        self.groups = int(groups)

    def _build_kernels(self, cin):
        if cin % self.groups:
            raise ValueError(
                f"Layer '{self.name}': the input channels must be divisible by "
                f"groups={self.groups}. Received: input channels {cin}.")
        self.kernel = self._w.add(
            self, "kernel", self.kernel_size + (cin // self.groups, self.filters))
        return self.filters

    def _conv(self, x, kernel):
        if self.rank == 1:
            pad = "valid" if self.padding == "causal" else self.padding
            return K.conv1d(x, kernel, self.strides[0], pad, self.dilation_rate[0])
        conv = K.conv2d if self.rank == 2 else K.conv3d
        return conv(x, kernel, self.strides, self.padding, self.dilation_rate)

    def _convolve(self, x):
        if self.padding == "causal":
            left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
            x = K.pad(x, ((0, 0), (left, 0), (0, 0)))
        if self.groups == 1:
            return self._conv(x, self.kernel)
        xs = K.split(x, self.groups, axis=-1)
        ks = K.split(self.kernel, self.groups, axis=-1)
        return K.concatenate([self._conv(a, b) for a, b in zip(xs, ks)], axis=-1)

    def get_config(self):
        return {**super().get_config(), "groups": self.groups}


class Conv1D(_Conv):
    """1-D convolution over (batch, steps, channels) (Keras' ``Conv1D``).

    Args:
        filters: output channels. kernel_size, strides, dilation_rate: int.
        padding: 'valid', 'same' or 'causal' (left zero padding: output t sees
            inputs <= t, as in WaveNet, van den Oord et al. 2016).
        data_format: 'channels_last' or 'channels_first' (batch, channels,
            steps); None means ``image_data_format()``.
        groups: channel groups (filters and channels divisible by it).
        activation, use_bias, kernel_/bias_ initializer, regularizer,
        constraint, activity_regularizer: as Dense.

    Input: (batch, steps, channels). Output: (batch, new_steps, filters)
    (channels_first: (batch, channels, steps) -> (batch, filters, new_steps)).

    Raises:
        ValueError: bad arguments; an input that is not rank 3, whose channels
            differ from the built kernel, or shorter than the kernel ('valid').
    """

    rank = 1


class Conv2D(_Conv):
    """2-D convolution over (batch, height, width, channels) (Keras' ``Conv2D``).

    ``y = activation(conv2d(x, kernel) + bias)``; the kernel is
    (kh, kw, channels // groups, filters). Computed as im2col + BLAS
    (``kerasflow.backend.conv2d``).

    Args:
        filters: output channels (positive int).
        kernel_size, strides, dilation_rate: int or pair.
        padding: 'valid' or 'same' (TF's rule).
        data_format: 'channels_last' or 'channels_first' (batch, channels,
            height, width), computed by transposing around the NHWC kernel;
            None means ``image_data_format()``.
        groups: grouped convolution (Krizhevsky et al. 2012).
        activation, use_bias, kernel_/bias_ initializer, regularizer,
        constraint, activity_regularizer: as Dense.

    Input: (batch, height, width, channels).
    Output: (batch, new_height, new_width, filters); channels_first: channels
    right after the batch axis in both.

    Raises:
        ValueError: bad arguments; an input that is not rank 4 (naming the
            layer, expected and received shapes), whose channels differ from
            the built kernel, or smaller than the dilated kernel ('valid').
    """

    rank = 2


class Conv3D(_Conv):
    """3-D convolution over volumes (Keras' ``Conv3D``): video frames, or
    medical scans.

    ``y = activation(conv3d(x, kernel) + bias)`` with a kernel
    (kd, kh, kw, channels // groups, filters), computed as im2col + BLAS
    (``kerasflow.backend.conv3d``).

    Args:
        filters: output channels (positive int).
        kernel_size, strides, dilation_rate: int or triple.
        padding: 'valid' or 'same' (TF's rule).
        data_format: 'channels_last' (batch, depth, height, width, channels) or
            'channels_first' (batch, channels, depth, height, width); None
            means ``image_data_format()``.
        groups: channel groups (filters and channels divisible by it).
        activation, use_bias, kernel_/bias_ initializer, regularizer,
        constraint, activity_regularizer: as Dense.

    Input: (batch, depth, height, width, channels).
    Output: (batch, new_depth, new_height, new_width, filters).

    Raises:
        ValueError: bad arguments; an input that is not rank 5, whose channels
            differ from the built kernel, or smaller than the dilated kernel
            ('valid').

    Example:
        >>> layer = Conv3D(4, 3, padding="same")
        >>> layer(np.zeros((2, 8, 8, 8, 1), "float32")).shape
        (2, 8, 8, 8, 4)
    """

    rank = 3


class Conv2DTranspose(BaseConv):
    """Transposed 2-D convolution (Keras' ``Conv2DTranspose``, "deconvolution").

    The kernel is (kh, kw, filters, channels); the output size along an axis is
    ``size * stride`` for 'same' and ``(size - 1) * stride + max(dilated
    kernel, stride)`` for 'valid', as Keras 3 (``output_padding`` is not
    supported).

    Input: (batch, height, width, channels). Output: (batch, H', W', filters).
    With ``data_format='channels_first'``: (batch, channels, height, width) ->
    (batch, filters, H', W'); the kernel layout is the same.

    Raises:
        ValueError: bad arguments, a non rank-4 input, channel mismatch, unknown
            spatial input dims.
    """

    transposed = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=1,
                 activation=None, use_bias=True, **kwargs):
        if output_padding is not None:
            raise ValueError(f"Conv2DTranspose(output_padding=...) is not "
                             f"supported. Received: {output_padding!r}.")
        super().__init__(filters, kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, **kwargs)

    def _build_kernels(self, cin):
        self.kernel = self._w.add(self, "kernel",
                                  self.kernel_size + (self.filters, cin))
        return self.filters

    def _convolve(self, x):
        size = []
        for a in (0, 1):
            s = x.shape[1 + a]
            if s is None:
                raise ValueError(f"Layer '{self.name}' needs known spatial input "
                                 f"dims. Received: input shape {x.shape}.")
            size.append(K.conv2d_transpose_output_size(
                s, self.kernel_size[a], self.strides[a], self.dilation_rate[a],
                self.padding))
        return K.conv2d_transpose(x, self.kernel, size, self.strides,
                                  self.padding, self.dilation_rate)



def _depth_multiplier(value):
    return normalize_tuple(value, 1, "depth_multiplier")[0]


class DepthwiseConv2D(BaseConv):
    """Depthwise 2-D convolution (Keras' ``DepthwiseConv2D``): each input channel
    is convolved with its own ``depth_multiplier`` filters (Chollet 2017,
    Xception).

    Input: (batch, height, width, channels).
    Output: (batch, H', W', channels * depth_multiplier); channels_first puts
    the channels right after the batch axis in both (``data_format``).
    """

    weight_args = ("depthwise", "bias")

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 **kwargs):
        super().__init__(None, kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, **kwargs)
        self.depth_multiplier = _depth_multiplier(depth_multiplier)

    def _build_kernels(self, cin):
        self.kernel = self._w.add(
            self, "depthwise", self.kernel_size + (cin, self.depth_multiplier),
            weight_name="kernel")
        return cin * self.depth_multiplier

    def _convolve(self, x):
        return K.depthwise_conv2d(x, self.kernel, self.strides, self.padding,
                                  self.dilation_rate)

    def get_config(self):
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier}


class SeparableConv2D(BaseConv):
    """Depthwise then 1x1 pointwise convolution (Keras' ``SeparableConv2D``).

    Weights: depthwise (kh, kw, channels, depth_multiplier), pointwise
    (1, 1, channels * depth_multiplier, filters), bias (filters,), in either
    ``data_format`` ('channels_first': (batch, channels, height, width)).
    """

    weight_args = ("depthwise", "pointwise", "bias")

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, depth_multiplier=1,
                 activation=None, use_bias=True, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, **kwargs)
        self.depth_multiplier = _depth_multiplier(depth_multiplier)

    def _build_kernels(self, cin):
        m = self.depth_multiplier
        self.depthwise_kernel = self._w.add(self, "depthwise",
                                            self.kernel_size + (cin, m),
                                            weight_name="depthwise_kernel")
        self.pointwise_kernel = self._w.add(self, "pointwise",
                                            (1, 1, cin * m, self.filters),
                                            weight_name="pointwise_kernel")
        return self.filters

    def _convolve(self, x):
        y = K.depthwise_conv2d(x, self.depthwise_kernel, self.strides,
                               self.padding, self.dilation_rate)
        return K.conv2d(y, self.pointwise_kernel)

    def get_config(self):
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier}


Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
