"""Eager values as TF 2 code reads them: ``EagerTensor``, a numpy array with
TF's ``.numpy()`` (and ``EagerBytes`` for a scalar string).

Dataset elements and ``tf.function`` results come back as these views (no
copy), so ``for x, y in ds.take(1): print(x.numpy())`` runs as in TF 2;
everything numpy accepts, they are. Training reads plain arrays
(``Dataset.as_numpy_iterator``) and pays nothing for them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EagerBytes", "EagerTensor", "as_eager"]


class EagerTensor(np.ndarray):
    """An ndarray with TF 2's eager-tensor accessors.

    Example:
        >>> t = as_eager(np.array([1, 2]))
        >>> t.numpy()
        array([1, 2])
    """

    def numpy(self):
        """The plain numpy value: an ndarray, or a numpy scalar (bytes for a
        string) for a 0-d tensor, as TF's ``EagerTensor.numpy()``."""
        a = self.view(np.ndarray)
        return a[()] if a.ndim == 0 else a

    def get_shape(self) -> tuple:
        """TF's ``tensor.get_shape()``: the static shape."""
        return self.shape


class EagerBytes(bytes):
    """A scalar string element (tf.string): bytes with ``.numpy()``."""

    def numpy(self) -> bytes:
        return bytes(self)


def as_eager(value):
    """``value`` (an array, numpy scalar or bytes) as an ``EagerTensor`` /
    ``EagerBytes`` view; anything else unchanged."""
    if isinstance(value, np.ndarray):
        return value if type(value) is EagerTensor else value.view(EagerTensor)
    if isinstance(value, np.generic):
        return np.asarray(value).view(EagerTensor)
    if isinstance(value, bytes):
        return value if type(value) is EagerBytes else EagerBytes(value)
    return value
