"""CIFAR-10 small images classification dataset.

Source: A. Krizhevsky, "Learning Multiple Layers of Features from Tiny
Images", tech. report, University of Toronto, 2009;
https://www.cs.toronto.edu/~kriz/cifar.html. Mirrors the API of Keras'
``keras.datasets.cifar10.load_data``, read from the binary version of the
archive (Keras reads the pickled "python version").
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow.datasets import _cifar, _loader

NAME = "cifar-10"
ARCHIVE = "cifar-10-binary.tar.gz"
BASE_URL = "https://www.cs.toronto.edu/~kriz/"
#: SHA-256 of the original archive (170,052,171 bytes; TensorFlow Datasets'
#: published checksum).
SHA256 = {ARCHIVE: "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"}
TRAIN_MEMBERS = tuple(f"cifar-10-batches-bin/data_batch_{i}.bin" for i in range(1, 6))
TEST_MEMBERS = ("cifar-10-batches-bin/test_batch.bin",)
#: Class names, indexed by label.
CLASS_NAMES = ("airplane", "automobile", "bird", "cat", "deer",
               "dog", "frog", "horse", "ship", "truck")


def load_data(
    path: str | os.PathLike[str] | None = None,
    *,
    origin: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Loads the CIFAR-10 dataset: 50,000 training and 10,000 test 32x32
    colour images of 10 classes (see :data:`CLASS_NAMES`).

    ``cifar-10-binary.tar.gz`` is looked for in ``path``, then
    ``$KERASFLOW_DATA_DIR/cifar-10/``, then ``cache_dir`` (default
    ``~/.kerasflow/datasets/cifar-10/``); if absent it is downloaded there and
    kept only if its SHA-256 matches :data:`SHA256`. A local copy is verified
    too.

    Args:
        path: Directory holding the archive.
        origin: Base URL to download it from. Defaults to
            ``$KERASFLOW_DATASETS_ORIGIN`` + ``cifar-10/`` when set, else
            :data:`BASE_URL`.
        cache_dir: Download/cache directory.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: ``uint8`` arrays of shapes
        ``(50000, 32, 32, 3)``, ``(50000, 1)``, ``(10000, 32, 32, 3)``,
        ``(10000, 1)`` as Keras (images ``(n, 3, 32, 32)`` under
        ``image_data_format() == 'channels_first'``); labels in [0, 9].

    Raises:
        ValueError: SHA-256 mismatch (the message says to delete the file and
            download it again), or a corrupt archive.
        kerasflow.datasets._loader.DownloadError: The archive is not on disk
            and cannot be downloaded.

    Example:
        >>> (x_train, y_train), (x_test, y_test) = cifar10.load_data()
        >>> x_train.shape, y_train.shape
        ((50000, 32, 32, 3), (50000, 1))
    """
    directory = _loader.locate_or_download(NAME, "CIFAR-10", SHA256, BASE_URL,
                                           path=path, origin=origin,
                                           cache_dir=cache_dir)
    archive = directory / ARCHIVE
    x_train, y_train = _cifar.read_records(archive, TRAIN_MEMBERS, 1)
    x_test, y_test = _cifar.read_records(archive, TEST_MEMBERS, 1)
    return (x_train, y_train), (x_test, y_test)
