"""Train a small convnet with BatchNormalization on Fashion-MNIST with model.fit.

Conv2D(32, 3, same) -> BatchNormalization -> ReLU -> MaxPooling2D ->
Conv2D(64, 3, same) -> BatchNormalization -> ReLU -> MaxPooling2D -> Flatten ->
Dropout(0.3) -> Dense(128, relu) -> Dense(10, softmax); Adam, batch 128.
BatchNormalization trains on batch statistics and evaluates with its moving
ones. Measured: 85.4% test accuracy after 1 epoch, 89.6% after 3, 89.2-90.5%
after 4 (the default; seeds 0-2, fusion on and off: float32 rounding and the
dropout masks move the last epoch's test accuracy by about a point).

Run: python examples/fashion_mnist_cnn.py [--epochs 4] [--data DIR]
Reads the Fashion-MNIST IDX files from --data, $KERASFLOW_DATA_DIR/fashion-mnist
or ~/.kerasflow/datasets/fashion-mnist.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kerasflow as kf


def build_model(momentum=0.99):
    L = kf.layers
    return kf.Sequential([
        L.Conv2D(32, 3, padding="same", use_bias=False, input_shape=(28, 28, 1)),
        L.BatchNormalization(momentum=momentum),
        L.Activation("relu"),
        L.MaxPooling2D(),
        L.Conv2D(64, 3, padding="same", use_bias=False),
        L.BatchNormalization(momentum=momentum),
        L.Activation("relu"),
        L.MaxPooling2D(),
        L.Flatten(),
        L.Dropout(0.3),
        L.Dense(128, activation="relu"),
        L.Dense(10, activation="softmax"),
    ])


def load(data=None, train_limit=None, test_limit=None):
    (x_train, y_train), (x_test, y_test) = kf.datasets.fashion_mnist.load_data(
        path=data)
    x_train = x_train[:train_limit].reshape(-1, 28, 28, 1).astype("float32") / 255.0
    x_test = x_test[:test_limit].reshape(-1, 28, 28, 1).astype("float32") / 255.0
    return (x_train, y_train[:train_limit]), (x_test, y_test[:test_limit])


def main(epochs=4, batch_size=128, data=None, verbose=1, seed=0, train_limit=None,
         test_limit=None, momentum=0.99):
    """Trains and returns (test accuracy, history, training seconds).

    ``momentum`` is BatchNormalization's: 0.9 suits runs of a few dozen steps,
    whose moving statistics would otherwise stay near their initial values.
    """
    np.random.seed(seed)
    kf.backend.set_random_seed(seed)
    (x_train, y_train), (x_test, y_test) = load(data, train_limit, test_limit)
    model = build_model(momentum)
    model.compile(optimizer=kf.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    if verbose:
        model.summary()
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs,
                        verbose=verbose)
    seconds = time.perf_counter() - start
    loss, acc = model.evaluate(x_test, y_test, batch_size=1000, verbose=0)
    print(f"test loss {loss:.4f} - test accuracy {acc:.4f} - training "
          f"{seconds:.1f} s")
    return acc, history, seconds


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--data", default=None, help="folder with the 4 IDX files")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args()
    main(args.epochs, args.batch_size, args.data, args.verbose)
