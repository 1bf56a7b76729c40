"""Fashion-MNIST dataset of Zalando article images.

Source: H. Xiao, K. Rasul and R. Vollgraf, "Fashion-MNIST: a Novel Image
Dataset for Benchmarking Machine Learning Algorithms", arXiv:1708.07747,
2017; https://github.com/zalandoresearch/fashion-mnist (MIT license).
Mirrors the API of Keras' ``keras.datasets.fashion_mnist.load_data``.
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow.datasets import _loader

NAME = "fashion-mnist"
#: Base URL of the canonical Zalando mirror (an S3 website endpoint, HTTP only;
#: integrity is guaranteed by the SHA-256 check).
BASE_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
#: SHA-256 of the original distribution files.
SHA256 = {
    "train-images-idx3-ubyte.gz": (
        "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"
    ),
    "train-labels-idx1-ubyte.gz": (
        "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"
    ),
    "t10k-images-idx3-ubyte.gz": (
        "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"
    ),
    "t10k-labels-idx1-ubyte.gz": (
        "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"
    ),
}
#: Class names, indexed by label.
CLASS_NAMES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)


def load_data(
    path: str | os.PathLike[str] | None = None,
    *,
    origin: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Loads the Fashion-MNIST dataset.

    60,000 training and 10,000 test 28x28 grayscale images of 10 clothing
    categories (Xiao et al., 2017; see :data:`CLASS_NAMES`), returned as in
    Keras' ``keras.datasets.fashion_mnist.load_data``.

    The four IDX files (``train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
    ``t10k-labels-idx1-ubyte.gz``) are looked for, in order, in:

    1. ``path``, if given;
    2. ``$KERASFLOW_DATA_DIR/fashion-mnist/``, if the variable is set;
    3. ``cache_dir``, by default ``~/.kerasflow/datasets/fashion-mnist/``.

    Missing files are downloaded into the last of these and kept only if
    their SHA-256 matches the published value.

    Args:
        path: Directory holding the four files. If it lacks some of them a
            warning is issued and the other locations are searched.
        origin: Base URL to download the files from. Defaults to
            ``$KERASFLOW_DATASETS_ORIGIN`` + ``fashion-mnist/`` when that
            variable is set, else :data:`BASE_URL`.
        cache_dir: Download/cache directory, replacing
            ``~/.kerasflow/datasets/fashion-mnist/``.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: ``uint8`` arrays of shapes
        ``(60000, 28, 28)``, ``(60000,)``, ``(10000, 28, 28)``, ``(10000,)``.
        Pixels are in [0, 255] and labels in [0, 9].

    Raises:
        ValueError: If a file is corrupt or truncated (bad gzip data, bad IDX
            magic number, length or shape), or a downloaded file's SHA-256
            does not match; the message names the file and the expected and
            received values.
        kerasflow.datasets._loader.DownloadError: An ``OSError`` raised when
            the files are not on disk and cannot be downloaded; the message
            lists the directories searched and the environment variable.
    """
    directory = _loader.locate_or_download(
        NAME, "Fashion-MNIST", SHA256, BASE_URL, path=path, origin=origin,
        cache_dir=cache_dir,
    )
    train = _loader.load_split(
        directory, _loader.TRAIN_IMAGES, _loader.TRAIN_LABELS, 60000
    )
    test = _loader.load_split(
        directory, _loader.TEST_IMAGES, _loader.TEST_LABELS, 10000
    )
    return train, test
