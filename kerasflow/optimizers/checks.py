"""Argument checks shared by optimizers: hyper-parameters and gradient pairs."""

from __future__ import annotations

import math
import numbers
import warnings

from kerasflow import backend as K

__all__ = ["check_learning_rate", "check_positive", "checked_pairs"]


def check_positive(name, value, allow_zero=False):
    """``value`` as a float > 0 (>= 0 with ``allow_zero``), or None.

    Raises:
        ValueError: a non-real, non-finite or out-of-range value.
    """
    if value is None:
        return None
    if (not isinstance(value, numbers.Real) or isinstance(value, bool)
            or not math.isfinite(value) or value < 0
            or (value == 0 and not allow_zero)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"Argument `{name}` must be a float {bound} or None. "
                         f"Received: {name}={value!r}.")
    return float(value)


def check_learning_rate(owner, value):
    """Raises ValueError for a NaN, infinite or negative learning rate."""
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"Optimizer '{owner}' expects `learning_rate` as a finite "
                         f"float >= 0. Received: learning_rate={value}.")


def checked_pairs(owner, grads_and_vars) -> list:
    """The ``(gradient, Variable)`` pairs as a list, checked as Keras checks them.

    Raises:
        TypeError: a non-Variable.
        ValueError: a variable twice, no pairs, or every gradient None.
    """
    pairs = list(grads_and_vars)
    for _, v in pairs:
        if not isinstance(v, K.Variable):
            raise TypeError(f"apply_gradients takes (gradient, Variable) pairs. "
                            f"Received variable: {v!r}.")
    if len({id(v) for _, v in pairs}) != len(pairs):
        raise ValueError(f"A variable appears twice in grads_and_vars: "
                         f"{[v.name for _, v in pairs]}.")
    if not pairs:
        raise ValueError(
            f"Optimizer '{owner}' expects at least one (gradient, "
            f"variable) pair to apply. Received: none; the model has no "
            f"trainable weights (all layers frozen, or none with weights)."
        )
    missing = [v.name for g, v in pairs if g is None]
    if len(missing) == len(pairs):
        raise ValueError(f"No gradients provided for any variable: {missing}.")
    if missing:
        warnings.warn(f"Gradients do not exist for variables {missing} when "
                      f"minimizing the loss; they are not updated.",
                      stacklevel=3)
    return pairs
