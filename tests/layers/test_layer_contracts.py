"""Every layer's contract: build, output shape, config round trip, a training step.
Dense's math, its int8 quantization and LoRA against Keras 3."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import build_alike, keras_numpy, weight_specs

CASES = [
    (lambda: L.Dense(4, activation="relu"), (3, 5), (3, 4)),
    (lambda: L.Dense(2, use_bias=False, kernel_regularizer="l2"), (3, 5), (3, 2)),
    (lambda: L.Dense(3), (2, 4, 5), (2, 4, 3)),
    (lambda: L.Dense(3, lora_rank=2, lora_alpha=4), (3, 5), (3, 3)),
    (lambda: L.Dense(3, dtype="int8_from_float32"), (3, 5), (3, 3)),
    (lambda: L.Activation("tanh"), (3, 5), (3, 5)),
    (lambda: L.Dropout(0.5, seed=1), (3, 5), (3, 5)),
    (lambda: L.Flatten(), (3, 2, 5), (3, 10)),
    (lambda: L.Reshape((5, 2)), (3, 10), (3, 5, 2)),
]


@pytest.mark.parametrize("make,in_shape,out_shape", CASES)
def test_layer_contract(make, in_shape, out_shape):
    layer = make()
    x = K.placeholder("float32", (None,) + in_shape[1:])
    y = layer(x)
    assert layer.built
    assert y.shape == (None,) + out_shape[1:]
    # Eager call on arrays gives the same shape.
    data = np.random.RandomState(0).randn(*in_shape).astype("float32")
    assert layer(data).shape == out_shape
    # Config round trip rebuilds an equivalent layer.
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == {**config, "name": clone.name} or \
        clone.get_config() == config
    clone(K.placeholder("float32", (None,) + in_shape[1:]))
    if layer.weights:
        clone.set_weights(layer.get_weights())
        np.testing.assert_allclose(
            clone(data), layer(data) if not isinstance(layer, L.Dropout) else data)


@pytest.mark.parametrize("make,in_shape,out_shape", CASES)
def test_layer_trains_one_step(make, in_shape, out_shape):
    np.random.seed(0)
    model = kf.Sequential([make(), L.Flatten(), L.Dense(1)])
    model.build((None,) + in_shape[1:])
    model.compile(optimizer=kf.optimizers.SGD(0.05), loss="mse")
    x = np.random.randn(16, *in_shape[1:]).astype("float32")
    y = np.random.randn(16, 1).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    loss0 = model.evaluate(x, y, verbose=0)
    model.train_on_batch(x, y)
    after = model.get_weights()
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    assert np.isfinite(loss0)


def test_dense_kernel_math_and_input_check():
    layer = L.Dense(2, kernel_initializer="ones", bias_initializer="zeros")
    out = layer(np.array([[1.0, 2.0, 3.0]], dtype="float32"))
    np.testing.assert_allclose(out, [[6.0, 6.0]])
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have "
                                         "value 3"):
        layer(K.placeholder("float32", (None, 4)))
    with pytest.raises(ValueError, match="positive integer"):
        L.Dense(0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        L.Dense(2, unitz=3)


def test_dropout_training_vs_inference():
    layer = L.Dropout(0.5, seed=3)
    x = K.placeholder("float32", (None, 1000))
    train = K.Function([x], layer(x, training=True))
    infer = K.Function([x], layer(x, training=False))
    ones = np.ones((4, 1000), "float32")
    t = train(ones)
    assert set(np.unique(t)) <= {0.0, 2.0}
    assert 0.4 < (t == 0).mean() < 0.6
    np.testing.assert_array_equal(infer(ones), ones)


def test_user_layer_with_add_weight():
    class Scale(L.Layer):
        def build(self, input_shape):
            self.s = self.add_weight("s", (input_shape[-1],), "ones")

        def call(self, x):
            return x * self.s

    layer = Scale()
    np.testing.assert_allclose(layer(np.full((2, 3), 2.0, "float32")),
                               np.full((2, 3), 2.0))
    assert [w.name for w in layer.weights] == [f"{layer.name}/s"]
    assert layer.count_params() == 3


def test_regularizer_losses_join_the_loss():
    layer = L.Dense(2, kernel_initializer="ones", kernel_regularizer=kf.regularizers.L2(0.5))
    layer(K.placeholder("float32", (None, 3)))
    (penalty,) = layer.losses
    # 0.5 * sum(ones(3, 2) ** 2) = 3
    assert float(K.Function([], penalty)()) == pytest.approx(3.0)


@pytest.mark.parametrize("units", [-1, 0, "3", 2.5])
def test_dense_bad_units_is_a_value_error_like_keras(units):
    keras = keras_numpy()
    with pytest.raises(ValueError):
        keras.layers.Dense(units)
    with pytest.raises(ValueError, match="expected a positive integer"):
        kf.layers.Dense(units)


def test_dense_int8_by_hand():
    layer = L.Dense(2, name="dense_int8_hand")
    layer.build((None, 3))
    layer.set_weights([np.array([[1.0, -0.5], [0.25, 2.0], [-0.5, 0.0]],
                                "float32"), np.zeros(2, "float32")])
    layer.quantize("int8")
    # Per output unit: scale = 127 / (max |w| + 1e-7), w_q = round(w * scale).
    np.testing.assert_array_equal(layer.kernel.numpy(),
                                  [[127, -32], [32, 127], [-63, 0]])
    np.testing.assert_allclose(layer.kernel_scale.numpy(), [127.0, 63.5],
                               rtol=1e-6)
    # Row scale 127 / (2 + 1e-7) is 63.5 in float32 (1e-7 is below half an ulp
    # of 2): x_q = round([127, -63.5, 31.75]) = [127, -64, 32], halves to even;
    # the int product over both scales.
    got = layer(np.array([[2.0, -1.0, 0.5]], "float32"))
    np.testing.assert_allclose(got, [[12065 / (127 * 63.5), -12192 / 63.5 ** 2]],
                               rtol=1e-5)


@pytest.mark.parametrize("shape,activation", [((5, 16), "tanh"),
                                               ((2, 3, 8), None)])
def test_dense_int8_quantize_matches_keras(shape, activation):
    keras = keras_numpy()
    x = np.random.RandomState(1).randn(*shape).astype("float32")
    ours, theirs = L.Dense(6, activation=activation), keras.layers.Dense(
        6, activation=activation)
    build_alike(ours, theirs, x)
    ours.quantize("int8")
    theirs.quantize("int8")
    # Keras' variables: the bias, then the int8 kernel and its float scale.
    assert weight_specs(ours.weights) == weight_specs(theirs.weights) == [
        ("bias", "float32", (6,), True), ("kernel", "int8", (shape[-1], 6), False),
        ("kernel_scale", "float32", (6,), False)]
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(a, np.asarray(b))
    got = ours(x)
    np.testing.assert_allclose(got, np.asarray(theirs(x)), rtol=1e-6, atol=1e-6)
    assert ours.quantization_mode == "int8"
    assert repr(ours.dtype_policy) == repr(theirs.dtype_policy)
    assert ours.get_config()["dtype"] == theirs.get_config()["dtype"]
    # The config rebuilds an int8 layer that takes the quantized weights.
    clone = L.Dense.from_config(ours.get_config())
    clone(x)
    clone.set_weights(ours.get_weights())
    np.testing.assert_array_equal(clone(x), got)


def test_dense_int8_input_gradient_is_straight_through():
    rng = np.random.RandomState(2)
    layer = L.Dense(5, name="dense_int8_grad")
    x = rng.randn(4, 8).astype("float32")
    layer(x)
    layer.quantize("int8")
    xt = K.placeholder("float32", (None, 8))
    g = rng.randn(4, 5).astype("float32")
    grad = K.gradients(K.sum(layer(xt) * g), [xt])[0]
    # Keras' custom gradient: through the de-quantized kernel w_q / scale.
    kernel = layer.kernel.numpy().astype("float32") / layer.kernel_scale.numpy()
    np.testing.assert_allclose(K.Function([xt], grad)(x), g @ kernel.T,
                               rtol=1e-5, atol=1e-6)


def test_model_quantize_walks_the_layers():
    keras = keras_numpy()
    x = np.random.RandomState(3).randn(4, 8).astype("float32")

    def build(m):
        return m.Sequential([m.Input((8,)), m.layers.Dense(5, activation="relu"),
                             m.layers.Dropout(0.1), m.layers.Dense(3)])

    ours, theirs = build(kf), build(keras)
    theirs.set_weights(ours.get_weights())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours.quantize("int8")
    assert [m.quantization_mode for m in ours.layers] == ["int8", None, "int8"]
    assert "Layer Dropout does not have a `quantize` method implemented." in [
        str(w.message) for w in caught]
    theirs.quantize("int8")
    np.testing.assert_allclose(ours.predict(x, verbose=0),
                               np.asarray(theirs.predict(x, verbose=0)),
                               rtol=1e-6, atol=1e-6)
    # Only the biases train now; the int8 kernels stay.
    ours.compile(optimizer=kf.optimizers.SGD(0.1), loss="mse")
    kernels = [m.kernel.numpy() for m in (ours.layers[0], ours.layers[2])]
    ours.train_on_batch(x, np.ones((4, 3), "float32"))
    for layer, before in zip((ours.layers[0], ours.layers[2]), kernels):
        np.testing.assert_array_equal(layer.kernel.numpy(), before)
    with pytest.raises(NotImplementedError, match=r"'int4'.*Expected one of "
                                                  r"\('int8',\)"):
        build(kf).quantize("int4")
    only_first = build(kf)
    only_first.quantize("int8", filters=only_first.layers[0].name)
    assert [m.quantization_mode for m in only_first.layers] == [
        "int8", None, None]


def test_quantize_errors_as_keras():
    layer = L.Dense(2, name="dense_qerr")
    with pytest.raises(ValueError, match="You must provide either `mode`"):
        layer.quantize()
    with pytest.raises(ValueError, match=r"Invalid quantization mode. Expected one "
                                         r"of \('int8',\). Received: mode=int16"):
        layer.quantize("int16")
    with pytest.raises(NotImplementedError, match=r"'float8'.*Received: mode=float8"):
        layer.quantize("float8")
    with pytest.raises(ValueError, match="Cannot quantize a layer that isn't yet "
                                         "built. Layer 'dense_qerr'"):
        layer.quantize("int8")
    layer.build((None, 3))
    layer.quantize("int8")
    with pytest.raises(ValueError, match="already quantized with dtype_policy="
                                         "'int8_from_float32'. Received: mode=int8"):
        layer.quantize("int8")
    half = L.Dense(2, dtype="mixed_float16")
    half.build((None, 3))
    with pytest.raises(ValueError, match="compute_dtype='float16'"):
        half.quantize("int8")

    class MyDense(L.Dense):
        pass

    sub = MyDense(2)
    sub.build((None, 3))
    with pytest.raises(NotImplementedError, match="Layer MyDense does not have a "
                                                  "`quantize` method"):
        sub.quantize("int8")
    sub.quantize("int8", type_check=False)
    assert sub.kernel.dtype == np.int8
    flatten = L.Flatten()
    flatten.build((None, 3))
    with pytest.raises(NotImplementedError, match="Layer Flatten does not have a "
                                                  "`quantize`"):
        flatten.quantize("int8")


@pytest.mark.parametrize("quantized", [False, True])
def test_dense_lora_matches_keras(quantized):
    keras = keras_numpy()
    x = np.random.RandomState(4).randn(5, 16).astype("float32")
    ours, theirs = L.Dense(6, activation="tanh"), keras.layers.Dense(
        6, activation="tanh")
    build_alike(ours, theirs, x)
    if quantized:
        ours.quantize("int8")
        theirs.quantize("int8")
    before = ours(x)
    ours.enable_lora(3, lora_alpha=6)
    theirs.enable_lora(3, lora_alpha=6)
    assert weight_specs(ours.weights) == weight_specs(theirs.weights)
    assert [w.name.split("/")[-1] for w in ours.trainable_weights] == [
        "bias", "lora_kernel_a", "lora_kernel_b"]
    a, b = ours.lora_kernel_a.numpy(), ours.lora_kernel_b.numpy()
    assert a.shape == (16, 3) and a.dtype == np.float32
    assert np.abs(a).max() <= np.sqrt(6 / 16) and a.std() > 0.1  # he_uniform
    np.testing.assert_array_equal(b, np.zeros((3, 6)))
    np.testing.assert_allclose(ours(x), before, rtol=1e-6)  # B starts at zero
    rng = np.random.RandomState(5)
    weights = [w + (rng.randn(*w.shape) * 0.3).astype(w.dtype)
               if w.dtype.kind == "f" else w for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    np.testing.assert_allclose(ours(x), np.asarray(theirs(x)), rtol=1e-5,
                               atol=1e-6)
    if not quantized:  # kernel + a @ b * alpha / rank, alpha / rank = 2
        kernel, bias, a, b = weights
        np.testing.assert_allclose(ours(x), np.tanh(x @ (kernel + 2 * a @ b) + bias),
                                   rtol=1e-5, atol=1e-6)
    assert ours.get_config()["lora_rank"] == 3
    assert ours.get_config()["lora_alpha"] == 6
    with pytest.raises(ValueError, match="lora is already enabled. This can only "
                                         "be done once per layer."):
        ours.enable_lora(2)


def test_lora_errors_as_keras():
    with pytest.raises(ValueError, match="Cannot enable lora on a layer that "
                                         "isn't yet built."):
        L.Dense(2).enable_lora(1)
    constrained = L.Dense(2, kernel_constraint="non_neg")
    constrained.build((None, 3))
    with pytest.raises(ValueError, match="Lora is incompatible with kernel "
                                         "constraints"):
        constrained.enable_lora(1)


def test_dense_lora_trains_only_the_lora_kernels():
    rng = np.random.RandomState(6)
    model = kf.Sequential([L.InputLayer(shape=(8,)), L.Dense(4, name="lora_d")])
    layer = model.layers[0]
    layer.enable_lora(2)
    model.compile(optimizer=kf.optimizers.SGD(0.1), loss="mse")
    x, y = rng.randn(16, 8).astype("float32"), rng.randn(16, 4).astype("float32")
    kernel, bias, a, b = model.get_weights()
    model.train_on_batch(x, y)
    k1, bias1, a1, b1 = model.get_weights()
    np.testing.assert_array_equal(k1, kernel)  # frozen
    # With B = 0 the gradient of A is zero: only B and the bias move at first.
    np.testing.assert_array_equal(a1, a)
    assert not np.allclose(b1, b) and not np.allclose(bias1, bias)
    model.train_on_batch(x, y)
    k2, _, a2, _ = model.get_weights()
    np.testing.assert_array_equal(k2, kernel)
    assert not np.allclose(a2, a)


def test_dense_lora_gradients(float64):
    rng = np.random.RandomState(7)

    def fn(x, kernel, a, b, bias):
        layer = L.Dense(3, activation="tanh", dtype="float64")
        layer.build(x.shape)
        layer.enable_lora(2, lora_alpha=3)
        layer.kernel, layer.bias = kernel, bias
        layer.lora_kernel_a, layer.lora_kernel_b = a, b
        return layer.call(x)

    check_gradients(fn, [rng.randn(4, 5), rng.randn(5, 3), rng.randn(5, 2),
                         rng.randn(2, 3), rng.randn(3)])


MIXED = [
    ("Dense", dict(units=4), (3, 5)),
    ("EinsumDense", dict(equation="abc,cd->abd", output_shape=(4, 3),
                         bias_axes="d"), (2, 4, 5)),
    ("BatchNormalization", {}, (4, 5)),
    ("LayerNormalization", {}, (4, 5)),
    ("RMSNormalization", {}, (4, 5)),
    ("UnitNormalization", {}, (4, 5)),
    ("Conv2D", dict(filters=3, kernel_size=2), (2, 5, 5, 3)),
    ("DepthwiseConv2D", dict(kernel_size=2), (2, 5, 5, 3)),
    ("Conv2DTranspose", dict(filters=2, kernel_size=2), (2, 4, 4, 3)),
    ("SimpleRNN", dict(units=3), (2, 4, 5)),
    ("LSTM", dict(units=3), (2, 4, 5)),
    ("GRU", dict(units=3), (2, 4, 5)),
]


@pytest.mark.parametrize("name,kw,shape", MIXED)
def test_mixed_float16_matches_keras_and_trains(mixed_float16, name, kw, shape):
    keras = mixed_float16
    x = (np.random.RandomState(8).randn(*shape) * 3).astype("float32")
    ours, theirs = getattr(L, name)(**kw), getattr(keras.layers, name)(**kw)
    build_alike(ours, theirs, x)
    assert ours.compute_dtype == "float16"
    assert all(w.dtype == np.float32 for w in ours.weights)
    got = ours(x)
    assert got.dtype == np.float16
    # Each side rounds to float16 along the way: a few float16 ulps.
    np.testing.assert_allclose(got.astype("float32"),
                               np.asarray(theirs(x)).astype("float32"),
                               rtol=5e-3, atol=5e-3)
    model = kf.Sequential([L.InputLayer(shape=shape[1:]), getattr(L, name)(**kw),
                           L.Flatten(), L.Dense(1)])
    # One unscaled step: compile's loss scaling (Keras' auto_scale_loss)
    # starts at 2**15, where these float16 gradients overflow and the step
    # is skipped.
    model.compile(optimizer=kf.optimizers.SGD(0.01), loss="mse",
                  auto_scale_loss=False)
    before = model.get_weights()
    loss = model.train_on_batch(x, np.ones((shape[0], 1), "float32"))
    assert np.isfinite(loss)
    after = model.get_weights()
    assert all(w.dtype == np.float32 for w in after)
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
