"""Convolution and pooling layers: contract, math against the ops, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract, sample

from kerasflow import backend as K
from kerasflow import layers as L

CASES = [
    (lambda: L.Conv2D(4, 3, activation="relu"), (2, 7, 6, 3), (2, 5, 4, 4)),
    (lambda: L.Conv2D(4, (3, 2), strides=2, padding="same", use_bias=False,
                      kernel_regularizer="l2"), (2, 7, 6, 3), (2, 4, 3, 4)),
    (lambda: L.Conv2D(4, 3, dilation_rate=2, groups=2), (2, 7, 7, 2), (2, 3, 3, 4)),
    (lambda: L.Conv1D(5, 3, padding="causal", dilation_rate=2), (2, 8, 3),
     (2, 8, 5)),
    (lambda: L.Conv1D(5, 2, strides=2), (2, 8, 3), (2, 4, 5)),
    (lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"), (2, 4, 3, 2),
     (2, 8, 6, 3)),
    (lambda: L.Conv2DTranspose(3, 2, strides=2), (2, 4, 3, 2), (2, 8, 6, 3)),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=2), (2, 6, 5, 3),
     (2, 4, 3, 6)),
    (lambda: L.SeparableConv2D(4, 3, padding="same"), (2, 6, 5, 3), (2, 6, 5, 4)),
    (lambda: L.MaxPooling2D(), (2, 7, 6, 3), (2, 3, 3, 3)),
    (lambda: L.MaxPooling2D(3, strides=1, padding="same"), (2, 5, 4, 3),
     (2, 5, 4, 3)),
    (lambda: L.AveragePooling2D((2, 3)), (2, 6, 6, 3), (2, 3, 2, 3)),
    (lambda: L.MaxPooling1D(2), (2, 7, 3), (2, 3, 3)),
    (lambda: L.AveragePooling1D(3, strides=2, padding="same"), (2, 7, 3),
     (2, 4, 3)),
    (lambda: L.GlobalMaxPooling2D(), (2, 5, 4, 3), (2, 3)),
    (lambda: L.GlobalAveragePooling2D(keepdims=True), (2, 5, 4, 3), (2, 1, 1, 3)),
    (lambda: L.GlobalMaxPooling1D(), (2, 5, 3), (2, 3)),
    (lambda: L.GlobalAveragePooling1D(), (2, 5, 3), (2, 3)),
]


@pytest.mark.parametrize("make,in_shape,out_shape", CASES)
def test_contract(make, in_shape, out_shape, tmp_path):
    check_contract(make, in_shape, out_shape, tmp_path)


def test_conv2d_layer_is_conv2d_plus_bias():
    layer = L.Conv2D(3, 2, bias_initializer="ones")
    x = sample((2, 5, 5, 2))
    y = layer(x)
    np.testing.assert_allclose(y, K.conv2d(x, layer.kernel.numpy()) + 1.0,
                               rtol=1e-5, atol=1e-6)


def test_grouped_conv_equals_separate_convs():
    layer = L.Conv2D(4, 3, groups=2, use_bias=False)
    x = sample((1, 5, 5, 4))
    y = layer(x)
    k = layer.kernel.numpy()  # (3, 3, 2, 4)
    ref = np.concatenate([K.conv2d(x[..., :2], k[..., :2]),
                          K.conv2d(x[..., 2:], k[..., 2:])], axis=-1)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_causal_conv1d_does_not_see_the_future():
    layer = L.Conv1D(2, 3, padding="causal")
    x = sample((1, 6, 1))
    y0 = layer(x)
    x2 = x.copy()
    x2[0, 4:] += 10.0
    np.testing.assert_allclose(layer(x2)[0, :4], y0[0, :4], rtol=1e-6)


def test_conv_bad_input_errors():
    conv = L.Conv2D(4, 3)
    with pytest.raises(ValueError, match=r"conv2d.*expected ndim=4.*Full shape "
                                         r"received: \(None, 28, 28\)"):
        conv(K.placeholder("float32", (None, 28, 28)))
    conv(K.placeholder("float32", (None, 8, 8, 3)))
    with pytest.raises(ValueError, match=r"conv2d.*expected axis -1 of input shape "
                                         r"to have value 3"):
        conv(K.placeholder("float32", (None, 8, 8, 5)))
    with pytest.raises(ValueError, match=r"kernel .*larger than the padded input.*"
                                         r"\(None, 2, 8, 3\)"):
        conv(K.placeholder("float32", (None, 2, 8, 3)))
    with pytest.raises(ValueError, match="pool_size"):
        L.MaxPooling2D(3)(K.placeholder("float32", (None, 2, 2, 1)))
    with pytest.raises(ValueError, match="expected ndim=3"):
        L.Conv1D(2, 2)(K.placeholder("float32", (None, 4, 4, 1)))
    with pytest.raises(ValueError, match="filters"):
        L.Conv2D(0, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        L.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="padding"):
        L.Conv2D(2, 3, padding="full")
