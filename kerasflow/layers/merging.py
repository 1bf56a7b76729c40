"""Merging layers: Concatenate, Add, Subtract, Multiply, Average, Maximum,
Minimum, Dot (Keras 3's names and arguments), and Keras' functional merge
helpers ``add``, ``concatenate``, ``dot``, ...

Each helper builds the merging layer of the same name and calls it on
``inputs`` (Keras 3's ``keras.layers.add(inputs, **kwargs)`` is
``Add(**kwargs)(inputs)``), so the call joins a functional model like any
layer call.
"""

from __future__ import annotations

import functools

import numpy as np

from kerasflow import backend as K
from kerasflow.layers.base import Layer

__all__ = ["Concatenate", "Add", "Subtract", "Multiply", "Average", "Maximum",
           "Minimum", "Dot", "add", "subtract", "multiply", "average", "maximum",
           "minimum", "concatenate", "dot"]


class _Merge(Layer):
    """Merges a list of at least two tensors; ``call`` folds them pairwise with
    the binary op ``merge`` where a subclass sets one."""

    merge = None

    def call(self, inputs):
        self._check(inputs)
        return functools.reduce(self.merge, inputs)

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(
                f"Layer '{self.name}' should be called on a list of at least 2 "
                f"inputs. Received: {inputs!r}."
            )


class Concatenate(_Merge):
    """Concatenates a list of tensors along ``axis`` (default last)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"Layer '{self.name}' expects `axis` as an int. "
                            f"Received: axis={axis!r}.")
        self.axis = int(axis)

    def call(self, inputs):
        self._check(inputs)
        return K.concatenate(list(inputs), axis=self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class Add(_Merge):
    """Elementwise sum of a list of tensors of one shape."""

    def call(self, inputs):
        self._check(inputs)
        return K.add_n(list(inputs))


class Subtract(_Merge):
    """``inputs[0] - inputs[1]``."""

    def call(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"Subtract takes exactly 2 inputs. Received: "
                             f"{len(inputs)}.")
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """Elementwise product of a list of tensors."""

    merge = staticmethod(K.multiply)


class Average(_Merge):
    """Elementwise mean of a list of tensors."""

    def call(self, inputs):
        self._check(inputs)
        return K.add_n(list(inputs)) * (1.0 / len(inputs))


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


# -- functional helpers ----------------------------------------------------------------
def add(inputs, **kwargs):
    """Elementwise sum of ``inputs`` (Keras' ``layers.add``).

    Args:
        inputs: list of at least 2 tensors (or arrays) of one shape.
        **kwargs: ``Add`` layer arguments (``name``, ...).

    Returns:
        A tensor of the inputs' shape (an array for array inputs).

    Raises:
        ValueError: fewer than 2 inputs.
    """
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """``inputs[0] - inputs[1]`` (Keras' ``layers.subtract``).

    Raises:
        ValueError: not exactly 2 inputs.
    """
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """Elementwise product of ``inputs`` (Keras' ``layers.multiply``)."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """Elementwise mean of ``inputs`` (Keras' ``layers.average``)."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """Elementwise maximum of ``inputs`` (Keras' ``layers.maximum``)."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """Elementwise minimum of ``inputs`` (Keras' ``layers.minimum``)."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """Concatenation of ``inputs`` along ``axis`` (Keras' ``layers.concatenate``).

    Args:
        inputs: list of tensors whose shapes agree except along ``axis``.
        axis: int, default the last axis.
    """
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes=-1, normalize=False, **kwargs):
    """Dot product of two tensors along ``axes`` (Keras' ``layers.dot``).

    Args:
        inputs: list of 2 tensors, e.g. (batch, d) each -> (batch, 1).
        axes: int or pair of ints.
        normalize: L2-normalize along ``axes`` first (cosine similarity).
    """
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
