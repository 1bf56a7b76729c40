"""data_format='channels_first' for the convolution, pooling and spatial shape
layers: forward passes equal to Keras 3's (its numpy backend as the oracle),
the image_data_format() default, config round trips, training, errors, and a
channels_first convnet on real MNIST."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract, sample

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.keras_oracle import assert_same_forward, keras_numpy

# (layer class name, constructor kwargs, channels_first input shape)
ORACLE_CASES = [
    ("Conv1D", dict(filters=4, kernel_size=3), (2, 3, 9)),
    ("Conv1D", dict(filters=4, kernel_size=3, padding="same", strides=2), (2, 3, 9)),
    ("Conv1D", dict(filters=4, kernel_size=2, padding="causal", dilation_rate=2),
     (2, 3, 8)),
    ("Conv1D", dict(filters=4, kernel_size=3, groups=2, activation="relu"),
     (2, 2, 7)),
    ("Conv2D", dict(filters=5, kernel_size=3), (2, 3, 7, 6)),
    ("Conv2D", dict(filters=5, kernel_size=(3, 2), strides=2, padding="same"),
     (2, 3, 8, 7)),
    ("Conv2D", dict(filters=4, kernel_size=3, dilation_rate=2, groups=2),
     (2, 4, 8, 8)),
    # A softmax activation normalizes the layer's own last axis (width here).
    ("Conv2D", dict(filters=3, kernel_size=1, activation="softmax"), (2, 2, 3, 4)),
    ("Conv2DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="same"),
     (2, 2, 4, 3)),
    ("Conv2DTranspose", dict(filters=3, kernel_size=3, strides=2), (2, 2, 4, 3)),
    ("DepthwiseConv2D", dict(kernel_size=3, depth_multiplier=2), (2, 3, 6, 5)),
    ("DepthwiseConv2D", dict(kernel_size=3, strides=2, padding="same"),
     (2, 3, 7, 6)),
    ("SeparableConv2D", dict(filters=4, kernel_size=3, depth_multiplier=2,
                             padding="same"), (2, 3, 6, 5)),
    ("MaxPooling1D", dict(pool_size=3, strides=2, padding="same"), (2, 3, 8)),
    ("AveragePooling1D", dict(pool_size=2), (2, 3, 7)),
    ("MaxPooling2D", dict(pool_size=2), (2, 3, 7, 6)),
    ("MaxPooling2D", dict(pool_size=3, strides=(1, 2), padding="same"),
     (2, 3, 5, 6)),
    ("AveragePooling2D", dict(pool_size=3, strides=2, padding="same"),
     (2, 3, 7, 6)),
    ("AveragePooling2D", dict(pool_size=(2, 3)), (2, 3, 6, 6)),
    ("GlobalMaxPooling1D", dict(), (2, 3, 7)),
    ("GlobalAveragePooling1D", dict(keepdims=True), (2, 3, 7)),
    ("GlobalMaxPooling2D", dict(keepdims=True), (2, 3, 5, 4)),
    ("GlobalAveragePooling2D", dict(), (2, 3, 5, 4)),
    ("ZeroPadding1D", dict(padding=(1, 2)), (2, 3, 4)),
    ("ZeroPadding2D", dict(padding=((1, 0), (2, 1))), (2, 3, 4, 2)),
    ("Cropping2D", dict(cropping=((1, 0), (0, 2))), (2, 3, 5, 4)),
    ("UpSampling2D", dict(size=(2, 3)), (2, 3, 2, 4)),
    ("Flatten", dict(), (2, 3, 2, 4)),
]


@pytest.mark.parametrize("name, kwargs, shape", ORACLE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ORACLE_CASES)])
def test_channels_first_forward_equals_keras(name, kwargs, shape):
    keras = keras_numpy()
    x = sample(shape, seed=3)
    ours = getattr(L, name)(data_format="channels_first", **kwargs)
    theirs = getattr(keras.layers, name)(data_format="channels_first", **kwargs)
    y = assert_same_forward(ours, theirs, x, rtol=1e-5, atol=1e-5)
    assert y.shape == tuple(theirs.compute_output_shape(shape))


@pytest.mark.parametrize("name, kwargs", [
    ("Conv2D", dict(filters=4, kernel_size=3, strides=2, padding="same")),
    ("DepthwiseConv2D", dict(kernel_size=3, depth_multiplier=2)),
    ("SeparableConv2D", dict(filters=4, kernel_size=3)),
    ("Conv2DTranspose", dict(filters=2, kernel_size=3, strides=2)),
    ("AveragePooling2D", dict(pool_size=3, strides=2, padding="same")),
])
def test_channels_first_is_channels_last_transposed_with_the_same_weights(
        name, kwargs):
    # Independent of Keras: one set of weights serves both layouts.
    x = sample((2, 7, 6, 3), seed=5)
    last = getattr(L, name)(data_format="channels_last", **kwargs)
    first = getattr(L, name)(data_format="channels_first", **kwargs)
    want = np.asarray(last(x))
    first(x.transpose(0, 3, 1, 2))
    assert [w.shape for w in first.get_weights()] == \
        [w.shape for w in last.get_weights()]
    first.set_weights(last.get_weights())
    got = np.asarray(first(x.transpose(0, 3, 1, 2)))
    np.testing.assert_allclose(got, want.transpose(0, 3, 1, 2), rtol=1e-5,
                               atol=1e-6)


def test_masked_global_average_pooling_1d_channels_first_equals_keras():
    keras = keras_numpy()
    x = sample((2, 3, 5), seed=1)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    ours = L.GlobalAveragePooling1D(data_format="channels_first")
    theirs = keras.layers.GlobalAveragePooling1D(data_format="channels_first")
    y = assert_same_forward(ours, theirs, x, mask=mask)
    np.testing.assert_allclose(y[0], x[0, :, :3].mean(axis=1), rtol=1e-6)


@pytest.fixture
def channels_first_default():
    K.set_image_data_format("channels_first")
    yield
    K.set_image_data_format("channels_last")


def test_image_data_format_is_the_default(channels_first_default):
    keras = keras_numpy()
    assert K.image_data_format() == "channels_first"
    conv, pool, flat = L.Conv2D(2, 3), L.MaxPooling2D(), L.Flatten()
    assert conv.data_format == pool.data_format == flat.data_format == \
        "channels_first"
    assert conv(sample((1, 3, 6, 6))).shape == (1, 2, 4, 4)
    assert L.SpatialDropout2D(0.5).data_format == "channels_first"
    # Layers that Keras keeps channels_last do not follow the setting.
    assert L.Cropping1D(1)(sample((1, 5, 2))).shape == (1, 3, 2)
    assert L.UpSampling1D(2)(sample((1, 5, 2))).shape == (1, 10, 2)
    # An explicit argument wins over the setting; set_image_data_format checks.
    assert L.Conv2D(2, 3, data_format="channels_last").data_format == \
        "channels_last"
    with pytest.raises(ValueError, match=r"data_format.*Received: "
                                         r"data_format='channels_middle'"):
        K.set_image_data_format("channels_middle")
    with pytest.raises(ValueError):
        keras.config.set_image_data_format("channels_middle")
    assert K.image_data_format() == "channels_first"


CONTRACT_CASES = [
    (lambda: L.Conv2D(4, 3, data_format="channels_first", activation="relu"),
     (2, 3, 7, 6), (2, 4, 5, 4)),
    (lambda: L.Conv1D(4, 3, padding="causal", data_format="channels_first"),
     (2, 3, 8), (2, 4, 8)),
    (lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same",
                               data_format="channels_first"),
     (2, 3, 4, 3), (2, 2, 8, 6)),
    (lambda: L.SeparableConv2D(4, 3, data_format="channels_first"),
     (2, 3, 6, 5), (2, 4, 4, 3)),
    (lambda: L.DepthwiseConv2D(3, data_format="channels_first"),
     (2, 3, 6, 5), (2, 3, 4, 3)),
    (lambda: L.MaxPooling2D(2, data_format="channels_first"), (2, 3, 7, 6),
     (2, 3, 3, 3)),
    (lambda: L.AveragePooling1D(2, data_format="channels_first"), (2, 3, 7),
     (2, 3, 3)),
    (lambda: L.GlobalAveragePooling2D(data_format="channels_first",
                                      keepdims=True), (2, 3, 5, 4), (2, 3, 1, 1)),
    (lambda: L.ZeroPadding2D(1, data_format="channels_first"), (2, 3, 4, 2),
     (2, 3, 6, 4)),
    (lambda: L.Cropping2D(1, data_format="channels_first"), (2, 3, 4, 4),
     (2, 3, 2, 2)),
    (lambda: L.UpSampling2D(2, data_format="channels_first"), (2, 3, 2, 3),
     (2, 3, 4, 6)),
]


@pytest.mark.parametrize("make, in_shape, out_shape", CONTRACT_CASES)
def test_channels_first_layer_contract(make, in_shape, out_shape, tmp_path):
    layer = make()
    assert layer.get_config()["data_format"] == "channels_first"
    check_contract(make, in_shape, out_shape, tmp_path)


@pytest.mark.parametrize("cls, shape", [(L.SpatialDropout2D, (6, 3, 4, 5)),
                                        (L.SpatialDropout3D, (6, 3, 2, 4, 3))])
def test_spatial_dropout_channels_first_drops_whole_feature_maps(cls, shape):
    x = np.ones(shape, "float32")
    y = np.asarray(cls(0.5, data_format="channels_first", seed=3)(x, training=True))
    maps = y.reshape(shape[0], shape[1], -1)  # one row per (sample, channel)
    np.testing.assert_array_equal(maps.min(axis=-1), maps.max(axis=-1))
    assert set(np.unique(maps)) == {0.0, 2.0}
    # channels_last reads the last axis as channels: those rows are not constant.
    last = np.asarray(cls(0.5, seed=3)(x, training=True)).reshape(maps.shape)
    assert not np.all(last.min(axis=-1) == last.max(axis=-1))
    assert cls(0.5, data_format="channels_first").get_config()["data_format"] == \
        "channels_first"


def test_keras_weights_load_into_channels_first_layers():
    keras = keras_numpy()
    x = sample((2, 3, 6, 5), seed=7)
    theirs = keras.layers.SeparableConv2D(4, 3, data_format="channels_first",
                                          bias_initializer="random_normal")
    want = np.asarray(theirs(x))
    ours = L.SeparableConv2D(4, 3, data_format="channels_first")
    ours(x)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x)), want, rtol=1e-5, atol=1e-6)


def test_bad_data_format_and_channel_errors():
    keras = keras_numpy()
    for cls in ("Conv2D", "MaxPooling2D", "GlobalAveragePooling1D", "Flatten",
                "ZeroPadding2D", "UpSampling2D"):
        args = (2, 3) if cls == "Conv2D" else ()
        with pytest.raises(ValueError, match=r"`data_format`.*'channels_first', "
                                             r"'channels_last'.*Received: "
                                             r"data_format='nchw'"):
            getattr(L, cls)(*args, data_format="nchw")
        with pytest.raises(ValueError):
            getattr(keras.layers, cls)(*args, data_format="nchw")
    conv = L.Conv2D(4, 3, data_format="channels_first")
    conv(K.placeholder("float32", (None, 3, 8, 8)))
    with pytest.raises(ValueError, match=r"expected axis 1 of input shape to have "
                                         r"value 3"):
        conv(K.placeholder("float32", (None, 8, 8, 3)))
    with pytest.raises(ValueError, match=r"expected ndim=4 \(batch, channels, "
                                         r"height, width\)"):
        L.Conv2D(4, 3, data_format="channels_first")(
            K.placeholder("float32", (None, 8, 8)))
    # The 'valid' size check looks at the spatial axes, not the channel axis.
    with pytest.raises(ValueError, match=r"larger than the padded input.*"
                                         r"Received: input shape \(None, 8, 2, 8\)"):
        L.Conv2D(4, 3, data_format="channels_first")(
            K.placeholder("float32", (None, 8, 2, 8)))
    with pytest.raises(ValueError, match=r"pool_size"):
        L.MaxPooling2D(3, data_format="channels_first")(
            K.placeholder("float32", (None, 8, 2, 8)))
    # Keras' channels_last-only layers take no data_format: an unknown keyword
    # (kerasflow's layers raise TypeError for those, Keras' ValueError).
    with pytest.raises(TypeError, match="data_format"):
        L.Cropping1D(1, data_format="channels_first")
    with pytest.raises(TypeError, match="data_format"):
        L.UpSampling1D(2, data_format="channels_first")
    with pytest.raises(ValueError, match="data_format"):
        keras.layers.Cropping1D(1, data_format="channels_first")


def test_channels_first_mnist_convnet_learns(data_dir):
    (x_train, y_train), (x_test, y_test) = kf.datasets.mnist.load_data(
        path=data_dir / "mnist")
    x_train = (x_train[:3000, None] / 255.0).astype("float32")  # (N, 1, 28, 28)
    x_test = (x_test[:1000, None] / 255.0).astype("float32")
    kf.utils.set_random_seed(0)
    model = kf.Sequential([
        L.Input(shape=(1, 28, 28)),
        L.Conv2D(8, 3, activation="relu", data_format="channels_first"),
        L.MaxPooling2D(2, data_format="channels_first"),
        L.Conv2D(16, 3, activation="relu", data_format="channels_first"),
        L.MaxPooling2D(2, data_format="channels_first"),
        L.Flatten(data_format="channels_first"),
        L.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=kf.optimizers.Adam(3e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    assert model.output_shape == (None, 10)
    model.fit(x_train, y_train[:3000], batch_size=32, epochs=1, verbose=0)
    _, accuracy = model.evaluate(x_test, y_test[:1000], verbose=0)
    # One epoch on 3,000 digits reaches 0.88 with this seed; chance is 0.1.
    assert accuracy >= 0.83, accuracy
