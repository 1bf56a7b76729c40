"""Preprocessing layers in the model, as keras.io's image examples use them:
``Rescaling`` to [0, 1], ``Normalization`` adapted on the training images,
and augmentation (``RandomRotation``, ``RandomZoom``, ``RandomTranslation``)
that is active in ``fit`` only (identity in ``evaluate`` and ``predict``),
then a small convnet, on Fashion-MNIST.

Run: KERASFLOW_DATA_DIR=../shared/data python examples/mnist_preprocessing_augmentation.py
(2 epochs of 12,000 images: 0.76 test accuracy; the second epoch ~11 s on
2 cores, the first longer while numba compiles the fused kernels once.)
"""

import argparse

import numpy as np

import kerasflow as keras
from kerasflow import layers


def build(train_images):
    norm = layers.Normalization(axis=None, name="normalize")
    norm.adapt(train_images / 255.0)  # one mean and variance over all pixels
    augment = keras.Sequential([
        layers.RandomRotation(0.05, seed=1),
        layers.RandomZoom(0.1, seed=2),
        layers.RandomTranslation(0.1, 0.1, seed=3),
    ], name="augment")
    return keras.Sequential([
        layers.Input(shape=(28, 28, 1)),
        layers.Rescaling(1.0 / 255),
        norm,
        augment,
        layers.Conv2D(16, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=12000)
    args = p.parse_args(argv)
    (x, y), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
    x = x[:args.samples, :, :, None].astype("float32")
    y = y[:args.samples]
    x_test = x_test[:, :, :, None].astype("float32")
    keras.utils.set_random_seed(0)
    model = build(x)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=64, epochs=args.epochs, verbose=2)
    # evaluate/predict do not augment: two predictions of one batch are equal
    first = model.predict(x_test[:8], verbose=0)
    assert np.array_equal(first, model.predict(x_test[:8], verbose=0))
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"Test accuracy: {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    main()
