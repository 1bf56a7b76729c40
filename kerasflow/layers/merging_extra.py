"""More merging layers: Maximum, Minimum, Dot (Keras 3's names and arguments)."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.layers.merging import _Merge

__all__ = ["Maximum", "Minimum", "Dot"]


class Maximum(_Merge):
    """Elementwise maximum of a list of tensors of one shape."""

    merge = staticmethod(K.maximum)


class Minimum(_Merge):
    """Elementwise minimum of a list of tensors of one shape."""

    merge = staticmethod(K.minimum)


class Dot(_Merge):
    """Dot product of two tensors along ``axes`` (Keras' ``Dot``).

    For (batch, d) inputs: (batch, 1). For (batch, a, d) and (batch, b, d) with
    axes=2: (batch, a, b) (a batched matrix product). ``normalize=True`` takes
    L2-normalized inputs along the axes first (cosine similarity).

    Raises:
        ValueError: not exactly 2 inputs, inputs of rank > 3 or different
            ranks, an axis 0 (batch), or contracted axes of different sizes.
    """

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        self.axes = list(axes) if isinstance(axes, (list, tuple)) else int(axes)
        self.normalize = bool(normalize)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"A `Dot` layer should be called on exactly 2 inputs. "
                             f"Received: {inputs!r}.")
        x, y = inputs
        rank = len(x.shape)
        if rank != len(y.shape) or rank not in (2, 3):
            raise ValueError(f"Layer '{self.name}' (Dot) supports two inputs of "
                             f"rank 2 or 3. Received: shapes {x.shape} and "
                             f"{y.shape}.")
        ax = self.axes if isinstance(self.axes, list) else [self.axes] * 2
        ax = [a % rank for a in ax]
        if 0 in ax:
            raise ValueError(f"Layer '{self.name}' cannot contract the batch axis. "
                             f"Received: axes={self.axes!r}.")
        if None not in (x.shape[ax[0]], y.shape[ax[1]]) and \
                x.shape[ax[0]] != y.shape[ax[1]]:
            raise ValueError(
                f"Layer '{self.name}' (Dot): the contracted axes must have one "
                f"size. Received: shapes {x.shape} and {y.shape}, axes={ax}.")
        if self.normalize:
            x = x * K.rsqrt(K.maximum(K.sum(K.square(x), axis=ax[0],
                                            keepdims=True), 1e-12))
            y = y * K.rsqrt(K.maximum(K.sum(K.square(y), axis=ax[1],
                                            keepdims=True), 1e-12))
        if rank == 2:
            return K.sum(x * y, axis=1, keepdims=True)
        # (batch, a, d) . (batch, d, b): move the contracted axes into place.
        xa = x if ax[0] == 2 else K.transpose(x, (0, 2, 1))
        yb = y if ax[1] == 1 else K.transpose(y, (0, 2, 1))
        return K.matmul(xa, yb)

    def get_config(self):
        return {**super().get_config(), "axes": self.axes,
                "normalize": self.normalize}
