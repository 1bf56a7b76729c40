"""CIFAR-100 small images classification dataset.

Source: A. Krizhevsky, "Learning Multiple Layers of Features from Tiny
Images", tech. report, University of Toronto, 2009;
https://www.cs.toronto.edu/~kriz/cifar.html. Mirrors the API of Keras'
``keras.datasets.cifar100.load_data``, read from the binary version of the
archive (Keras reads the pickled "python version").
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow.datasets import _cifar, _loader

NAME = "cifar-100"
ARCHIVE = "cifar-100-binary.tar.gz"
BASE_URL = "https://www.cs.toronto.edu/~kriz/"
#: SHA-256 of the original archive (168,513,733 bytes; TensorFlow Datasets'
#: published checksum).
SHA256 = {ARCHIVE: "58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec"}
TRAIN_MEMBERS = ("cifar-100-binary/train.bin",)
TEST_MEMBERS = ("cifar-100-binary/test.bin",)
# Each record starts with the coarse label byte, then the fine label byte.
_LABEL_COLUMN = {"coarse": 0, "fine": 1}


def load_data(
    label_mode: str = "fine",
    path: str | os.PathLike[str] | None = None,
    *,
    origin: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Loads the CIFAR-100 dataset: 50,000 training and 10,000 test 32x32
    colour images of 100 classes, grouped in 20 superclasses.

    ``cifar-100-binary.tar.gz`` is found, downloaded and verified as
    :func:`kerasflow.datasets.cifar10.load_data` does its archive (directory
    name ``cifar-100``).

    Args:
        label_mode: ``"fine"`` (100 classes) or ``"coarse"`` (20 superclasses).
        path: Directory holding the archive.
        origin: Base URL to download it from.
        cache_dir: Download/cache directory.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: ``uint8`` images of shapes
        ``(50000, 32, 32, 3)`` and ``(10000, 32, 32, 3)`` and ``int64`` labels
        of shapes ``(50000, 1)`` and ``(10000, 1)``, as Keras.

    Raises:
        ValueError: A ``label_mode`` other than "fine" or "coarse", a SHA-256
            mismatch (the message says to delete the file and download it
            again), or a corrupt archive.
        kerasflow.datasets._loader.DownloadError: The archive is not on disk
            and cannot be downloaded.

    Example:
        >>> (x_train, y_train), _ = cifar100.load_data(label_mode="coarse")
        >>> int(y_train.max())
        19
    """
    if label_mode not in _LABEL_COLUMN:
        raise ValueError(
            f"`label_mode` must be one of `'fine'`, `'coarse'`. "
            f"Received: label_mode={label_mode}."
        )
    directory = _loader.locate_or_download(NAME, "CIFAR-100", SHA256, BASE_URL,
                                           path=path, origin=origin,
                                           cache_dir=cache_dir)
    archive = directory / ARCHIVE
    col = _LABEL_COLUMN[label_mode]
    splits = []
    for members in (TRAIN_MEMBERS, TEST_MEMBERS):
        x, labels = _cifar.read_records(archive, members, 2)
        # int64 labels, as Keras' reshape of its list of Python ints gives.
        splits.append((x, labels[:, col:col + 1].astype(np.int64)))
    return splits[0], splits[1]
