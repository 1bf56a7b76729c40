"""Keras' functional merge helpers: ``add``, ``concatenate``, ``dot``, ...

Each builds the merging layer of the same name and calls it on ``inputs``
(Keras 3's ``keras.layers.add(inputs, **kwargs)`` is ``Add(**kwargs)(inputs)``),
so the call joins a functional model like any layer call.
"""

from __future__ import annotations

from kerasflow.layers.merging import Add, Average, Concatenate, Multiply, Subtract
from kerasflow.layers.merging_extra import Dot, Maximum, Minimum

__all__ = ["add", "subtract", "multiply", "average", "maximum", "minimum",
           "concatenate", "dot"]


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
