"""Conv3D and the 3-D pooling and shape layers: forward passes equal to Keras 3's
(numpy backend as the oracle) in both data formats, the layer contract, a small
Conv3D model that learns, and errors of Keras' exception types."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract, sample

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.keras_oracle import assert_same_forward, keras_numpy

# (layer class name, constructor kwargs, channels_last input shape)
ORACLE_CASES = [
    ("Conv3D", dict(filters=4, kernel_size=3), (2, 5, 6, 5, 3)),
    ("Conv3D", dict(filters=4, kernel_size=(3, 2, 3), strides=(2, 1, 2),
                    padding="same", activation="relu"), (2, 6, 5, 7, 2)),
    ("Conv3D", dict(filters=3, kernel_size=2, dilation_rate=(2, 1, 2)),
     (1, 6, 4, 5, 2)),
    ("Conv3D", dict(filters=4, kernel_size=2, groups=2, use_bias=False),
     (2, 4, 4, 4, 4)),
    ("MaxPooling3D", dict(pool_size=2), (2, 5, 6, 4, 3)),
    ("MaxPooling3D", dict(pool_size=3, strides=(2, 1, 2), padding="same"),
     (2, 5, 4, 6, 2)),
    ("AveragePooling3D", dict(pool_size=(2, 3, 2), strides=2, padding="same"),
     (2, 5, 6, 5, 2)),
    ("AveragePooling3D", dict(pool_size=2, strides=1), (1, 4, 3, 4, 2)),
    ("GlobalMaxPooling3D", dict(), (2, 3, 4, 2, 3)),
    ("GlobalAveragePooling3D", dict(keepdims=True), (2, 3, 4, 2, 3)),
    ("ZeroPadding3D", dict(padding=((1, 0), (0, 2), (1, 1))), (2, 2, 3, 2, 2)),
    ("Cropping3D", dict(cropping=((1, 0), (0, 1), (1, 1))), (2, 3, 4, 5, 2)),
    ("UpSampling3D", dict(size=(2, 1, 3)), (2, 2, 3, 2, 2)),
]


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("name, kwargs, shape", ORACLE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ORACLE_CASES)])
def test_3d_forward_equals_keras(name, kwargs, shape, data_format):
    keras = keras_numpy()
    if data_format == "channels_first":
        shape = (shape[0], shape[-1], *shape[1:-1])
    x = sample(shape, seed=2)
    ours = getattr(L, name)(data_format=data_format, **kwargs)
    theirs = getattr(keras.layers, name)(data_format=data_format, **kwargs)
    y = assert_same_forward(ours, theirs, x, rtol=1e-5, atol=1e-5)
    assert y.shape == tuple(theirs.compute_output_shape(shape))


def test_conv3d_weights_have_keras_layout():
    layer = L.Conv3D(5, (3, 2, 1), groups=1)
    layer(sample((1, 4, 4, 4, 2)))
    assert [w.shape for w in layer.get_weights()] == [(3, 2, 1, 2, 5), (5,)]
    assert [w.name.split("/")[-1] for w in layer.weights] == ["kernel", "bias"]
    grouped = L.Conv3D(4, 2, groups=2, data_format="channels_first")
    grouped(sample((1, 6, 3, 3, 3)))
    assert grouped.kernel.shape == (2, 2, 2, 3, 4)


CONTRACT_CASES = [
    (lambda: L.Conv3D(4, 3, activation="relu", kernel_regularizer="l2"),
     (2, 5, 5, 4, 2), (2, 3, 3, 2, 4)),
    (lambda: L.Conv3D(3, 2, strides=2, padding="same",
                      data_format="channels_first"),
     (2, 2, 5, 4, 4), (2, 3, 3, 2, 2)),
    (lambda: L.MaxPooling3D(2), (2, 4, 4, 5, 2), (2, 2, 2, 2, 2)),
    (lambda: L.AveragePooling3D(2, padding="same", data_format="channels_first"),
     (2, 2, 3, 4, 5), (2, 2, 2, 2, 3)),
    (lambda: L.GlobalAveragePooling3D(), (2, 3, 4, 2, 3), (2, 3)),
    (lambda: L.GlobalMaxPooling3D(data_format="channels_first", keepdims=True),
     (2, 3, 4, 2, 3), (2, 3, 1, 1, 1)),
    (lambda: L.ZeroPadding3D(1), (2, 2, 3, 2, 2), (2, 4, 5, 4, 2)),
    (lambda: L.Cropping3D(((1, 0), (0, 1), (1, 1))), (2, 3, 4, 5, 2),
     (2, 2, 3, 3, 2)),
    (lambda: L.UpSampling3D(2, data_format="channels_first"), (2, 2, 2, 3, 1),
     (2, 2, 4, 6, 2)),
]


@pytest.mark.parametrize("make, in_shape, out_shape", CONTRACT_CASES)
def test_3d_layer_contract(make, in_shape, out_shape, tmp_path):
    check_contract(make, in_shape, out_shape, tmp_path)


def test_3d_aliases_are_keras_names():
    assert L.Convolution3D is L.Conv3D
    assert L.MaxPool3D is L.MaxPooling3D and L.AvgPool3D is L.AveragePooling3D
    assert L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert L.GlobalAvgPool3D is L.GlobalAveragePooling3D
    config = L.Conv3D(4, 3, strides=(1, 2, 1), data_format="channels_first",
                      dilation_rate=1).get_config()
    assert config["kernel_size"] == [3, 3, 3] and config["strides"] == [1, 2, 1]
    assert config["data_format"] == "channels_first" and config["groups"] == 1
    assert L.MaxPooling3D().get_config()["pool_size"] == [2, 2, 2]


def test_conv3d_model_learns_where_the_blob_is():
    # Label: is the bright 2x2x2 blob in the front or the back half of the volume?
    rng = np.random.RandomState(0)
    n = 128
    x = rng.normal(0, 0.3, (n, 6, 6, 6, 1)).astype("float32")
    y = rng.randint(0, 2, n).astype("float32")
    for i in range(n):
        d = rng.randint(0, 2) + 3 * int(y[i])
        h, w = rng.randint(0, 5, 2)
        x[i, d:d + 2, h:h + 2, w:w + 2] += 2.0
    kf.utils.set_random_seed(0)
    model = kf.Sequential([
        L.Input(shape=(1, 6, 6, 6)),
        L.Conv3D(4, 3, padding="same", activation="relu",
                 data_format="channels_first"),
        L.MaxPooling3D(2, data_format="channels_first"),
        L.Flatten(data_format="channels_first"),
        L.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=kf.optimizers.Adam(1e-2), loss="binary_crossentropy",
                  metrics=["accuracy"])
    xf = np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3))
    before = model.evaluate(xf, y, verbose=0)[0]
    history = model.fit(xf, y, batch_size=16, epochs=8, verbose=0)
    after, accuracy = model.evaluate(xf, y, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert after < 0.5 * before, (before, after)
    assert accuracy >= 0.9, accuracy


def test_3d_bad_arguments_raise_keras_exception_types():
    keras = keras_numpy()
    bad = [
        ("Conv3D", (4, (3, 3)), {}, "kernel_size"),
        ("Conv3D", (0, 3), {}, "filters"),
        ("Conv3D", (4, 3), {"strides": (1, 0, 1)}, "strides"),
        ("Conv3D", (4, 3), {"padding": "causal"}, "padding"),
        ("Conv3D", (3, 3), {"groups": 2}, "groups"),
        ("Conv3D", (4, 3), {"data_format": "ndhwc"}, "data_format"),
        ("MaxPooling3D", ((2, 2),), {}, "pool_size"),
        ("GlobalAveragePooling3D", (), {"data_format": "NCDHW"}, "data_format"),
        ("UpSampling3D", ((2, 2),), {}, "size"),
        ("ZeroPadding3D", ((1, 1),), {}, "padding"),
    ]
    for name, args, kwargs, word in bad:
        with pytest.raises(ValueError, match=word):
            getattr(L, name)(*args, **kwargs)
        with pytest.raises(ValueError):
            getattr(keras.layers, name)(*args, **kwargs)
    # Keras checks a pooling's padding only when called; kerasflow at once.
    with pytest.raises(ValueError, match=r"padding.*Received: padding='full'"):
        L.AveragePooling3D(2, padding="full")


def test_3d_bad_inputs_name_the_layer_and_shape():
    conv = L.Conv3D(4, 3, name="vol")
    with pytest.raises(ValueError, match=r"'vol'.*expected ndim=5 \(batch, depth, "
                                         r"height, width, channels\).*"
                                         r"\(None, 8, 8, 3\)"):
        conv(K.placeholder("float32", (None, 8, 8, 3)))
    conv(K.placeholder("float32", (None, 8, 8, 8, 3)))
    with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have "
                                         r"value 3"):
        conv(K.placeholder("float32", (None, 8, 8, 8, 2)))
    with pytest.raises(ValueError, match=r"larger than the padded input.*"
                                         r"\(None, 8, 2, 8, 3\)"):
        conv(K.placeholder("float32", (None, 8, 2, 8, 3)))
    with pytest.raises(ValueError, match=r"pool_size=\(3, 3, 3\)"):
        L.MaxPooling3D(3, data_format="channels_first")(
            K.placeholder("float32", (None, 8, 8, 2, 8)))
    with pytest.raises(ValueError, match=r"leaves nothing"):
        L.Cropping3D(2)(K.placeholder("float32", (None, 8, 4, 8, 1)))
