"""EinsumDense: Keras 3 as the oracle over its equation forms (plain, leading
and trailing ellipses, bias axes), shapes, float64 gradients, contract,
errors; int8 quantization and LoRA against Keras 3."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

from kerasflow import backend as K
from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import build_alike, keras_numpy, weight_specs

RNG = np.random.RandomState(0)


@pytest.mark.parametrize("equation,output_shape,bias_axes,shape,want", [
    ("ab,bc->ac", 7, "c", (2, 6), (2, 7)),
    ("abc,cd->abd", (5, 7), "d", (2, 5, 6), (2, 5, 7)),
    ("abc,cd->abd", (5, 7), "bd", (2, 5, 6), (2, 5, 7)),
    ("abc,cde->abde", (5, 3, 4), "de", (2, 5, 6), (2, 5, 3, 4)),
    ("...b,bc->...c", 7, None, (2, 5, 6), (2, 5, 7)),
    ("...b,bc->...c", 7, "c", (2, 3, 5, 6), (2, 3, 5, 7)),
    ("ab...,bc->ac...", (7,), "c", (2, 6, 5), (2, 7, 5)),
    ("abcd,cde->abe", (3, 4), "e", (2, 3, 2, 5), (2, 3, 4)),
])
def test_matches_keras(equation, output_shape, bias_axes, shape, want):
    keras = keras_numpy()
    kw = dict(equation=equation, output_shape=output_shape, bias_axes=bias_axes,
              activation="tanh")
    ours, theirs = L.EinsumDense(**kw), keras.layers.EinsumDense(**kw)
    x = RNG.randn(*shape).astype("float32")
    ours(x)
    theirs(x)
    weights = [(w + RNG.randn(*w.shape) * 0.3).astype(w.dtype)
               for w in ours.get_weights()]
    assert [w.shape for w in weights] == [tuple(w.shape) for w in theirs.weights]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    got = ours(x)
    assert got.shape == want
    np.testing.assert_allclose(got, np.asarray(theirs(x)), rtol=1e-5, atol=1e-6)
    assert ours.compute_output_shape((None,) + shape[1:])[1:] == want[1:]


def test_gradients(float64):
    rng = np.random.RandomState(1)

    def fn(x, kernel, bias):
        layer = L.EinsumDense("abc,cde->abde", (3, 2, 4), bias_axes="de",
                              activation="sigmoid", dtype="float64")
        layer.build(x.shape)
        layer.kernel, layer.bias = kernel, bias
        return layer.call(x)

    check_gradients(fn, [rng.randn(2, 3, 5), rng.randn(5, 2, 4),
                         rng.randn(2, 4)])


def test_contract(tmp_path):
    check_contract(lambda: L.EinsumDense("abc,cd->abd", (None, 4), bias_axes="d"),
                   (4, 3, 5), (4, 3, 4), tmp_path)


def test_errors():
    with pytest.raises(ValueError, match="Invalid einsum equation"):
        L.EinsumDense("ab->b", 3)
    x = np.ones((2, 5, 6), "float32")
    with pytest.raises(ValueError, match="do not match at shared dimension 'b'"):
        L.EinsumDense("abc,cd->abd", (4, 7), name="ed_err1")(x)
    with pytest.raises(ValueError, match="Bias dimension 'x'"):
        L.EinsumDense("abc,cd->abd", (5, 7), bias_axes="x", name="ed_err2")(x)
    with pytest.raises(ValueError, match="Weight dimension 'e'"):
        L.EinsumDense("abc,cde->abd", (5, 7), name="ed_err3")(x)


def test_variance_scaling_uses_the_kernels_input_and_output_axes():
    keras = keras_numpy()
    x = np.ones((2, 5, 64), "float32")
    ours = L.EinsumDense("abc,cde->abde", (5, 16, 32), name="ed_fans")
    theirs = keras.layers.EinsumDense("abc,cde->abde", (5, 16, 32))
    ours(x)
    theirs(x)
    # glorot_uniform with fan_in = c = 64 and fan_out = d * e = 512.
    want = np.sqrt(6 / (64 + 512) / 3)
    assert abs(ours.kernel.numpy().std() / want - 1) < 0.03
    assert abs(np.asarray(theirs.kernel.value).std() / want - 1) < 0.03


# Keras 3.15 quantizes these; with an ellipsis its quantize() fails (it hands
# its equation analysis the input rank where a shape is needed).
QUANTIZED = [
    ("ab,bc->ac", 7, "c", (2, 6), (1, 7)),
    ("abc,cd->abd", (5, 7), "d", (2, 5, 6), (1, 1, 7)),
    ("abc,cde->abde", (5, 3, 4), "de", (2, 5, 6), (1, 1, 3, 4)),
    ("abcd,cde->abe", (3, 4), "e", (2, 3, 2, 5), (1, 1, 4)),
    ("abc,bcd->ad", (4,), "d", (2, 3, 5), (1, 4)),
    ("btnh,nhd->btd", (5, 4), "d", (2, 5, 2, 3), (1, 1, 4)),
]


@pytest.mark.parametrize("equation,output_shape,bias_axes,shape,scale_shape",
                         QUANTIZED)
def test_int8_quantize_matches_keras(equation, output_shape, bias_axes, shape,
                                     scale_shape):
    keras = keras_numpy()
    kw = dict(equation=equation, output_shape=output_shape, bias_axes=bias_axes,
              activation="tanh")
    ours, theirs = L.EinsumDense(**kw), keras.layers.EinsumDense(**kw)
    x = RNG.randn(*shape).astype("float32")
    build_alike(ours, theirs, x)
    float_out = ours(x)
    ours.quantize("int8")
    theirs.quantize("int8")
    assert weight_specs(ours.weights) == weight_specs(theirs.weights)
    assert ours.kernel_scale.shape == scale_shape  # broadcasts on the output
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(a, np.asarray(b))
    got = ours(x)
    np.testing.assert_allclose(got, np.asarray(theirs(x)), rtol=1e-6, atol=1e-6)
    # int8 rounding moves the outputs by about 1% of their range.
    np.testing.assert_allclose(got, float_out, atol=0.1)
    assert ours.get_config()["dtype"] == theirs.get_config()["dtype"]
    clone = L.EinsumDense.from_config(ours.get_config())
    clone(x)
    clone.set_weights(ours.get_weights())
    np.testing.assert_array_equal(clone(x), got)


def _int8(v, axis):
    scale = 127 / (np.abs(v).max(axis=axis, keepdims=True) + np.float32(1e-7))
    return np.clip(np.round(v * scale), -127, 127), scale


def test_int8_with_trailing_ellipsis_by_formula():
    layer = L.EinsumDense("ab...,bc->ac...", (7,), name="ed_int8_dots")
    x = RNG.randn(2, 6, 5).astype("float32")
    layer(x)
    kernel = layer.kernel.numpy()
    layer.quantize("int8")
    qk, sk = _int8(kernel, 0)  # per output unit c, over b
    np.testing.assert_array_equal(layer.kernel.numpy(), qk)
    np.testing.assert_allclose(layer.kernel_scale.numpy(), sk.reshape(1, 7, 1),
                               rtol=1e-6)
    qx, sx = _int8(x, 1)  # per (a, trailing) slice, over b
    want = np.einsum("abz,bc->acz", qx, qk) / (sx * sk.reshape(1, 7, 1))
    np.testing.assert_allclose(layer(x), want, rtol=1e-5, atol=1e-6)


def test_int8_input_gradient_is_straight_through():
    layer = L.EinsumDense("abc,cde->abde", (5, 3, 4), name="ed_int8_grad")
    x = RNG.randn(2, 5, 6).astype("float32")
    layer(x)
    layer.quantize("int8")
    xt = K.placeholder("float32", (None, 5, 6))
    g = RNG.randn(2, 5, 3, 4).astype("float32")
    grad = K.gradients(K.sum(layer(xt) * g), [xt])[0]
    # Keras' custom gradient: through the de-quantized kernel w_q / scale.
    kernel = layer.kernel.numpy() / layer.kernel_scale.numpy()[0, 0]
    np.testing.assert_allclose(K.Function([xt], grad)(x),
                               np.einsum("abde,cde->abc", g, kernel),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("quantized", [False, True])
def test_lora_matches_keras(quantized):
    keras = keras_numpy()
    kw = dict(equation="abc,cde->abde", output_shape=(5, 3, 4), bias_axes="de")
    ours, theirs = L.EinsumDense(**kw), keras.layers.EinsumDense(**kw)
    x = RNG.randn(2, 5, 6).astype("float32")
    build_alike(ours, theirs, x)
    if quantized:
        ours.quantize("int8")
        theirs.quantize("int8")
    ours.enable_lora(3, lora_alpha=6)
    theirs.enable_lora(3, lora_alpha=6)
    assert weight_specs(ours.weights) == weight_specs(theirs.weights)
    assert ours.lora_kernel_a.shape == (6, 3, 3)  # the kernel's, last axis rank
    assert ours.lora_kernel_b.shape == (3, 4)
    assert [w.name.split("/")[-1] for w in ours.trainable_weights] == [
        "bias", "lora_kernel_a", "lora_kernel_b"]
    rng = np.random.RandomState(2)
    weights = [w + (rng.randn(*w.shape) * 0.3).astype(w.dtype)
               if w.dtype.kind == "f" else w for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    np.testing.assert_allclose(ours(x), np.asarray(theirs(x)), rtol=1e-5,
                               atol=1e-5)
    if not quantized:  # kernel + a @ b * alpha / rank, alpha / rank = 2
        kernel, bias, a, b = weights
        want = np.einsum("abc,cde->abde", x, kernel + 2 * a @ b) + bias
        np.testing.assert_allclose(ours(x), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="lora is already enabled"):
        ours.enable_lora(3)


def test_lora_rank_argument_and_config():
    layer = L.EinsumDense("ab,bc->ac", 4, bias_axes="c", lora_rank=2,
                          lora_alpha=8, name="ed_lora_cfg")
    x = RNG.randn(3, 5).astype("float32")
    layer(x)
    assert layer.lora_enabled and layer.lora_alpha == 8
    assert [w.name.split("/")[-1] for w in layer.non_trainable_weights] == [
        "kernel"]
    config = layer.get_config()
    assert (config["lora_rank"], config["lora_alpha"]) == (2, 8)
    clone = L.EinsumDense.from_config(config)
    clone(x)
    clone.set_weights([w + 0.5 for w in layer.get_weights()])
    layer.set_weights(clone.get_weights())
    np.testing.assert_allclose(clone(x), layer(x), rtol=1e-6)


def test_lora_gradients(float64):
    rng = np.random.RandomState(3)

    def fn(x, kernel, a, b, bias):
        layer = L.EinsumDense("abc,cde->abde", (3, 2, 4), bias_axes="de",
                              activation="sigmoid", dtype="float64")
        layer.build(x.shape)
        layer.enable_lora(2, lora_alpha=3)
        layer.kernel, layer.bias = kernel, bias
        layer.lora_kernel_a, layer.lora_kernel_b = a, b
        return layer.call(x)

    check_gradients(fn, [rng.randn(2, 3, 5), rng.randn(5, 2, 4),
                         rng.randn(5, 2, 2), rng.randn(2, 4), rng.randn(2, 4)])
