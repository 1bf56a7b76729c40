"""3-D convolution and pooling ops (backend.ops.conv, .pooling): forward against
direct loops, numerical gradient checks of Conv3D, MaxPool3D, AvgPool3D and
their backprop ops, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend import apply
from tests.backend.gradcheck import check_gradients, grad_fn


def _tf_geometry(size, k, s, padding):
    """(output size, pad before) by TF's SAME/VALID rule; k is the dilated size."""
    if padding == "valid":
        return (size - k) // s + 1, 0
    out = math.ceil(size / s)
    return out, max((out - 1) * s + k - size, 0) // 2


def _naive_conv3d(x, k, strides, padding, dilation):
    """Direct loop over output voxels and kernel taps, bounds checked."""
    size, window = x.shape[1:4], k.shape[:3]
    geo = [_tf_geometry(size[a], (window[a] - 1) * dilation[a] + 1, strides[a],
                        padding) for a in range(3)]
    y = np.zeros((x.shape[0], *(o for o, _ in geo), k.shape[-1]))
    for out in itertools.product(*(range(o) for o, _ in geo)):
        for tap in itertools.product(*(range(w) for w in window)):
            src = [out[a] * strides[a] + tap[a] * dilation[a] - geo[a][1]
                   for a in range(3)]
            if all(0 <= src[a] < size[a] for a in range(3)):
                y[(slice(None), *out)] += x[(slice(None), *src)] @ k[tap]
    return y


def _naive_pool3d(x, size, strides, padding, reduce):
    """Pooling by a loop over output voxels; padded positions are left out."""
    geo = [_tf_geometry(x.shape[1 + a], size[a], strides[a], padding)
           for a in range(3)]
    y = np.zeros((x.shape[0], *(o for o, _ in geo), x.shape[-1]))
    for out in itertools.product(*(range(o) for o, _ in geo)):
        starts = [out[a] * strides[a] - geo[a][1] for a in range(3)]
        win = x[(slice(None), *(slice(max(b, 0), b + size[a])
                                for a, b in enumerate(starts)))]
        y[(slice(None), *out)] = reduce(win, axis=(1, 2, 3))
    return y


CONV3D_CONFIGS = [
    # x shape, kernel shape, strides, padding, dilation
    ((2, 5, 6, 4, 3), (3, 3, 2, 3, 4), (1, 1, 1), "valid", (1, 1, 1)),
    ((2, 5, 6, 4, 3), (3, 3, 3, 3, 2), (1, 1, 1), "same", (1, 1, 1)),
    ((1, 7, 6, 5, 2), (3, 2, 3, 2, 3), (2, 1, 2), "same", (1, 1, 1)),
    ((1, 7, 6, 5, 2), (2, 2, 2, 2, 3), (3, 2, 2), "valid", (1, 1, 1)),
    ((1, 7, 6, 6, 2), (2, 3, 2, 2, 2), (1, 1, 1), "valid", (2, 1, 2)),
    ((1, 6, 5, 6, 1), (3, 3, 2, 1, 2), (1, 1, 1), "same", (2, 2, 1)),
    ((1, 4, 4, 4, 2), (1, 1, 1, 2, 3), (2, 2, 2), "same", (1, 1, 1)),
]


@pytest.mark.parametrize("xs, ks, strides, padding, dilation", CONV3D_CONFIGS)
def test_conv3d_matches_direct_loop(float64, xs, ks, strides, padding, dilation):
    rng = np.random.default_rng(0)
    x, k = rng.standard_normal(xs), rng.standard_normal(ks)
    got = K.conv3d(x, k, strides=strides, padding=padding, dilation_rate=dilation)
    want = _naive_conv3d(x, k, strides, padding, dilation)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_conv3d_by_hand():
    # A 2x2x2 box of ones summed over each of the 8 non-overlapping blocks.
    x = np.arange(64, dtype="float32").reshape(1, 4, 4, 4, 1)
    y = K.conv3d(x, np.ones((2, 2, 2, 1, 1), "float32"), strides=2)
    assert y.shape == (1, 2, 2, 2, 1)
    # Block (0, 0, 0) holds 0, 1, 4, 5, 16, 17, 20, 21.
    assert y[0, 0, 0, 0, 0] == 84.0
    assert y[0, 1, 1, 1, 0] == 84.0 + 8 * (16 * 2 + 4 * 2 + 2)


@pytest.mark.parametrize("images_per_slice", [1, 2])
def test_conv3d_in_batch_slices_matches_whole(float64, monkeypatch,
                                              images_per_slice):
    from kerasflow.backend.ops import conv as conv_module

    rng = np.random.default_rng(9)
    x, k = rng.standard_normal((3, 4, 5, 3, 2)), rng.standard_normal((2, 3, 2, 2, 4))
    attrs = {"strides": (1, 2, 1), "padding": "SAME", "dilation_rate": (1, 1, 1)}
    g = rng.standard_normal((3, 4, 3, 3, 4))
    whole = [apply(op, x, k, g, **attrs)
             for op in ("Conv3DBackpropFilter", "Conv3DBackpropInput")]
    # One image's columns: 4 * 3 * 3 output voxels, 2 * 3 * 2 * 2 taps, 8 bytes.
    monkeypatch.setattr(conv_module, "_COLUMN_BYTES", images_per_slice * 36 * 24 * 8)
    monkeypatch.setattr(conv_module, "_TAP_BYTES", images_per_slice * 36 * 2 * 8)
    np.testing.assert_allclose(K.conv3d(x, k, (1, 2, 1), "same"),
                               _naive_conv3d(x, k, (1, 2, 1), "same", (1, 1, 1)),
                               rtol=1e-12)
    for op, want in zip(("Conv3DBackpropFilter", "Conv3DBackpropInput"), whole):
        np.testing.assert_allclose(apply(op, x, k, g, **attrs), want, rtol=1e-12)


@pytest.mark.parametrize("xs, ks, strides, padding, dilation", [
    ((2, 4, 3, 4, 2), (2, 2, 3, 2, 3), (1, 1, 1), "same", (1, 1, 1)),
    ((1, 5, 4, 5, 2), (3, 2, 2, 2, 2), (2, 1, 2), "valid", (1, 1, 1)),
    ((1, 5, 4, 4, 1), (2, 2, 2, 1, 2), (1, 1, 1), "valid", (2, 1, 2)),
    ((1, 5, 4, 3, 2), (3, 2, 2, 2, 2), (2, 2, 1), "same", (1, 2, 1)),
])
def test_conv3d_gradients(float64, xs, ks, strides, padding, dilation):
    rng = np.random.default_rng(1)
    x, k = rng.standard_normal(xs), rng.standard_normal(ks)
    check_gradients(lambda x, k: K.conv3d(x, k, strides, padding, dilation), [x, k])


@pytest.mark.parametrize("strides, padding", [((1, 1, 1), "same"),
                                              ((2, 1, 2), "valid")])
def test_conv3d_second_order_gradients(float64, strides, padding):
    # The gradient graph holds Conv3DBackpropInput / Conv3DBackpropFilter; its
    # own gradient differentiates both (their rules use Conv3D and each other).
    rng = np.random.default_rng(2)
    x, k = rng.standard_normal((1, 4, 3, 4, 2)), rng.standard_normal((2, 2, 2, 2, 2))
    check_gradients(grad_fn(lambda x, k: K.conv3d(x, k, strides, padding)), [x, k])


POOL3D_CONFIGS = [
    # x shape, pool_size, strides, padding
    ((2, 4, 6, 4, 2), (2, 2, 2), None, "valid"),
    ((1, 5, 5, 3, 2), (2, 2, 2), None, "same"),
    ((1, 5, 6, 5, 1), (3, 2, 3), (2, 2, 1), "same"),
    ((1, 5, 4, 6, 2), (2, 3, 2), (1, 1, 2), "valid"),
]


@pytest.mark.parametrize("xs, size, strides, padding", POOL3D_CONFIGS)
def test_pools3d_match_direct_loop(float64, xs, size, strides, padding):
    x = np.random.default_rng(3).standard_normal(xs)
    s = size if strides is None else strides
    np.testing.assert_allclose(K.max_pool3d(x, size, strides, padding),
                               _naive_pool3d(x, size, s, padding, np.max))
    np.testing.assert_allclose(K.avg_pool3d(x, size, strides, padding),
                               _naive_pool3d(x, size, s, padding, np.mean))


@pytest.mark.parametrize("xs, size, strides, padding", POOL3D_CONFIGS)
def test_pool3d_gradients(float64, xs, size, strides, padding):
    rng = np.random.default_rng(4)
    # A permutation of spaced values: no ties, so max pooling is differentiable.
    x = rng.permutation(math.prod(xs)).reshape(xs) * 0.1
    check_gradients(lambda x: K.max_pool3d(x, size, strides, padding), [x])
    check_gradients(lambda x: K.avg_pool3d(x, size, strides, padding), [x])


@pytest.mark.parametrize("strides, padding", [((2, 2, 2), "VALID"),
                                              ((2, 1, 2), "SAME")])
def test_pool3d_grad_ops_gradients(float64, strides, padding):
    rng = np.random.default_rng(5)
    attrs = {"pool_size": (2, 2, 2), "strides": strides, "padding": padding}
    x = rng.permutation(2 * 4 * 3 * 5 * 2).reshape(2, 4, 3, 5, 2) * 0.1
    y = apply("MaxPool3D", x, **attrs)
    g = rng.standard_normal(y.shape)
    check_gradients(lambda g: apply("MaxPool3DGrad", x, y, g, **attrs), [g])
    check_gradients(lambda g: apply("AvgPool3DGrad", x, g, **attrs), [g])
    check_gradients(lambda gg: apply("MaxPool3DGradGrad", x, y, gg, **attrs),
                    [rng.standard_normal(x.shape)])


def test_max_pool3d_gradient_goes_to_first_maximum():
    # All equal: TF's rule sends the whole gradient to the window's first element.
    x = K.placeholder("float32", (1, 2, 2, 2, 1))
    dx = K.Function([x], K.gradients(K.sum(K.max_pool3d(x)), x))(
        np.ones((1, 2, 2, 2, 1), "float32"))[0]
    want = np.zeros((1, 2, 2, 2, 1), "float32")
    want[0, 0, 0, 0, 0] = 1.0
    np.testing.assert_array_equal(dx, want)


def test_conv3d_and_pool3d_shapes_in_a_graph_and_errors():
    x = K.placeholder("float32", (None, 8, None, 6, 3))
    y = K.conv3d(x, K.placeholder("float32", (3, 3, 3, 3, 4)), 2, "same")
    assert y.shape == (None, 4, None, 3, 4)
    assert K.max_pool3d(x, 2).shape == (None, 4, None, 3, 3)
    assert K.avg_pool3d(x, 3, 1, "valid").shape == (None, 6, None, 4, 3)
    k = np.zeros((3, 3, 3, 3, 4), "float32")
    with pytest.raises(ValueError, match=r"conv3d expects a rank-5 input \(batch, "
                                         r"depth, height, width, channels\).*"
                                         r"x.shape=\(None, 8, 8, 3\)"):
        K.conv3d(K.placeholder("float32", (None, 8, 8, 3)), k)
    with pytest.raises(ValueError, match=r"rank-5 kernel.*kernel.shape=\(3, 3, 3, 4\)"):
        K.conv3d(x, np.zeros((3, 3, 3, 4), "float32"))
    with pytest.raises(ValueError, match=r"in_channels.*kernel.shape\[3\]"):
        K.conv3d(K.placeholder("float32", (None, 8, 8, 8, 2)), k)
    with pytest.raises(ValueError, match=r"conv3d with padding='valid'.*"
                                         r"x.shape=\(None, 2, 8, 8, 3\)"):
        K.conv3d(K.placeholder("float32", (None, 2, 8, 8, 3)), k)
    with pytest.raises(TypeError, match=r"x.dtype=float64, kernel.dtype=float32"):
        K.conv3d(np.zeros((1, 4, 4, 4, 3)), k)
    with pytest.raises(ValueError, match=r"strides must be a positive int or a "
                                         r"tuple of 3.*strides=\(1, 1\)"):
        K.conv3d(x, k, strides=(1, 1))
    with pytest.raises(ValueError, match=r"max_pool3d expects a rank-5 input"):
        K.max_pool3d(K.placeholder("float32", (None, 8, 8, 3)))
    with pytest.raises(ValueError, match=r"avg_pool3d with padding='valid'"):
        K.avg_pool3d(K.placeholder("float32", (None, 8, 1, 8, 3)))
    with pytest.raises(TypeError, match=r"avg_pool3d expects a float input"):
        K.avg_pool3d(np.zeros((1, 2, 2, 2, 1), "int32"))
    with pytest.raises(ValueError, match=r"pool_size must be.*pool_size=\(2, 2\)"):
        K.max_pool3d(x, (2, 2))
