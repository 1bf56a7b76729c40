"""MNIST handwritten digits dataset.

Source: Y. LeCun, L. Bottou, Y. Bengio and P. Haffner, "Gradient-based
learning applied to document recognition", Proc. IEEE 86(11), 1998;
http://yann.lecun.com/exdb/mnist/. Mirrors the API of Keras'
``keras.datasets.mnist.load_data``.
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow.datasets import _loader

NAME = "mnist"
#: Base URL of the per-file mirror (the one torchvision uses).
BASE_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
#: SHA-256 of the original distribution files.
SHA256 = {
    "train-images-idx3-ubyte.gz": (
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"
    ),
    "train-labels-idx1-ubyte.gz": (
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"
    ),
    "t10k-images-idx3-ubyte.gz": (
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"
    ),
    "t10k-labels-idx1-ubyte.gz": (
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"
    ),
}


def load_data(
    path: str | os.PathLike[str] | None = None,
    *,
    origin: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Loads the MNIST dataset of handwritten digits.

    60,000 training and 10,000 test 28x28 grayscale images of the digits
    0-9 (LeCun et al., 1998), returned as in Keras'
    ``keras.datasets.mnist.load_data``.

    The four IDX files (``train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
    ``t10k-labels-idx1-ubyte.gz``) are looked for, in order, in:

    1. ``path``, if given;
    2. ``$KERASFLOW_DATA_DIR/mnist/``, if the variable is set;
    3. ``cache_dir``, by default ``~/.kerasflow/datasets/mnist/``.

    Missing files are downloaded into the last of these and kept only if
    their SHA-256 matches the published value.

    Args:
        path: Directory holding the four files. If it lacks some of them a
            warning is issued and the other locations are searched.
        origin: Base URL to download the files from. Defaults to
            ``$KERASFLOW_DATASETS_ORIGIN`` + ``mnist/`` when that variable is
            set, else :data:`BASE_URL`.
        cache_dir: Download/cache directory, replacing
            ``~/.kerasflow/datasets/mnist/``.

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
        NAME, "MNIST", SHA256, BASE_URL, path=path, origin=origin,
        cache_dir=cache_dir,
    )
    train = _loader.load_split(
        directory, _loader.TRAIN_IMAGES, _loader.TRAIN_LABELS, 60000
    )
    test = _loader.load_split(
        directory, _loader.TEST_IMAGES, _loader.TEST_LABELS, 10000
    )
    return train, test
