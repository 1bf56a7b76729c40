"""Weight constraints: functions applied to a Variable's value after assignments.

Keras' ``keras.constraints``: ``NonNeg`` and ``MaxNorm``. A constraint receives
and returns a device array (numpy or cupy).
"""

from __future__ import annotations

from typing import Any

from kerasflow.utils.serialization import (
    deserialize_object,
    get_object,
    serialize_object,
)

__all__ = ["Constraint", "NonNeg", "MaxNorm", "get", "serialize", "deserialize"]


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
        norms = (w * w).sum(axis=self.axis, keepdims=True) ** 0.5
        desired = norms.clip(0, self.max_value)
        return w * (desired / (1e-7 + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


_OBJECTS: dict[str, Any] = {
    "Constraint": Constraint, "NonNeg": NonNeg, "MaxNorm": MaxNorm,
    "non_neg": NonNeg, "nonneg": NonNeg, "max_norm": MaxNorm,
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
    """None, a name ('non_neg', 'max_norm', 'NonNeg'...), a config dict, or a
    callable ``f(w) -> w'`` (returned as is).

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
    return get_object(identifier, _OBJECTS, "constraint")
