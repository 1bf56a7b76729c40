"""Tests for the convolution ops (backend.ops.conv): conv2d, conv1d,
conv2d_transpose and depthwise_conv2d, and the pooling ops (.pooling):
max_pool2d, avg_pool2d and the 1-D poolings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_gradients, grad_fn

from kerasflow import backend as K
from kerasflow.backend import Function, apply, gradients, multiply, placeholder
from kerasflow.backend.ops import conv as conv_module
from kerasflow.backend.ops import pooling


# -- references -----------------------------------------------------------------------
def _tf_pads(size, k, s, padding):
    """(output size, pad before) by TF's SAME/VALID rule; k is the dilated size."""
    if padding == "valid":
        return (size - k) // s + 1, 0
    out = math.ceil(size / s)
    return out, max((out - 1) * s + k - size, 0) // 2


def _naive_conv(x, k, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """Direct loop over output pixels and kernel taps."""
    n, h, w, _ = x.shape
    kh, kw, _, co = k.shape
    (sh, sw), (dh, dw) = strides, dilation
    ho, top = _tf_pads(h, (kh - 1) * dh + 1, sh, padding)
    wo, left = _tf_pads(w, (kw - 1) * dw + 1, sw, padding)
    y = np.zeros((n, ho, wo, co))
    for i in range(ho):
        for j in range(wo):
            for a in range(kh):
                for b in range(kw):
                    r, c = i * sh + a * dh - top, j * sw + b * dw - left
                    if 0 <= r < h and 0 <= c < w:
                        y[:, i, j] += x[:, r, c] @ k[a, b]
    return y


def _naive_pool(x, size, strides, padding, reduce):
    """Pooling by a loop over output pixels; padded positions are left out."""
    n, h, w, c = x.shape
    ho, top = _tf_pads(h, size[0], strides[0], padding)
    wo, left = _tf_pads(w, size[1], strides[1], padding)
    y = np.zeros((n, ho, wo, c))
    for i in range(ho):
        for j in range(wo):
            r0, c0 = i * strides[0] - top, j * strides[1] - left
            win = x[:, max(r0, 0):r0 + size[0], max(c0, 0):c0 + size[1]]
            y[:, i, j] = reduce(win, axis=(1, 2))
    return y


def _numeric_grad(f, args, i, eps=1e-6):
    """Central differences of scalar f(*args) with respect to args[i]."""
    args = [a.copy() for a in args]
    x, grad = args[i], np.zeros_like(args[i])
    for j in range(x.size):
        old = x.flat[j]
        x.flat[j] = old + eps
        up = float(f(*args))
        x.flat[j] = old - eps
        down = float(f(*args))
        x.flat[j] = old
        grad.flat[j] = (up - down) / (2 * eps)
    return grad


def _check_grads(f, args):
    """Symbolic gradients of f (built on placeholders) against central differences."""
    phs = [placeholder("float64", a.shape) for a in args]
    symbolic = Function(phs, gradients(f(*phs), phs))(*args)
    for i, got in enumerate(symbolic):
        np.testing.assert_allclose(got, _numeric_grad(f, args, i), rtol=1e-6,
                                   atol=1e-7)


# -- conv2d forward -------------------------------------------------------------------
CONV_CONFIGS = [
    # x shape, kernel shape, strides, padding, dilation
    ((2, 7, 7, 3), (3, 3, 3, 4), (1, 1), "valid", (1, 1)),
    ((2, 7, 7, 3), (3, 3, 3, 4), (1, 1), "same", (1, 1)),
    ((2, 8, 9, 2), (3, 3, 2, 3), (2, 2), "same", (1, 1)),
    ((2, 9, 8, 2), (3, 2, 2, 3), (2, 2), "valid", (1, 1)),
    ((1, 10, 9, 2), (3, 3, 2, 2), (1, 1), "same", (2, 2)),
    ((1, 10, 9, 2), (2, 3, 2, 2), (1, 1), "valid", (2, 1)),
    ((2, 11, 7, 3), (4, 2, 3, 5), (3, 2), "SAME", (1, 1)),
    ((1, 5, 5, 1), (1, 1, 1, 2), (2, 2), "same", (1, 1)),
    ((1, 9, 9, 2), (3, 3, 2, 2), (2, 2), "same", (2, 2)),
]


@pytest.mark.parametrize("xs, ks, strides, padding, dilation", CONV_CONFIGS)
def test_conv2d_matches_direct_loop(float64, xs, ks, strides, padding, dilation):
    rng = np.random.default_rng(0)
    x, k = rng.standard_normal(xs), rng.standard_normal(ks)
    got = K.conv2d(x, k, strides=strides, padding=padding, dilation_rate=dilation)
    want = _naive_conv(x, k, strides, padding.lower(), dilation)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("images_per_slice", [1, 2])
def test_conv2d_in_batch_slices_matches_whole(float64, monkeypatch,
                                              images_per_slice):
    rng = np.random.default_rng(9)
    x, k = rng.standard_normal((3, 6, 5, 2)), rng.standard_normal((3, 3, 2, 4))
    attrs = {"strides": (2, 1), "padding": "SAME", "dilation_rate": (1, 1)}
    g = rng.standard_normal((3, 3, 5, 4))
    whole = apply("Conv2DBackpropFilter", x, k, g, **attrs)
    # One image's columns: 3 * 5 output pixels, 3 * 3 * 2 taps, 8 bytes each.
    monkeypatch.setattr(conv_module, "_COLUMN_BYTES", images_per_slice * 15 * 18 * 8)
    np.testing.assert_allclose(K.conv2d(x, k, (2, 1), "same"),
                               _naive_conv(x, k, (2, 1), "same"), rtol=1e-12)
    np.testing.assert_allclose(apply("Conv2DBackpropFilter", x, k, g, **attrs),
                               whole, rtol=1e-12)


def test_conv2d_literal_values():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    ones = np.ones((2, 2, 1, 1), np.float32)
    got = K.conv2d(x, ones, strides=2)
    np.testing.assert_array_equal(got[0, :, :, 0], [[10, 18], [42, 50]])
    assert got.dtype == np.float32
    # SAME with an even kernel pads 0 before and 1 after (TF): the last row and
    # column see the padding.
    got = K.conv2d(np.ones((1, 4, 4, 1), np.float32), ones, padding="same")
    np.testing.assert_array_equal(
        got[0, :, :, 0], [[4, 4, 4, 2], [4, 4, 4, 2], [4, 4, 4, 2], [2, 2, 2, 1]]
    )


# -- conv2d gradients -----------------------------------------------------------------
@pytest.mark.parametrize("xs, ks, strides, padding, dilation", [
    ((2, 5, 6, 2), (3, 2, 2, 3), (1, 1), "same", (1, 1)),
    ((2, 6, 5, 2), (3, 3, 2, 2), (2, 2), "same", (1, 1)),
    ((1, 7, 6, 2), (2, 3, 2, 2), (2, 1), "valid", (1, 1)),
    ((1, 7, 7, 2), (2, 2, 2, 2), (1, 1), "valid", (2, 2)),
    ((1, 6, 7, 2), (3, 3, 2, 2), (2, 2), "same", (2, 1)),
])
def test_conv2d_gradients(float64, xs, ks, strides, padding, dilation):
    rng = np.random.default_rng(1)
    x, k = rng.standard_normal(xs), rng.standard_normal(ks)
    attrs = {"strides": strides, "padding": padding, "dilation_rate": dilation}
    w = rng.standard_normal(K.conv2d(x, k, **attrs).shape)
    _check_grads(lambda x, k: K.sum(multiply(K.conv2d(x, k, **attrs), w)), [x, k])


@pytest.mark.parametrize("strides, padding", [((1, 1), "SAME"), ((2, 2), "VALID")])
def test_conv2d_backprop_ops_gradients(float64, strides, padding):
    # Second order: each backprop op differentiated in its differentiable inputs.
    rng = np.random.default_rng(2)
    attrs = {"strides": strides, "padding": padding, "dilation_rate": (1, 1)}
    x, k = rng.standard_normal((1, 5, 6, 2)), rng.standard_normal((3, 2, 2, 2))
    g = rng.standard_normal(K.conv2d(x, k, strides, padding).shape)
    vx, vk = rng.standard_normal(x.shape), rng.standard_normal(k.shape)
    _check_grads(lambda k, g: K.sum(multiply(
        apply("Conv2DBackpropInput", x, k, g, **attrs), vx)), [k, g])
    _check_grads(lambda x, g: K.sum(multiply(
        apply("Conv2DBackpropFilter", x, k, g, **attrs), vk)), [x, g])


# -- pooling --------------------------------------------------------------------------
POOL_CONFIGS = [
    # x shape, pool_size, strides, padding
    ((2, 6, 6, 2), (2, 2), None, "valid"),
    ((2, 7, 5, 2), (2, 2), None, "same"),
    ((1, 7, 7, 3), (3, 3), (2, 2), "same"),
    ((1, 7, 8, 1), (3, 2), (1, 2), "valid"),
    ((1, 5, 6, 2), (3, 3), (1, 1), "same"),
]


@pytest.mark.parametrize("xs, size, strides, padding", POOL_CONFIGS)
def test_pools_match_direct_loop(float64, xs, size, strides, padding):
    x = np.random.default_rng(3).standard_normal(xs)
    s = size if strides is None else strides
    np.testing.assert_allclose(K.max_pool2d(x, size, strides, padding),
                               _naive_pool(x, size, s, padding, np.max))
    np.testing.assert_allclose(K.avg_pool2d(x, size, strides, padding),
                               _naive_pool(x, size, s, padding, np.mean))


@pytest.mark.parametrize("xs, size, strides, padding", POOL_CONFIGS)
def test_pool_gradients(float64, xs, size, strides, padding):
    rng = np.random.default_rng(4)
    # A permutation of spaced values: no ties, so max pooling is differentiable.
    x = rng.permutation(np.prod(xs)).reshape(xs) * 0.1
    w = rng.standard_normal(K.max_pool2d(x, size, strides, padding).shape)
    _check_grads(lambda x: K.sum(multiply(K.max_pool2d(x, size, strides, padding), w)),
                 [x])
    _check_grads(lambda x: K.sum(multiply(K.avg_pool2d(x, size, strides, padding), w)),
                 [x])


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_pool_grad_ops_gradients(float64, padding):
    rng = np.random.default_rng(5)
    attrs = {"pool_size": (2, 3), "strides": (2, 2), "padding": padding.upper()}
    x = rng.permutation(2 * 5 * 7 * 2).reshape(2, 5, 7, 2) * 0.1
    y = K.max_pool2d(x, (2, 3), (2, 2), padding)
    g, v = rng.standard_normal(y.shape), rng.standard_normal(x.shape)
    _check_grads(lambda g: K.sum(multiply(apply("MaxPoolGrad", x, y, g, **attrs), v)),
                 [g])
    _check_grads(lambda g: K.sum(multiply(apply("AvgPoolGrad", x, g, **attrs), v)),
                 [g])
    _check_grads(lambda gg: K.sum(multiply(
        apply("MaxPoolGradGrad", x, y, gg, **attrs), g)), [v])


def test_max_pool_gradient_goes_to_first_maximum():
    x = placeholder("float32", (1, 2, 2, 1))
    dx = Function([x], gradients(K.sum(K.max_pool2d(x)), x))(
        np.array([[[[1.0], [3.0]], [[3.0], [0.0]]]], np.float32))[0]
    np.testing.assert_array_equal(dx[0, :, :, 0], [[0, 1], [0, 0]])


def test_pools_same_padding_literal_values():
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    # Windows [0 1 3 4], [2 5], [6 7], [8]: the padding is not counted.
    np.testing.assert_array_equal(
        K.avg_pool2d(x, 2, padding="same")[0, :, :, 0], [[2, 3.5], [6.5, 8]])
    np.testing.assert_array_equal(
        K.max_pool2d(-x, 2, padding="same")[0, :, :, 0], [[0, -2], [-6, -8]])
    np.testing.assert_array_equal(
        K.max_pool2d(x.astype(np.int32), 2, padding="same")[0, :, :, 0],
        [[4, 5], [7, 8]])


# -- symbolic path --------------------------------------------------------------------
def test_symbolic_shapes_and_run(float64):
    rng = np.random.default_rng(6)
    k = rng.standard_normal((3, 3, 3, 4))
    x = placeholder("float64", (None, 9, 9, 3))
    y = K.conv2d(x, k, strides=2, padding="same")
    assert y.shape == (None, 5, 5, 4)
    assert K.max_pool2d(y).shape == (None, 2, 2, 4)
    assert K.avg_pool2d(y, 3, 1, "same").shape == (None, 5, 5, 4)
    assert K.conv2d(x, k, padding="valid", dilation_rate=2).shape == (None, 5, 5, 4)
    xv = rng.standard_normal((2, 9, 9, 3))
    out, dx = Function([x], [y, gradients(K.sum(y), x)[0]])(xv)
    np.testing.assert_allclose(out, _naive_conv(xv, k, (2, 2), "same"), rtol=1e-12)
    assert dx.shape == xv.shape


def test_unknown_spatial_dims_take_their_size_at_run_time(float64):
    rng = np.random.default_rng(7)
    x = placeholder("float64", (None, None, None, 2))
    k = K.Variable(rng.standard_normal((3, 3, 2, 2)))
    y = K.avg_pool2d(K.conv2d(x, k, strides=2, padding="same"), 2, padding="same")
    assert y.shape == (None, None, None, 2)
    assert K.conv2d(placeholder("float64"), k).shape == (None, None, None, 2)
    f = Function([x], gradients(K.sum(y), [x, k]))
    # Heights 8 and 7 give one conv output height (4): the gradient keeps each.
    for h in (8, 7):
        dx, dk = f(rng.standard_normal((1, h, 5, 2)))
        assert dx.shape == (1, h, 5, 2) and dk.shape == (3, 3, 2, 2)


# -- errors ---------------------------------------------------------------------------
def test_conv2d_errors():
    x = placeholder("float32", (None, 8, 8, 3))
    with pytest.raises(ValueError, match=r"in_channels.*x.shape=\(None, 8, 8, 3\), "
                                         r"kernel.shape=\(3, 3, 4, 2\)"):
        K.conv2d(x, np.zeros((3, 3, 4, 2), np.float32))
    with pytest.raises(ValueError, match=r"rank-4 input.*x.shape=\(None, 8, 3\)"):
        K.conv2d(placeholder("float32", (None, 8, 3)), np.zeros((3, 3, 3, 2),
                                                                np.float32))
    with pytest.raises(ValueError, match=r"rank-4 kernel.*kernel.shape=\(3, 3, 3\)"):
        K.conv2d(x, np.zeros((3, 3, 3), np.float32))
    with pytest.raises(ValueError, match=r"padding='valid'.*x.shape=\(None, 8, 8, 3\)"
                                         r".*window=\(3, 3\).*dilation_rate=\(4, 4\)"):
        K.conv2d(x, np.zeros((3, 3, 3, 2), np.float32), dilation_rate=4)
    with pytest.raises(TypeError, match=r"x.dtype=float32, kernel.dtype=float64"):
        K.conv2d(x, np.zeros((3, 3, 3, 2)))
    with pytest.raises(ValueError, match=r"padding must be 'same' or 'valid'.*"
                                         r"'causal'"):
        K.conv2d(x, np.zeros((3, 3, 3, 2), np.float32), padding="causal")
    with pytest.raises(ValueError, match=r"strides must be.*strides=\(1, 0\)"):
        K.conv2d(x, np.zeros((3, 3, 3, 2), np.float32), strides=(1, 0))


def test_pool_errors():
    x = placeholder("float32", (None, 2, 5, 3))
    with pytest.raises(ValueError, match=r"max_pool2d with padding='valid'.*"
                                         r"x.shape=\(None, 2, 5, 3\)"):
        K.max_pool2d(x, 3)
    assert K.max_pool2d(x, 3, padding="same").shape == (None, 1, 2, 3)
    with pytest.raises(ValueError, match=r"avg_pool2d expects a rank-4 input"):
        K.avg_pool2d(placeholder("float32", (None, 4)))
    with pytest.raises(TypeError, match=r"avg_pool2d expects a float input"):
        K.avg_pool2d(placeholder("int32", (None, 4, 4, 1)))
    with pytest.raises(ValueError, match=r"pool_size must be.*pool_size=\(2, 2, 2\)"):
        K.max_pool2d(x, (2, 2, 2))


# -- GPU ------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_matches_cpu(float64):
    rng = np.random.default_rng(8)
    xv, kv = rng.standard_normal((2, 9, 8, 3)), rng.standard_normal((3, 2, 3, 4))
    x, k = placeholder("float64", xv.shape), placeholder("float64", kv.shape)
    y = K.conv2d(x, k, strides=2, padding="same", dilation_rate=(1, 2))
    outs = [y, K.max_pool2d(y, 2, 1, "same"), K.avg_pool2d(y, 3, 2, "same")]
    loss = K.sum(multiply(outs[1], outs[2][:, :1, :1]))
    fetches = outs + gradients(loss, [x, k])
    cpu = Function([x, k], fetches)(xv, kv)
    old = K.get_device()
    K.set_device("gpu")
    try:
        gpu = K.to_numpy(Function([x, k], fetches)(xv, kv))
    finally:
        K.set_device(old)
    for a, b in zip(cpu, gpu, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


# -- conv1d, 1-D pooling, conv2d_transpose, depthwise_conv2d --------------------------
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


def test_conv1d_and_depthwise_conv2d_errors():
    with pytest.raises(ValueError, match="conv1d expects a rank-3 input"):
        K.conv1d(np.zeros((2, 3), "float32"), np.zeros((1, 3, 2), "float32"))
    with pytest.raises(ValueError, match=r"kernel.shape\[2\]"):
        K.depthwise_conv2d(np.zeros((1, 4, 4, 3), "float32"),
                           np.zeros((2, 2, 2, 1), "float32"))


@pytest.mark.parametrize("images_per_slice", [1, 2])
def test_conv2d_input_gradient_in_batch_slices_matches_whole(float64, monkeypatch,
                                                             images_per_slice):
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
