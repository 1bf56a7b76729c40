"""Built-in datasets, loaded as numpy arrays (Keras ``keras.datasets`` API).

- :mod:`kerasflow.datasets.mnist`: MNIST handwritten digits (LeCun et al. 1998).
- :mod:`kerasflow.datasets.fashion_mnist`: Fashion-MNIST (Xiao et al. 2017).
"""

from __future__ import annotations

from kerasflow.datasets import fashion_mnist, mnist

__all__ = ["mnist", "fashion_mnist"]
