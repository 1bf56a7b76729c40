"""Built-in datasets, loaded as numpy arrays (Keras ``keras.datasets`` API).

- :mod:`kerasflow.datasets.mnist`: MNIST handwritten digits (LeCun et al. 1998).
- :mod:`kerasflow.datasets.fashion_mnist`: Fashion-MNIST (Xiao et al. 2017).
- :mod:`kerasflow.datasets.cifar10`, :mod:`kerasflow.datasets.cifar100`:
  CIFAR-10/100 (Krizhevsky 2009), from the binary archives.
- :mod:`kerasflow.datasets.boston_housing`: Boston housing prices (Harrison and
  Rubinfeld 1978).
- :mod:`kerasflow.datasets.imdb`, :mod:`kerasflow.datasets.reuters`: raise
  ``NotImplementedError`` (Keras distributes them pickled).

Every file is downloaded with its SHA-256 checked and cached under
``~/.kerasflow/datasets/`` (or found under ``$KERASFLOW_DATA_DIR``).
"""

from __future__ import annotations

from kerasflow.datasets import (
    boston_housing,
    cifar10,
    cifar100,
    fashion_mnist,
    imdb,
    mnist,
    reuters,
)

__all__ = ["mnist", "fashion_mnist", "cifar10", "cifar100", "boston_housing",
           "imdb", "reuters"]
