"""``Conv1DTranspose`` (Keras 3's layer) as a 2-D transposed convolution of
height 1, and Keras' long aliases of the transposed convolutions."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.layers.convolutional import Conv2DTranspose

__all__ = ["Conv1DTranspose", "Convolution1DTranspose", "Convolution2DTranspose"]


class Conv1DTranspose(Conv2DTranspose):
    """Transposed 1-D convolution (Keras 3's ``Conv1DTranspose``).

    The kernel is (kernel_size, filters, channels); the output length is
    ``steps * stride`` for 'same' and ``(steps - 1) * stride + max(dilated
    kernel, stride)`` for 'valid', as Keras 3 (``output_padding`` is not
    supported).

    Args:
        filters, kernel_size, strides, padding ('valid' or 'same'),
        data_format, dilation_rate, activation, use_bias, kernel_/bias_
        initializer, regularizer, constraint: as ``Conv1D``.

    Input: float (batch, steps, channels), or (batch, channels, steps) for
    'channels_first'. Output: (batch, steps', filters) (resp. (batch,
    filters, steps')), the input's dtype.

    Raises:
        ValueError: bad arguments ('causal' padding included), a non rank-3
            input, a channel mismatch, an unknown input length.
    """

    rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=1,
                 activation=None, use_bias=True, **kwargs):
        if isinstance(padding, str) and padding.lower() == "causal":
            raise ValueError(f"Conv1DTranspose supports padding 'valid' or "
                             f"'same'. Received: padding={padding!r}.")
        super().__init__(filters, kernel_size, strides, padding, output_padding,
                         data_format, dilation_rate, activation, use_bias,
                         **kwargs)

    def _convolve(self, x):
        steps = x.shape[1]
        if steps is None:
            raise ValueError(f"Layer '{self.name}' needs a known input length. "
                             f"Received: input shape {x.shape}.")
        size = K.conv2d_transpose_output_size(
            steps, self.kernel_size[0], self.strides[0], self.dilation_rate[0],
            self.padding)
        y = K.conv2d_transpose(K.expand_dims(x, 1), K.expand_dims(self.kernel, 0),
                               [1, size], (1, self.strides[0]), self.padding,
                               (1, self.dilation_rate[0]))
        return K.squeeze(y, 1)


Convolution1DTranspose = Conv1DTranspose
Convolution2DTranspose = Conv2DTranspose
