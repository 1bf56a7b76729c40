"""Merging layers: Concatenate, Add, Subtract, Multiply, Average (Keras names)."""

from __future__ import annotations

import functools

import numpy as np

from kerasflow import backend as K
from kerasflow.layers.base import Layer

__all__ = ["Concatenate", "Add", "Subtract", "Multiply", "Average"]


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
