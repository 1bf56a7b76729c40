"""Variables: mutable device values that read as graph tensors, ``assign_all``,
and the autocast scope mixed-precision layers read them through.

A ``Variable`` is a ``SymbolicTensor`` (the output of a "Variable" node) holding
its current value on the device (numpy or cupy). Reading it in a compiled plan
reads ``value``; assignments are stateful nodes (``ops/state.py``) or, given
arrays, happen at once (TF1 ``tf.Variable`` semantics, without initializers).
"""

from __future__ import annotations

import threading

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.graph import (
    Node, SymbolicTensor, _normalize_shape, _ops,
    in_tracing, is_symbolic, record_stateful,
)

__all__ = ["AutocastScope", "Variable", "assign_all", "get_autocast_scope"]


class Variable(SymbolicTensor):
    """A mutable value on the device; as a graph tensor it reads its current value.

    ``assign``, ``assign_add`` and ``assign_sub`` given a symbolic value add a
    stateful node to the graph (run it, or pass it as a ``Function`` update); given
    an array or number they update the value at once.

    Args:
        initial_value: array-like, Python number, or a callable ``f(shape, dtype)``
            (an initializer, then ``shape`` is required).
        trainable: whether optimizers and ``gradients`` see it as a weight.
        name: readable name ("dense/kernel").
        dtype: dtype; defaults to floatx() for floats.
        shape: the shape, needed when ``initial_value`` is callable.
        autocast: whether ops inside an ``AutocastScope`` read a float
            Variable cast to the scope's dtype (Keras 3's ``autocast``).

    Example:
        >>> w = Variable(0.0, name="weights")
        >>> w.assign_add(1.5)
        >>> float(w.numpy())
        1.5
    """

    __slots__ = ("value", "trainable", "constraint", "autocast")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None,
                 shape=None, constraint=None, autocast=True):
        if callable(initial_value):
            if shape is None:
                raise ValueError(
                    f"Variable '{name}' with a callable initial_value needs shape=."
                )
            initial_value = initial_value(
                _normalize_shape(shape), dtype or _array.floatx()
            )
        what = f"Variable '{name or 'Variable'}'"
        host = _array.as_numpy(initial_value, dtype, what)
        if dtype is None and host.dtype.kind == "f":
            host = _array.cast_checked(host, _array.floatx(), what)
        # Variable names are not prefixed by name scopes: layers name their
        # weights "<layer>/<weight>" themselves, wherever they are built.
        node = Node("Variable", (), {}, name or "Variable", scoped=False)
        SymbolicTensor.__init__(self, node, 0, host.shape, host.dtype)
        node.outputs = (self,)
        node.attrs = {"variable": self}
        # A private copy: the caller's array must not alias the Variable.
        self.value = _array.to_device(host).copy()
        self.trainable = bool(trainable)
        self.constraint = constraint
        self.autocast = bool(autocast)

    @property
    def name(self):
        return self.node.name

    def numpy(self):
        """The current value as a numpy array (a copy)."""
        return np.array(_array.to_numpy(self.value), copy=True)

    def read_value(self):
        return self.value

    def _set(self, value):
        if not isinstance(value, _array.get_xp().ndarray) or value.dtype != self.dtype:
            value = _array.cast_checked(_array.to_numpy(value), self.dtype,
                                 f"Variable '{self.name}'")
        value = _array.to_device(value, dtype=self.dtype)
        if value.shape != self.value.shape:
            raise ValueError(
                f"Variable '{self.name}' has shape {self.value.shape}; cannot assign "
                f"a value of shape {value.shape}."
            )
        self.value = value.copy()

    def _update(self, op, value, eager):
        """A graph node ``op(self, value)`` when ``value`` is symbolic or a trace
        is recording, else sets ``eager(value)`` now and returns the new value."""
        if is_symbolic(value) or in_tracing():
            node = getattr(_ops(), op)(self, value)
            record_stateful(node)
            return node
        self._set(eager(value))
        return self.value

    def assign(self, value):
        """Sets the value (eagerly for arrays, as a graph node for tensors)."""
        return self._update("assign", value, lambda v: v)

    def assign_add(self, delta):
        """Adds ``delta`` (broadcastable to the variable's shape)."""
        return self._update("assign_add", delta, lambda d: self.value + (
            _array.to_device(d, dtype=self.dtype)))

    def assign_sub(self, delta):
        """Subtracts ``delta`` (broadcastable to the variable's shape)."""
        return self._update("assign_sub", delta, lambda d: self.value - (
            _array.to_device(d, dtype=self.dtype)))

    def __repr__(self):
        return (
            f"<Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"
        )


_AUTOCAST = threading.local()  # .stack: the AutocastScopes entered, innermost last


class AutocastScope:
    """Ops built inside read float Variables cast to ``dtype`` (Keras 3's
    ``keras.src.backend.AutocastScope``): a ``mixed_float16`` layer keeps
    float32 weights and computes in float16. The cast is a graph node, so
    gradients reach the float32 Variable in float32.

    Args:
        dtype: a float dtype name, or None to read Variables as they are
            (a layer that opts out inside a mixed one).

    Raises:
        ValueError: a dtype that is not a float dtype.

    Example:
        >>> with AutocastScope("float16"):
        ...     y = matmul(x16, kernel32)  # kernel read as float16
    """

    def __init__(self, dtype):
        if dtype is not None and np.dtype(dtype).kind != "f":
            raise ValueError(f"AutocastScope can only cast to a float dtype. "
                             f"Received: dtype={dtype}")
        self.dtype = None if dtype is None else np.dtype(dtype).name

    def __enter__(self):
        _AUTOCAST.__dict__.setdefault("stack", []).append(self)
        return self

    def __exit__(self, *exc):
        _AUTOCAST.stack.pop()
        return False


def get_autocast_scope() -> AutocastScope | None:
    """The innermost ``AutocastScope`` entered in this thread, or None."""
    stack = getattr(_AUTOCAST, "stack", None)
    return stack[-1] if stack else None


def assign_all(variables, values, owner: str) -> None:
    """Sets each Variable to its value, checking count and every shape first.

    Nothing is assigned unless all values fit, so a bad list (or a corrupt file
    read into one) never leaves the owner half-updated.

    Args:
        variables: list of ``Variable``.
        values: list of array-likes, one per variable.
        owner: who holds them, for messages ("Layer 'dense'").

    Raises:
        ValueError: a different count, or a value whose shape differs, naming the
            variable, the expected and the received shape.
    """
    values = list(values)
    if len(values) != len(variables):
        raise ValueError(
            f"{owner} expects {len(variables)} weight arrays. Received: "
            f"{len(values)}."
        )
    for var, value in zip(variables, values):
        if tuple(np.shape(value)) != tuple(var.shape):
            raise ValueError(
                f"Weight '{var.name}' of {owner} expects shape {tuple(var.shape)}. "
                f"Received: shape {tuple(np.shape(value))}."
            )
    # Cast (and check for overflow) all first: nothing is assigned on failure.
    cast = [_array.cast_checked(_array.to_numpy(value), var.dtype,
                         f"Weight '{var.name}' of {owner}")
            for var, value in zip(variables, values)]
    for var, value in zip(variables, cast):
        var.assign(value)
