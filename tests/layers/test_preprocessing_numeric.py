"""Normalization and Rescaling against Keras 3 (numpy backend) as the oracle:
values, adapt from arrays / datasets / iterables, weights, errors, gradients
(float64), contract and save/load."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import assert_same_forward, keras_numpy
from tests.layers.contract import check_contract


def _data(shape, seed=0):
    return (np.random.RandomState(seed).randn(*shape) * 3 + 1).astype("float32")


@pytest.mark.parametrize("kw,shape", [({}, (40, 4)), ({"axis": None}, (40, 4)),
                                      ({"invert": True}, (40, 4)),
                                      ({"axis": (1, 2)}, (10, 3, 4)),
                                      ({"axis": -2}, (10, 3, 4)),
                                      ({"axis": 0}, (6, 5))])
def test_normalization_adapt_matches_keras(kw, shape):
    keras = keras_numpy()
    x = _data(shape)
    ours, theirs = L.Normalization(**kw), keras.layers.Normalization(**kw)
    ours.adapt(x)
    theirs.adapt(x)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(ours(x), np.asarray(theirs(x)), rtol=1e-5, atol=1e-6)
    assert [w.name.split("/")[-1] for w in ours.weights] == ["mean", "variance",
                                                            "count"]


def test_normalization_given_mean_variance_matches_keras():
    keras = keras_numpy()
    x = _data((5, 3, 4))
    for kw in [{"mean": 2.0, "variance": 4.0}, {"mean": [1, 2, 3, 4],
                                                "variance": [1, 4, 9, 16]},
               {"axis": (1, 2), "mean": [1, 2, 3, 4], "variance": [1, 1, 4, 4]},
               {"mean": [1, 2, 3, 4], "variance": [1, 4, 9, 16], "invert": True}]:
        assert_same_forward(L.Normalization(**kw), keras.layers.Normalization(**kw),
                            x)
    # (x - mean) / sqrt(var) by hand: literal values.
    np.testing.assert_allclose(
        L.Normalization(mean=2.0, variance=4.0)(np.array([[0.0, 4.0]])),
        [[-1.0, 1.0]])


def test_normalization_adapt_from_dataset_and_batches():
    # (Keras' adapt on iterables needs TensorFlow, absent here: the merged
    # batch moments are checked against the whole array's instead.)
    x = _data((50, 3))
    ds = kf.data.Dataset.from_tensor_slices(x).batch(8)
    ours = L.Normalization()
    ours.adapt(ds)
    listed = L.Normalization()
    listed.adapt(iter([x[i:i + 8] for i in range(0, 50, 8)]))
    for a, b in zip(ours.get_weights(), listed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # Merged batch moments equal the whole array's.
    np.testing.assert_allclose(ours.get_weights()[0], x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(ours.get_weights()[1], x.var(0), rtol=1e-4)
    # Unbatched rows of a dataset, and (x, y) pairs, are read as Keras does.
    rows = L.Normalization()
    rows.adapt(kf.data.Dataset.from_tensor_slices((x, x[:, 0])))
    np.testing.assert_allclose(rows.get_weights()[0], x.mean(0), rtol=1e-5)


def test_normalization_adapt_reads_pydatasets_lists_and_generators():
    """Keras 3's adapt: every batch of a PyDataset ((x,), (x, y) or (x, y, w)),
    a list of arrays is a list of batches, a generator; the statistics are the
    whole data's."""
    x = _data((40, 4, 3))

    class Batches(kf.utils.PyDataset):
        def __init__(self, form):
            super().__init__()
            self.form = form

        def __len__(self):
            return 5

        def __getitem__(self, i):
            b = x[8 * i:8 * i + 8]
            return {"x": b, "xy": (b, np.zeros(8)),
                    "xyw": (b, np.zeros(8), np.ones(8))}[self.form]

    sources = [Batches("x"), Batches("xy"), Batches("xyw"),
               [x[i:i + 8] for i in range(0, 40, 8)],
               (x[i:i + 10] for i in range(0, 40, 10)),
               [(x[i:i + 20], np.zeros(20)) for i in (0, 20)]]
    for data in sources:
        layer = L.Normalization()
        layer.adapt(data)
        np.testing.assert_allclose(layer.get_weights()[0], x.mean((0, 1)),
                                   rtol=1e-5)
        np.testing.assert_allclose(layer.get_weights()[1], x.var((0, 1)),
                                   rtol=1e-4)
    with pytest.raises(ValueError, match="empty iterable"):
        L.Normalization().adapt([])
    with pytest.raises(ValueError, match="empty iterable"):
        L.Normalization().adapt(b for b in ())
    with pytest.raises(TypeError, match="`.shape`"):
        L.Normalization().adapt(v for v in (42,))


def test_normalization_mean_and_variance_attributes_as_keras():
    keras = keras_numpy()
    x = _data((6, 3))
    for kw in ({}, {"axis": None}, {"mean": [1.0, 2.0, 3.0], "variance": [2.0] * 3}):
        ours, theirs = L.Normalization(**kw), keras.layers.Normalization(**kw)
        assert ours.mean is None and ours.variance is None
        if "mean" in kw:
            ours.build(x.shape)
            theirs.build(x.shape)
        else:
            ours.adapt(x)
            theirs.adapt(x)
        for name in ("mean", "variance"):
            ours_v, theirs_v = getattr(ours, name), np.asarray(getattr(theirs, name))
            assert ours_v.shape == theirs_v.shape, (kw, name)
            np.testing.assert_allclose(ours_v, theirs_v, rtol=1e-5, atol=1e-7)


def test_normalization_errors():
    with pytest.raises(ValueError, match="both `mean` and `variance`"):
        L.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="same shape"):
        L.Normalization(mean=[1.0, 2.0], variance=[1.0])
    layer = L.Normalization(axis=3)
    with pytest.raises(ValueError, match="range"):
        layer.adapt(_data((4, 3)))
    layer = L.Normalization()
    layer.adapt(_data((4, 3)))
    with pytest.raises(ValueError, match="incompatible shape"):
        layer.adapt(_data((4, 5)))
    with pytest.raises(TypeError, match="Dataset"):
        L.Normalization().adapt(object())
    with pytest.raises(TypeError, match="expects numeric inputs. Received: dtype"):
        L.Normalization(mean=0.0, variance=1.0)(np.array([["a"]]))
    with pytest.raises(TypeError, match="expects numeric inputs"):
        L.Rescaling(2.0)(np.array(["a"]))


def test_rescaling_matches_keras():
    keras = keras_numpy()
    x = (np.random.RandomState(0).rand(2, 4, 4, 3) * 255).astype("float32")
    for kw in [{"scale": 1 / 255}, {"scale": 1 / 127.5, "offset": -1},
               {"scale": [1.0, 2.0, 3.0], "offset": [0.5, 0.0, -1.0]}]:
        assert_same_forward(L.Rescaling(**kw), keras.layers.Rescaling(**kw), x)
    out = L.Rescaling(1 / 255)(np.array([[0, 255]], dtype="uint8"))
    np.testing.assert_allclose(out, [[0.0, 1.0]])
    assert out.dtype == np.float32


@pytest.mark.parametrize("make", [
    lambda: L.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 2.0],
                            dtype="float64"),
    lambda: L.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 2.0],
                            invert=True, dtype="float64"),
    lambda: L.Rescaling([0.5, 2.0, -1.0], offset=0.3, dtype="float64"),
    lambda: L.Resizing(3, 5, dtype="float64"),
    lambda: L.Resizing(5, 2, interpolation="nearest", dtype="float64"),
    lambda: L.Resizing(4, 4, crop_to_aspect_ratio=True, dtype="float64"),
])
def test_differentiable_layers_gradients(float64, make):
    x = np.random.RandomState(0).randn(2, 4, 3, 3)
    check_gradients(lambda t: make()(t), [x])


def test_adapted_normalization_gradient_and_graph(float64):
    layer = L.Normalization(dtype="float64")
    layer.adapt(np.random.RandomState(1).randn(30, 3) * 2)
    check_gradients(lambda t: layer(t), [np.random.RandomState(0).randn(4, 3)])


def test_contracts_and_save_load(tmp_path):
    check_contract(lambda: L.Normalization(mean=[1.0, 2.0], variance=[4.0, 1.0]),
                   (3, 2), (3, 2), tmp_path)
    check_contract(lambda: L.Rescaling(0.5, offset=1.0), (3, 2), (3, 2), tmp_path)
    # An adapted Normalization keeps its statistics through model.save.
    x = _data((20, 3))
    norm = L.Normalization()
    norm.adapt(x)
    model = kf.Sequential([L.InputLayer(shape=(3,)), norm, L.Dense(2)])
    model.save(tmp_path / "norm.kf")
    loaded = kf.models.load_model(tmp_path / "norm.kf")
    np.testing.assert_allclose(loaded.predict(x, verbose=0),
                               model.predict(x, verbose=0), rtol=1e-6)
    np.testing.assert_allclose(loaded.layers[0].get_weights()[0], x.mean(0),
                               rtol=1e-5)


def test_config_round_trips_match_keras_keys():
    keras = keras_numpy()
    for ours, theirs in [(L.Normalization(axis=(1, 2), invert=True),
                          keras.layers.Normalization(axis=(1, 2), invert=True)),
                         (L.Rescaling(0.5, 1.0), keras.layers.Rescaling(0.5, 1.0))]:
        config = ours.get_config()
        clone = type(ours).from_config(config)
        assert clone.get_config() == config
        keras_config = theirs.get_config()
        for key in set(keras_config) - {"name", "dtype", "trainable"}:
            assert np.asarray(config[key]).tolist() == np.asarray(
                keras_config[key]).tolist(), key


def test_normalization_symbolic_in_functional_model():
    inputs = kf.Input((3,))
    layer = L.Normalization(mean=[0.0, 1.0, 2.0], variance=[1.0, 1.0, 4.0])
    model = kf.Model(inputs, layer(inputs))
    np.testing.assert_allclose(model.predict(np.array([[1.0, 1.0, 4.0]]), verbose=0),
                               [[1.0, 0.0, 1.0]])
    assert K.is_symbolic(layer(K.placeholder("float32", (None, 3))))
