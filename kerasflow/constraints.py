"""Weight constraints: functions applied to a Variable's value after assignments.

Keras' ``keras.constraints``: ``NonNeg`` and ``MaxNorm``. A constraint receives
and returns a device array (numpy or cupy).
"""

from __future__ import annotations

__all__ = ["Constraint", "NonNeg", "MaxNorm", "get"]


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


_NAMES = {"non_neg": NonNeg, "nonneg": NonNeg, "max_norm": MaxNorm}


def get(identifier):
    """None, a name ('non_neg', 'max_norm'), or a callable.

    Raises:
        ValueError: an unknown name.
    """
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _NAMES:
        return _NAMES[identifier]()
    raise ValueError(f"Unknown constraint: {identifier!r}. Valid names: "
                     f"{sorted(_NAMES)}.")
