"""Convolutional LSTMs (Shi et al., "Convolutional LSTM Network: A Machine
Learning Approach for Precipitation Nowcasting", NeurIPS 2015; Keras 3's
``ConvLSTM1D``, ``ConvLSTM2D``, ``ConvLSTM3D``).

An LSTM whose input and recurrent products are convolutions: the state is an
image (batch, *spatial', filters). The layers are ``RNN`` over a
``ConvLSTMCell`` and unroll over the (static) time steps.
"""

from __future__ import annotations

import numpy as np

from kerasflow import activations
from kerasflow import backend as K
from kerasflow.layers._utils import WeightArgs, normalize_padding, normalize_tuple
from kerasflow.layers.base import Layer
from kerasflow.layers.rnn_layer import RNN

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"]


def _conv(rank, x, kernel, strides, padding, dilation):
    if rank == 1:
        return K.conv1d(x, kernel, strides[0], padding, dilation[0])
    conv = K.conv2d if rank == 2 else K.conv3d
    return conv(x, kernel, strides, padding, dilation)


class ConvLSTMCell(Layer):
    """One step of a convolutional LSTM (Keras 3's ``ConvLSTMCell``): gates
    i, f, c, o from ``conv(x, W) + conv_same(h, U) + b``; ``c = f * c_prev +
    i * act(z_c)``, ``h = o * act(c)``. Computes in channels_last; weights
    kernel (*k, channels, 4 filters), recurrent_kernel (*k, filters, 4
    filters), bias (4 filters,)."""

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, activation="tanh",
                 recurrent_activation="sigmoid", use_bias=True,
                 unit_forget_bias=True, dropout=0.0, recurrent_dropout=0.0,
                 seed=None, **kwargs):
        self._w = WeightArgs(kwargs, "kernel", "recurrent", "bias")
        super().__init__(**kwargs)
        self.rank, self.step_ndim = int(rank), int(rank) + 2
        if isinstance(filters, bool) or not isinstance(
                filters, (int, np.integer)) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`: expected a "
                             f"positive int. Received: filters={filters!r}.")
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = normalize_tuple(strides, rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = K.standardize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"Specifying `strides > 1` is not compatible with "
                             f"`dilation_rate > 1`. Received: strides="
                             f"{self.strides} and dilation_rate="
                             f"{self.dilation_rate}")
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias, self.unit_forget_bias = bool(use_bias), bool(unit_forget_bias)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        self._sequence_masks = None

    @property
    def state_size(self):
        return [self.filters, self.filters]

    output_size = property(lambda self: self.filters)

    def _last(self, x):
        """x in channels_last."""
        if self.data_format == "channels_last":
            return x
        return K.transpose(x, (0, *range(2, self.rank + 2), 1))

    def _back(self, y):
        if self.data_format == "channels_last":
            return y
        return K.transpose(y, (0, self.rank + 1, *range(1, self.rank + 1)))

    def build(self, input_shape):
        axis = 1 if self.data_format == "channels_first" else -1
        cin = input_shape[axis]
        spatial = input_shape[2:] if axis == 1 else input_shape[1:-1]
        if cin is None or None in spatial:
            raise ValueError(f"Layer '{self.name}' needs known spatial and channel "
                             f"dimensions. Received: input_shape="
                             f"{tuple(input_shape)}.")
        f4 = 4 * self.filters
        self.kernel = self._w.add(self, "kernel", self.kernel_size + (cin, f4))
        self.recurrent_kernel = self._w.add(
            self, "recurrent", self.kernel_size + (self.filters, f4),
            weight_name="recurrent_kernel")
        self.bias = self.add_weight("bias", (f4,), self._bias_initial,
                                    self._w.reg["bias"],
                                    constraint=self._w.con["bias"]) \
            if self.use_bias else None
        self.built = True

    def _bias_initial(self, shape, dtype):
        b = np.array(self._w.init["bias"](shape, dtype=dtype), dtype=dtype)
        if self.unit_forget_bias:
            b[self.filters:2 * self.filters] = 1.0
        return b

    def _input_conv(self, x):
        return _conv(self.rank, self._last(x), self.kernel, self.strides,
                     self.padding, self.dilation_rate)

    def zero_states_like(self, x):
        """Zero [h, c] shaped like this cell's output for the step input x."""
        zero = self._back(self._input_conv(x)[..., :self.filters] * 0.0)
        return [zero, zero]

    def call(self, inputs, states, training=None):
        h, c = states
        dp, rdp = self._sequence_masks or (None, None)
        if dp is None and training and self.dropout > 0:
            dp = K.dropout(K.ones_like(inputs), self.dropout, seed=self.seed)
        if rdp is None and training and self.recurrent_dropout > 0:
            rdp = K.dropout(K.ones_like(h), self.recurrent_dropout,
                            seed=None if self.seed is None else self.seed + 1)
        x = inputs if dp is None else inputs * dp
        hr = h if rdp is None else h * rdp
        ones = (1,) * self.rank
        z = self._input_conv(x) + _conv(self.rank, self._last(hr),
                                        self.recurrent_kernel, ones, "same", ones)
        if self.bias is not None:
            z = z + self.bias
        f, ra = self.filters, self.recurrent_activation
        i, fg = ra(z[..., :f]), ra(z[..., f:2 * f])
        c_new = fg * self._last(c) + i * self.activation(z[..., 2 * f:3 * f])
        h_new = ra(z[..., 3 * f:]) * self.activation(c_new)
        h_new, c_new = self._back(h_new), self._back(c_new)
        return h_new, [h_new, c_new]


class _ConvLSTM(RNN):
    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, activation="tanh",
                 recurrent_activation="sigmoid", use_bias=True,
                 unit_forget_bias=True, dropout=0.0, recurrent_dropout=0.0,
                 seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, **kwargs):
        weight_kw = {k: kwargs.pop(k) for k in list(kwargs) if k.split("_")[0] in
                     ("kernel", "recurrent", "bias") and k.endswith(
                         ("_initializer", "_regularizer", "_constraint"))}
        kwargs.pop("unroll", None)
        cell = ConvLSTMCell(
            self.rank, filters, kernel_size, strides, padding, data_format,
            dilation_rate, activation, recurrent_activation, use_bias,
            unit_forget_bias, dropout, recurrent_dropout, seed,
            name=f"{kwargs.get('name') or type(self).__name__.lower()}_cell",
            dtype=kwargs.get("dtype"), **weight_kw)
        super().__init__(cell, return_sequences=return_sequences,
                         return_state=return_state, go_backwards=go_backwards,
                         stateful=stateful, **kwargs)

    def get_config(self):
        config = super().get_config()
        for key in ("cell", "unroll", "zero_output_for_mask"):
            config.pop(key)
        c = self.cell
        config.update(
            filters=c.filters, kernel_size=list(c.kernel_size),
            strides=list(c.strides), padding=c.padding,
            data_format=c.data_format, dilation_rate=list(c.dilation_rate),
            activation=activations.serialize(c.activation),
            recurrent_activation=activations.serialize(c.recurrent_activation),
            use_bias=c.use_bias, unit_forget_bias=c.unit_forget_bias,
            dropout=c.dropout, recurrent_dropout=c.recurrent_dropout,
            seed=c.seed, **c._w.config())
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class ConvLSTM2D(_ConvLSTM):
    """2-D convolutional LSTM (Shi et al. 2015; Keras 3's ``ConvLSTM2D``).

    Args:
        filters: output channels. kernel_size, strides, dilation_rate: int or
            2 ints (strides > 1 with dilation > 1 is refused). padding:
            'valid' or 'same' (input convolution; the recurrent one is
            'same'). data_format: 'channels_last' or 'channels_first'.
        activation ('tanh'), recurrent_activation ('sigmoid'), use_bias,
        kernel_/recurrent_/bias_ initializer, regularizer, constraint,
        unit_forget_bias, dropout, recurrent_dropout, seed: as ``LSTM``'s.
        return_sequences, return_state, go_backwards: as ``RNN``'s.
        stateful: not supported (raises).

    Input: float (batch, time, rows, cols, channels) (channels_last) or
    (batch, time, channels, rows, cols); the time and spatial sizes must be
    known. Output: (batch, rows', cols', filters), or with
    ``return_sequences`` (batch, time, rows', cols', filters) (channels
    first: filters before the spatial axes); with ``return_state`` also
    ``h`` and ``c``.

    Raises:
        ValueError: bad arguments; an input of another rank or with unknown
            sizes. NotImplementedError: ``stateful=True``.
    """

    rank = 2


class ConvLSTM1D(ConvLSTM2D):
    """1-D convolutional LSTM (Keras 3's ``ConvLSTM1D``): input (batch, time,
    steps, channels); arguments and errors as ``ConvLSTM2D``."""

    rank = 1


class ConvLSTM3D(ConvLSTM2D):
    """3-D convolutional LSTM (Keras 3's ``ConvLSTM3D``): input (batch, time,
    depth, rows, cols, channels); arguments and errors as ``ConvLSTM2D``."""

    rank = 3
