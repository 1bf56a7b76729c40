"""Boston housing price regression dataset.

Source: D. Harrison and D. L. Rubinfeld, "Hedonic prices and the demand for
clean air", J. Environ. Economics & Management 5, 1978 (StatLib), as Keras
distributes it. Mirrors the API of Keras'
``keras.datasets.boston_housing.load_data``.
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow.datasets import _loader

NAME = "boston_housing"
FILE = "boston_housing.npz"
BASE_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
#: SHA-256 of Keras' file (the ``file_hash`` Keras checks).
SHA256 = {FILE: "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"}


def load_data(
    path: str | os.PathLike[str] | None = None,
    test_split: float = 0.2,
    seed: int = 113,
    *,
    origin: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Loads the Boston housing dataset: 506 samples of 13 features and the
    median home value (in k$), shuffled and split as Keras does.

    ``boston_housing.npz`` is looked for in ``path``, then
    ``$KERASFLOW_DATA_DIR/boston_housing/``, then ``cache_dir`` (default
    ``~/.kerasflow/datasets/boston_housing/``); if absent it is downloaded
    there and kept only if its SHA-256 matches :data:`SHA256`. It is read with
    ``allow_pickle=False``.

    Args:
        path: Directory holding ``boston_housing.npz`` (Keras' ``path`` is a
            file name in its cache; here, as for MNIST, a directory).
        test_split: Fraction of the data kept for the test set, in [0, 1).
        seed: Seed of the shuffle before the split
            (``np.random.RandomState(seed).shuffle``, as Keras).
        origin: Base URL to download the file from.
        cache_dir: Download/cache directory.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: ``float64`` arrays; with the
        defaults of shapes ``(404, 13)``, ``(404,)``, ``(102, 13)``, ``(102,)``.

    Raises:
        ValueError: ``test_split`` outside [0, 1), a SHA-256 mismatch (the
            message says to delete the file and download it again), or a file
            without arrays ``x`` and ``y``.
        kerasflow.datasets._loader.DownloadError: The file is not on disk and
            cannot be downloaded.

    Example:
        >>> (x_train, y_train), (x_test, y_test) = boston_housing.load_data()
        >>> x_train.shape, x_test.shape
        ((404, 13), (102, 13))
    """
    if not 0 <= test_split < 1:
        raise ValueError(
            f"`test_split` must be in [0, 1). Received: test_split={test_split}."
        )
    directory = _loader.locate_or_download(NAME, "Boston housing", SHA256,
                                           BASE_URL, path=path, origin=origin,
                                           cache_dir=cache_dir)
    file = directory / FILE
    with np.load(file, allow_pickle=False) as f:
        if "x" not in f.files or "y" not in f.files:
            raise ValueError(
                f"{file}: expected arrays 'x' and 'y', received {f.files}; "
                "delete the file and download it again"
            )
        x, y = f["x"], f["y"]
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    n_train = int(len(x) * (1 - test_split))
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])
