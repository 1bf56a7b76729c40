"""Tests for conv1d, 1-D pooling, conv2d_transpose and depthwise_conv2d."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients, grad_fn

from kerasflow import backend as K


def _rng():
    return np.random.RandomState(0)


def _naive_conv1d(x, k, stride, padding, dilation):
    n, w, _ = x.shape
    kw, _, co = k.shape
    keff = (kw - 1) * dilation + 1
    if padding == "valid":
        wo, left = (w - keff) // stride + 1, 0
    else:
        wo = -(-w // stride)
        left = max((wo - 1) * stride + keff - w, 0) // 2
    y = np.zeros((n, wo, co))
    for j in range(wo):
        for b in range(kw):
            c = j * stride + b * dilation - left
            if 0 <= c < w:
                y[:, j] += x[:, c] @ k[b]
    return y


@pytest.mark.parametrize("stride,padding,dilation", [
    (1, "valid", 1), (2, "same", 1), (1, "same", 2), (3, "valid", 1)])
def test_conv1d_matches_loop_and_gradients(float64, stride, padding, dilation):
    rng = _rng()
    x, k = rng.randn(2, 9, 3), rng.randn(3, 3, 4)
    np.testing.assert_allclose(K.conv1d(x, k, stride, padding, dilation),
                               _naive_conv1d(x, k, stride, padding, dilation),
                               rtol=1e-10, atol=1e-12)
    check_gradients(lambda a, b: K.conv1d(a, b, stride, padding, dilation), [x, k])


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_pool1d_gradients(float64, padding):
    x = _rng().randn(2, 7, 3)
    check_gradients(lambda a: K.max_pool1d(a, 2, padding=padding), [x])
    check_gradients(lambda a: K.avg_pool1d(a, 3, 2, padding=padding), [x])
    np.testing.assert_allclose(K.max_pool1d(x, 2)[:, 1], np.maximum(x[:, 2], x[:, 3]))


@pytest.mark.parametrize("strides,padding", [((1, 1), "valid"), ((2, 2), "same"),
                                             ((2, 1), "valid"), ((3, 2), "same")])
def test_conv2d_transpose_is_the_adjoint_of_conv2d(float64, strides, padding):
    rng = _rng()
    k = rng.randn(3, 2, 2, 4)  # (kh, kw, out_channels, in_channels)
    out_size = (7, 6)
    y = rng.randn(2, 7, 6, 2)
    xs = K.conv2d(y, k, strides, padding).shape
    x = rng.randn(*xs)
    t = K.conv2d_transpose(x, k, out_size, strides, padding)
    assert t.shape == (2, 7, 6, 2)
    # <conv2d(y, k), x> == <y, conv2d_transpose(x, k)>
    np.testing.assert_allclose(np.sum(K.conv2d(y, k, strides, padding) * x),
                               np.sum(y * t), rtol=1e-10)
    check_gradients(lambda a, b: K.conv2d_transpose(a, b, out_size, strides,
                                                    padding), [x, k])


def test_conv2d_transpose_second_order(float64):
    rng = _rng()
    x, k = rng.randn(1, 3, 3, 2), rng.randn(2, 2, 3, 2)
    check_gradients(grad_fn(lambda a, b: K.conv2d_transpose(a, b, (6, 6), 2)),
                    [x, k])


def test_conv2d_transpose_rejects_bad_output_size():
    x = np.zeros((1, 3, 3, 2), "float32")
    k = np.zeros((2, 2, 3, 2), "float32")
    with pytest.raises(ValueError, match="output_size=.*does not map back"):
        K.conv2d_transpose(x, k, (9, 9), strides=2)


def _naive_depthwise(x, k, strides, padding):
    kh, kw, c, m = k.shape
    out = [K.conv2d(x[..., i:i + 1], k[:, :, i:i + 1, :], strides, padding)
           for i in range(c)]
    return np.concatenate(out, axis=-1)


@pytest.mark.parametrize("strides,padding,dilation", [
    ((1, 1), "valid", (1, 1)), ((2, 2), "same", (1, 1)), ((1, 1), "same", (2, 2))])
def test_depthwise_conv2d(float64, strides, padding, dilation):
    rng = _rng()
    x, k = rng.randn(2, 6, 5, 3), rng.randn(3, 2, 3, 2)
    if dilation == (1, 1):
        np.testing.assert_allclose(K.depthwise_conv2d(x, k, strides, padding),
                                   _naive_depthwise(x, k, strides, padding),
                                   rtol=1e-10, atol=1e-12)
    check_gradients(lambda a, b: K.depthwise_conv2d(a, b, strides, padding,
                                                    dilation), [x, k])
    check_gradients(grad_fn(lambda a, b: K.depthwise_conv2d(a, b, strides,
                                                            padding)), [x, k])


def test_conv_extra_errors():
    with pytest.raises(ValueError, match="conv1d expects a rank-3 input"):
        K.conv1d(np.zeros((2, 3), "float32"), np.zeros((1, 3, 2), "float32"))
    with pytest.raises(ValueError, match=r"kernel.shape\[2\]"):
        K.depthwise_conv2d(np.zeros((1, 4, 4, 3), "float32"),
                           np.zeros((2, 2, 2, 1), "float32"))


@pytest.mark.parametrize("images_per_slice", [1, 2])
def test_conv2d_input_gradient_in_batch_slices_matches_whole(float64, monkeypatch,
                                                             images_per_slice):
    from kerasflow.backend.ops import conv as conv_module

    rng = np.random.RandomState(9)
    x, k = rng.randn(3, 6, 5, 2), rng.randn(3, 3, 2, 4)
    attrs = {"strides": (2, 1), "padding": "SAME", "dilation_rate": (1, 1)}
    g = rng.randn(3, 3, 5, 4)
    whole = K.apply("Conv2DBackpropInput", x, k, g, **attrs)
    # One image's tap product: 3 * 5 output pixels, 2 input channels, 8 bytes.
    monkeypatch.setattr(conv_module, "_TAP_BYTES", images_per_slice * 15 * 2 * 8)
    np.testing.assert_allclose(K.apply("Conv2DBackpropInput", x, k, g, **attrs),
                               whole, rtol=1e-12)
    check_gradients(lambda a: K.conv2d(a, k, (2, 1), "same"), [x])


@pytest.mark.parametrize("shape,size,padding", [
    ((2, 7, 5, 3), (2, 2), "VALID"), ((2, 7, 5, 3), (2, 2), "SAME"),
    ((1, 6, 9, 2), (3, 2), "SAME"), ((2, 4, 4, 1), (2, 2), "VALID")])
def test_tiled_max_pool_grad_matches_the_per_tap_rule(shape, size, padding):
    from kerasflow.backend.ops import conv as conv_module
    from kerasflow.backend.ops import pooling

    rng = np.random.RandomState(4)
    # ReLU-like data: many ties at zero, where the first maximum must win.
    x = np.maximum(rng.randn(*shape), 0).round(1).astype("float32")
    y = pooling._max_pool(np, x, size, size, padding)
    g = rng.randn(*y.shape).astype("float32")
    fast = pooling._max_pool_grad_kernel(np, x, y, g, size, size, padding)
    _, pads = conv_module._plan(x.shape, size, size, (1, 1), padding)
    xpad = conv_module._pad(np, x, pads, -np.inf)
    slow = conv_module._padded_zeros(np, x.shape, pads, g.dtype)
    for idx, hit in pooling._first_max_masks(np, xpad, y, size, size):
        slow[idx] += np.where(hit, g, 0)
    np.testing.assert_array_equal(fast, conv_module._crop(slow, x.shape, pads))
