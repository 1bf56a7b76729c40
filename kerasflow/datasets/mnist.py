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
    return _loader.load_idx_dataset(NAME, "MNIST", SHA256, BASE_URL, path, origin,
                                    cache_dir)


load_data.__doc__ = _loader.LOAD_DATA_DOC.format(
    summary="Loads the MNIST dataset of handwritten digits.",
    content="the digits\n    0-9 (LeCun et al., 1998)", module="mnist", name=NAME)
