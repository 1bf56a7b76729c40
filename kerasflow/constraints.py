"""Weight constraints: functions applied to a Variable's value after assignments.

Keras 3's ``keras.constraints``: ``NonNeg``, ``MaxNorm``, ``MinMaxNorm`` and
``UnitNorm`` (and their snake-case aliases). A constraint receives and returns a
device array (numpy or cupy) of the same shape and dtype.
"""

from __future__ import annotations

from typing import Any

from kerasflow.utils.serialization import (
    deserialize_object,
    get_object,
    serialize_object,
)

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "deserialize",
           "get", "max_norm", "min_max_norm", "non_neg", "serialize", "unit_norm"]

_EPSILON = 1e-7  # Keras' backend.epsilon() in the denominators


def _norms(w, axis):
    axis = tuple(axis) if isinstance(axis, list) else axis  # Keras takes lists
    return (w * w).sum(axis=axis, keepdims=True) ** 0.5


class Constraint:
    """Base class: ``__call__(w) -> w'`` on arrays."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}


class NonNeg(Constraint):
    """Sets negative weights to zero."""

    def __call__(self, w):
        return w * (w >= 0)


class MaxNorm(Constraint):
    """Rescales weights whose L2 norm along ``axis`` exceeds ``max_value``."""

    def __init__(self, max_value=2.0, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = norms.clip(0, self.max_value)
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class UnitNorm(Constraint):
    """Scales weights to unit L2 norm along ``axis`` (Keras 3's ``UnitNorm``):
    ``w / (epsilon + ||w||)``.

    Args:
        axis: int or tuple, the axis the norm runs over (0 for a Dense kernel
            (in, out): each unit's incoming weights).
    """

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (_EPSILON + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Keeps the L2 norm along ``axis`` within [min_value, max_value] (Keras
    3's ``MinMaxNorm``): the norm moves to ``rate * clip(norm, min, max) +
    (1 - rate) * norm``.

    Args:
        min_value, max_value: the bounds of the norm.
        rate: in [0, 1]; 1 enforces the bounds at once, smaller rates move
            the norm part of the way per step.
        axis: int or tuple, as ``UnitNorm``.
    """

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value = min_value, max_value
        self.rate, self.axis = rate, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = (self.rate * norms.clip(self.min_value, self.max_value)
                   + (1 - self.rate) * norms)
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value,
                "rate": self.rate, "axis": self.axis}


# Keras' snake-case aliases: the classes themselves.
max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm


_OBJECTS: dict[str, Any] = {
    "Constraint": Constraint, "NonNeg": NonNeg, "MaxNorm": MaxNorm,
    "non_neg": NonNeg, "nonneg": NonNeg, "max_norm": MaxNorm,
    "MinMaxNorm": MinMaxNorm, "UnitNorm": UnitNorm, "min_max_norm": MinMaxNorm,
    "unit_norm": UnitNorm,
}


def serialize(constraint: Constraint | None) -> dict | None:
    """``{"class_name": ..., "config": ...}`` of a ``Constraint``; None for None.

    Raises:
        TypeError: an object without ``get_config`` (a plain function), which
            a config cannot describe.
    """
    return serialize_object(constraint)


def deserialize(config, custom_objects=None) -> Constraint:
    """A new constraint from a name or a class_name/config dict.

    Raises:
        ValueError: an unknown name, listing the valid ones.
    """
    return deserialize_object(config, _OBJECTS, "constraint", custom_objects)


def get(identifier):
    """None, a name ('non_neg', 'max_norm', 'unit_norm', 'MinMaxNorm'...), a
    config dict, or a callable ``f(w) -> w'`` (returned as is).

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
    return get_object(identifier, _OBJECTS, "constraint")
