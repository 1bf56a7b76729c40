"""Model.fit / evaluate / predict on kerasflow.data datasets."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.data import CsvDataset, Dataset


def _linear_data(n=50, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return x, x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3


def _model(seed=0):
    np.random.seed(seed)
    model = kf.Sequential([kf.layers.Dense(4, activation="tanh", input_shape=(3,)),
                           kf.layers.Dense(1)])
    model.compile(kf.optimizers.SGD(0.05), "mse", metrics=["mae"])
    return model


def test_fit_dataset_equals_fit_arrays(float64):
    x, y = _linear_data()
    w = np.linspace(0.5, 1.5, 50)
    a, b = _model(), _model()
    a.fit(x, y, batch_size=16, epochs=3, shuffle=False, sample_weight=w, verbose=0)
    ds = Dataset.from_tensor_slices((x, y, w)).batch(16)
    hist = b.fit(ds, epochs=3, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-12)
    assert len(hist.history["loss"]) == 3


def test_fit_dataset_learns_a_linear_model(float64):
    x, y = _linear_data(400)
    np.random.seed(0)
    model = kf.Sequential([kf.layers.Dense(1, input_shape=(3,))])
    model.compile(kf.optimizers.SGD(0.1), "mse")
    ds = (Dataset.from_tensor_slices((x, y)).shuffle(400, seed=0).batch(20)
          .prefetch(kf.data.AUTOTUNE))
    hist = model.fit(ds, epochs=15, verbose=0)
    assert hist.history["loss"][-1] < 1e-4 < hist.history["loss"][0]


def test_evaluate_and_predict_on_datasets_equal_arrays(float64):
    x, y = _linear_data(45)
    model = _model()
    ds = Dataset.from_tensor_slices((x, y)).batch(10)
    np.testing.assert_allclose(model.evaluate(ds, verbose=0),
                               model.evaluate(x, y, batch_size=10, verbose=0),
                               rtol=1e-12)
    expected = model.predict(x, verbose=0)
    for source in (Dataset.from_tensor_slices(x).batch(7),
                   Dataset.from_tensor_slices((x,)).batch(7), ds):
        np.testing.assert_allclose(model.predict(source, verbose=0), expected,
                                   rtol=1e-12)
    np.testing.assert_allclose(model.predict(ds.repeat(), steps=2, verbose=0),
                               expected[:20], rtol=1e-12)


def test_validation_dataset_matches_evaluate(float64):
    x, y = _linear_data()
    model = _model()
    train = Dataset.from_tensor_slices((x[:40], y[:40])).batch(8)
    val = Dataset.from_tensor_slices((x[40:], y[40:])).batch(4)
    hist = model.fit(train, validation_data=val, epochs=2, verbose=0)
    loss, mae = model.evaluate(val, verbose=0)
    assert hist.history["val_loss"][-1] == pytest.approx(loss, rel=1e-12)
    assert hist.history["val_mae"][-1] == pytest.approx(mae, rel=1e-12)


def test_infinite_dataset_needs_steps():
    x, y = _linear_data(20)
    model = _model()
    ds = Dataset.from_tensor_slices((x, y)).batch(5).repeat()
    with pytest.raises(ValueError, match=r"infinite.*pass steps_per_epoch=.*"
                                         r"Received: steps_per_epoch=None"):
        model.fit(ds, verbose=0)
    with pytest.raises(ValueError, match=r"infinite.*Received: steps=None"):
        model.evaluate(ds, verbose=0)
    with pytest.raises(ValueError, match=r"Received: validation_steps=None"):
        model.fit(ds.take(2), validation_data=ds, verbose=0)
    with pytest.raises(ValueError, match="y must be None"):
        model.fit(ds, y, steps_per_epoch=2, verbose=0)


def test_steps_per_epoch_continues_one_pass_across_epochs():
    seen = []
    x, y = _linear_data(12)
    ds = Dataset.from_tensor_slices((np.arange(12), x, y)).map(
        lambda i, a, b: seen.append(int(i)) or (a, b)).batch(2).repeat()
    _model().fit(ds, steps_per_epoch=2, epochs=3, verbose=0)
    assert seen == list(range(12))  # epoch 2 goes on where epoch 1 stopped


def test_progress_knows_the_dataset_length():
    class Steps(kf.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.steps = self.params["steps"]
    x, y = _linear_data(23)
    cb = Steps()
    _model().fit(Dataset.from_tensor_slices((x, y)).batch(5), callbacks=[cb],
                 verbose=0)
    assert cb.steps == 5
    cb2 = Steps()
    _model().fit(Dataset.from_tensor_slices((x, y)).batch(5).filter(
        lambda a, b: True), callbacks=[cb2], verbose=0)
    assert cb2.steps is None


def test_dict_features_feed_named_inputs(float64):
    zi, ai = kf.Input((3,), name="z_in"), kf.Input((2,), name="a_in")
    out = kf.layers.Dense(1)(kf.layers.Concatenate()([zi, ai]))
    np.random.seed(0)
    model = kf.Model({"z_in": zi, "a_in": ai}, out)
    model.compile(kf.optimizers.SGD(0.1), "mse")
    rng = np.random.default_rng(1)
    x = {"z_in": rng.normal(size=(30, 3)), "a_in": rng.normal(size=(30, 2))}
    y = x["z_in"][:, :1] - 2 * x["a_in"][:, 1:]
    ds = Dataset.from_tensor_slices((x, y)).batch(10)
    before = model.evaluate(ds, verbose=0)
    model.fit(ds, epochs=30, verbose=0)
    assert model.evaluate(ds, verbose=0) < 0.05 * before
    np.testing.assert_allclose(
        model.predict(ds.map(lambda f, t: f), verbose=0),
        model.predict(x, verbose=0), rtol=1e-12)


def test_iris_from_csv_dataset_reaches_90_percent(data_dir):
    path = str(data_dir / "iris" / "iris.csv")
    ds = CsvDataset(path, [0.0] * 4 + [np.int64], header=True).map(
        lambda *cols: (np.stack(cols[:4]), cols[4])).cache()
    np.random.seed(0)
    model = kf.Sequential([kf.layers.Dense(16, activation="relu", input_shape=(4,)),
                           kf.layers.Dense(3, activation="softmax")])
    model.compile(kf.optimizers.Adam(0.02), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(ds.shuffle(150, seed=0).batch(16), epochs=60, verbose=0)
    _, acc = model.evaluate(ds.batch(50), verbose=0)
    assert acc >= 0.9
