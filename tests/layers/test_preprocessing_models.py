"""Preprocessing layers inside models and input pipelines: augmentation
active in fit, off in evaluate/predict; adapted statistics saved with the
model; string layers in a kerasflow.data map feeding a model."""

from __future__ import annotations

import numpy as np

import kerasflow as kf
from kerasflow import layers as L


def _images(n=32, seed=0):
    rng = np.random.RandomState(seed)
    x = (rng.rand(n, 6, 6, 1) * 255).astype("float32")
    y = (x.mean(axis=(1, 2, 3)) > 127).astype("float32")[:, None]
    return x, y


def test_augmented_model_fits_and_predicts_deterministically(tmp_path):
    x, y = _images()
    norm = L.Normalization()
    norm.adapt(x / 255.0)
    model = kf.Sequential([
        L.InputLayer(shape=(6, 6, 1)), L.Rescaling(1 / 255), norm,
        L.RandomFlip(seed=1), L.RandomRotation(0.05, seed=2),
        L.RandomZoom(0.1, seed=3), L.RandomContrast(0.1, value_range=(-9, 9),
                                                     seed=4),
        L.Flatten(), L.Dense(1, activation="sigmoid")])
    model.compile(optimizer=kf.optimizers.Adam(0.01), loss="binary_crossentropy")
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    # Inference: the augmentation layers pass their input through.
    first = model.predict(x, verbose=0)
    np.testing.assert_array_equal(model.predict(x, verbose=0), first)
    assert model.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)
    model.save(tmp_path / "aug.kf")
    loaded = kf.models.load_model(tmp_path / "aug.kf")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), first, rtol=1e-6)


def test_augmentation_in_a_data_pipeline():
    x, y = _images(8)
    flip = L.RandomFlip("horizontal", seed=0)
    ds = kf.data.Dataset.from_tensor_slices((x, y)).map(
        lambda image, label: (flip(image), label)).batch(8)
    got, labels = next(iter(ds))
    assert got.shape == x.shape
    for g, i in zip(got, x):
        assert np.array_equal(g, i) or np.array_equal(g, i[:, ::-1])
    np.testing.assert_array_equal(labels, y)


def test_text_pipeline_feeds_a_model():
    texts = np.array(["good great fun", "bad awful", "great good", "awful bad boring"])
    labels = np.array([[1.0], [0.0], [1.0], [0.0]], "float32")
    vectorizer = L.TextVectorization(output_mode="multi_hot")
    vectorizer.adapt(texts)
    ds = kf.data.Dataset.from_tensor_slices((texts, labels)).batch(2).map(
        lambda t, label: (vectorizer(t).astype("float32"), label))
    model = kf.Sequential([L.InputLayer(shape=(vectorizer.vocabulary_size(),)),
                           L.Dense(1, activation="sigmoid")])
    model.compile(optimizer=kf.optimizers.Adam(0.1), loss="binary_crossentropy",
                  metrics=["accuracy"])
    model.fit(ds, epochs=20, verbose=0)
    probs = model.predict(vectorizer(np.array(["good fun", "bad boring"])).astype(
        "float32"), verbose=0)
    assert probs[0, 0] > 0.5 > probs[1, 0]


def test_augmentation_is_on_in_training_steps_only():
    x = np.random.RandomState(0).rand(16, 4, 4, 1).astype("float32") * 100
    y = np.zeros((16, 1), "float32")
    model = kf.Sequential([L.InputLayer(shape=(4, 4, 1)),
                           L.RandomBrightness(0.5, value_range=(0, 100), seed=1),
                           L.Flatten(), L.Dense(1, kernel_initializer="ones")])
    model.compile(optimizer=kf.optimizers.SGD(0.0), loss="mse")  # weights fixed
    clean = model.evaluate(x, y, verbose=0)
    assert clean == model.evaluate(x, y, verbose=0)
    np.testing.assert_allclose(clean, np.mean(x.sum(axis=(1, 2, 3)) ** 2), rtol=1e-5)
    trained = [model.train_on_batch(x, y) for _ in range(2)]
    assert trained[0] != clean and trained[1] != trained[0]


def test_text_classification_example_classifies_held_out_sentences():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / \
        "text_classification_preprocessing.py"
    spec = importlib.util.spec_from_file_location("text_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(epochs=60, seed=0) == 1.0
