"""``tf.SparseTensor`` and ``tf.sparse``: a COO value held as numpy arrays.

kerasflow's tensors are dense; a ``SparseTensor`` here is the (indices,
values, dense_shape) triple TF programs build and then densify
(``tf.sparse.to_dense``) before computing with it.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.eager import as_eager

__all__ = ["SparseTensor", "to_dense"]


class SparseTensor:
    """A sparse value in COO form (``tf.SparseTensor``).

    Args:
        indices: (N, rank) int64, the coordinates of the N stored values.
        values: (N,) array of the stored values.
        dense_shape: (rank,) int64, the shape of the dense value.

    Raises:
        ValueError: indices, values and dense_shape that do not fit together.

    Example:
        >>> st = SparseTensor([[0, 1], [2, 0]], [5.0, 7.0], [3, 2])
        >>> to_dense(st).numpy()[2, 0]
        7.0
    """

    def __init__(self, indices, values, dense_shape):
        self.indices = np.asarray(indices, np.int64).reshape(-1, len(dense_shape))
        self.values = np.asarray(values)
        self.dense_shape = np.asarray(dense_shape, np.int64)
        if self.values.shape != (len(self.indices),):
            raise ValueError(f"SparseTensor expects one value per index row. "
                             f"Received: indices.shape={self.indices.shape}, "
                             f"values.shape={self.values.shape}.")
        if len(self.indices) and (np.any(self.indices < 0) or np.any(
                self.indices >= self.dense_shape)):
            raise ValueError(f"SparseTensor indices must lie inside dense_shape="
                             f"{self.dense_shape.tolist()}.")

    @property
    def shape(self) -> tuple:
        return tuple(int(d) for d in self.dense_shape)

    @property
    def dtype(self):
        return self.values.dtype

    def __repr__(self):
        return (f"SparseTensor(indices={self.indices.tolist()}, values="
                f"{self.values.tolist()}, dense_shape={self.shape})")


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """``sp_input`` as a dense array of its ``dense_shape``, ``default_value``
    (0 by default) where no value is stored (``tf.sparse.to_dense``).

    Raises:
        TypeError: ``sp_input`` is not a ``SparseTensor``.
    """
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"tf.sparse.to_dense expects a SparseTensor. Received: "
                        f"{type(sp_input).__name__}.")
    fill = 0 if default_value is None else default_value
    dense = np.full(sp_input.shape, fill, dtype=sp_input.values.dtype)
    dense[tuple(sp_input.indices.T)] = sp_input.values
    return as_eager(dense)
