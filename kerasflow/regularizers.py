"""Weight regularizers (Keras 3's ``keras.regularizers``).

A regularizer maps a weight tensor to a scalar penalty that the model adds to its
loss. Built from backend ops, it works on symbolic weights (a graph node) and on
arrays (a number).

Example:
    >>> L2(0.01)(np.array([1.0, -2.0]))      # 0.01 * (1 + 4)
    0.05
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from kerasflow.backend import ops
from kerasflow.utils.serialization import Configurable, lookup_functions

__all__ = [
    "L1", "L1L2", "L2", "OrthogonalRegularizer", "Regularizer", "deserialize", "get",
    "l1", "l1_l2", "l2", "orthogonal_regularizer", "serialize",
]


def _check(name, value):
    value = float(value)
    # NaN passes `value < 0`; it would turn every loss NaN.
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(
            f"Regularization factor `{name}` must be finite and "
            f"non-negative. Received: {name}={value}."
        )
    return value


class Regularizer(Configurable):
    """Base class: ``__call__(weights) -> scalar penalty`` and ``get_config``."""

    def __call__(self, x):
        return 0.0


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)``.

    Args:
        l1, l2: non-negative factors (Keras 3 defaults: 0.0 both).

    Raises:
        ValueError: a negative factor.
    """

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _check("l1", l1)
        self.l2 = _check("l2", l2)

    def __call__(self, x):
        """Penalty of ``x`` (float tensor or array, any shape): a scalar."""
        # Only the terms with a factor (L1 and L2 build one), at least one.
        terms = []
        if self.l1 or not self.l2:
            terms.append(ops.multiply(self.l1, ops.sum(ops.abs(x))))
        if self.l2:
            terms.append(ops.multiply(self.l2, ops.sum(ops.square(x))))
        return ops.add_n(terms)

    def get_config(self):
        # The factors this class's __init__ takes (L1 and L2 take one each).
        params = inspect.signature(type(self).__init__).parameters
        return {name: getattr(self, name) for name in params if name != "self"}


class L1(L1L2):
    """``l1 * sum(|x|)``; ``l1``: non-negative factor.

    Raises:
        ValueError: a negative factor.
    """

    def __init__(self, l1=0.01):
        super().__init__(l1=l1)


class L2(L1L2):
    """``l2 * sum(x ** 2)`` (no factor 1/2, as Keras); ``l2``: non-negative
    factor.

    Raises:
        ValueError: a negative factor.
    """

    def __init__(self, l2=0.01):
        super().__init__(l2=l2)


class OrthogonalRegularizer(Regularizer):
    """Penalizes non-orthogonal rows (or columns) of a 2-D weight (Keras 3's
    ``OrthogonalRegularizer``): ``factor * 0.5 * sum(|P - diag(P)|) / n_pairs``
    where ``P`` is the Gram matrix of the L2-normalized rows (columns) and
    ``n_pairs = n (n - 1) / 2``.

    Args:
        factor: non-negative float.
        mode: "rows" or "columns" (a Dense kernel (in, out) with "columns"
            asks its units' weight vectors to be orthogonal).

    Raises:
        ValueError: a negative factor, another mode, or (on call) a weight
            that is not 2-D.
    """

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _check("factor", factor)
        if mode not in ("rows", "columns"):
            raise ValueError(f"Invalid value for argument `mode`. Expected one of "
                             f'{{"rows", "columns"}}. Received: mode={mode}')
        self.mode = mode

    def __call__(self, x):
        if x.ndim != 2:
            raise ValueError(f"Inputs to OrthogonalRegularizer must have rank 2. "
                             f"Received: inputs.shape={x.shape}")
        axis = 1 if self.mode == "rows" else 0
        # x * rsqrt(sum x^2), capped at 1/epsilon: Keras' ops.nn.normalize.
        inv = ops.minimum(ops.rsqrt(ops.sum(ops.square(x), axis=axis,
                                            keepdims=True)), 1.0 / 1e-7)
        x = ops.multiply(x, inv)
        if self.mode == "rows":
            product, size = ops.matmul(x, x, transpose_b=True), x.shape[0]
        else:
            product, size = ops.matmul(x, x, transpose_a=True), x.shape[1]
        off_diagonal = ops.multiply(product, 1.0 - np.eye(size, dtype=x.dtype))
        num_pairs = size * (size - 1.0) / 2.0
        return ops.multiply(self.factor * 0.5 / num_pairs,
                            ops.sum(ops.abs(off_diagonal)))

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


# Keras' lower-case aliases.
l1 = L1
l2 = L2
l1_l2 = L1L2
orthogonal_regularizer = OrthogonalRegularizer

_OBJECTS: dict[str, Any] = {
    "Regularizer": Regularizer, "L1": L1, "L2": L2, "L1L2": L1L2,
    "l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2,
    "OrthogonalRegularizer": OrthogonalRegularizer,
    "orthogonal_regularizer": OrthogonalRegularizer,
}


_GET_DOC = """Resolves a regularizer identifier (Keras' ``regularizers.get``).

    Args:
        identifier: None, a name ("l1", "l2", "l1_l2": default factors), a
            config dict, or a callable ``f(weights) -> scalar`` (returned as is).

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
# serialize: class_name and config, in Keras' format.
serialize, deserialize, get = lookup_functions(__name__, _OBJECTS, "regularizer",
                                               _GET_DOC)
