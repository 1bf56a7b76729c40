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
    return _loader.load_idx_dataset(NAME, "Fashion-MNIST", SHA256, BASE_URL, path,
                                    origin, cache_dir)


load_data.__doc__ = _loader.LOAD_DATA_DOC.format(
    summary="Loads the Fashion-MNIST dataset.",
    content="10 clothing\n    categories (Xiao et al., 2017; see :data:`CLASS_NAMES`)",
    module="fashion_mnist", name=NAME)
