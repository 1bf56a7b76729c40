"""``kerasflow.ops.nn`` against Keras 3's ``keras.ops.nn`` (numpy backend),
eagerly and (``assert_matches_keras``) in graphs: activations (shrinkage,
sparse and gated ones too), normalizations, conv and pooling in both data
formats, transposed/depthwise/separable convolutions, adaptive pooling,
unfold/fold, cross-entropies, CTC decoding, encodings and metrics, and
``dot_product_attention`` with bias, masks and the causal mask; gradients
checked numerically in float64."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy
from tests.ops_oracle import assert_matches_keras

RNG = np.random.RandomState(0)
X = RNG.randn(2, 3, 5).astype("float32")
R = np.random.RandomState(1)
X2 = (R.randn(2, 3, 6) * 2).astype("float32")
IMG = R.randn(2, 6, 7, 3).astype("float32")


@pytest.mark.parametrize("name,kwargs", [
    ("relu", {}), ("relu6", {}), ("sigmoid", {}), ("softplus", {}), ("softsign", {}),
    ("silu", {}), ("log_sigmoid", {}), ("leaky_relu", {"negative_slope": 0.1}),
    ("hard_sigmoid", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("gelu", {}),
    ("gelu", {"approximate": False}), ("softmax", {"axis": 1}),
    ("log_softmax", {}), ("normalize", {"axis": 1})])
def test_activations_equal_keras(name, kwargs):
    keras = keras_numpy()
    np.testing.assert_allclose(getattr(kf.ops.nn, name)(X, **kwargs),
                               np.asarray(getattr(keras.ops.nn, name)(X, **kwargs)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,kshape,kwargs", [
    ((2, 9, 3), (3, 3, 4), {"strides": 2, "padding": "same"}),
    ((2, 7, 7, 3), (3, 3, 3, 4), {"padding": "valid", "dilation_rate": 2}),
    ((2, 3, 7, 7), (3, 3, 3, 4), {"data_format": "channels_first"}),
    ((1, 5, 5, 5, 2), (2, 2, 2, 2, 3), {"strides": 1}),
])
def test_conv_equals_keras(shape, kshape, kwargs):
    keras = keras_numpy()
    x, k = RNG.randn(*shape).astype("float32"), RNG.randn(*kshape).astype("float32")
    np.testing.assert_allclose(kf.ops.nn.conv(x, k, **kwargs),
                               np.asarray(keras.ops.nn.conv(x, k, **kwargs)),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["max_pool", "average_pool"])
@pytest.mark.parametrize("shape,kwargs", [
    # Strides given: Keras' numpy backend fails on strides=None for these.
    ((2, 8, 3), {"pool_size": 2, "strides": 2}),
    ((2, 6, 6, 3), {"pool_size": 3, "strides": 2, "padding": "same"}),
    ((2, 3, 6, 6), {"pool_size": 2, "strides": 2, "data_format": "channels_first"})])
def test_pools_equal_keras(name, shape, kwargs):
    keras = keras_numpy()
    x = RNG.randn(*shape).astype("float32")
    np.testing.assert_allclose(getattr(kf.ops.nn, name)(x, **kwargs),
                               np.asarray(getattr(keras.ops.nn, name)(x, **kwargs)),
                               rtol=1e-5, atol=1e-6)


def test_cross_entropies_equal_keras():
    keras = keras_numpy()
    p = RNG.uniform(0.05, 0.95, (4, 3)).astype("float32")
    t = (RNG.rand(4, 3) > 0.5).astype("float32")
    ids = np.array([0, 2, 1, 2])
    for fl in (False, True):
        np.testing.assert_allclose(
            kf.ops.nn.binary_crossentropy(t, p, from_logits=fl),
            np.asarray(keras.ops.nn.binary_crossentropy(t, p, from_logits=fl)),
            rtol=1e-5)
        onehot = np.eye(3, dtype="float32")[ids]
        np.testing.assert_allclose(
            kf.ops.nn.categorical_crossentropy(onehot, p, from_logits=fl),
            np.asarray(keras.ops.nn.categorical_crossentropy(onehot, p,
                                                             from_logits=fl)),
            rtol=1e-5)
        np.testing.assert_allclose(
            kf.ops.nn.sparse_categorical_crossentropy(ids, p, from_logits=fl),
            np.asarray(keras.ops.nn.sparse_categorical_crossentropy(
                ids, p, from_logits=fl)), rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3}])
def test_dot_product_attention_equals_keras(kwargs):
    keras = keras_numpy()
    q = RNG.randn(2, 4, 2, 3).astype("float32")
    k = RNG.randn(2, 5, 2, 3).astype("float32") if not kwargs.get("is_causal") \
        else RNG.randn(2, 4, 2, 3).astype("float32")
    v = RNG.randn(*k.shape).astype("float32")
    s = k.shape[1]
    bias = RNG.randn(1, 2, 4, s).astype("float32")
    mask = RNG.rand(2, 1, 4, s) > 0.3
    mask[..., 0] = True
    for extra in ({}, {"bias": bias}, {"mask": mask}):
        ours = kf.ops.nn.dot_product_attention(q, k, v, **kwargs, **extra)
        theirs = keras.ops.nn.dot_product_attention(q, k, v, **kwargs, **extra)
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-4, atol=1e-5)


def test_dot_product_attention_gradients(float64):
    q, k, v = (RNG.randn(1, 3, 2, 2) for _ in range(3))
    check_gradients(lambda a, b, c: kf.ops.nn.dot_product_attention(
        a, b, c, is_causal=True), [q, k, v])


def test_pool_strides_default_to_the_pool_size():
    x = RNG.randn(2, 8, 3).astype("float32")
    np.testing.assert_allclose(kf.ops.nn.max_pool(x, 2), x.reshape(2, 4, 2, 3).max(2))


@pytest.mark.parametrize("name,kwargs", [
    ("celu", {}), ("celu", {"alpha": 0.5}), ("glu", {}), ("glu", {"axis": 2}),
    ("hard_tanh", {}), ("hard_shrink", {}), ("hard_shrink", {"threshold": 1.0}),
    ("soft_shrink", {}), ("soft_shrink", {"threshold": 1.2}), ("tanh_shrink", {}),
    ("sparse_plus", {}), ("sparse_sigmoid", {}), ("squareplus", {}),
    ("squareplus", {"b": 2}), ("hard_silu", {}), ("hard_swish", {}),
    ("sparsemax", {}), ("sparsemax", {"axis": 1}),
    ("threshold", {"threshold": 0.3, "default_value": -2.0}),
])
def test_shrink_sparse_and_gated_activations_equal_keras(name, kwargs):
    # Keras' numpy sparsemax returns float64 for float32 input; ours keeps it.
    assert_matches_keras(name, (X2,), kwargs, namespace="ops.nn",
                         check_dtype=name != "sparsemax")


def test_normalizations_equal_keras():
    m, v = R.randn(6).astype("float32"), R.uniform(0.5, 2, 6).astype("float32")
    g, b = R.randn(6).astype("float32"), R.randn(6).astype("float32")
    assert_matches_keras("batch_normalization", (X2, m, v, -1), {"offset": b,
                                                               "scale": g})
    assert_matches_keras("batch_normalization", (X2, m[:3], v[:3], 1))
    assert_matches_keras("layer_normalization", (X2,), {"gamma": g, "beta": b})
    assert_matches_keras("layer_normalization", (X2,), {"axis": (1, 2),
                                                       "epsilon": 1e-5})
    assert_matches_keras("layer_normalization", (X2, g[:3].reshape(3, 1)),
                         {"axis": 1}, rtol=1e-4)
    assert_matches_keras("rms_normalization", (X2,), {"scale": g})
    assert_matches_keras("rms_normalization", (X2,), {"axis": (1, 2)})


def test_encodings_and_metrics_equal_keras():
    ids = R.randint(0, 5, (4, 3)).astype("int32")
    assert_matches_keras("multi_hot", (ids, 6), namespace="ops.nn")
    assert_matches_keras("multi_hot", (ids[0], 6), {"dtype": "int32"})
    assert_matches_keras("psnr", (X2, X2 * 0.9, 2.0))
    t = np.array([0, 2, 1, 3], "int32")
    p = np.array([[0.1, 0.5, 0.4, 0.0], [0.3, 0.3, 0.3, 0.1],
                  [0.2, 0.2, 0.1, 0.5], [0.25, 0.25, 0.25, 0.25]], "float32")
    for k in (1, 2, 3):
        assert_matches_keras("in_top_k", (t, p, k))


def test_ctc_decode_equals_keras():
    logits = R.randn(3, 7, 5).astype("float32")
    logits[0, 2:4, 2] += 5.0  # a repeat to merge
    lengths = np.array([7, 4, 6], "int32")
    assert_matches_keras("ctc_decode", (logits, lengths))
    assert_matches_keras("ctc_decode", (logits, lengths),
                         {"merge_repeated": False, "mask_index": 4})
    with pytest.raises(NotImplementedError, match="greedy"):
        kf.ops.ctc_decode(logits, lengths, strategy="beam_search")


CONVS = [
    ((2, 5, 3), (3, 4, 3), {"strides": 2}),
    ((2, 5, 3), (3, 4, 3), {"strides": 2, "padding": "same"}),
    ((2, 4, 5, 3), (3, 2, 4, 3), {"strides": (2, 1), "padding": "valid"}),
    ((2, 4, 5, 3), (3, 3, 4, 3), {"strides": 2, "padding": "same",
                                  "output_padding": 1}),
    ((2, 4, 5, 3), (2, 2, 4, 3), {"dilation_rate": 2}),
    ((2, 3, 4, 5), (3, 3, 2, 3), {"strides": 2, "data_format": "channels_first"}),
    ((1, 3, 3, 3, 2), (2, 2, 2, 3, 2), {"strides": 2}),
]


@pytest.mark.parametrize("xs,ks,kwargs", CONVS)
def test_conv_transpose_equals_keras(xs, ks, kwargs):
    x, k = R.randn(*xs).astype("float32"), R.randn(*ks).astype("float32")
    assert_matches_keras("conv_transpose", (x, k), kwargs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("xs,ks,kwargs", [
    ((2, 7, 3), (3, 3, 2), {"strides": 2, "padding": "same"}),
    ((2, 6, 7, 3), (3, 3, 3, 2), {}),
    ((2, 6, 7, 3), (2, 3, 3, 1), {"strides": (1, 2), "padding": "same"}),
    ((2, 3, 6, 7), (3, 3, 3, 2), {"data_format": "channels_first",
                                  "dilation_rate": 2}),
])
def test_depthwise_and_separable_conv_equal_keras(xs, ks, kwargs):
    x, k = R.randn(*xs).astype("float32"), R.randn(*ks).astype("float32")
    assert_matches_keras("depthwise_conv", (x, k), kwargs, rtol=1e-4, atol=1e-5)
    pw = R.randn(*(1,) * (len(xs) - 2), ks[-2] * ks[-1], 4).astype("float32")
    assert_matches_keras("separable_conv", (x, k, pw), kwargs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fmt", ["channels_last", "channels_first"])
def test_depth_space_equal_keras(fmt):
    x = R.randn(2, 4, 6, 8).astype("float32")
    assert_matches_keras("depth_to_space", (x, 2), {"data_format": fmt})
    assert_matches_keras("space_to_depth", (x, 2), {"data_format": fmt})


@pytest.mark.parametrize("name", ["adaptive_average_pool", "adaptive_max_pool"])
@pytest.mark.parametrize("shape,size,fmt", [
    ((2, 10, 3), 4, "channels_last"), ((2, 7, 9, 3), (3, 4), "channels_last"),
    ((2, 3, 7, 9), 5, "channels_first"), ((1, 5, 6, 7, 2), (2, 3, 4), "channels_last"),
])
def test_adaptive_pools_equal_keras(name, shape, size, fmt):
    x = R.randn(*shape).astype("float32")
    assert_matches_keras(name, (x, size), {"data_format": fmt}, namespace="ops.nn")


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2, "stride": 2},
                                    {"kernel_size": (3, 2), "padding": 1,
                                     "dilation": (1, 2)},
                                    {"kernel_size": 3, "stride": (2, 1)}])
def test_unfold_fold_equal_keras(kwargs):
    x = R.randn(2, 3, 6, 7).astype("float32")
    assert_matches_keras("unfold", (x,), kwargs)
    cols = np.asarray(kf.ops.unfold(x, **kwargs))
    assert_matches_keras("fold", (cols, (6, 7)), kwargs)


GRADS = [
    ("celu", kf.ops.celu, [np.linspace(-2, 2, 12).reshape(3, 4) + 0.05]),
    ("glu", kf.ops.glu, [np.linspace(-2, 2, 12).reshape(3, 4)]),
    ("sparsemax", kf.ops.sparsemax, [np.array([[0.1, 1.2, 0.9, -1.0],
                                               [2.0, 0.3, 1.8, 1.7]])]),
    ("squareplus", kf.ops.squareplus, [np.linspace(-2, 2, 12).reshape(3, 4)]),
    ("layer_normalization", lambda x, g: kf.ops.layer_normalization(x, g),
     [np.random.RandomState(2).randn(3, 4), np.linspace(0.5, 1, 4)]),
    ("rms_normalization", lambda x: kf.ops.rms_normalization(x, axis=(0, 1)),
     [np.random.RandomState(3).randn(3, 4)]),
    ("batch_normalization", lambda x, m, v: kf.ops.batch_normalization(
        x, m, v * v + 0.5, -1), [np.random.RandomState(4).randn(3, 4),
                                np.ones(4) * 0.1, np.ones(4)]),
    ("conv_transpose", lambda x, k: kf.ops.conv_transpose(x, k, 2, "same"),
     [np.random.RandomState(5).randn(1, 3, 3, 2), np.random.RandomState(6).randn(
         2, 2, 3, 2)]),
    ("depthwise_conv", lambda x, k: kf.ops.depthwise_conv(x, k, 1, "same"),
     [np.random.RandomState(7).randn(1, 5, 2), np.random.RandomState(8).randn(
         3, 2, 2)]),
    ("adaptive_average_pool", lambda x: kf.ops.adaptive_average_pool(x, (2, 3)),
     [np.random.RandomState(9).randn(1, 5, 7, 2)]),
    ("adaptive_max_pool", lambda x: kf.ops.adaptive_max_pool(x, 3),
     [np.random.RandomState(10).randn(1, 7, 2)]),
    ("unfold", lambda x: kf.ops.unfold(x, 2, padding=1), [np.random.RandomState(11)
                                                            .randn(1, 2, 3, 3)]),
    ("fold", lambda c: kf.ops.fold(c, (3, 3), 2, padding=1),
     [np.random.RandomState(12).randn(1, 8, 16)]),
    ("depth_to_space", lambda x: kf.ops.depth_to_space(x, 2),
     [np.random.RandomState(13).randn(1, 2, 2, 4)]),
]


@pytest.mark.parametrize("name,fn,inputs", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(float64, name, fn, inputs):
    check_gradients(fn, inputs)


@pytest.mark.parametrize("name,kwargs", [
    ("gelu", {}), ("gelu", {"approximate": False}),
    ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.1})])
def test_top_level_ops_are_keras_ops_nn(name, kwargs):
    """``keras.ops.gelu`` is ``keras.ops.nn.gelu``: the tanh approximation by
    default; ``keras.ops.leaky_relu`` takes ``negative_slope``."""
    keras = keras_numpy()
    np.testing.assert_allclose(getattr(kf.ops, name)(X, **kwargs),
                               np.asarray(getattr(keras.ops, name)(X, **kwargs)),
                               rtol=1e-6, atol=1e-7)


def test_top_level_nn_ops_take_keras_arguments():
    keras = keras_numpy()
    for name in ("gelu", "leaky_relu", "ctc_loss"):
        ours = inspect.signature(getattr(kf.ops, name)).parameters
        theirs = inspect.signature(getattr(keras.ops, name)).parameters
        assert {k: p.default for k, p in ours.items()} == {
            k: p.default for k, p in theirs.items()}, name


def test_is_tensor_as_keras():
    keras = keras_numpy()
    for value in (np.ones(2), np.float32(1.0), [1.0], 1.0, "a"):
        assert kf.ops.is_tensor(value) == keras.ops.is_tensor(value), value
        assert kf.backend.is_tensor(value) == keras.ops.is_tensor(value), value
    assert kf.backend.is_tensor(kf.Input((2,)))
