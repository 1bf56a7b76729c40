"""Models: Sequential, functional (multi-input/output, shared, nested), subclassed,
fit/evaluate/predict semantics, saving round trips and bad input."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.saving import saving_lib
from kerasflow import layers as L


def _blobs(n=400, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 3, n)
    centers = np.array([[2, 0], [-2, 0], [0, 2.5]])
    x = (centers[y] + rng.randn(n, 2) * 0.5).astype("float32")
    return x, y


def _mlp(seed=0):
    np.random.seed(seed)
    return kf.Sequential([L.Dense(16, activation="relu", input_shape=(2,)),
                          L.Dense(3, activation="softmax")])


def test_sequential_learns_blobs_and_history():
    x, y = _blobs()
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=15, validation_split=0.2,
                     verbose=0)
    assert set(hist.history) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(hist.history["loss"]) == 15
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc > 0.95
    probs = model.predict(x[:10], verbose=0)
    assert probs.shape == (10, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    # evaluate's accuracy equals accuracy computed from predict.
    pred = model.predict(x, verbose=0).argmax(axis=1)
    assert acc == pytest.approx((pred == y).mean(), abs=1e-6)


def test_functional_multi_input_multi_output_and_shared_layer():
    np.random.seed(1)
    a = kf.Input((3,), name="a")
    b = kf.Input((3,), name="b")
    shared = L.Dense(4, activation="tanh", name="shared")
    h = L.Concatenate()([shared(a), shared(b)])
    out1 = L.Dense(1, name="reg")(h)
    out2 = L.Dense(2, activation="softmax", name="cls")(h)
    model = kf.Model([a, b], [out1, out2])
    assert len(model.trainable_weights) == 6  # shared counted once
    model.compile(optimizer=kf.optimizers.Adam(0.01),
                  loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
                  loss_weights={"reg": 1.0, "cls": 0.5},
                  metrics={"cls": ["accuracy"]})
    rng = np.random.RandomState(0)
    xa, xb = rng.randn(200, 3).astype("float32"), rng.randn(200, 3).astype("float32")
    yr = (xa.sum(1) - xb.sum(1))[:, None]
    yc = (xa[:, 0] > xb[:, 0]).astype("int64")
    hist = model.fit({"a": xa, "b": xb}, {"reg": yr, "cls": yc}, epochs=30,
                     batch_size=32, verbose=0)
    assert {"loss", "cls_accuracy"} <= set(hist.history)
    logs = model.evaluate([xa, xb], [yr, yc], verbose=0, return_dict=True)
    assert logs["cls_accuracy"] > 0.85
    assert logs["loss"] == pytest.approx(logs["reg_loss"] + 0.5 * logs["cls_loss"],
                                         rel=1e-4)
    p_reg, p_cls = model.predict([xa, xb], verbose=0)
    assert p_reg.shape == (200, 1) and p_cls.shape == (200, 2)


def test_nested_model_and_subclassed_model():
    np.random.seed(2)
    inner_in = kf.Input((4,))
    inner = kf.Model(inner_in, L.Dense(3, activation="relu")(inner_in), name="inner")
    x = kf.Input((4,))
    outer = kf.Model(x, L.Dense(1)(inner(x)))
    data = np.random.randn(5, 4).astype("float32")
    direct = outer.predict(data, verbose=0)
    manual = inner.predict(data, verbose=0) @ outer.layers[-1].get_weights()[0] \
        + outer.layers[-1].get_weights()[1]
    np.testing.assert_allclose(direct, manual, rtol=1e-5, atol=1e-6)

    class Net(kf.Model):
        def __init__(self):
            super().__init__()
            self.d1 = L.Dense(8, activation="relu")
            self.drop = L.Dropout(0.1, seed=0)
            self.d2 = L.Dense(1)

        def call(self, inputs, training=None):
            return self.d2(self.drop(self.d1(inputs), training=training))

    net = Net()
    net.compile(optimizer="adam", loss="mse")
    y = data.sum(1, keepdims=True)
    net.fit(data, y, epochs=2, verbose=0)
    assert len(net.trainable_weights) == 4
    assert net.predict(data, verbose=0).shape == (5, 1)


def test_summary_and_get_layer(capsys):
    model = _mlp()
    model.summary()
    text = capsys.readouterr().out
    assert "Total params: 99" in text  # 2*16+16 + 16*3+3
    assert "(None, 16)" in text
    assert model.get_layer(index=0) is model.layers[0]
    with pytest.raises(ValueError, match="No such layer"):
        model.get_layer("nope")


@pytest.mark.parametrize("builder", ["sequential", "functional"])
def test_save_load_identical_predictions(tmp_path, builder):
    x, y = _blobs(100)
    if builder == "sequential":
        model = _mlp()
    else:
        inp = kf.Input((2,))
        model = kf.Model(inp, L.Dense(3, activation="softmax")(
            L.Dense(8, activation="relu")(inp)))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, epochs=2, verbose=0)
    path = tmp_path / "m.kf"
    model.save(path)
    loaded = kf.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0),
                                  model.predict(x, verbose=0))
    assert loaded.compiled
    # JSON and YAML round trips rebuild the architecture.
    for clone in (kf.models.model_from_json(model.to_json()),
                  kf.models.model_from_yaml(model.to_yaml())):
        clone.set_weights(model.get_weights())
        np.testing.assert_allclose(clone.predict(x, verbose=0),
                                   model.predict(x, verbose=0), rtol=1e-6)
    wpath = tmp_path / "w.npz"
    model.save_weights(wpath)
    fresh = _mlp(seed=5) if builder == "sequential" else kf.models.model_from_json(
        model.to_json())
    fresh.load_weights(wpath)
    np.testing.assert_array_equal(fresh.predict(x, verbose=0),
                                  model.predict(x, verbose=0))


def test_corrupt_truncated_and_pickled_model_files(tmp_path):
    model = _mlp()
    model.compile(optimizer="sgd", loss="mse")
    path = tmp_path / "m.kf"
    model.save(path)
    data = path.read_bytes()
    (tmp_path / "trunc.kf").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupt or truncated"):
        kf.models.load_model(tmp_path / "trunc.kf")
    (tmp_path / "junk.kf").write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="not a readable kerasflow model file"):
        kf.models.load_model(tmp_path / "junk.kf")
    # A weights file whose array is a pickled object: refused, never unpickled.
    buf = io.BytesIO()
    np.savez(buf, __names__=np.array(["x"]), w0000=np.array([{"evil": 1}],
                                                            dtype=object))
    # An earlier kerasflow zip (model.json + model.weights.npz), still read.
    config = json.dumps(saving_lib._model_config(model))
    evil = tmp_path / "evil.kf"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("model.json", config)
        z.writestr("model.weights.npz", buf.getvalue())
    with pytest.raises(ValueError, match="pickled"):
        kf.models.load_model(evil)
    # load_weights with a bad file leaves the weights untouched.
    before = model.get_weights()
    with pytest.raises(ValueError):
        model.load_weights(evil)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_unknown_layer_class_names_it(tmp_path):
    class Custom(L.Layer):
        def call(self, x):
            return x * 2.0

    inp = kf.Input((2,))
    model = kf.Model(inp, Custom()(L.Dense(2)(inp)))
    model.save(tmp_path / "c.kf")
    with pytest.raises(ValueError, match="Unknown layer class: 'Custom'"):
        kf.models.load_model(tmp_path / "c.kf")
    loaded = kf.models.load_model(tmp_path / "c.kf", custom_objects={"Custom": Custom})
    x = np.ones((1, 2), "float32")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_bad_inputs_give_clear_errors():
    x, y = _blobs(50)
    model = _mlp()
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(x, y, verbose=0)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="Data cardinality is ambiguous"):
        model.fit(x, y[:40], verbose=0)
    with pytest.raises(ValueError, match=r"expects data of shape \(None, 2\)"):
        model.fit(np.ones((50, 5), "float32"), y, verbose=0)
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\).*from 0 to 7"):
        model.fit(x, np.where(y == 1, 7, y), verbose=0)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN.*\(3, 1\)"):
        model.fit(bad, y, verbose=0)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        model.fit(x, y, batch_size=0, verbose=0)
    with pytest.raises(ValueError, match="at least one sample"):
        model.fit(x[:0], y[:0], verbose=0)


def test_class_weight_sample_weight_and_generator():
    x, y = _blobs(300)
    model = _mlp()
    model.compile(optimizer=kf.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    w0 = model.get_weights()
    # Zero sample weights: the loss has no gradient, weights stay put.
    model.fit(x, y, sample_weight=np.zeros(len(y)), epochs=1, verbose=0)
    for a, b in zip(w0, model.get_weights()):
        np.testing.assert_allclose(a, b)
    # class_weight {c: 0} for every class but 0 equals sample weights on class 0.
    m1, m2 = _mlp(3), _mlp(3)
    for m in (m1, m2):
        m.compile(optimizer=kf.optimizers.SGD(0.1),
                  loss="sparse_categorical_crossentropy")
    m1.fit(x, y, class_weight={0: 1.0, 1: 0.0, 2: 0.0}, shuffle=False, epochs=1,
           verbose=0)
    m2.fit(x, y, sample_weight=(y == 0).astype(float), shuffle=False, epochs=1,
           verbose=0)
    for a, b in zip(m1.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5)

    def gen():
        while True:
            for i in range(0, 300, 50):
                yield x[i:i + 50], y[i:i + 50]

    hist = model.fit(gen(), steps_per_epoch=6, epochs=2, verbose=0)
    assert len(hist.history["loss"]) == 2
