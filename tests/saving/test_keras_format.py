"""Keras 3's ``.keras`` / ``.weights.h5`` both ways, Keras 2 ``.h5`` read, and
hostile files; Keras 3.15 on its numpy backend is the other side."""

from __future__ import annotations

import io
import json
import zipfile

import h5py
import numpy as np
import pytest

import kerasflow as kf
from kerasflow.saving import saving_lib
from kerasflow.utils import checkpoint as ckpt
from tests.keras_oracle import keras_numpy

L = kf.layers


def _kf_sequential():
    return kf.Sequential([kf.Input((4,)), L.Dense(8, activation="relu"),
                          L.BatchNormalization(), L.Dropout(0.1), L.Dense(3)])


def _kf_functional():
    i = kf.Input((5,), name="tok", dtype="int32")
    e = L.Embedding(10, 4)(i)
    x = L.LSTM(6, return_sequences=True)(e)
    y = L.GRU(3)(x)
    z = L.MaxPooling1D()(L.Conv1D(2, 3)(e))
    z = L.GlobalAveragePooling1D()(z)
    o = L.LayerNormalization()(L.Concatenate()([y, z]))
    return kf.Model(i, L.Add()([o, o]))


def _kf_convnet():
    i = kf.Input((8, 8, 2))
    x = L.Conv2D(3, 3, activation="relu")(i)
    x = L.AveragePooling2D(2)(L.MaxPooling2D(1)(x))
    return kf.Model(i, L.Dense(2)(L.Flatten()(x)))


def _keras_models(keras):
    K = keras.layers
    seq = keras.Sequential([keras.Input((4,)), K.Dense(8, activation="relu"),
                            K.BatchNormalization(), K.Dropout(0.1), K.Dense(3)])
    i = keras.Input((5,), name="tok", dtype="int32")
    e = K.Embedding(10, 4)(i)
    y = K.GRU(3)(K.LSTM(6, return_sequences=True)(e))
    z = K.GlobalAveragePooling1D()(K.MaxPooling1D()(K.Conv1D(2, 3)(e)))
    o = K.LayerNormalization()(K.Concatenate()([y, z]))
    fun = keras.Model(i, K.Add()([o, o]))
    c = keras.Input((8, 8, 2))
    x = K.AveragePooling2D(2)(K.MaxPooling2D(1)(K.Conv2D(3, 3, activation="relu")(c)))
    conv = keras.Model(c, K.Dense(2)(K.Flatten()(x)))
    return seq, fun, conv


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.normal(size=(3, 4)).astype("float32"),
            rng.integers(0, 10, (3, 5)).astype("int32"),
            rng.normal(size=(3, 8, 8, 2)).astype("float32")]


def _randomize(model, seed=1):
    rng = np.random.default_rng(seed)
    # Moving variances stay positive; everything else any value.
    model.set_weights([np.abs(rng.normal(size=w.shape)).astype(w.dtype) + 0.5
                       for w in model.get_weights()])


def test_keras3_files_load_and_predict_the_same(tmp_path):
    keras = keras_numpy()
    for k, (km, x) in enumerate(zip(_keras_models(keras), _inputs())):
        _randomize(km, k)
        km.save(tmp_path / f"k{k}.keras")
        ours = kf.models.load_model(tmp_path / f"k{k}.keras")
        np.testing.assert_allclose(ours.predict(x, verbose=0),
                                   km.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def test_kerasflow_files_load_in_keras3_and_predict_the_same(tmp_path):
    keras = keras_numpy()
    for k, (model, x) in enumerate(zip([_kf_sequential(), _kf_functional(),
                                        _kf_convnet()], _inputs())):
        _randomize(model, k)
        model.save(tmp_path / f"f{k}.keras")
        with zipfile.ZipFile(tmp_path / f"f{k}.keras") as z:
            assert sorted(z.namelist()) == ["config.json", "metadata.json",
                                            "model.weights.h5"]
        km = keras.saving.load_model(tmp_path / f"f{k}.keras")
        want = model.predict(x, verbose=0)
        np.testing.assert_allclose(km.predict(x, verbose=0), want, rtol=1e-5,
                                   atol=1e-5)
        again = kf.models.load_model(tmp_path / f"f{k}.keras")
        np.testing.assert_array_equal(again.predict(x, verbose=0), want)


def test_compiled_model_keeps_adam_state_and_continues_training(tmp_path):
    keras = keras_numpy()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.normal(size=(16, 3)).astype("float32")
    model = kf.Sequential([kf.Input((4,)), L.Dense(8, activation="relu"),
                           L.BatchNormalization(), L.Dense(3)])  # no Dropout
    model.compile(optimizer=kf.optimizers.Adam(0.01), loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    model.save(tmp_path / "c.keras")
    loaded = kf.models.load_model(tmp_path / "c.keras")
    assert type(loaded.optimizer).__name__ == "Adam"
    for a, b in zip(model.optimizer.variables, loaded.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    loaded.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    km = keras.saving.load_model(tmp_path / "c.keras")  # compile config read
    assert type(km.optimizer).__name__ == "Adam"
    np.testing.assert_allclose(float(km.optimizer.learning_rate), 0.01, rtol=1e-6)


def test_lambda_with_bytecode_is_refused_in_safe_mode(tmp_path):
    keras = keras_numpy()
    km = keras.Sequential([keras.Input((3,)), keras.layers.Lambda(lambda t: t * 2.0)])
    km.save(tmp_path / "lam.keras")
    with pytest.raises(ValueError, match="safe_mode=False"):
        kf.models.load_model(tmp_path / "lam.keras")
    ours = kf.models.load_model(tmp_path / "lam.keras", safe_mode=False)
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(ours.predict(x, verbose=0), 2 * x)


def test_earlier_kerasflow_zip_still_loads_with_a_note(tmp_path):
    model = _kf_sequential()
    _randomize(model)
    arrays, meta = saving_lib._weights(model)
    with zipfile.ZipFile(tmp_path / "old.keras", "w") as z:
        z.writestr("model.json", json.dumps(saving_lib._model_config(model)))
        z.writestr("model.weights.npz", ckpt.encode_arrays(arrays, meta))
    with pytest.warns(UserWarning, match="save it again"):
        loaded = kf.models.load_model(tmp_path / "old.keras")
    x = _inputs()[0]
    np.testing.assert_array_equal(loaded.predict(x, verbose=0),
                                  model.predict(x, verbose=0))


def test_weights_h5_both_ways_and_mismatch_names_layer_and_shapes(tmp_path):
    keras = keras_numpy()
    km = _keras_models(keras)[1]
    _randomize(km, 3)
    km.save_weights(tmp_path / "k.weights.h5")
    ours = _kf_functional()
    ours.load_weights(tmp_path / "k.weights.h5")
    x = _inputs()[1]
    np.testing.assert_allclose(ours.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)
    _randomize(ours, 4)
    ours.save_weights(tmp_path / "f.weights.h5")
    km.load_weights(tmp_path / "f.weights.h5")
    np.testing.assert_allclose(km.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)
    wider = kf.Sequential([kf.Input((4,)), L.Dense(9, activation="relu"),
                           L.BatchNormalization(), L.Dropout(0.1), L.Dense(3)])
    _kf_sequential().save_weights(tmp_path / "s.weights.h5")
    before = wider.get_weights()
    with pytest.raises(ValueError, match=r"layer 'dense.*' expects .*\(4, 9\).*"
                                         r"Received: shape \(4, 8\)"):
        wider.load_weights(tmp_path / "s.weights.h5")
    for a, b in zip(before, wider.get_weights()):
        np.testing.assert_array_equal(a, b)
    wider.load_weights(tmp_path / "s.weights.h5", skip_mismatch=True)


def _keras2_file(path, weights_only=False):
    """A Keras 2.x-layout HDF5 file of Dense(3, relu) -> Dense(2)."""
    rng = np.random.default_rng(5)
    w = [rng.normal(size=s).astype("float32") for s in [(4, 3), (3,), (3, 2), (2,)]]
    config = {"class_name": "Sequential", "config": {"name": "sequential", "layers": [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 4],
                                                "dtype": "float32", "sparse": False,
                                                "ragged": False, "name": "in"}},
        {"class_name": "Dense", "config": {"name": "d1", "trainable": True,
                                           "dtype": "float32", "units": 3,
                                           "activation": "relu", "use_bias": True}},
        {"class_name": "Dense", "config": {"name": "d2", "trainable": True,
                                           "dtype": "float32", "units": 2,
                                           "activation": "linear",
                                           "use_bias": True}}]}}
    with h5py.File(path, "w") as f:
        root = f
        if not weights_only:
            f.attrs["keras_version"] = "2.13.1"
            f.attrs["backend"] = "tensorflow"
            f.attrs["model_config"] = json.dumps(config)
            root = f.create_group("model_weights")
        root.attrs["layer_names"] = [b"d1", b"d2"]
        for name, (k, b) in [("d1", w[:2]), ("d2", w[2:])]:
            g = root.create_group(name)
            g.attrs["weight_names"] = [f"{name}/kernel:0".encode(),
                                       f"{name}/bias:0".encode()]
            g.create_dataset(f"{name}/kernel:0", data=k)
            g.create_dataset(f"{name}/bias:0", data=b)
    return w


def test_keras2_h5_model_and_weights_load(tmp_path):
    w = _keras2_file(tmp_path / "m.h5")
    x = _inputs()[0]
    want = np.maximum(x @ w[0] + w[1], 0) @ w[2] + w[3]
    model = kf.models.load_model(tmp_path / "m.h5")
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-5,
                               atol=1e-5)
    _keras2_file(tmp_path / "w.h5", weights_only=True)
    other = kf.Sequential([kf.Input((4,)), L.Dense(3, activation="relu", name="d1"),
                           L.Dense(2, name="d2")])
    other.load_weights(tmp_path / "w.h5")
    np.testing.assert_allclose(other.predict(x, verbose=0), want, rtol=1e-5,
                               atol=1e-5)
    renamed = kf.Sequential([kf.Input((4,)), L.Dense(3, name="d2x"),
                             L.Dense(2, name="d2")])
    renamed.load_weights(tmp_path / "w.h5", by_name=True)
    np.testing.assert_array_equal(renamed.layers[-1].get_weights()[0], w[2])


def test_zip_member_with_dotdot_is_refused_and_nothing_written(tmp_path):
    model = _kf_sequential()
    model.save(tmp_path / "ok.keras")
    bad = tmp_path / "sub" / "bad.keras"
    bad.parent.mkdir()
    with zipfile.ZipFile(tmp_path / "ok.keras") as src, \
            zipfile.ZipFile(bad, "w") as z:
        for n in src.namelist():
            z.writestr(n, src.read(n))
        z.writestr("../escaped.txt", "x")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="unsafe path"):
        kf.models.load_model(bad)
    with pytest.raises(ValueError, match="unsafe path"):
        model.load_weights(bad)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_dataset_declaring_1e12_elements_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.weights.h5"
    with h5py.File(path, "w") as f:  # chunked, never written: a tiny file
        g = f.create_group("layers/dense/vars")
        g.create_dataset("0", shape=(10**6, 10**6), dtype="float32",
                         chunks=(1, 1024))
        g.create_dataset("1", shape=(8,), dtype="float32")
    assert path.stat().st_size < 1_000_000
    model = kf.Sequential([kf.Input((4,)), L.Dense(8)])
    with pytest.raises(ValueError, match=r"declares shape \(1000000, 1000000\)"):
        model.load_weights(path)


def test_config_naming_a_foreign_module_is_refused(tmp_path):
    model = _kf_sequential()
    model.save(tmp_path / "ok.keras")
    with zipfile.ZipFile(tmp_path / "ok.keras") as z:
        members = {n: z.read(n) for n in z.namelist()}
    config = json.loads(members["config.json"])
    config["config"]["layers"][1] = {"module": "os", "class_name": "system",
                                     "config": {"command": "touch pwned"},
                                     "registered_name": None}
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(tmp_path / "evil.keras", "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    with pytest.raises(ValueError, match="module 'os'.*neither a Keras nor a "
                                         "kerasflow module"):
        kf.models.load_model(tmp_path / "evil.keras")
    config["config"]["layers"][1] = {"module": "keras.layers",
                                     "class_name": "NoSuchLayer", "config": {}}
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(tmp_path / "unknown.keras", "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    with pytest.raises(ValueError, match="NoSuchLayer"):
        kf.models.load_model(tmp_path / "unknown.keras")


def _pair_models(lib, layers):
    """name -> (model, inputs) built alike in Keras (``lib=keras``) and here."""
    rng = np.random.default_rng(7)

    def x(*shape):
        return rng.normal(size=(2, *shape)).astype("float32")

    a, b = lib.Input((4,), name="a"), lib.Input((4,), name="b")
    shared = layers.Dense(5, activation="relu", name="shared")
    ha, hb = shared(a), shared(b)
    mimo = lib.Model([a, b], [layers.Dense(2)(layers.Concatenate()([ha, hb])),
                              layers.Dense(1)(layers.Subtract()([ha, hb]))])
    s = lib.Input((6, 3))
    bi = lib.Model(s, layers.Bidirectional(layers.LSTM(4))(s))
    rnn = lib.Model(s, layers.SimpleRNN(4, return_sequences=True)(s))
    c = lib.Input((5, 5, 2))
    convt = lib.Model(c, layers.Conv2DTranspose(3, 3, strides=2, padding="same")(c))
    v3 = lib.Input((5, 6, 4, 2))
    h3 = layers.Conv3D(3, (3, 2, 2), strides=(1, 2, 1), padding="same",
                       activation="relu")(v3)
    conv3d = lib.Model(v3, layers.Conv3D(2, 2, dilation_rate=(1, 1, 2))(h3))
    q, v = lib.Input((6, 8)), lib.Input((4, 8))
    mha = lib.Model([q, v], layers.MultiHeadAttention(2, 4)(q, v))
    return {"mimo_shared": (mimo, [x(4), x(4)]), "bidirectional_lstm": (bi, x(6, 3)),
            "simple_rnn": (rnn, x(6, 3)), "conv2d_transpose": (convt, x(5, 5, 2)),
            "conv3d": (conv3d, x(5, 6, 4, 2)),
            "multi_head_attention": (mha, [x(6, 8), x(4, 8)])}


@pytest.mark.parametrize("name", ["mimo_shared", "bidirectional_lstm", "simple_rnn",
                                  "conv2d_transpose", "conv3d",
                                  "multi_head_attention"])
def test_more_layer_families_travel_both_ways(tmp_path, name):
    keras = keras_numpy()
    theirs, x = _pair_models(keras, keras.layers)[name]
    ours, _ = _pair_models(kf, L)[name]
    for k, (src, load) in enumerate([(theirs, kf.models.load_model),
                                     (ours, keras.saving.load_model)]):
        _randomize(src, k)
        src.save(tmp_path / f"{name}_{k}.keras")
        dst = load(tmp_path / f"{name}_{k}.keras")
        want, got = src.predict(x, verbose=0), dst.predict(x, verbose=0)
        for w, g in zip(*(v if isinstance(v, list) else [v] for v in (want, got))):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    # Keras' HDF5 paths, sub-layers included, are ours too.
    with zipfile.ZipFile(tmp_path / f"{name}_1.keras") as z:
        ours_h5 = h5py.File(io.BytesIO(z.read("model.weights.h5")))
        ours_paths = set()
        ours_h5.visit(ours_paths.add)
    theirs.save_weights(tmp_path / "t.weights.h5")
    with h5py.File(tmp_path / "t.weights.h5") as f:
        theirs_paths = set()
        f.visit(theirs_paths.add)
    assert {p for p in ours_paths if "/vars/" in p} == \
        {p for p in theirs_paths if "/vars/" in p}


def _custom_classes(lib, layers):
    """A registered layer with an argument and a subclassed model holding it
    (each with ``get_config``), defined alike for Keras and kerasflow."""
    register = lib.saving.register_keras_serializable

    @register(package="kf_format_test")
    class Scale(layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(input_shape[-1],),
                                     initializer="ones")

        def call(self, x):
            return x * self.w * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    @register(package="kf_format_test")
    class Tower(lib.Model):
        def __init__(self, units=3, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.d1 = layers.Dense(5, activation="relu")
            self.s = Scale(0.5)
            self.d2 = layers.Dense(units)

        def call(self, x):
            return self.d2(self.s(self.d1(x)))

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    return Scale, Tower


def test_registered_layer_and_subclassed_model_travel_both_ways(tmp_path):
    keras = keras_numpy()
    x = np.random.default_rng(0).normal(size=(4, 4)).astype("float32")
    theirs, ours = _custom_classes(keras, keras.layers), _custom_classes(kf, L)
    for k, (lib, (Scale, Tower), load) in enumerate(
            [(keras, theirs, kf.models.load_model),
             (kf, ours, keras.saving.load_model)]):
        layered = lib.Sequential([lib.Input((4,)), Scale(3.0)])
        tower = Tower(3)
        tower(x)  # a subclassed model has weights once called
        for j, src in enumerate([layered, tower]):
            _randomize(src, k + j)
            src.save(tmp_path / f"c{k}{j}.keras")
            dst = load(tmp_path / f"c{k}{j}.keras")
            assert type(dst).__name__ == type(src).__name__
            np.testing.assert_allclose(dst.predict(x, verbose=0),
                                       src.predict(x, verbose=0), rtol=1e-5,
                                       atol=1e-5)
    # Keras' paths for a subclassed model: attributes sorted, then the
    # `layers` list naming the layer no attribute before it reached.
    with zipfile.ZipFile(tmp_path / "c11.keras") as z:
        config = json.loads(z.read("config.json"))
        paths = set()
        h5py.File(io.BytesIO(z.read("model.weights.h5"))).visit(paths.add)
    assert config["registered_name"] == "kf_format_test>Tower"
    assert config["config"]["units"] == 3
    assert config["build_config"] == {"input_shape": [None, 4]}
    assert {p for p in paths if p.endswith("/vars")} == {
        "d1/vars", "d2/vars", "layers/scale/vars"}


def test_subclassed_model_without_get_config_still_refuses_to_save(tmp_path):
    class Plain(kf.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(2)

        def call(self, x):
            return self.d(x)

    model = Plain()
    model(np.ones((1, 3), "float32"))
    with pytest.raises(NotImplementedError, match="has no config"):
        model.save(tmp_path / "p.keras")


def test_adapted_normalization_travels_both_ways(tmp_path):
    keras = keras_numpy()
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(50, 3)) * [1.0, 3.0, 0.5] + [2.0, -1.0, 0.0]
            ).astype("float32")
    x = rng.normal(size=(4, 3)).astype("float32")
    kn = keras.layers.Normalization()
    kn.adapt(data)
    ours = L.Normalization()
    ours.adapt(data)
    theirs = keras.Sequential([keras.Input((3,)), kn])
    mine = kf.Sequential([kf.Input((3,)), ours])
    for k, (src, load) in enumerate([(theirs, kf.models.load_model),
                                     (mine, keras.saving.load_model)]):
        src.save(tmp_path / f"n{k}.keras")
        # The adapted statistics are weights (mean, variance, count), not config.
        with zipfile.ZipFile(tmp_path / f"n{k}.keras") as z:
            layer = json.loads(z.read("config.json"))["config"]["layers"][-1]
        assert layer["config"]["mean"] is None
        dst = load(tmp_path / f"n{k}.keras")
        want = (x - data.mean(0)) / np.sqrt(data.var(0))
        np.testing.assert_allclose(dst.predict(x, verbose=0), want, rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(dst.predict(x, verbose=0),
                                   src.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def _kernel_model(lib, layers):
    """EinsumDense (kernel (6, 3, 4)) -> Flatten -> Dense, alike in both."""
    i = lib.Input((5, 6))
    h = layers.EinsumDense("abc,cde->abde", (5, 3, 4), bias_axes="de",
                           activation="tanh", name="ed")(i)
    return lib.Model(i, layers.Dense(2, name="head")(layers.Flatten()(h)))


def _kernel_pair(keras, quantize, lora):
    """(ours, theirs, x): the same weights, both quantized to int8 and/or
    LoRA-enabled (rank 2, alpha 4) with A and B nonzero."""
    ours, theirs = _kernel_model(kf, L), _kernel_model(keras, keras.layers)
    rng = np.random.default_rng(11)
    x = rng.normal(size=(3, 5, 6)).astype("float32")
    ours.set_weights([rng.normal(size=w.shape).astype(w.dtype) * 0.5
                      for w in ours.get_weights()])
    theirs.set_weights(ours.get_weights())
    for model in (ours, theirs):
        if quantize:
            model.quantize("int8")
        for layer in model.layers:
            if lora and hasattr(layer, "enable_lora"):
                layer.enable_lora(2, lora_alpha=4)
    weights = [w + rng.normal(size=w.shape).astype(w.dtype) * 0.3
               if w.dtype.kind == "f" else w for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    return ours, theirs, x


def _slots(path):
    """{'layers/<layer>/vars/<i>': array} of a .keras or .weights.h5 file."""
    with open(path, "rb") as f:
        data = f.read()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            data = z.read("model.weights.h5")
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and name.startswith("layers/"):
            out[name] = obj[()]

    with h5py.File(io.BytesIO(data)) as h5:
        h5.visititems(visit)
    return out


def _assert_same_slots(ours, theirs):
    assert sorted(ours) == sorted(theirs)
    for name, want in theirs.items():
        assert ours[name].dtype == want.dtype, name
        np.testing.assert_allclose(ours[name], want, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("quantize", [False, True])
def test_lora_layers_write_and_read_the_merged_kernel_as_keras(tmp_path,
                                                               quantize):
    keras = keras_numpy()
    ours, theirs, x = _kernel_pair(keras, quantize, lora=True)
    np.testing.assert_allclose(ours.predict(x, verbose=0),
                               theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    ours.save(tmp_path / "f.keras")
    theirs.save(tmp_path / "k.keras")
    # Keras' slots: kernel (the update merged in; re-quantized when int8),
    # bias, kernel_scale; no A or B.
    slots = _slots(tmp_path / "f.keras")
    _assert_same_slots(slots, _slots(tmp_path / "k.keras"))
    assert sorted(slots) == (["layers/dense/vars/0", "layers/dense/vars/1"]
                             + ["layers/dense/vars/2"] * quantize
                             + ["layers/einsum_dense/vars/0",
                                "layers/einsum_dense/vars/1"]
                             + ["layers/einsum_dense/vars/2"] * quantize)
    if not quantize:  # kernel + a @ b * alpha / rank, alpha / rank = 2
        kernel, _, a, b = ours.get_layer("head").get_weights()
        np.testing.assert_allclose(slots["layers/dense/vars/0"],
                                   kernel + 2 * a @ b, rtol=1e-6, atol=1e-6)
    want = keras.saving.load_model(tmp_path / "k.keras").predict(x, verbose=0)
    if not quantize:  # merging in float32 moves nothing
        np.testing.assert_allclose(want, ours.predict(x, verbose=0), rtol=1e-5,
                                   atol=1e-5)
    for path, load in [(tmp_path / "f.keras", keras.saving.load_model),
                       (tmp_path / "k.keras", kf.models.load_model),
                       (tmp_path / "f.keras", kf.models.load_model)]:
        loaded = load(path)
        np.testing.assert_allclose(loaded.predict(x, verbose=0), want,
                                   rtol=1e-5, atol=1e-5)
        # Keras reads the merged kernel into a LoRA layer whose A and B it
        # zeroes; kerasflow too.
        head = loaded.get_layer("head")
        assert head.lora_enabled and head.lora_rank == 2
        assert not np.asarray(head.lora_kernel_a.numpy()).any()
        assert not np.asarray(head.lora_kernel_b.numpy()).any()
    # .weights.h5, both ways, into LoRA-enabled models.
    ours.save_weights(tmp_path / "f.weights.h5")
    theirs.save_weights(tmp_path / "k.weights.h5")
    _assert_same_slots(_slots(tmp_path / "f.weights.h5"),
                       _slots(tmp_path / "k.weights.h5"))
    fresh_ours, fresh_theirs, _ = _kernel_pair(keras, quantize, lora=True)
    fresh_ours.load_weights(tmp_path / "k.weights.h5")
    fresh_theirs.load_weights(tmp_path / "f.weights.h5")
    for model in (fresh_ours, fresh_theirs):
        np.testing.assert_allclose(model.predict(x, verbose=0), want,
                                   rtol=1e-5, atol=1e-5)


def test_save_and_load_own_variables_match_keras():
    keras = keras_numpy()
    ours, theirs = L.Dense(3, name="own"), keras.layers.Dense(3, name="own")
    x = np.random.default_rng(2).normal(size=(2, 4)).astype("float32")
    ours(x)
    theirs(x)
    for layer in (ours, theirs):
        layer.enable_lora(2)
    weights = [np.full(w.shape, 0.1 * (k + 1), "float32")
               for k, w in enumerate(ours.get_weights())]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    mine, keras_store = {}, {}
    ours.save_own_variables(mine)
    theirs.save_own_variables(keras_store)
    assert sorted(mine) == sorted(keras_store) == ["0", "1"]
    for key in mine:
        np.testing.assert_allclose(mine[key], np.asarray(keras_store[key]),
                                   rtol=1e-6)
    # kernel 0.1 + (0.3 * 0.4 summed over rank 2) = 0.34 everywhere.
    np.testing.assert_allclose(mine["0"], np.full((4, 3), 0.34), rtol=1e-6)
    fresh = L.Dense(3, lora_rank=2)
    fresh(x)
    before = fresh.get_weights()
    with pytest.raises(ValueError, match=r"expected 2 variables, but received "
                                         r"3 variables"):
        fresh.load_own_variables({**mine, "2": mine["1"]})
    for a, b in zip(before, fresh.get_weights()):
        np.testing.assert_array_equal(a, b)
    fresh.load_own_variables(mine)
    np.testing.assert_allclose(fresh(x), ours(x), rtol=1e-6, atol=1e-6)
    assert not fresh.lora_kernel_a.numpy().any()


def test_int8_layers_travel_both_ways_in_keras_slot_order(tmp_path):
    keras = keras_numpy()
    ours, theirs, x = _kernel_pair(keras, quantize=True, lora=False)
    want = theirs.predict(x, verbose=0)
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=1e-5,
                               atol=1e-5)
    ours.save(tmp_path / "f.keras")
    theirs.save(tmp_path / "k.keras")
    slots = _slots(tmp_path / "f.keras")
    _assert_same_slots(slots, _slots(tmp_path / "k.keras"))
    # kernel int8, bias, kernel_scale: Keras' order, not creation order.
    assert [slots[f"layers/dense/vars/{i}"].dtype.name
            for i in range(3)] == ["int8", "float32", "float32"]
    assert slots["layers/einsum_dense/vars/2"].shape == (1, 1, 3, 4)
    in_keras = keras.saving.load_model(tmp_path / "f.keras")
    in_ours = kf.models.load_model(tmp_path / "k.keras")
    assert in_ours.get_layer("ed").quantization_mode == "int8"
    for model in (in_keras, in_ours):
        np.testing.assert_allclose(model.predict(x, verbose=0), want,
                                   rtol=1e-5, atol=1e-5)


def test_loss_scaled_model_keeps_its_optimizer_state_both_ways(tmp_path,
                                                               mixed_float16):
    keras = mixed_float16
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.normal(size=(16, 3)).astype("float32") * 0.1
    model = kf.Sequential([kf.Input((4,)), L.Dense(3)])
    model.compile(optimizer=kf.optimizers.Adam(0.01), loss="mse")
    opt = model.optimizer
    opt.dynamic_scale.assign(np.float32(1024.0))  # not the initial 2**15
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, shuffle=False)
    scale, steps = float(opt.dynamic_scale.numpy()), int(opt.iterations.numpy())
    assert (scale, steps, int(opt.step_counter.numpy())) == (1024.0, 8, 8)
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as z:  # what compile was given
        spec = json.loads(z.read("config.json"))["compile_config"]["optimizer"]
    assert spec["class_name"] == "Adam"
    theirs = keras.saving.load_model(tmp_path / "m.keras")
    assert type(theirs.optimizer).__name__ == "LossScaleOptimizer"
    # Keras: its own iterations and learning rate, step_counter,
    # dynamic_scale, then Adam's iterations, learning rate and slots.
    kvars = [np.asarray(v.value) for v in theirs.optimizer.variables]
    assert float(kvars[3]) == scale and int(kvars[4]) == steps
    ours_state = [v.numpy() for v in opt.variables]
    np.testing.assert_array_equal(kvars[2], ours_state[0])
    for a, b in zip(kvars[6:], ours_state[3:], strict=True):
        np.testing.assert_array_equal(a, b)
    theirs.save(tmp_path / "k.keras")
    for path in (tmp_path / "m.keras", tmp_path / "k.keras"):
        loaded = kf.models.load_model(path)
        assert isinstance(loaded.optimizer, kf.optimizers.LossScaleOptimizer)
        for a, b in zip(loaded.optimizer.variables, ours_state, strict=True):
            np.testing.assert_array_equal(a.numpy(), b)
    # A LossScaleOptimizer given to compile is written as one, its inner
    # optimizer in Keras' form.
    model.compile(optimizer=kf.optimizers.LossScaleOptimizer(
        kf.optimizers.SGD(0.1), initial_scale=64.0), loss="mse")
    model.save(tmp_path / "e.keras")
    for load in (keras.saving.load_model, kf.models.load_model):
        opt = load(tmp_path / "e.keras").optimizer
        assert type(opt).__name__ == "LossScaleOptimizer"
        assert type(opt.inner_optimizer).__name__ == "SGD"
        assert float(opt.initial_scale) == 64.0
