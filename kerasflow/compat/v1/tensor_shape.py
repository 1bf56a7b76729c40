"""``TensorShape``: a tuple with TF1's shape methods (``as_list()`` & co.).

Importing ``kerasflow.compat.v1`` makes ``tensor.get_shape()`` return one, so
``x.get_shape().as_list()`` works; being a tuple, it compares and indexes as
the plain shape tuples kerasflow uses everywhere.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.graph import SymbolicTensor

__all__ = ["TensorShape"]


class TensorShape(tuple):
    """A static shape: ints, None for unknown dimensions."""

    @property
    def ndims(self) -> int:
        return len(self)

    rank = ndims

    @property
    def dims(self) -> list:
        return list(self)

    def as_list(self) -> list:
        """The dimensions as a list (None where unknown)."""
        return list(self)

    def is_fully_defined(self) -> bool:
        return None not in self

    def num_elements(self):
        """Product of the dimensions, or None if any is unknown."""
        return int(np.prod(self)) if self.is_fully_defined() else None

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return TensorShape(out) if isinstance(key, slice) else out

    def __repr__(self):
        return f"TensorShape({list(self)})"


def _get_shape(self):
    """The static shape as a ``TensorShape`` (TF1's ``Tensor.get_shape()``).

    Raises:
        ValueError: the rank is unknown (TF1's as_list raised too).
    """
    shape = self.spec.shape
    if shape is None:
        raise ValueError(f"The shape of {self.name} has unknown rank (a placeholder "
                         f"made without shape=): as_list() is not defined.")
    return TensorShape(shape)


SymbolicTensor.get_shape = _get_shape
